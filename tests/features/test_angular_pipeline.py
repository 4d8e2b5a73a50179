"""The angular pipeline: the 'centre' transform, alpha for the bits asked, min_cos by cross-validation,
decode failures by real decoding, enrol/verify, JSON configuration, and the inputs it accepts and refuses.

Small synthetic populations (34 features, a few dozen people) and a 30-bit codebook, so that real
decoding succeeds on these people and every test runs in well under a second. As in
``test_pipeline.py``, which people a seed draws depends on float algebra (covariance roots, BLAS):
chosen settings are checked against their definitions, rates against tolerances, and genuine
probes are made close on purpose where a decision must be certain.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import hasher
from sketchauth.errors import ParameterError, SampleError, SketchAuthError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.trials import projected_trials
from sketchauth.features.angular import (
    COSINE_GRID,
    DECODE_CHECK_PAIRS,
    AngularPipeline,
    _polar_bits,
    angular_decider,
    decode_failures,
    smallest_alpha,
)
from sketchauth.features.calibrated import CALIBRATED_KINDS, calibrated_pipeline, heldout_check, heldout_table
from sketchauth.features.pipeline import load_pipeline, load_pipelines
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.angular import AngularSketch, codebook_bits

# 32 informative features and 2 that carry only noise; little within-person noise, so that genuine
# probes sit near cos 0.98 and impostors near 0 (the codebook of 30 bits decodes the former).
POP = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.1, between_decay=1.0, seed=5)
# The same model (same seed: same centre and people's spread) with three times the noise.
NOISY = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.3, between_decay=1.0, seed=5)
FEATURES = 34
BITS = 30
TEST_HASH = hasher("test")


@pytest.fixture(scope="module")
def background() -> LabelledVectors:
    return POP.draw(60, 4, seed=1)


@pytest.fixture(scope="module")
def transform(background: LabelledVectors) -> FeatureTransform:
    return FeatureTransform.fit(background, projection="centre", normalise=True)


@pytest.fixture(scope="module")
def pipeline(transform: FeatureTransform, background: LabelledVectors) -> AngularPipeline:
    return AngularPipeline.for_target_fmr(
        transform, background, target_fmr=0.01, enrol_samples=1, security_bits=BITS, refit=True
    )


@pytest.fixture(scope="module")
def raw_pipeline(background: LabelledVectors) -> AngularPipeline:
    """On a centre transform that does not normalise: the background mean projects onto the origin."""
    t = FeatureTransform.fit(background, projection="centre")
    return AngularPipeline(t, np.arange(t.dimensions), alpha=3, min_cos=0.5)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _person(seed: int, captures: int = 3) -> np.ndarray:
    return POP.draw(1, captures, seed=seed).samples


def _close(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """``x`` moved by 0.1 % of its norm: a probe within cos 0.999 of it after the transform."""
    rng = np.random.default_rng(seed)
    return x + 1e-3 * np.linalg.norm(x) / math.sqrt(x.size) * rng.normal(size=x.size)


def _genuine_cosines(transform: FeatureTransform, people: LabelledVectors) -> np.ndarray:
    """cos(probe, template) of every genuine trial (one enrolment capture), computed here with numpy."""
    trials = projected_trials(lambda x: x, people, 1)
    templates = _unit(transform.project(trials.enrolment[:, 0, :]))
    probes = _unit(transform.project(trials.probes))
    return np.einsum("ij,ij->i", templates[trials.owner], probes)


# -- the centre projection ------------------------------------------------------------------------


def test_centre_subtracts_the_background_mean_and_keeps_every_axis(background: LabelledVectors) -> None:
    x = background.samples
    t = FeatureTransform.fit(background, projection="centre")
    assert (t.features, t.dimensions) == (FEATURES, FEATURES)
    assert t.projection_kind == "centre" and not t.normalises
    assert t.training["projection"] == "centre" and t.training["normalise"] is False
    np.testing.assert_allclose(t.mean, x.mean(axis=0), rtol=0, atol=1e-12)
    assert np.array_equal(t.scale, np.ones(FEATURES))
    assert np.array_equal(t.projection, np.eye(FEATURES))  # no rotation, no whitening, axes in their order
    np.testing.assert_allclose(t.project(x), x - x.mean(axis=0), rtol=0, atol=1e-12)
    # The noise-only axes fall below the Fisher ratio 'lda' and 'whiten' select by; they are kept.
    assert np.sum(t.fisher_ratios < 0.05) >= 2

    normalised = FeatureTransform.fit(background, projection="centre", normalise=True)
    units = _unit(x)
    np.testing.assert_allclose(normalised.mean, units.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(normalised.project(x), units - units.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(normalised.project(3.0 * x[0]), normalised.project(x[0]), rtol=0, atol=1e-12)


def test_centre_accepts_constant_and_tied_axes(background: LabelledVectors) -> None:
    x = background.samples.copy()
    x[:, 3] = 0.0  # a ReLU unit that never fires
    x[:, 5] = np.maximum(x[:, 5] - np.median(x[:, 5]), 0.0)  # one that is 0 for half the samples
    data = LabelledVectors(background.identities, x)
    for projection in ("whiten", "lda"):
        with pytest.raises(SketchAuthError):  # the quantising projections refuse such axes
            FeatureTransform.fit(data, projection=projection)
    t = FeatureTransform.fit(data, projection="centre", levels=16)
    assert t.dimensions == FEATURES
    assert np.all(np.diff(t.edges, axis=1) > 0)
    assert np.all(t.project(x)[:, 3] == 0.0)
    assert FeatureTransform.from_json(t.to_json()) == t
    p = AngularPipeline(t, np.arange(FEATURES), alpha=3, min_cos=0.5)
    person = data.samples[data.identities == 0]
    assert p.accepts(person[:1], _close(person[0]))


def test_centre_transform_round_trips_and_refit_keeps_the_projection(transform: FeatureTransform) -> None:
    text = transform.to_json()
    again = FeatureTransform.from_json(text)
    assert again == transform and again.fingerprint == transform.fingerprint
    assert again.projection_kind == "centre" and again.normalises
    assert json.loads(text)["training"]["projection"] == "centre"
    other = POP.draw(30, 4, seed=7)
    refitted = transform.refit(other)
    assert refitted.projection_kind == "centre" and refitted.normalises
    assert refitted.dimensions == FEATURES and np.array_equal(refitted.projection, np.eye(FEATURES))
    np.testing.assert_allclose(refitted.mean, _unit(other.samples).mean(axis=0), rtol=0, atol=1e-12)
    assert not np.allclose(refitted.mean, transform.mean, rtol=0, atol=1e-6)


# -- alpha for the bits asked ----------------------------------------------------------------------


def test_smallest_alpha_exact_values() -> None:
    assert (smallest_alpha(512, 64), smallest_alpha(128, 64), smallest_alpha(192, 64)) == (8, 12, 11)
    assert codebook_bits(192, 10) < 64 <= codebook_bits(192, 11)  # 63.7 and 68.8 bits
    assert (smallest_alpha(32, 20), smallest_alpha(48, 30), smallest_alpha(24, 30)) == (5, 7, 10)
    assert smallest_alpha(34, BITS) == 8 and codebook_bits(34, 7) < BITS <= codebook_bits(34, 8)
    numpy_bits: list[Any] = [np.float32(20), np.int64(20)]
    assert smallest_alpha(2, 2) == 1 and [smallest_alpha(32, b) for b in numpy_bits] == [5, 5]
    for n in (2, 3, 8, 34, 100):
        a = 1
        # |C_alpha| grows with alpha up to about 2n/3: each size asked exactly gets its own alpha,
        # a hair more the next one.
        while a < n - 1 and codebook_bits(n, a + 1) > codebook_bits(n, a):
            bits = codebook_bits(n, a)
            assert smallest_alpha(n, bits) == a
            assert smallest_alpha(n, math.nextafter(bits, math.inf)) == a + 1
            a += 1


@pytest.mark.parametrize("bits", [0, -1, 0.0, math.nan, math.inf, True, "64", None])
def test_smallest_alpha_refuses_a_bad_security_level(bits: Any) -> None:
    with pytest.raises(ParameterError, match="security_bits must be a positive number"):
        smallest_alpha(64, bits)


def test_smallest_alpha_refuses_what_the_dimension_cannot_hold() -> None:
    with pytest.raises(ParameterError, match=r"^24 dimensions hold at most 35\.5 bits of codebook; ask for fewer"):
        smallest_alpha(24, 40)
    with pytest.raises(ParameterError, match=r"^2 dimensions hold at most 2\.0 bits"):
        smallest_alpha(2, 3)
    with pytest.raises(ParameterError, match="at least 2 dimensions"):
        smallest_alpha(1, 1)


def test_for_target_fmr_refuses_more_bits_than_the_dimension_holds(
    transform: FeatureTransform, background: LabelledVectors
) -> None:
    with pytest.raises(ParameterError, match=r"34 dimensions hold at most .* bits of codebook"):
        AngularPipeline.for_target_fmr(transform, background, security_bits=64, enrol_samples=1)
    assert "angular" in CALIBRATED_KINDS
    with pytest.raises(ParameterError, match="ask for fewer security_bits"):
        calibrated_pipeline("angular", transform, background, security_bits=64, enrol_samples=1)


# -- the calibrated pipeline -----------------------------------------------------------------------


def test_for_target_fmr_picks_the_smallest_alpha_and_the_calibrated_cosine(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    sketch = pipeline.sketch
    assert pipeline.kind == "angular" and sketch.scheme_name == "angular"
    assert np.array_equal(pipeline.dims, np.arange(FEATURES)) and sketch.dimension == FEATURES
    assert codebook_bits(FEATURES, sketch.alpha - 1) < BITS <= codebook_bits(FEATURES, sketch.alpha)
    assert pipeline.secret_bits == codebook_bits(FEATURES, sketch.alpha)
    calibration = pipeline.calibration
    assert calibration is not None
    assert calibration.fmr_upper <= 0.01 and calibration.folds == 5 and calibration.target_fmr == 0.01
    assert sketch.min_cos == -float(calibration.point)
    assert np.any(calibration.point == -COSINE_GRID) and 0.0 < sketch.min_cos < 1.0
    # The grid is scanned strictest first: ties in FNMR keep the highest cosine.
    assert calibration.fnmr == 0.0 and sketch.min_cos > 0.9  # genuine cosines sit near 0.98 here
    assert sketch.params() == {"dimension": FEATURES, "alpha": sketch.alpha, "min_cos": sketch.min_cos}
    fewer = AngularPipeline.for_target_fmr(transform, background, target_fmr=0.01, enrol_samples=1, security_bits=20)
    assert fewer.sketch.alpha == smallest_alpha(FEATURES, 20) < sketch.alpha


def test_calibrated_pipeline_builds_the_angular_kind(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    built = calibrated_pipeline(
        "angular", transform, background, target_fmr=0.01, enrol_samples=1, security_bits=BITS, refit=True
    )
    assert isinstance(built, AngularPipeline) and built == pipeline
    assert built.decode_failures is not None and built.decode_failures["checked"] > 0


def test_decode_failures_counts_real_decodes_of_the_trials_within_min_cos(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    measured = pipeline.decode_failures
    assert measured is not None and set(measured) == {"checked", "refused", "share"}
    cosines = _genuine_cosines(transform, background)
    assert measured["checked"] == min(int(np.sum(cosines >= pipeline.sketch.min_cos)), DECODE_CHECK_PAIRS) > 100
    assert 0 <= measured["refused"] <= 0.1 * measured["checked"]
    assert measured["share"] == measured["refused"] / measured["checked"]
    assert pipeline.report().extra["decode_failures"] == measured
    loaded = load_pipeline(pipeline.to_json())
    assert isinstance(loaded, AngularPipeline) and loaded.decode_failures is None  # a measurement, not configuration

    # The count follows the code: alpha = 1 decodes every probe within cos 0.75 of its template, the
    # codebook's largest alpha refuses most probes of noisier people (cosines near 0.7).
    noisy = NOISY.draw(30, 3, seed=4)
    dims = np.arange(FEATURES)
    tolerant = decode_failures(AngularPipeline(transform, dims, alpha=1, min_cos=0.8), noisy, enrol_samples=1)
    assert tolerant["checked"] > 10 and tolerant["refused"] == 0
    strict = decode_failures(AngularPipeline(transform, dims, alpha=22, min_cos=0.0), noisy, enrol_samples=1)
    assert strict["checked"] == 60 and strict["share"] > 0.5
    assert decode_failures(AngularPipeline(transform, dims, alpha=1, min_cos=1.0), noisy, enrol_samples=1) == {
        "checked": 0,
        "refused": 0,
        "share": 0.0,
    }


def test_heldout_check_reports_realised_decode_failures(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    people = POP.draw(30, 4, seed=2)
    options: dict[str, Any] = {"target_fmr": 0.01, "enrol_samples": 1, "refit": True}
    rows = heldout_check(transform, background, people, kinds=["angular"], security_bits=BITS, **options)
    (row,) = rows
    assert row["pipeline"] == "angular" and row["params"] == pipeline.sketch.params()
    realised = row["realised"]
    assert (realised["genuine_trials"], realised["impostor_trials"]) == (90, 90 * 29)
    failures = realised["decode_failures"]
    assert set(failures) == {"checked", "refused", "share"}
    assert failures["checked"] == int(np.sum(_genuine_cosines(transform, people) >= pipeline.sketch.min_cos)) > 45
    assert failures["refused"] <= 0.1 * failures["checked"]
    assert "| angular | 0.01 |" in heldout_table(rows)
    (refused,) = heldout_check(transform, background, people, kinds=["angular"], security_bits=64, **options)
    assert refused["pipeline"] == "angular" and "ask for fewer security_bits" in refused["unavailable"]


# -- enrol / verify ----------------------------------------------------------------------------------


def test_enrol_and_verify_round_trip(pipeline: AngularPipeline) -> None:
    person, stranger = _person(3), _person(4)
    enrolment = pipeline.enrol(person[:1], password_hasher=TEST_HASH)
    assert pipeline.verify(enrolment, _close(person[0]), password_hasher=TEST_HASH)
    assert pipeline.verify(enrolment, person[0], password_hasher=TEST_HASH)
    assert not pipeline.verify(enrolment, stranger[0], password_hasher=TEST_HASH)
    assert not pipeline.verify(enrolment, _close(stranger[0]), password_hasher=TEST_HASH)
    # Several captures: the template is the mean of their directions.
    several = pipeline.enrol(person, password_hasher=TEST_HASH)
    assert pipeline.verify(several, _close(person.mean(axis=0)), password_hasher=TEST_HASH)
    assert not pipeline.verify(several, stranger[1], password_hasher=TEST_HASH)


@pytest.mark.parametrize(
    "shape",
    [
        lambda x: x.tolist(),
        lambda x: tuple(tuple(float(v) for v in row) for row in x),
        lambda x: x.astype(np.float32),
        lambda x: [list(x[0].astype(np.float32))],
    ],
    ids=["lists", "tuples", "float32", "list-of-float32"],
)
def test_natural_inputs_enrol_and_verify(pipeline: AngularPipeline, shape: Callable[[np.ndarray], Any]) -> None:
    person, stranger = _person(5, 2), _person(6, 1)
    enrolment = pipeline.enrol(shape(person[:1]), password_hasher=TEST_HASH)
    probe = _close(person[0])
    for sample in (probe.tolist(), tuple(probe.tolist()), probe.astype(np.float32), shape(probe[None, :])[0]):
        assert pipeline.verify(enrolment, sample, password_hasher=TEST_HASH)
    assert not pipeline.verify(enrolment, shape(stranger)[0], password_hasher=TEST_HASH)
    # Only the direction counts, however large or small the numbers (norms that overflow or underflow too).
    for scale in (1e-200, 1e-3, 1e300):
        assert pipeline.verify(enrolment, probe * scale, password_hasher=TEST_HASH)
    np.testing.assert_allclose(
        pipeline.sample_transform(np.full(FEATURES, 1e308)), pipeline.sample_transform(np.ones(FEATURES)), atol=1e-15
    )
    # One capture given as a flat vector is one enrolment sample.
    flat = pipeline.enrol(person[0].tolist(), password_hasher=TEST_HASH)
    assert pipeline.verify(flat, probe.tolist(), password_hasher=TEST_HASH)


def test_bad_inputs_are_sample_errors_with_clear_messages(pipeline: AngularPipeline) -> None:
    person = _person(3)
    enrolment = pipeline.enrol(person[:1], password_hasher=TEST_HASH)
    nan = person[1].copy()
    nan[7] = np.nan
    refusals: list[tuple[Callable[[], Any], str]] = [
        (lambda: pipeline.sample_transform(nan), "NaN"),
        (lambda: pipeline.verify(enrolment, nan), "NaN"),
        (lambda: pipeline.enrol([person[0], nan]), "NaN"),
        (lambda: pipeline.sample_transform(person[1][:-1]), f"vector of {FEATURES} features, got shape \\(33,\\)"),
        (lambda: pipeline.enrol(person[:, :-1]), f"must have {FEATURES} features"),
        (lambda: pipeline.enrol([]), f"must have {FEATURES} features"),
        (lambda: pipeline.sample_transform(np.zeros(FEATURES)), "zero"),  # nothing to normalise
        (lambda: pipeline.sample_transform(v for v in person[1]), "must be numbers"),
        (lambda: pipeline.sample_transform(["a"] * FEATURES), "must be numbers"),
        (lambda: pipeline.enrol([["a"] * FEATURES]), "must be numbers"),
    ]
    for call, words in refusals:
        with pytest.raises(SampleError, match=words):
            call()


def test_a_sample_at_the_background_mean_has_no_direction(raw_pipeline: AngularPipeline) -> None:
    mean = raw_pipeline.transform.mean
    with pytest.raises(SampleError, match="projects onto the background's centre: it has no direction"):
        raw_pipeline.sample_transform(mean)
    with pytest.raises(SampleError, match="zero vector: it has no direction"):
        raw_pipeline.enrol([mean])
    step = np.zeros(FEATURES)
    step[0] = 1.0
    with pytest.raises(SampleError, match="no direction"):  # two captures whose directions cancel out
        raw_pipeline.enrol([mean + step, mean - step])
    # Huge numbers: the projected norm overflows, the direction is still well defined.
    assert raw_pipeline.accepts([np.full(FEATURES, 1e308)], np.full(FEATURES, 1e307))
    assert raw_pipeline.accepts([mean + step], mean + 1.01 * step)
    assert not raw_pipeline.accepts([mean + step], mean - step)


# -- configuration ----------------------------------------------------------------------------------------


def test_configuration_round_trips_with_a_stable_fingerprint(pipeline: AngularPipeline, tmp_path: Any) -> None:
    text = pipeline.to_json()
    loaded = load_pipeline(text)
    assert isinstance(loaded, AngularPipeline) and loaded == pipeline
    assert loaded.fingerprint == pipeline.fingerprint == load_pipeline(loaded.to_json()).fingerprint
    assert loaded.to_json() == text and loaded.sketch.params() == pipeline.sketch.params()
    assert loaded.calibration is None
    raw = json.loads(text)
    assert (raw["kind"], raw["scheme"], raw["settings"]) == ("angular", "angular", {})
    assert raw["transform"]["training"]["projection"] == "centre"
    assert load_pipeline(raw) == pipeline
    (tmp_path / "faces.json").write_text(text)
    assert load_pipelines(tmp_path) == {"faces": pipeline}
    # An enrolment made with one verifies with the other: the same configuration.
    person = _person(3)
    enrolment = pipeline.enrol(person[:1], password_hasher=TEST_HASH)
    assert loaded.verify(enrolment, _close(person[0]), password_hasher=TEST_HASH)


def _with_params(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is _DROP:
                del raw["params"][key]
            else:
                raw["params"][key] = value

    return change


_DROP = object()
_TAMPERED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "dimension": (_with_params(dimension=FEATURES + 1), "do not match its dims"),
    "dims": (lambda raw: raw.update(dims=list(range(20))), "do not match its dims"),
    "alpha-text": (_with_params(alpha="8"), "alpha"),
    "alpha-zero": (_with_params(alpha=0), "alpha"),
    "alpha-full": (_with_params(alpha=FEATURES), "alpha"),
    "alpha-float": (_with_params(alpha=8.5), "alpha"),
    "alpha-missing": (_with_params(alpha=_DROP), "lacks a required field"),
    "min_cos-high": (_with_params(min_cos=1.5), "min_cos"),
    "min_cos-negative": (_with_params(min_cos=-0.1), "min_cos"),
    "min_cos-bool": (_with_params(min_cos=True), "min_cos"),
    "min_cos-text": (_with_params(min_cos="0.9"), "min_cos"),
    "min_cos-zero-written": (_with_params(min_cos=0.0), "do not match its dims"),
    "extra-parameter": (_with_params(t=3), "do not match its dims"),
    "scheme": (lambda raw: raw.update(scheme="interval"), "scheme does not match its kind"),
    "kind": (lambda raw: raw.update(kind="angle"), "unknown pipeline kind"),
    "params-list": (lambda raw: raw.update(params=[FEATURES, 8]), "must be objects"),
    "transform": (lambda raw: raw["transform"]["mean"].__setitem__(0, 0.5), "fingerprint"),
}


@pytest.mark.parametrize("name", sorted(_TAMPERED))
def test_tampered_configurations_are_refused(pipeline: AngularPipeline, name: str) -> None:
    change, words = _TAMPERED[name]
    raw = json.loads(pipeline.to_json())
    change(raw)
    with pytest.raises(ParameterError, match=words):
        load_pipeline(raw)
    with pytest.raises(ParameterError, match=words):
        load_pipeline(json.dumps(raw))


def test_another_valid_setting_loads_as_another_pipeline(pipeline: AngularPipeline) -> None:
    raw = json.loads(pipeline.to_json())
    raw["params"]["alpha"] = 2
    other = load_pipeline(raw)
    assert other.sketch.params()["alpha"] == 2
    assert other != pipeline and other.fingerprint != pipeline.fingerprint


# -- the calibration's rule against the sketch -----------------------------------------------------------------

ROUNDING = 2e-3  # the fixed-point helper and probe move a cosine by about 1e-3 at most (module docstring)


def _decider_cosines(transform: FeatureTransform, trials: Any) -> np.ndarray:
    """cos(probe, template) of every (template, probe) pair, by the calibration's own rule."""
    decider = angular_decider(transform, np.arange(transform.dimensions), refit=False)
    assert decider.features is not None and decider.score is not None
    templates, probes = decider.features(None, trials)
    j, p = templates.shape[0], probes.shape[0]
    scores = decider.score(None, np.repeat(templates, p, axis=0), np.tile(probes, (j, 1)))
    return -scores.reshape(j, p)


