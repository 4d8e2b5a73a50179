"""The angular sketch's vectorised decider equals real decoding, boundary cases included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.evaluate.adapters import adapter
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import decide_angular, decide_by_decoding, decide_exact
from sketchauth.evaluate.error_rates import evaluate_adapter
from sketchauth.evaluate.trials import Enrolled
from sketchauth.sketches.angular import SCALE_BITS, AngularSketch, Codeword
from sketchauth.sketches.format import pack_helper


def _population(sketch: AngularSketch, templates: np.ndarray) -> Enrolled:
    secrets = [sketch.check_secret(t) for t in templates]
    helpers = [sketch.encode(s) for s in secrets]
    return Enrolled(tuple(helpers), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets))


def _all_pairs(enrolled: int, probes: int) -> tuple[np.ndarray, np.ndarray]:
    e, q = np.meshgrid(np.arange(enrolled), np.arange(probes), indexing="ij")
    return e.ravel(), q.ravel()


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(4, 40),
    seed=st.integers(0, 2**32 - 1),
    min_cos=st.sampled_from([0.0, 0.3, 0.7, 0.9]),
)
def test_decider_equals_decoding_on_haar_helpers(n: int, seed: int, min_cos: float) -> None:
    rng = np.random.default_rng(seed)
    sketch = AngularSketch(n, int(rng.integers(1, min(n, 5))), min_cos=min_cos)
    templates = rng.normal(size=(4, n))
    enrolled = _population(sketch, templates)
    # Probes at every distance from each template, and unrelated ones.
    probes = np.vstack([templates[i % 4] + s * rng.normal(size=n) for i, s in enumerate(np.linspace(0, 2, 24))])
    e, q = _all_pairs(4, probes.shape[0])
    fast = decide_angular(sketch, enrolled, probes, e, q)
    real = decide_by_decoding(sketch, enrolled, probes, e, q)
    assert np.array_equal(fast[0], real[0]) and np.array_equal(fast[1], real[1])
    assert fast[0].any()


def test_decider_equals_decoding_at_the_margin_boundary() -> None:
    """Signed-permutation helpers (exactly orthogonal) and probes with margin −1, 0, +1 unit."""
    rng = np.random.default_rng(2)
    n, alpha = 12, 3
    sketch = AngularSketch(n, alpha)
    helpers, secrets, canonical, probes, owners, expected = [], [], [], [], [], []
    for identity in range(6):
        matrix = np.zeros((n, n), dtype=np.int64)
        matrix[np.arange(n), rng.permutation(n)] = rng.choice([-1, 1], size=n) * 2**SCALE_BITS
        helpers.append(pack_helper(sketch.scheme_id, sketch.params(), matrix.astype(">i2").tobytes()))
        word = np.zeros(n, dtype=np.int8)
        support = rng.choice(n, size=alpha, replace=False)
        word[support] = rng.choice([-1, 1], size=alpha)
        secret = word.view(Codeword)
        secrets.append(secret)
        canonical.append(sketch.secret_bytes(secret))
        for step in (-1, 0, 1):
            z = rng.integers(-(2**22), 2**22, size=n)
            off = np.setdiff1d(np.arange(n), support)
            z[off[0]] = 2**22
            z[support] = word[support] * np.array([2**22 + step, 2**23, 2**23 + 5])
            probes.append(matrix.T @ z / 2**SCALE_BITS)
            owners.append(identity)
            expected.append(step > 0)
    enrolled = Enrolled(tuple(helpers), tuple(canonical), tuple(secrets))
    probes_arr = np.array(probes)
    e, q = _all_pairs(6, len(probes))
    fast = decide_angular(sketch, enrolled, probes_arr, e, q)
    real = decide_by_decoding(sketch, enrolled, probes_arr, e, q)
    assert np.array_equal(fast[0], real[0])
    own = e == np.array(owners)[q]
    assert np.array_equal(fast[0][own], np.array(expected))


def test_malformed_probes_are_counted_as_decoding_does() -> None:
    rng = np.random.default_rng(4)
    sketch = AngularSketch(8, 2)
    enrolled = _population(sketch, rng.normal(size=(2, 8)))
    good = np.asarray(enrolled.secrets[0].template)
    probes = [good, np.full(8, np.nan), np.zeros(8), good[:7], [True] * 8, good + 0.01]
    e, q = _all_pairs(2, len(probes))
    fast = decide_exact(sketch, enrolled, probes, e, q)
    real = decide_by_decoding(sketch, enrolled, probes, e, q)
    assert np.array_equal(fast[0], real[0]) and np.array_equal(fast[1], real[1])
    assert fast[1].sum() == 2 * 4


def test_the_adapter_evaluates_with_the_exact_decider_and_a_cosine_baseline() -> None:
    rng = np.random.default_rng(6)
    n, people, captures = 24, 12, 4
    centres = rng.normal(size=(people, n))
    samples = np.repeat(centres, captures, axis=0) + 0.15 * rng.normal(size=(people * captures, n))
    data = LabelledVectors(np.repeat(np.arange(people), captures), samples)
    ad = adapter("angular")
    assert ad.decide is decide_exact and ad.baseline_metrics == ("cosine",)
    result = evaluate_adapter("angular", {"dimension": n}, data, [1, 2, 3], enrol_samples=2, crosscheck_trials=10)
    check = result.decode_check
    assert check["disagreements"] == 0 and check["all_trials"]
    assert result.crosscheck == {"checked": 30, "agreed": 30}
    assert result.baselines[0].metric == "cosine"
    assert result.points[0].fnmr <= result.points[-1].fnmr  # fewer non-zeros: more tolerant


@pytest.mark.parametrize("min_cos", [0.0, 0.5])
def test_decider_is_the_sketchs_through_decide_exact(min_cos: float) -> None:
    rng = np.random.default_rng(8)
    sketch = AngularSketch(16, 2, min_cos=min_cos)
    enrolled = _population(sketch, rng.normal(size=(3, 16)))
    probes = rng.normal(size=(5, 16))
    e, q = _all_pairs(3, 5)
    assert np.array_equal(
        decide_exact(sketch, enrolled, probes, e, q)[0], decide_by_decoding(sketch, enrolled, probes, e, q)[0]
    )
