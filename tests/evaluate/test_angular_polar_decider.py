"""The polar angular sketch's vectorised decider equals real decoding, angle boundary included."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.evaluate.adapters import adapter
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import (
    ANGLE_BAND,
    VECTORISED,
    decide_angular_polar,
    decide_by_decoding,
    decide_exact,
)
from sketchauth.evaluate.error_rates import evaluate_adapter
from sketchauth.evaluate.trials import Enrolled
from sketchauth.sketches.angular import SCALE_BITS, Codeword
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.format import pack_helper


def _population(sketch: PolarAngularSketch, templates: np.ndarray) -> Enrolled:
    secrets = [sketch.check_secret(t) for t in templates]
    helpers = [sketch.encode(s) for s in secrets]
    return Enrolled(tuple(helpers), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets))


def _all_pairs(enrolled: int, probes: int) -> tuple[np.ndarray, np.ndarray]:
    e, q = np.meshgrid(np.arange(enrolled), np.arange(probes), indexing="ij")
    return e.ravel(), q.ravel()


def _same(fast: tuple[np.ndarray, np.ndarray], real: tuple[np.ndarray, np.ndarray]) -> bool:
    return np.array_equal(fast[0], real[0]) and np.array_equal(fast[1], real[1])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(8, 40),
    seed=st.integers(0, 2**32 - 1),
    list_size=st.sampled_from([1, 4, 8, 64]),
    min_cos=st.sampled_from([0.0, 0.3, 0.7, 0.9]),
    crc=st.sampled_from([0, 4, 6]),
)
def test_decider_equals_decoding_on_haar_helpers(n: int, seed: int, list_size: int, min_cos: float, crc: int) -> None:
    """Plain and CRC'd codes: the evaluation's batch decider decides every pair as real ``decode``."""
    rng = np.random.default_rng(seed)
    bits = int(rng.integers(1, min(n, 12)))
    crc = crc if bits + crc < n else 0
    sketch = PolarAngularSketch(n, bits, list_size=list_size, min_cos=min_cos, crc=crc)
    templates = rng.normal(size=(4, n))
    enrolled = _population(sketch, templates)
    # Probes at every distance from each template, the antipodes, and unrelated ones.
    near = [templates[i % 4] + s * rng.normal(size=n) for i, s in enumerate(np.linspace(0, 2, 24))]
    probes = np.vstack([*near, -templates, rng.normal(size=(4, n))])
    e, q = _all_pairs(4, probes.shape[0])
    fast = decide_angular_polar(sketch, enrolled, probes, e, q)
    real = decide_by_decoding(sketch, enrolled, probes, e, q)
    assert _same(fast, real)
    assert fast[0].any()
    assert _same(decide_exact(sketch, enrolled, probes, e, q), real)  # the evaluation's door reaches it


def test_decider_equals_decoding_at_and_beside_the_angle_boundary() -> None:
    """Signed-permutation helpers (exactly orthogonal); each probe's rotation has its codeword's
    signs, so every list decodes that codeword, and its cosine is min_cos's own double (inside the
    float band: the exact comparison decides, here where float64 rounding alone would decide
    otherwise) or a unit of one coordinate above or below (outside the band)."""
    n, bits = 12, 4
    for seed in itertools.count():  # about one base in five: rounding misleads the float comparison
        rng = np.random.default_rng(seed)
        base = rng.integers(2**21, 2**23, size=n)
        base[:2] = [2**21, 2**23 + 7]  # not all equal; the largest has 24 bits (p̂ is z itself)
        total, norm2 = int(base.sum()), int((base.astype(object) ** 2).sum())
        tau = float(total / math.sqrt(n * float(norm2)))
        exact = Fraction(tau) ** 2 * n * norm2 <= total * total
        floats = (2.0**SCALE_BITS * total) ** 2 >= tau**2 * n * float(1 << 28) * float(norm2)
        if floats != exact:
            break
    sketch = PolarAngularSketch(n, bits, list_size=2, min_cos=tau)
    helpers, secrets, canonical, probes, owners, expected = [], [], [], [], [], []
    for identity in range(6):
        matrix = np.zeros((n, n), dtype=np.int64)
        matrix[np.arange(n), rng.permutation(n)] = rng.choice([-1, 1], size=n) * 2**SCALE_BITS
        helpers.append(pack_helper(sketch.scheme_id, sketch.params(), matrix.astype(">i2").tobytes()))
        coded = sketch.code.encode(rng.integers(0, 2, size=bits, dtype=np.uint8))
        secret = (1 - 2 * coded.astype(np.int8)).astype(np.int8).view(Codeword)
        secrets.append(secret)
        canonical.append(sketch.secret_bytes(secret))
        for step in (-1, 0, 1):
            magnitudes = base.copy()
            magnitudes[0] += step  # the smallest coordinate: its growth raises the cosine
            z = secret.astype(np.int64) * magnitudes
            probes.append(matrix.T @ z / 2**SCALE_BITS)
            owners.append(identity)
            total, norm2 = int(magnitudes.sum()), int((magnitudes.astype(object) ** 2).sum())
            accepted = Fraction(sketch.min_cos) ** 2 * n * norm2 <= total * total
            expected.append(accepted)
            lhs, rhs = float(total) ** 2, tau**2 * n * float(norm2)
            assert (abs(lhs - rhs) <= ANGLE_BAND * rhs) == (step == 0)  # only the base is in the band
            if step:
                assert accepted == (step > 0)
    enrolled = Enrolled(tuple(helpers), tuple(canonical), tuple(secrets))
    probes_arr = np.array(probes)
    e, q = _all_pairs(6, len(probes))
    fast = decide_angular_polar(sketch, enrolled, probes_arr, e, q)
    real = decide_by_decoding(sketch, enrolled, probes_arr, e, q)
    assert _same(fast, real)
    own = e == np.array(owners)[q]
    assert np.array_equal(fast[0][own], np.array(expected))
    assert not fast[0][~own].any()


def test_malformed_probes_are_counted_as_decoding_does() -> None:
    rng = np.random.default_rng(4)
    sketch = PolarAngularSketch(8, 2)
    enrolled = _population(sketch, rng.normal(size=(2, 8)))
    good = np.asarray(enrolled.secrets[0].template)
    probes = [good, np.full(8, np.nan), np.zeros(8), good[:7], [True] * 8, good + 0.01]
    e, q = _all_pairs(2, len(probes))
    fast = decide_exact(sketch, enrolled, probes, e, q)
    real = decide_by_decoding(sketch, enrolled, probes, e, q)
    assert _same(fast, real)
    assert fast[1].sum() == 2 * 4
    assert _same(decide_angular_polar(sketch, enrolled, probes, e[:0], q[:0]), (np.zeros(0, bool), np.zeros(0, bool)))


def test_the_adapter_evaluates_with_the_exact_decider_and_a_cosine_baseline() -> None:
    rng = np.random.default_rng(6)
    n, people, captures = 24, 12, 4
    centres = rng.normal(size=(people, n))
    samples = np.repeat(centres, captures, axis=0) + 0.25 * rng.normal(size=(people * captures, n))
    data = LabelledVectors(np.repeat(np.arange(people), captures), samples)
    ad = adapter("angular-polar")
    assert ad.decide is decide_exact and ad.baseline_metrics == ("cosine",)
    assert decide_angular_polar in VECTORISED
    result = evaluate_adapter(
        "angular-polar", {"dimension": n, "list_size": 4}, data, [2, 6, 12], enrol_samples=2, crosscheck_trials=10
    )
    check = result.decode_check
    assert check["disagreements"] == 0 and check["all_trials"]
    assert result.crosscheck == {"checked": 30, "agreed": 30}
    assert result.baselines[0].metric == "cosine"
    assert result.points[0].fnmr <= result.points[-1].fnmr  # fewer information bits: more tolerant


@pytest.mark.parametrize(("list_size", "min_cos"), [(1, 0.0), (8, 0.0), (8, 0.5)])
def test_decider_is_the_sketchs_through_decide_exact(list_size: int, min_cos: float) -> None:
    rng = np.random.default_rng(8)
    sketch = PolarAngularSketch(16, 3, list_size=list_size, min_cos=min_cos)
    enrolled = _population(sketch, rng.normal(size=(3, 16)))
    templates = np.array([np.asarray(s.template) for s in enrolled.secrets])
    probes = np.vstack([templates + 0.3 * rng.normal(size=(3, 16)), rng.normal(size=(5, 16))])
    e, q = _all_pairs(3, len(probes))
    exact = decide_exact(sketch, enrolled, probes, e, q)
    assert _same(exact, decide_by_decoding(sketch, enrolled, probes, e, q))
    assert exact[0].any()