def test_the_deciders_cosine_rule_agrees_with_real_decoding(transform: FeatureTransform) -> None:
    people = NOISY.draw(12, 3, seed=8)
    raw = projected_trials(lambda x: x, people, 1)
    cosines = _decider_cosines(transform, raw)
    genuine = cosines[raw.owner, np.arange(raw.probes.shape[0])]
    assert 0.6 < float(np.median(genuine)) < 0.95  # noisy people: the threshold below cuts through them
    # alpha = 1 decodes every probe within cos 0.75 of its template, so from 0.8 up the sketch's decision
    # is the cosine rule's, up to rounding.
    min_cos = max(0.8, round(float(np.median(genuine)), 3))
    p = AngularPipeline(transform, np.arange(FEATURES), alpha=1, min_cos=min_cos)
    decisive = 0
    for i in range(raw.identities):
        for k in range(raw.probes.shape[0]):
            cos = float(cosines[i, k])
            if (i != raw.owner[k] and cos < min_cos - 0.2) or abs(cos - min_cos) <= ROUNDING:
                continue  # far impostors: a sample of them is enough (below); within rounding: either way
            assert p.accepts(raw.enrolment[i], raw.probes[k]) == (cos >= min_cos), (i, k, cos)
            decisive += 1
    assert decisive >= 20
    assert np.any(genuine >= min_cos + ROUNDING) and np.any(genuine < min_cos - ROUNDING)  # on both sides
    far = [(i, k) for i in range(raw.identities) for k in range(0, raw.probes.shape[0], 5) if i != raw.owner[k]]
    assert not any(p.accepts(raw.enrolment[i], raw.probes[k]) for i, k in far)


