"""The angular pipeline: the 'centre' transform, the code for the bits asked (polar: ``bits``, the
default; sparse: IronMask's ``alpha``), min_cos by cross-validation, decode failures by real
decoding, enrol/verify, JSON configuration, and the inputs it accepts and refuses.

What both codes share runs for both (the ``pipeline`` fixture is parametrised over them); what
belongs to one code (``smallest_alpha``; ``bits = ⌈security_bits⌉``, or :func:`matched_bits`)
is tested on its own. Small synthetic populations (34 features, a few dozen people) and
security_bits 24 (polar; by default the code is matched to the cosine threshold and takes up to
33 bits) and 30 (sparse), so that real decoding succeeds on these people and every test runs in
about a second. As in ``test_pipeline.py``, which people a seed draws depends on float algebra (covariance roots, BLAS):
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
from feature_testing import Background
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import hasher
from sketchauth.errors import ParameterError, SampleError, SketchAuthError
from sketchauth.evaluate import fitting
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting import CALIBRATED_KINDS, fit_pipeline
from sketchauth.evaluate.fitting.angular import (
    COSINE_GRID,
    DECODE_CHECK_PAIRS,
    DECODE_FLOOR,
    _polar_bits,
    angular_decider,
    decode_failures,
    matched_bits,
    smallest_alpha,
)
from sketchauth.evaluate.fitting.calibrated import heldout_check, heldout_table
from sketchauth.evaluate.fitting.calibration import calibrate
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform, refit_transform
from sketchauth.evaluate.trials import projected_trials
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.pipeline import load_pipeline, load_pipelines
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.angular import AngularSketch, codebook_bits
from sketchauth.sketches.angular_polar import PolarAngularSketch

# 32 informative features and 2 that carry only noise; little within-person noise, so that genuine
# probes sit near cos 0.98 and impostors near 0 (both codebooks decode the former).
POP = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.1, between_decay=1.0, seed=5)
# The same model (same seed: same centre and people's spread) with three times the noise.
#: What the ``background`` and ``transform`` fixtures (tests/features/conftest.py) draw and fit here.
BACKGROUND = Background(POP, people=60, captures=4, fit={"projection": "centre", "normalise": True})
NOISY = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.3, between_decay=1.0, seed=5)
FEATURES = 34
BITS = 30  # the sparse code's security_bits (alpha 8 in 34 dimensions)
POLAR_BITS = 24  # the polar code's security_bits: at least 24 information bits of a length-34 code
CODES = ("polar", "sparse")
SECURITY = {"polar": POLAR_BITS, "sparse": BITS}
SCHEMES = {"polar": "angular-polar", "sparse": "angular"}
TEST_HASH = hasher("test")


def _shape(code: str, *, bits: int = 8, alpha: int = 3) -> dict[str, int]:
    """The code's own constructor argument: ``bits`` of the polar code or ``alpha`` of the sparse one."""
    return {"bits": bits} if code == "polar" else {"alpha": alpha}


def _code(pipeline: AngularPipeline) -> str:
    return "polar" if isinstance(pipeline.sketch, PolarAngularSketch) else "sparse"


def _calibrated(transform: FeatureTransform, background: LabelledVectors, code: str) -> AngularPipeline:
    return fitting.angular.for_target_fmr(
        transform,
        background,
        CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=SECURITY[code], code=code, refit=True),
    )


@pytest.fixture(scope="module", params=CODES)
def pipeline(
    request: pytest.FixtureRequest, transform: FeatureTransform, background: LabelledVectors
) -> AngularPipeline:
    """Calibrated with each code in turn."""
    return _calibrated(transform, background, request.param)


@pytest.fixture(scope="module")
def sparse_pipeline(transform: FeatureTransform, background: LabelledVectors) -> AngularPipeline:
    return _calibrated(transform, background, "sparse")


@pytest.fixture(scope="module")
def polar_pipeline(transform: FeatureTransform, background: LabelledVectors) -> AngularPipeline:
    return _calibrated(transform, background, "polar")


