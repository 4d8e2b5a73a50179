"""Round trips of the interval feature pipelines: verification is exactly the tolerance box.

The pipelines map raw (signed, real) embeddings to levels with the fitted transform's own
equal-probability quantiser — every real value has a level in ``[0, L)``, so nothing is out of
range — and hand those integer levels to a sketch without a step (no second quantisation). So for
any raw sample ``y`` with levels ``ℓ = pipeline.sample_transform(y)`` and the enrolled ``b``
(``secret_from_samples``) with tolerances ``v``:

* ``IntervalPipeline``: ``verify(y)`` iff ``|ℓ_j − b_j| < v_j`` for every kept dimension;
* ``AsymmetricIntervalPipeline``: s1 the same with the identity's own ``v``; s2
  ``−v_j ≤ ℓ_j − b_j < v_j`` (s2 also accepts ``b − v``, as its module documents).

The properties draw people and probes (the person's own captures, noisier re-captures and other
people) and check that oracle; the enrolment sample itself always verifies.
"""

from __future__ import annotations

import numpy as np
import pytest
from feature_testing import Background
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import hasher
from sketchauth.evaluate import fitting
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.features.pipeline import AsymmetricIntervalPipeline, IntervalPipeline
from sketchauth.features.transform import FeatureTransform

POP = EmbeddingPopulation(informative=10, useless=2, noise_scale=0.5, seed=8)
#: What the ``transform`` fixture (tests/features/conftest.py) is fitted on here.
BACKGROUND = Background(POP, people=120, captures=4)
PH = hasher("test")


@pytest.fixture(scope="module")
def interval(transform: FeatureTransform) -> IntervalPipeline:
    return fitting.interval.for_target_fmr(transform, POP.draw(60, 4, seed=2), CalibrationOptions(target_fmr=0.05))


def _probes(person: np.ndarray, seed: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noisy = person + scale * rng.standard_normal(person.shape) * person.std()
    stranger = POP.draw(1, 2, seed=10_000 + seed).samples
    return np.vstack([person, noisy, stranger])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(st.integers(0, 10_000), st.floats(0.0, 1.5))
def test_interval_pipeline_accepts_exactly_the_tolerance_box(
    interval: IntervalPipeline, seed: int, scale: float
) -> None:
    person = POP.draw(1, 4, seed=seed).samples
    record = interval.enrol(person[:1], password_hasher=PH)
    b = interval.secret_from_samples(person[:1])
    v = interval.tolerances
    assert interval.verify(record, person[0], password_hasher=PH)
    for y in _probes(person, seed, scale):
        levels = interval.sample_transform(y)
        assert interval.verify(record, y, password_hasher=PH) == bool(np.all(np.abs(levels - b) < v))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(st.sampled_from(["s1", "s2"]), st.integers(0, 10_000), st.floats(0.0, 1.5))
def test_asymmetric_pipeline_accepts_exactly_the_tolerance_box(
    transform: FeatureTransform, scheme: str, seed: int, scale: float
) -> None:
    pipeline = AsymmetricIntervalPipeline(
        transform, range(transform.dimensions), q=6, spread="range", scale=1.0, margin=1, scheme=scheme
    )
    person = POP.draw(1, 5, seed=seed).samples
    captures = person[:3]
    record = pipeline.enrol(captures, password_hasher=PH)
    b, v = pipeline.secret_from_samples(captures)
    for capture in captures:
        # With spread = range every capture is within its tolerance unless v was capped at q.
        levels = pipeline.sample_transform(capture)
        if np.all(np.abs(levels - b) < v):
            assert pipeline.verify(record, capture, password_hasher=PH)
    for y in _probes(person, seed, scale):
        delta = pipeline.sample_transform(y) - b
        inside = (delta >= -v) & (delta < v) if scheme == "s2" else np.abs(delta) < v
        assert pipeline.verify(record, y, password_hasher=PH) == bool(np.all(inside))


def test_both_outcomes_occur(interval: IntervalPipeline) -> None:
    person = POP.draw(1, 4, seed=3).samples
    record = interval.enrol(person[:1], password_hasher=PH)
    outcomes = {interval.verify(record, y, password_hasher=PH) for y in _probes(person, 3, 1.0)}
    assert outcomes == {True, False}