def test_what_the_calibrated_sketch_accepts_passes_the_cosine_rule(
    pipeline: AngularPipeline, transform: FeatureTransform
) -> None:
    people = POP.draw(10, 3, seed=9)
    raw = projected_trials(lambda x: x, people, 1)
    cosines = _decider_cosines(transform, raw)
    accepted = 0
    for i in range(raw.identities):
        for k in range(raw.probes.shape[0]):
            if pipeline.accepts(raw.enrolment[i], raw.probes[k]):
                accepted += 1
                assert cosines[i, k] >= pipeline.sketch.min_cos - ROUNDING
    assert accepted >= 15  # most of the 20 genuine trials, no impostor


@settings(max_examples=60, deadline=None)
@given(
    dimension=st.integers(4, 40),
    alpha=st.integers(1, 2),
    min_cos=st.integers(900, 990).map(lambda k: k / 1000),
    offset=st.floats(-0.02, 0.02).filter(lambda d: abs(d) > ROUNDING),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_sketch_accepts_exactly_the_probes_within_min_cos(
    dimension: int, alpha: int, min_cos: float, offset: float, seed: int
) -> None:
    """At the ``min_cos`` boundary (above the codes' guaranteed angle, cos 0.875 for alpha 2) the
    sketch's decision is the cosine rule's: accepted iff cos(probe, template) >= min_cos."""
    rng = np.random.default_rng(seed)
    template = rng.normal(size=dimension)
    t = template / np.linalg.norm(template)
    side = rng.normal(size=dimension)
    side -= (side @ t) * t
    cos = min(min_cos + offset, 1.0)
    probe = (cos * t + math.sqrt(1.0 - cos * cos) * side / np.linalg.norm(side)) * rng.uniform(0.1, 10.0)
    sketch = AngularSketch(dimension=dimension, alpha=alpha, min_cos=min_cos)
    secret = sketch.check_secret(template)
    helper = sketch.encode(secret)
    if cos >= min_cos:
        assert sketch.secret_bytes(sketch.decode(helper, probe)) == sketch.secret_bytes(secret)
    else:
        with pytest.raises(SketchAuthError):
            sketch.decode(helper, probe)


# -- the polar code's bits -----------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [0, -1, 0.0, math.nan, math.inf, True, np.bool_(True), "64", None])
def test_polar_bits_refuse_a_bad_security_level(bits: Any) -> None:
    with pytest.raises(ParameterError, match="security_bits must be a positive number"):
        _polar_bits(64, bits)


def test_polar_bits_accept_numpy_numbers_and_say_what_to_change() -> None:
    assert [_polar_bits(34, b) for b in (np.float32(20), np.int64(20), 19.2, 33)] == [20, 20, 20, 33]
    with pytest.raises(
        ParameterError,
        match=r"^a polar code of 34 bits needs more than 34 dimensions: ask for fewer "
        r"security_bits \(at most 33\) or keep more dimensions$",
    ):
        _polar_bits(34, 33.5)
    with pytest.raises(ParameterError, match="the polar code needs at least 8 dimensions, got 5; keep more dimensions"):
        _polar_bits(5, 2)


def test_for_target_fmr_says_two_dimensions_before_the_code(background: LabelledVectors) -> None:
    one = FeatureTransform.fit(background, levels=4, dimensions=1)
    for code in ("polar", "sparse"):
        with pytest.raises(ParameterError, match="the angular pipeline needs at least 2 dimensions"):
            AngularPipeline.for_target_fmr(one, background, security_bits=1, code=code, enrol_samples=1)


@pytest.mark.parametrize("scheme", ["interval", "angle", None])
def test_a_configuration_of_neither_code_is_refused(pipeline: AngularPipeline, scheme: Any) -> None:
    raw = json.loads(pipeline.to_json())
    raw["scheme"] = scheme
    with pytest.raises(ParameterError, match="scheme does not match its kind"):
        load_pipeline(raw)