@pytest.fixture(scope="module", params=CODES)
def raw_pipeline(request: pytest.FixtureRequest, background: LabelledVectors) -> AngularPipeline:
    """On a centre transform that does not normalise: the background mean projects onto the origin."""
    t = fit_transform(background, projection="centre")
    return AngularPipeline(t, np.arange(t.dimensions), min_cos=0.5, **_shape(request.param))


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
    t = fit_transform(background, projection="centre")
    assert (t.features, t.dimensions) == (FEATURES, FEATURES)
    assert t.projection_kind == "centre" and not t.normalises
    assert t.training["projection"] == "centre" and t.training["normalise"] is False
    np.testing.assert_allclose(t.mean, x.mean(axis=0), rtol=0, atol=1e-12)
    assert np.array_equal(t.scale, np.ones(FEATURES))
    assert np.array_equal(t.projection, np.eye(FEATURES))  # no rotation, no whitening, axes in their order
    np.testing.assert_allclose(t.project(x), x - x.mean(axis=0), rtol=0, atol=1e-12)
    # The noise-only axes fall below the Fisher ratio 'lda' and 'whiten' select by; they are kept.
    assert np.sum(t.fisher_ratios < 0.05) >= 2

    normalised = fit_transform(background, projection="centre", normalise=True)
    units = _unit(x)
    np.testing.assert_allclose(normalised.mean, units.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(normalised.project(x), units - units.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(normalised.project(3.0 * x[0]), normalised.project(x[0]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("code", CODES)
def test_centre_accepts_constant_and_tied_axes(background: LabelledVectors, code: str) -> None:
    x = background.samples.copy()
    x[:, 3] = 0.0  # a ReLU unit that never fires
    x[:, 5] = np.maximum(x[:, 5] - np.median(x[:, 5]), 0.0)  # one that is 0 for half the samples
    data = LabelledVectors(background.identities, x)
    for projection in ("whiten", "lda"):
        with pytest.raises(SketchAuthError):  # the quantising projections refuse such axes
            fit_transform(data, projection=projection)
    t = fit_transform(data, projection="centre", levels=16)
    assert t.dimensions == FEATURES
    assert np.all(np.diff(t.edges, axis=1) > 0)
    assert np.all(t.project(x)[:, 3] == 0.0)
    assert FeatureTransform.from_json(t.to_json()) == t
    p = AngularPipeline(t, np.arange(FEATURES), min_cos=0.5, **_shape(code))
    person = data.samples[data.identities == 0]
    assert p.accepts(person[:1], _close(person[0]))


def test_centre_refuses_dimensions_and_selects_nothing_by_fisher_ratio(background: LabelledVectors) -> None:
    for dimensions in (1, 10, FEATURES):
        with pytest.raises(
            ParameterError, match=r"projection 'centre' keeps every axis.*drop dimensions \(--dimensions\)"
        ):
            fit_transform(background, projection="centre", dimensions=dimensions)
    # min_fisher_ratio is checked and recorded, and drops no axis (the noise-only axes stay).
    strict = fit_transform(background, projection="centre", min_fisher_ratio=100.0)
    assert strict.dimensions == FEATURES and strict.training["min_fisher_ratio"] == 100.0
    refitted = refit_transform(strict, POP.draw(30, 4, seed=7))  # a refit passes no dimensions either
    assert refitted.dimensions == FEATURES and refitted.training["min_fisher_ratio"] == 100.0
    with pytest.raises(ParameterError, match="min_fisher_ratio"):
        fit_transform(background, projection="centre", min_fisher_ratio=-1.0)


def test_centre_transform_round_trips_and_refit_keeps_the_projection(transform: FeatureTransform) -> None:
    text = transform.to_json()
    again = FeatureTransform.from_json(text)
    assert again == transform and again.fingerprint == transform.fingerprint
    assert again.projection_kind == "centre" and again.normalises
    assert json.loads(text)["training"]["projection"] == "centre"
    other = POP.draw(30, 4, seed=7)
    refitted = refit_transform(transform, other)
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


_TOO_MANY = {
    "polar": r"^a polar code of 64 bits needs more than 34 dimensions: ask for fewer security_bits \(at most 33\)",
    "sparse": r"^34 dimensions hold at most .* bits of codebook; ask for fewer security_bits",
}


@pytest.mark.parametrize("code", CODES)
def test_for_target_fmr_refuses_more_bits_than_the_dimension_holds(
    transform: FeatureTransform, background: LabelledVectors, code: str
) -> None:
    with pytest.raises(ParameterError, match=_TOO_MANY[code]):
        fitting.angular.for_target_fmr(
            transform, background, CalibrationOptions(security_bits=64, code=code, enrol_samples=1)
        )
    assert "angular" in CALIBRATED_KINDS
    with pytest.raises(ParameterError, match=_TOO_MANY[code]):
        fit_pipeline("angular", transform, background, CalibrationOptions(security_bits=64, code=code, enrol_samples=1))


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("bits", [0, -1, math.nan, True, "64", None])
def test_for_target_fmr_refuses_a_bad_security_level(
    transform: FeatureTransform, background: LabelledVectors, code: str, bits: Any
) -> None:
    with pytest.raises(ParameterError, match="security_bits must be a positive number"):
        fitting.angular.for_target_fmr(
            transform, background, CalibrationOptions(security_bits=bits, code=code, enrol_samples=1)
        )


# -- the polar code: bits = ceil(security_bits), the default --------------------------------------


def test_polar_bits_are_the_security_bits_rounded_up(
    polar_pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    options = CalibrationOptions(target_fmr=0.01, enrol_samples=1, refit=True, match_threshold=False)
    plain = fitting.angular.for_target_fmr(transform, background, options.but(security_bits=POLAR_BITS))
    sketch = plain.sketch
    assert isinstance(sketch, PolarAngularSketch) and sketch.scheme_name == "angular-polar"
    assert (sketch.dimension, sketch.bits, sketch.list_size) == (FEATURES, POLAR_BITS, DEFAULTS.angular_list_size)
    assert plain.secret_bits == POLAR_BITS == plain.report().extra["codebook_bits"]
    expected = {"dimension": FEATURES, "bits": POLAR_BITS, "list_size": 128, "min_cos": sketch.min_cos}
    if POLAR_BITS + DEFAULTS.angular_crc < FEATURES:  # the CRC where the dimension holds it
        expected["crc"] = DEFAULTS.angular_crc
    assert sketch.params() == expected
    other = fitting.angular.for_target_fmr(transform, background, options.but(security_bits=12.2, list_size=4))
    assert isinstance(other.sketch, PolarAngularSketch) and (other.sketch.bits, other.sketch.list_size) == (13, 4)
    assert other.secret_bits == 13
    # The most the dimension holds: 33 information bits in 34 dimensions.
    most = fitting.angular.for_target_fmr(transform, background, options.but(security_bits=33))
    assert most.sketch.params()["bits"] == 33
    with pytest.raises(ParameterError, match="ask for fewer security_bits \\(at most 33\\) or keep more dimensions"):
        fitting.angular.for_target_fmr(transform, background, CalibrationOptions(security_bits=33.01, enrol_samples=1))


def test_polar_bits_follow_the_cosine_threshold_by_default(
    polar_pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    """With ``match_threshold`` (the default) the code takes :func:`matched_bits` at the cosine
    rule's threshold, never fewer than ``⌈security_bits⌉``: here genuine cosines sit near 0.98,
    far above what 24 bits need, so the code takes all the dimension holds."""
    assert DEFAULTS.angular_match_threshold is True
    rule = calibrate(
        angular_decider(transform, polar_pipeline.dims, refit=True), background, target_fmr=0.01, enrol_samples=1
    )
    expected = matched_bits(FEATURES, -float(rule.point), POLAR_BITS)
    assert polar_pipeline.sketch.params()["bits"] == expected == FEATURES - 1 > POLAR_BITS
    assert polar_pipeline.secret_bits == expected
    assert matched_bits(FEATURES, 0.3, POLAR_BITS) == POLAR_BITS  # a low threshold keeps the floor
    # The sparse code is not resized.
    sparse = fitting.angular.for_target_fmr(
        transform, background, CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=BITS, code="sparse")
    )
    assert sparse.sketch.params()["alpha"] == smallest_alpha(FEATURES, BITS)


def test_the_default_code_is_polar(transform: FeatureTransform, background: LabelledVectors) -> None:
    assert DEFAULTS.angular_code == "polar" and DEFAULTS.angular_list_size == 128 and DEFAULTS.angular_crc == 6
    default = fitting.angular.for_target_fmr(
        transform, background, CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=20)
    )
    assert isinstance(default.sketch, PolarAngularSketch) and 20 <= default.sketch.bits < FEATURES
    built = fit_pipeline(
        "angular", transform, background, CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=20)
    )
    assert built == default and json.loads(built.to_json())["scheme"] == "angular-polar"


def test_an_unknown_code_is_refused(transform: FeatureTransform, background: LabelledVectors) -> None:
    with pytest.raises(ParameterError, match=r"^code must be one of polar, sparse, got 'bogus'$"):
        fitting.angular.for_target_fmr(
            transform, background, CalibrationOptions(code="bogus", security_bits=20, enrol_samples=1)
        )
    with pytest.raises(ParameterError, match="code must be one of polar, sparse"):
        fit_pipeline(
            "angular", transform, background, CalibrationOptions(code="bogus", security_bits=20, enrol_samples=1)
        )


def test_the_constructor_takes_exactly_one_code(transform: FeatureTransform) -> None:
    dims = np.arange(FEATURES)
    for shape in ({}, {"bits": 8, "alpha": 3}):
        with pytest.raises(ParameterError, match="give bits \\(the polar code\\) or alpha"):
            AngularPipeline(transform, dims, min_cos=0.5, **shape)
    assert AngularPipeline(transform, dims, min_cos=0.5, bits=8).sketch.scheme_name == "angular-polar"
    assert AngularPipeline(transform, dims, min_cos=0.5, alpha=3).sketch.scheme_name == "angular"
    with pytest.raises(ParameterError, match="list_size"):
        AngularPipeline(transform, dims, min_cos=0.5, bits=8, list_size=0)
    with pytest.raises(ParameterError, match="bits"):
        AngularPipeline(transform, dims, min_cos=0.5, bits=FEATURES)


# -- the calibrated pipeline -----------------------------------------------------------------------


def test_for_target_fmr_picks_the_calibrated_cosine(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    sketch = pipeline.sketch
    assert pipeline.kind == "angular" and sketch.scheme_name == SCHEMES[_code(pipeline)]
    assert np.array_equal(pipeline.dims, np.arange(FEATURES)) and sketch.dimension == FEATURES
    calibration = pipeline.calibration
    assert calibration is not None
    assert calibration.fmr_upper <= 0.01 and calibration.folds == 5 and calibration.target_fmr == 0.01
    assert sketch.min_cos == -float(calibration.point)
    assert np.any(calibration.point == -COSINE_GRID) and 0.0 < sketch.min_cos < 1.0
    assert calibration.fnmr == 0.0
    # The cosine rule alone keeps the highest cosine among ties in FNMR (genuine cosines sit near
    # 0.98 here). The code only refuses more, so the decoding-aware calibration looks at most
    # DECODE_FLOOR below that threshold and, among ties, uses the FMR budget (the loosest).
    options: dict[str, Any] = {"target_fmr": 0.01, "enrol_samples": 1}
    cosine = calibrate(angular_decider(transform, pipeline.dims, refit=True), background, **options)
    rule = -float(cosine.point)
    assert cosine.fnmr == 0.0 and rule > 0.9
    assert rule - DECODE_FLOOR - 1e-9 <= sketch.min_cos <= rule


def test_for_target_fmr_picks_the_smallest_alpha_for_the_sparse_code(
    sparse_pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    sketch = sparse_pipeline.sketch
    assert type(sketch) is AngularSketch and sketch.scheme_name == "angular"
    assert codebook_bits(FEATURES, sketch.alpha - 1) < BITS <= codebook_bits(FEATURES, sketch.alpha)
    assert sparse_pipeline.secret_bits == codebook_bits(FEATURES, sketch.alpha)
    assert sketch.params() == {"dimension": FEATURES, "alpha": sketch.alpha, "min_cos": sketch.min_cos}
    fewer = fitting.angular.for_target_fmr(
        transform, background, CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=20, code="sparse")
    )
    assert fewer.sketch.alpha == smallest_alpha(FEATURES, 20) < sketch.alpha


def test_calibrated_pipeline_builds_the_angular_kind(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    code = _code(pipeline)
    built = fit_pipeline(
        "angular",
        transform,
        background,
        CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=SECURITY[code], code=code, refit=True),
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


# The count follows the code. Tolerant: alpha = 1 decodes every probe within cos 0.75 of its template;
# one polar information bit (codewords +-c) decodes every probe on the template's side. Strict: the
# sparse codebook's largest alpha, or 33 polar bits in 34 dimensions (capacity cos 0.86), refuses
# most probes of noisier people (cosines near 0.7).
_TOLERANT = {"polar": {"bits": 1}, "sparse": {"alpha": 1}}
_STRICT = {"polar": {"bits": 33}, "sparse": {"alpha": 22}}


@pytest.mark.parametrize("code", CODES)
def test_decode_failures_follow_the_code(transform: FeatureTransform, code: str) -> None:
    noisy = NOISY.draw(30, 3, seed=4)
    dims = np.arange(FEATURES)
    tolerant = decode_failures(AngularPipeline(transform, dims, min_cos=0.8, **_TOLERANT[code]), noisy, enrol_samples=1)
    assert tolerant["checked"] > 10 and tolerant["refused"] == 0
    strict = decode_failures(AngularPipeline(transform, dims, min_cos=0.0, **_STRICT[code]), noisy, enrol_samples=1)
    assert strict["checked"] == 60 and strict["share"] > 0.25  # about 0.55 (polar) and 0.98 (sparse) measured
    never = AngularPipeline(transform, dims, min_cos=1.0, **_TOLERANT[code])
    assert decode_failures(never, noisy, enrol_samples=1) == {"checked": 0, "refused": 0, "share": 0.0}


def test_heldout_check_reports_realised_decode_failures(
    pipeline: AngularPipeline, transform: FeatureTransform, background: LabelledVectors
) -> None:
    people = POP.draw(30, 4, seed=2)
    code = _code(pipeline)
    options = CalibrationOptions(target_fmr=0.01, enrol_samples=1, refit=True, code=code)
    rows = heldout_check(
        transform, background, people, kinds=["angular"], options=options.but(security_bits=SECURITY[code])
    )
    (row,) = rows
    assert row["pipeline"] == "angular" and row["params"] == pipeline.sketch.params()
    realised = row["realised"]
    assert (realised["genuine_trials"], realised["impostor_trials"]) == (90, 90 * 29)
    failures = realised["decode_failures"]
    assert set(failures) == {"checked", "refused", "share"}
    assert failures["checked"] == int(np.sum(_genuine_cosines(transform, people) >= pipeline.sketch.min_cos)) > 45
    assert failures["refused"] <= 0.1 * failures["checked"]
    assert "| angular | 0.01 |" in heldout_table(rows)
    (refused,) = heldout_check(transform, background, people, kinds=["angular"], options=options.but(security_bits=64))
    assert refused["pipeline"] == "angular" and "ask for fewer security_bits" in refused["unavailable"]
    assert set(refused) == {"pipeline", "unavailable"}


def test_the_report_describes_the_angular_case(pipeline: AngularPipeline, background: LabelledVectors) -> None:
    report = pipeline.report()
    text = "\n".join(report.notes)
    assert "whitened" not in text and "uniform levels" not in text and "levels" not in text
    assert "remaining_bits_if_uniform" not in report.extra
    sketch = pipeline.sketch
    code = (
        f"a polar code of {sketch.params().get('bits')} information bits (list decoder, 128 paths"
        + (f", {sketch.params()['crc']}-bit CRC)" if sketch.params().get("crc") else ")")
        if _code(pipeline) == "polar"
        else f"IronMask's sparse code of weight alpha = {sketch.alpha}"
    )
    assert f"secret: the codeword of {code}, {pipeline.secret_bits:.1f} bits of codebook" in report.notes
    assert "34 dimensions of a centre transform (the background mean subtracted, every vector normalised first)" in text
    assert f"cos(probe, template) >= {sketch.min_cos:g}" in text
    failures = pipeline.decode_failures
    assert failures is not None and report.extra["decode_failures"] == failures
    assert f"real decoding refused {failures['refused']} of {failures['checked']} background genuine trials" in text
    assert report.extra["secret_bits"] == pipeline.secret_bits and report.extra["pipeline"] == "angular"
    assert report.extra["transform"] == pipeline.transform.fingerprint
    assert report.extra["codebook_bits"] == sketch.report().extra["codebook_bits"]
    assert report.loss_bound_bits == sketch.report().loss_bound_bits
    # A loaded configuration carries no measurement, and says so.
    loaded = load_pipeline(pipeline.to_json()).report()
    assert "decode_failures" not in loaded.extra and "decode failures not measured here" in "\n".join(loaded.notes)
    # Another transform is named as such.
    lda = fit_transform(background, levels=4, dimensions=20)
    other = AngularPipeline(lda, np.arange(20), min_cos=0.5, **_shape(_code(pipeline))).report()
    assert "20 dimensions of a 'lda' transform fitted" in "\n".join(other.notes)


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
    cancel = r"^the captures' directions cancel out \(their mean is the zero vector\): enrol from other captures$"
    for captures in (
        [mean + step, mean - step],
        [mean + step, mean - 3 * step],
        [mean + step, mean - step, mean + np.roll(step, 1), mean - np.roll(step, 1)],
    ):
        with pytest.raises(SampleError, match=cancel):
            raw_pipeline.enrol(captures)
    with pytest.raises(SampleError, match="the zero vector: it has no direction"):  # one capture without a direction
        raw_pipeline.enrol([mean + step, mean])
    # Directions that nearly cancel still have one: the template is their mean's.
    assert raw_pipeline.accepts([mean + step, mean - step + 0.1 * np.roll(step, 1)], mean + np.roll(step, 1))
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
    per_k = {"captures_min_cos": {str(k): v for k, v in pipeline.captures_min_cos.items()}}
    assert (raw["kind"], raw["scheme"], raw["settings"]) == ("angular", SCHEMES[_code(pipeline)], per_k)
    assert loaded.captures_min_cos == pipeline.captures_min_cos and set(per_k["captures_min_cos"]) == {"2", "3"}
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
# What every angular configuration must hold, whichever the code.
_SHARED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "dimension": (_with_params(dimension=FEATURES + 1), "do not match its dims"),
    "min_cos-high": (_with_params(min_cos=1.5), "min_cos"),
    "min_cos-negative": (_with_params(min_cos=-0.1), "min_cos"),
    "min_cos-bool": (_with_params(min_cos=True), "min_cos"),
    "min_cos-text": (_with_params(min_cos="0.9"), "min_cos"),
    "min_cos-zero-written": (_with_params(min_cos=0.0), "do not match its dims"),
    "extra-parameter": (_with_params(t=3), "do not match its dims"),
    "scheme-other": (lambda raw: raw.update(scheme="interval"), "scheme does not match its kind"),
    "scheme-missing": (lambda raw: raw.pop("scheme"), "scheme does not match its kind"),
    "kind": (lambda raw: raw.update(kind="angle"), "unknown pipeline kind"),
    "params-list": (lambda raw: raw.update(params=[FEATURES, 8]), "must be objects"),
    "transform": (lambda raw: raw["transform"]["mean"].__setitem__(0, 0.5), "fingerprint"),
}
# Each code's own parameters, and the other code's scheme written over it.
_BY_CODE: dict[str, dict[str, tuple[Callable[[dict[str, Any]], None], str]]] = {
    "sparse": {
        "dims": (lambda raw: raw.update(dims=list(range(20))), "do not match its dims"),
        "alpha-text": (_with_params(alpha="8"), "alpha"),
        "alpha-zero": (_with_params(alpha=0), "alpha"),
        "alpha-full": (_with_params(alpha=FEATURES), "alpha"),
        "alpha-float": (_with_params(alpha=8.5), "alpha"),
        "alpha-missing": (_with_params(alpha=_DROP), "lacks a required field"),
        "bits-added": (_with_params(bits=8), "do not match its dims"),
        "scheme-polar": (lambda raw: raw.update(scheme="angular-polar"), "lacks a required field"),
    },
    "polar": {
        # 20 dims: the code's bits (24 or more) no longer fit below the dimension.
        "dims": (lambda raw: raw.update(dims=list(range(20))), r"bits must be in \[1, 19\], got \d+"),
        "bits-text": (_with_params(bits="24"), "bits"),
        "bits-zero": (_with_params(bits=0), "bits"),
        "bits-full": (_with_params(bits=FEATURES), "bits"),
        "bits-float": (_with_params(bits=24.5), "bits"),
        "bits-missing": (_with_params(bits=_DROP), "lacks a required field"),
        "list_size-zero": (_with_params(list_size=0), "list_size"),
        "list_size-large": (_with_params(list_size=129), "list_size"),
        "list_size-text": (_with_params(list_size="8"), "list_size"),
        "list_size-bool": (_with_params(list_size=True), "list_size"),
        "list_size-missing": (_with_params(list_size=_DROP), "lacks a required field"),
        "alpha-added": (_with_params(alpha=8), "do not match its dims"),
        "scheme-sparse": (lambda raw: raw.update(scheme="angular"), "lacks a required field"),
    },
}
_CASES = [(code, name) for code in CODES for name in (*_SHARED, *_BY_CODE[code])]


@pytest.mark.parametrize(("pipeline", "name"), _CASES, indirect=["pipeline"], ids=[f"{c}-{n}" for c, n in _CASES])
def test_tampered_configurations_are_refused(pipeline: AngularPipeline, name: str) -> None:
    change, words = {**_SHARED, **_BY_CODE[_code(pipeline)]}[name]
    raw = json.loads(pipeline.to_json())
    change(raw)
    with pytest.raises(ParameterError, match=words):
        load_pipeline(raw)
    with pytest.raises(ParameterError, match=words):
        load_pipeline(json.dumps(raw))


_OTHER_SETTINGS = [("sparse", {"alpha": 2}), ("polar", {"bits": 10}), ("polar", {"list_size": 4})]


@pytest.mark.parametrize(
    ("pipeline", "change"), _OTHER_SETTINGS, indirect=["pipeline"], ids=["alpha", "bits", "list_size"]
)
def test_another_valid_setting_loads_as_another_pipeline(pipeline: AngularPipeline, change: dict[str, int]) -> None:
    raw = json.loads(pipeline.to_json())
    raw["params"].update(change)
    other = load_pipeline(raw)
    assert isinstance(other, AngularPipeline) and _code(other) == _code(pipeline)
    assert {k: other.sketch.params()[k] for k in change} == change
    assert other != pipeline and other.fingerprint != pipeline.fingerprint
    # A close probe still decodes with the other setting.
    person = _person(3)
    assert other.accepts(person[:1], _close(person[0]))


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


@pytest.mark.parametrize("code", CODES)
def test_the_deciders_cosine_rule_agrees_with_real_decoding(transform: FeatureTransform, code: str) -> None:
    people = NOISY.draw(12, 3, seed=8)
    raw = projected_trials(lambda x: x, people, 1)
    cosines = _decider_cosines(transform, raw)
    genuine = cosines[raw.owner, np.arange(raw.probes.shape[0])]
    assert 0.6 < float(np.median(genuine)) < 0.95  # noisy people: the threshold below cuts through them
    # alpha = 1 decodes every probe within cos 0.75 of its template, one polar bit every probe on the
    # template's side, so from 0.8 up the sketch's decision is the cosine rule's, up to rounding.
    min_cos = max(0.8, round(float(np.median(genuine)), 3))
    p = AngularPipeline(transform, np.arange(FEATURES), min_cos=min_cos, **_TOLERANT[code])
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
    one = fit_transform(background, levels=4, dimensions=1)
    for code in ("polar", "sparse"):
        with pytest.raises(ParameterError, match="the angular pipeline needs at least 2 dimensions"):
            fitting.angular.for_target_fmr(
                one, background, CalibrationOptions(security_bits=1, code=code, enrol_samples=1)
            )


@pytest.mark.parametrize("scheme", ["interval", "angle", None])
def test_a_configuration_of_neither_code_is_refused(pipeline: AngularPipeline, scheme: Any) -> None:
    raw = json.loads(pipeline.to_json())
    raw["scheme"] = scheme
    with pytest.raises(ParameterError, match="scheme does not match its kind"):
        load_pipeline(raw)


@settings(max_examples=40, deadline=None)
@given(
    dimension=st.integers(8, 40),
    bits=st.integers(1, 2),
    min_cos=st.integers(900, 990).map(lambda k: k / 1000),
    offset=st.floats(-0.02, 0.02).filter(lambda d: abs(d) > ROUNDING),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_polar_sketch_accepts_exactly_the_probes_within_min_cos(
    dimension: int, bits: int, min_cos: float, offset: float, seed: int
) -> None:
    """The same for the polar code with at most 4 codewords (the list of 8 keeps them all)."""
    rng = np.random.default_rng(seed)
    template = rng.normal(size=dimension)
    t = template / np.linalg.norm(template)
    side = rng.normal(size=dimension)
    side -= (side @ t) * t
    cos = min(min_cos + offset, 1.0)
    probe = (cos * t + math.sqrt(1.0 - cos * cos) * side / np.linalg.norm(side)) * rng.uniform(0.1, 10.0)
    sketch = PolarAngularSketch(dimension=dimension, bits=bits, min_cos=min_cos)
    secret = sketch.check_secret(template)
    helper = sketch.encode(secret)
    if cos >= min_cos:
        assert sketch.secret_bytes(sketch.decode(helper, probe)) == sketch.secret_bytes(secret)
    else:
        with pytest.raises(SketchAuthError):
            sketch.decode(helper, probe)


@pytest.mark.parametrize("code", CODES)
def test_the_indexed_pair_score_is_the_score_of_the_gathered_pairs(
    code: str, transform: FeatureTransform, background: LabelledVectors
) -> None:
    """``pair_score`` (the cosines of a chunk of pairs by one matrix product, rows gathered only for the
    pairs the code decodes) equals ``score`` on the gathered rows, the code's refusals included."""
    dims = np.arange(transform.dimensions)
    sketch = AngularPipeline(transform, dims, min_cos=0.0, **_shape(code, bits=24, alpha=8)).sketch
    gathered, indexed = (angular_decider(transform, dims, refit=False, sketch=sketch, floor=0.0) for _ in range(2))
    assert gathered.score is not None and indexed.pair_score is not None
    templates, probes = gathered.features(None, projected_trials(lambda x: x, background, 1))
    t_idx, p_idx = np.divmod(np.arange(templates.shape[0] * probes.shape[0]), probes.shape[0])
    expected = gathered.score(None, templates[t_idx], probes[p_idx])
    got = indexed.pair_score(None, templates, probes, t_idx, p_idx)
    refused = np.isinf(expected)
    assert np.array_equal(np.isinf(got), refused) and np.any(refused) and np.any(expected <= 0)  # refused, decoded
    assert np.allclose(got[~refused], expected[~refused], rtol=0, atol=1e-12)
    first = indexed.first_accepting_pairs(None, templates, probes, t_idx, p_idx)
    assert first is not None and np.array_equal(first, gathered.first_accepting(None, templates[t_idx], probes[p_idx]))


def test_the_calibration_is_the_same_on_one_decoding_thread(
    transform: FeatureTransform, background: LabelledVectors, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decoding-aware calibration decodes the pairs of different helpers on two threads; the
    helpers are drawn in one fixed order, so one thread gives the very same calibration."""
    options = CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=POLAR_BITS, code="polar", refit=True)
    monkeypatch.setattr(fitting.angular, "_DECODE_THREADS", 2)  # whatever this machine's cores
    threaded = fitting.angular.for_target_fmr(transform, background, options)
    monkeypatch.setattr(fitting.angular, "_DECODE_THREADS", 1)
    single = fitting.angular.for_target_fmr(transform, background, options)
    assert threaded.calibration is not None and single.calibration is not None
    assert threaded.calibration.to_dict() == single.calibration.to_dict()
    assert threaded.sketch.params() == single.sketch.params()
