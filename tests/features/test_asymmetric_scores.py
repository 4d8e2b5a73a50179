"""The asymmetric-interval (s2) score rule equals the real scheme at every setting.

``features evaluate`` reads each trial's threshold scale off :func:`asymmetric_scale_scores`
and builds the real pipeline at a setting; a float standard deviation once split equal
thresholds by one ulp, so the real pipeline accepted trials the rule had just rejected (102 of
2,000 cross-checked trials on real face embeddings). Here every pair is decided both ways, by the
rule and by real ``enrol_interval`` → ``encode`` → ``decode`` → compare.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.evaluate.fitting.asymmetric import _scale_score, level_statistics
from sketchauth.evaluate.pipelines.evaluation import _between
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.templates import enrol_interval

N = 16


def _real_accepts(enrolment: np.ndarray, probe: np.ndarray, *, q: int, margin: int, scale: float) -> bool:
    """The real scheme: per-person template and tolerances, s2 helper, decode, compare."""
    sketch = AsymmetricIntervalSketch(n=N, q=q, scheme="s2", features=probe.size)
    secret = enrol_interval(enrolment, n=N, q=q, spread="std", scale=scale, margin=margin)
    try:
        found = sketch.decode(sketch.encode(secret), probe)
    except Exception:  # DecodeError: a rejection
        return False
    return sketch.secret_bytes(found) == sketch.secret_bytes(secret)


@st.composite
def populations(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, int]:
    m = draw(st.integers(2, 4))
    k = draw(st.integers(1, 3))
    people = draw(st.integers(1, 3))
    centres = draw(st.lists(st.integers(0, N - 1), min_size=people * k, max_size=people * k))
    noise = draw(st.lists(st.integers(-3, 3), min_size=people * m * k, max_size=people * m * k))
    enrol = (np.array(centres).reshape(people, 1, k) + np.array(noise).reshape(people, m, k)).clip(0, N - 1)
    probes = np.array(draw(st.lists(st.integers(0, N - 1), min_size=4 * k, max_size=4 * k))).reshape(4, k)
    return enrol, probes, draw(st.integers(2, N)), draw(st.integers(0, 2))


@settings(max_examples=60, deadline=None)
@given(populations())
def test_score_rule_equals_the_real_scheme_at_every_setting(case: tuple[np.ndarray, np.ndarray, int, int]) -> None:
    enrol, probes, q, margin = case
    scores = _scale_score(level_statistics(enrol)[:, None], probes[None, :].astype(np.float64), q=q, margin=margin)
    distinct = np.unique(scores)
    for setting in distinct[distinct < 1e9].tolist():
        scale = _between(distinct, setting)
        for j, person in enumerate(enrol):
            for p, probe in enumerate(probes):
                rule = bool(scores[j, p] <= setting)
                assert _real_accepts(person, probe, q=q, margin=margin, scale=scale) == rule, (setting, j, p)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 8), min_size=2, max_size=5),
    st.integers(1, N - 9),
    st.integers(0, N - 1),
)
def test_equal_thresholds_are_equal_floats(levels: list[int], shift: int, probe: int) -> None:
    """Two people whose captures differ by a shift have one variance, so one threshold for one ``w``."""
    a = np.array(levels).reshape(1, -1, 1)
    stats = level_statistics(np.concatenate([a, a + shift]))
    assert stats[0, 1, 0] == stats[1, 1, 0]
    b = stats[:, 0, 0]
    # The same offset from each template: the same w, so bit-identical scores.
    probes = np.array([[[probe]], [[probe]]], dtype=np.float64)
    probes[1, 0, 0] = probe - b[0] + b[1]
    s = [_scale_score(stats[i], probes[i, 0], q=N, margin=1)[()] for i in (0, 1)]
    assert s[0] == s[1]


def test_the_one_ulp_twins_of_a_float_deviation_are_gone() -> None:
    """Captures {0, 1, 4} and {0, 3, 4} have variance 13/3; numpy's std splits it, the scores do not."""
    numpy_std = [np.array(x, dtype=np.float64).std(ddof=1) for x in ([0, 1, 4], [0, 3, 4])]
    assert numpy_std[0] != numpy_std[1]  # the float twins that caused the disagreements
    stats = level_statistics(np.array([[[0], [1], [4]], [[0], [3], [4]]]))
    assert stats[0, 1, 0] == stats[1, 1, 0] == 13 / 3
    # One w (probe 4 above template 2 and 2 above 2; b = 2 for both): one score, bit for bit.
    scores = _scale_score(stats, np.array([[6.0], [6.0]]), q=N, margin=1)
    assert scores[0] == scores[1]


def test_a_disagreement_with_the_real_scheme_fails_the_run() -> None:
    """``features evaluate`` raises (the CLI exits 2) when any row's rule and real decodes differ."""
    from dataclasses import replace

    import pytest

    from sketchauth.evaluate.embeddings import EmbeddingPopulation
    from sketchauth.evaluate.fitting.options import CalibrationOptions
    from sketchauth.evaluate.fitting.transform import fit_transform
    from sketchauth.evaluate.pipelines.evaluation import DeciderMismatchError, EvaluationChecks, evaluate_pipelines

    pop = EmbeddingPopulation(informative=8, useless=2, noise_scale=0.4, seed=4)
    transform = fit_transform(pop.draw(60, 4, seed=1), levels=16)
    result = evaluate_pipelines(
        transform,
        pop.draw(30, 4, seed=2),
        pop.draw(25, 4, seed=3),
        kinds=("asymmetric-interval",),
        options=CalibrationOptions(enrol_samples=3),
        checks=EvaluationChecks(security=False, decode_checks=400),
    )
    assert result.disagreements == 0
    result.require_exact()
    row = result.results[1]
    broken = replace(
        result, results=(result.results[0], replace(row, decode_check={**row.decode_check, "disagreements": 3}))
    )
    with pytest.raises(DeciderMismatchError, match=r"asymmetric interval s2 \(per-person tolerances\): 3 of 400"):
        broken.require_exact()
