"""Pipelines: tolerance path, enrol/verify through the real schemes, t selection, JSON configuration."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from feature_testing import STANDARD
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import hasher
from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate import fitting
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.code_offset import choose_error_tolerance
from sketchauth.evaluate.fitting.interval import tolerance_path
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.pipelines.evaluation import check_through_scheme
from sketchauth.features.pipeline import (
    AsymmetricIntervalPipeline,
    CodeOffsetPipeline,
    IntervalPipeline,
    ThermometerPipeline,
    load_pipeline,
    load_pipelines,
)
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.base import load_sketch

# What these tests may assert exactly. Everything below runs through floating-point linear algebra
# (the population's covariance roots, the transform's whitening and Fisher eigenproblems, BLAS
# products), whose last bits — and, for a degenerate spectrum such as EASY's, whose whole eigenbasis
# and hence the people drawn — differ between CPUs and BLAS/LAPACK builds. So a chosen setting or
# a measured rate is checked against its definition, recomputed here from the integer levels, and
# against a tolerance; only what is exact whatever the draw (trial counts, byte counts, bounds
# computed from the chosen setting) is asserted with ``==``.
POP = STANDARD.population  # the ``transform`` fixture (tests/features/conftest.py) is fitted on it
# A population easy enough for byte-level code-offset: flat spectrum, tiny noise.
EASY = EmbeddingPopulation(informative=24, useless=2, noise_scale=0.02, between_decay=1.0, seed=6)
TEST_HASH = hasher("test")


@pytest.fixture(scope="module")
def heldout():
    return POP.draw(60, 5, seed=2)


@pytest.fixture(scope="module")
def people():
    return POP.draw(50, 5, seed=3)


@pytest.fixture(scope="module")
def path(transform, heldout):
    return tolerance_path(transform, heldout)


def test_tolerance_path_is_nested_one_level_at_a_time(path, transform) -> None:
    v = path.tolerances
    k = transform.dimensions  # 16 informative directions, sometimes one noise direction more
    assert 16 <= k <= 17
    assert v.shape == (1 + k * 15, k)
    assert np.all(v[0] == 1) and np.all(v[-1] == 16)
    steps = np.diff(v, axis=0)
    assert np.all(steps.sum(axis=1) == 1) and np.all(steps >= 0)
    assert np.all(np.diff(path.fmr) >= 0) and np.all(np.diff(path.fnmr) <= 0)
    assert (path.genuine_trials, path.impostor_trials) == (240, 14160)


def _box_errors(transform, data, dims, tolerances) -> tuple[int, int]:
    """(false non-matches, false matches) of the box ``|Δℓ_j| < v_j`` on ``dims``, one identity at a time.

    Enrolment on each identity's first sample, the others are its probes (as the pipelines do);
    computed from the quantised levels without the tolerance path's own machinery.
    """
    groups = [transform.quantise(transform.project(x))[:, dims] for _, x in data.by_identity()]
    templates = np.stack([g[0] for g in groups])
    rejected = accepted = 0
    for i, g in enumerate(groups):
        for probe in g[1:]:
            inside = np.all(np.abs(templates - probe) < tolerances, axis=1)
            rejected += int(not inside[i])
            accepted += int(np.count_nonzero(np.delete(inside, i)))
    return rejected, accepted


def test_interval_pipeline_for_one_percent(path, transform, heldout) -> None:
    pipeline = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    # The definition: the path on all of heldout, stopped at the model FMR cross-validation chose,
    # whose (design-effect) Clopper–Pearson 95% bound on the FMR is at most the target.
    calibration = pipeline.calibration
    assert calibration is not None and calibration.fmr_upper <= 1e-2 and calibration.folds == 5
    step = path.step_for_log_model_fmr(float(calibration.point))
    assert path.log_model_fmr is not None and np.all(np.diff(path.log_model_fmr) > 0)
    assert path.log_model_fmr[step] <= calibration.point < path.log_model_fmr[step + 1]
    assert pipeline == fitting.interval.from_path(transform, path, step)
    v = path.tolerances[step]
    assert pipeline.dims.tolist() == np.flatnonzero(v < 16).tolist()  # dimensions accepting every level dropped
    assert pipeline.tolerances.tolist() == v[pipeline.dims].tolist()
    # The path's rates at that step are the box's, recounted from the levels.
    rejected, accepted = _box_errors(transform, heldout, pipeline.dims, pipeline.tolerances)
    assert (rejected, accepted) == (
        round(path.fnmr[step] * path.genuine_trials),
        round(path.fmr[step] * path.impostor_trials),
    )
    assert accepted <= 141  # 1% of 14160
    assert rejected <= 0.2 * path.genuine_trials  # measured 3 of 240 here; 0–21 on other draws
    report = pipeline.report()
    expected = float(np.log2(np.minimum(2 * pipeline.tolerances - 1, 16)).sum())  # min(2v − 1, n)
    assert report.loss_bound_bits == pytest.approx(expected)
    assert report.extra["secret_bits"] == 4.0 * pipeline.dims.size
    assert report.extra["transform"] == transform.fingerprint


def test_interval_enrol_verify_genuine_and_impostor(transform, heldout, people) -> None:
    pipeline = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    groups = [x for _, x in people.by_identity()][:6]

    def inside(enrol, sample) -> bool:
        return bool(
            np.all(
                np.abs(pipeline.sample_transform(sample) - pipeline.secret_from_samples(enrol)) < pipeline.tolerances
            )
        )

    genuine, impostor = [], []
    for i, person in enumerate(groups):
        record = pipeline.enrol(person[:1], password_hasher=TEST_HASH)
        # Only helper data and a hash are stored; the helper is a plain interval-sketch record.
        assert load_sketch(record.helper) == pipeline.sketch
        for sample, outcomes in ((person[1], genuine), (groups[(i + 1) % len(groups)][0], impostor)):
            verified = pipeline.verify(record, sample, password_hasher=TEST_HASH)
            assert verified is inside(person[:1], sample)  # exactly the box, through enrol/verify
            outcomes.append(verified)
    # At FMR 1% on held-out data (FNMR ~1%): most genuine samples verify, most impostors do not.
    assert sum(genuine) >= 4 and sum(impostor) <= 2


def test_vectorised_rules_match_the_real_schemes(transform, heldout, people) -> None:
    for pipeline in (
        fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2)),
        fitting.thermometer.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2)),
    ):
        assert check_through_scheme(pipeline, people, probes=15) == 0
    asym = AsymmetricIntervalPipeline(transform, range(transform.dimensions), q=8, scale=3.0, margin=3)
    assert check_through_scheme(asym, people, enrol_samples=3, probes=10) == 0


@pytest.mark.parametrize("seed", [5, 10])
def test_vectorised_rules_match_the_real_schemes_on_other_populations(seed) -> None:
    # One draw proves little: which people a seed gives depends on the BLAS/LAPACK build.
    population = EmbeddingPopulation(informative=16, useless=4, noise_scale=0.4, seed=seed)
    transform = fit_transform(population.draw(160, 5, seed=1), levels=16)
    heldout, people = population.draw(60, 5, seed=2), population.draw(50, 5, seed=3)
    for pipeline in (
        fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2)),
        fitting.thermometer.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2)),
    ):
        assert check_through_scheme(pipeline, people, probes=25) == 0
    asym = AsymmetricIntervalPipeline(transform, range(transform.dimensions), q=8, scale=3.0, margin=3, scheme="s1")
    assert check_through_scheme(asym, people, enrol_samples=3, probes=25) == 0


def _l1_distances(pipeline, data) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor L1 level distances, one identity at a time (first sample enrolled)."""
    groups = [pipeline.levels(pipeline.transform.project(x)[:, pipeline.dims]) for _, x in data.by_identity()]
    templates = np.stack([g[0] for g in groups])
    genuine, impostor = [], []
    for i, g in enumerate(groups):
        for probe in g[1:]:
            d = np.abs(templates - probe).sum(axis=1)
            genuine.append(d[i])
            impostor.extend(np.delete(d, i).tolist())
    return np.array(genuine), np.array(impostor)


def test_thermometer_pipeline_for_one_percent(transform, heldout, people) -> None:
    pipeline = fitting.thermometer.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    m, t = pipeline.sketch.params()["m"], pipeline.sketch.params()["t"]
    universe = int(np.sum(pipeline.counts - 1))
    assert m == max(8, universe.bit_length()) and universe <= 2**m - 1
    # The definition: the t with the fewest held-out false non-matches among those whose 95% upper
    # bound on the FMR is at most 1%; its counts are the real L1 distances' (recounted here).
    calibration = pipeline.calibration
    assert calibration is not None and calibration.point == t and calibration.fmr_upper <= 1e-2
    genuine, impostor = _l1_distances(pipeline, heldout)
    assert (genuine.size, impostor.size) == (240, 14160)
    assert calibration.false_matches[calibration.index] == int(np.sum(impostor <= t))
    assert calibration.false_non_matches[calibration.index] == int(np.sum(genuine > t))
    assert int(np.sum(impostor <= t)) <= 141  # never more than the plain count would allow
    # On people outside the background: rates near the calibration (here 0/200 and 45/9800).
    genuine, impostor = fitting.thermometer.level_distances(pipeline, people, enrol_samples=1)
    assert (genuine.size, impostor.size) == (200, 9800)
    assert np.array_equal(np.sort(genuine), np.sort(_l1_distances(pipeline, people)[0]))
    assert int(np.sum(genuine > t)) <= 10 and int(np.sum(impostor <= t)) <= 0.03 * impostor.size


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-8, 8, allow_nan=False), min_size=64, max_size=64))
def test_thermometer_set_difference_is_the_l1_level_distance(transform, values) -> None:
    pipeline = ThermometerPipeline.with_resolution(transform, enrol_samples=1, resolution=0.3, t=5)
    k = transform.dimensions
    y = np.array(values[: 2 * k]).reshape(2, k)
    a, b = pipeline._set(y[0]), pipeline._set(y[1])
    distance = int(np.abs(pipeline.levels(y[0]) - pipeline.levels(y[1])).sum())
    assert np.setxor1d(a, b).size == distance


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_interval_pipeline_recovers_iff_every_level_is_within_tolerance(transform, seed) -> None:
    rng = np.random.default_rng(seed)
    pipeline = IntervalPipeline(transform, [0, 3, 7], [3, 2, 5])
    enrol_x, probe = rng.normal(0, 3, size=(2, transform.features))
    secret = pipeline.secret_from_samples(enrol_x)
    sample = pipeline.sample_transform(probe)
    close = bool(np.all(np.abs(sample - secret) < [3, 2, 5]))
    assert pipeline.accepts(enrol_x, probe) is close


def _byte_errors(transform, data, bits: int, dims) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor byte-error counts of code-offset secrets, one sample at a time."""
    pipeline = CodeOffsetPipeline(transform, dims, bits=bits, t=1)
    groups = [x for _, x in data.by_identity()]
    templates = np.stack([np.frombuffer(pipeline.secret_from_samples(x[:1]), np.uint8) for x in groups])
    genuine, impostor = [], []
    for i, x in enumerate(groups):
        for sample in x[1:]:
            errors = np.count_nonzero(templates != np.frombuffer(pipeline.sample_transform(sample), np.uint8), axis=1)
            genuine.append(errors[i])
            impostor.extend(np.delete(errors, i).tolist())
    return np.array(genuine), np.array(impostor)


@pytest.fixture(scope="module")
def easy_transform() -> FeatureTransform:
    return fit_transform(EASY.draw(120, 4, seed=1), levels=8)


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_code_offset_t_from_target_fnmr_is_the_smallest_meeting_it(easy_transform, bits) -> None:
    # Once failed on other CPUs: it asserted FNMR 0.0 where other BLAS builds draw other people
    # (EASY's flat spectrum) and measure 5/180. Now: the definition, for any draw.
    held = EASY.draw(60, 4, seed=2)
    dims = np.arange(24)  # 24 informative directions (Fisher ratios ~300 and more), 24·bits/8 bytes
    genuine, impostor = _byte_errors(easy_transform, held, bits, dims)
    assert (genuine.size, impostor.size) == (180, 10620)
    t_max = (24 * bits // 8 - 1) // 2
    rejected = {t: int(np.count_nonzero(genuine > t)) for t in range(1, t_max + 1)}
    chosen = []
    # Targets between the rates k/180 a count can give, so "FNMR ≤ target" has one answer.
    for target in (0.29, 0.099, 0.049, 0.019):
        meets = [t for t, r in rejected.items() if r <= target * 180]
        if not meets:
            with pytest.raises(ParameterError, match=rf"no t <= {t_max} reaches FNMR {target} .*best"):
                choose_error_tolerance(easy_transform, held, bits=bits, target_fnmr=target)
            continue
        choice = choose_error_tolerance(easy_transform, held, bits=bits, target_fnmr=target)
        assert choice.t == meets[0] and choice.dims.tolist() == dims.tolist()
        assert (choice.genuine_trials, choice.impostor_trials) == (180, 10620)
        assert choice.fnmr == pytest.approx(rejected[choice.t] / 180, abs=1e-12) and choice.fnmr <= target
        assert choice.fmr == np.count_nonzero(impostor <= choice.t) / 10620 <= 1e-3
        chosen.append(choice.t)
    assert chosen == sorted(chosen)  # a stricter target never needs a smaller t
    if bits == 1:  # tiny noise, 1 bit per dimension: FNMR 0–3% at t = 1 on every build measured
        assert chosen[:2] == [1, 1]


def test_code_offset_pipeline_for_target_fnmr(easy_transform) -> None:
    held = EASY.draw(60, 4, seed=2)
    pipeline = fitting.code_offset.for_target_fnmr(easy_transform, held, bits=1, target_fnmr=0.1)
    # 3 bytes admit only t = 1; that reaches 10% here (FNMR 0–3% measured on every build).
    assert pipeline.sketch.params() == {"n": 3, "t": 1}
    assert pipeline.report().loss_bound_bits == 16.0 and pipeline.secret_bits == 24.0
    people = EASY.draw(30, 3, seed=3)
    assert check_through_scheme(pipeline, people) == 0
    groups = [x for _, x in people.by_identity()][:5]
    genuine, impostor = [], []
    for i, person in enumerate(groups):
        record = pipeline.enrol(person[:1], password_hasher=TEST_HASH)
        secret = np.frombuffer(pipeline.secret_from_samples(person[:1]), np.uint8)
        for sample, outcomes in ((person[1], genuine), (groups[(i + 1) % len(groups)][0], impostor)):
            errors = int(np.count_nonzero(np.frombuffer(pipeline.sample_transform(sample), np.uint8) != secret))
            verified = pipeline.verify(record, sample, password_hasher=TEST_HASH)
            assert verified is (errors <= 1)  # the Reed–Solomon guarantee, through enrol/verify
            outcomes.append(verified)
    assert sum(genuine) >= 3 and not any(impostor)


def test_code_offset_unreachable_target_says_the_best(transform, heldout) -> None:
    with pytest.raises(ParameterError, match=r"no t <= \d+ reaches FNMR 0.05 .*best"):
        choose_error_tolerance(transform, heldout, bits=4, target_fnmr=0.05)


def test_asymmetric_pipeline_enrols_from_several_samples(transform, people) -> None:
    pipeline = AsymmetricIntervalPipeline(transform, range(transform.dimensions), q=8, scale=3.0, margin=3)
    person = people.samples[people.identities == 2]
    b, v = pipeline.secret_from_samples(person[:3])
    k = transform.dimensions
    assert b.shape == v.shape == (k,) and np.all((v >= 1) & (v <= 8))
    record = pipeline.enrol(person[:3], password_hasher=TEST_HASH)
    assert record.report.loss_bound_bits == pytest.approx(k * (1 + 2 * 3))
    with pytest.raises(SampleError):
        pipeline.enrol(person[:1], password_hasher=TEST_HASH)


def test_asymmetric_pipeline_with_s3(transform, people) -> None:
    pipeline = AsymmetricIntervalPipeline(transform, range(transform.dimensions), q=8, scale=3.0, margin=3, scheme="s3")
    assert pipeline.sketch.params()["scheme"] == "s3"
    person = people.samples[people.identities == 2]
    record = pipeline.enrol(person[:3], password_hasher=TEST_HASH)
    # 16 features, q = 8: 1 + log2 8 + log2 9 bits each.
    assert record.report.loss_bound_bits == pytest.approx(16 * (4 + np.log2(9)))
    assert pipeline.verify(record, person[:3].mean(axis=0), password_hasher=TEST_HASH)
    again = load_pipeline(pipeline.to_json())
    assert again == pipeline and again.sketch.params()["scheme"] == "s3"


@pytest.mark.parametrize("kind", ["interval", "thermometer", "asymmetric"])
def test_configuration_round_trip(kind, transform, heldout, people) -> None:
    if kind == "interval":
        pipeline = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    elif kind == "thermometer":
        pipeline = fitting.thermometer.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    else:
        pipeline = AsymmetricIntervalPipeline(transform, [0, 2, 4], q=6, scale=2.0, margin=2)
    again = load_pipeline(pipeline.to_json())
    assert again == pipeline and type(again) is type(pipeline)
    x = people.samples[:3]
    a, b = again.secret_from_samples(x), pipeline.secret_from_samples(x)
    assert again.sketch.secret_bytes(a) == pipeline.sketch.secret_bytes(b)


def test_configuration_is_checked(transform, heldout) -> None:
    raw = json.loads(fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2)).to_json())
    for change, message in (
        (lambda d: d.update(transform_sha256="0" * 64), "fingerprint"),
        (lambda d: d.update(kind="nope"), "unknown pipeline kind"),
        (lambda d: d.update(format="x"), "not a pipeline"),
        (lambda d: d.update(dims=[0, 0]), "distinct"),
        (lambda d: d["params"].update(n=99), "do not match"),
        (lambda d: d.pop("params"), "params"),
    ):
        bad = json.loads(json.dumps(raw))
        change(bad)
        with pytest.raises(ParameterError, match=message):
            load_pipeline(bad)
    with pytest.raises(ParameterError, match="not valid JSON"):
        load_pipeline("{")


def test_malformed_samples_are_sample_errors(transform) -> None:
    pipeline = IntervalPipeline(transform, [0, 1], [2, 2])
    with pytest.raises(SampleError):
        pipeline.sample_transform(np.zeros(3))
    with pytest.raises(SampleError):
        pipeline.secret_from_samples([["a"] * 20])
    with pytest.raises(ParameterError):
        IntervalPipeline(transform, [0, 99], [2, 2])


def test_pipelines_register_by_name_from_a_directory(transform, heldout, tmp_path) -> None:
    interval = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=1e-2))
    (tmp_path / "faces-v1.json").write_text(interval.to_json())
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / ".hidden.json").write_text("ignored: not a pipeline name")
    assert load_pipelines(tmp_path) == {"faces-v1": interval}
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(ParameterError, match=r"broken\.json: not a pipeline"):
        load_pipelines(tmp_path)
    with pytest.raises(ParameterError, match="does not exist"):
        load_pipelines(tmp_path / "missing")


def test_levels_on_a_subset_of_dims_are_the_full_quantisation_restricted(transform, people) -> None:
    from sketchauth.templates import enrol_interval

    dims = [1, 4, 9]
    person = people.samples[people.identities == 4][:3]
    expected = transform.quantise(transform.project(person))[:, dims]
    asym = AsymmetricIntervalPipeline(transform, dims, q=6, scale=3.0, margin=2)
    assert asym.capture_levels(person).tolist() == expected.tolist()
    # The service's request body (optional dependency: the service extra) carries exactly those levels.
    pytest.importorskip("pydantic_settings")
    from sketchauth_service.pipelines import enrolment_request

    assert enrolment_request(asym, person)["samples"] == expected.tolist()
    b, v = asym.secret_from_samples(person)
    b_ref, v_ref = enrol_interval(expected, n=transform.levels, q=6, spread="std", scale=3.0, margin=2)
    assert b.tolist() == b_ref.tolist() and v.tolist() == v_ref.tolist()
    interval = IntervalPipeline(transform, dims, [2, 2, 2])
    assert interval.sample_transform(person[0]).tolist() == expected[0].tolist()


def test_asymmetric_rule_counts_the_left_end_b_minus_v_like_the_s2_decoder(transform, people) -> None:
    # The evaluation's s2 rows assumed |Δ| < v, but the s2 decoder also accepts d' = b − v.
    from sketchauth.evaluate.pipelines.evaluation import _rule_accepts

    asym = AsymmetricIntervalPipeline(transform, range(transform.dimensions), q=6, scale=1.0, margin=1)
    groups = [x for _, x in people.by_identity()]
    left_end = mismatches = 0
    for i, x in enumerate(groups[:25]):
        b, v = asym.secret_from_samples(x[:3])
        for probe in [*x[3:], groups[(i + 1) % len(groups)][3]]:
            delta = asym.sample_transform(probe) - b
            left_end += int(np.any(delta == -v) and np.all((delta >= -v) & (delta < v)))
            mismatches += int(_rule_accepts(asym, x[:3], probe) != asym.accepts(x[:3], probe))
    assert mismatches == 0
    assert left_end > 0  # the boundary case was exercised


def test_every_pipeline_kind_offers_for_target_fmr(transform, heldout, people) -> None:
    from sketchauth.evaluate.pipelines.evaluation import check_through_scheme
    from sketchauth.evaluate.trials import projected_trials

    asym = fitting.asymmetric.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.02, enrol_samples=3))
    assert asym.kind == "asymmetric-interval" and asym.scale >= 0
    assert check_through_scheme(asym, people, enrol_samples=3, probes=10) == 0
    # The held-out FMR of the chosen scale is within the target, counted through the real rule.
    from sketchauth.evaluate.fitting.asymmetric import asymmetric_scale_scores

    trials = projected_trials(transform.project, heldout, 3)
    _, impostor = asymmetric_scale_scores(transform, trials, q=asym.sketch.q, margin=asym.margin)
    assert np.count_nonzero(impostor < asym.scale) <= int(0.02 * impostor.size)
    easy = fit_transform(EASY.draw(120, 4, seed=1), levels=16)
    code = fitting.code_offset.for_target_fmr(
        easy, EASY.draw(40, 4, seed=2), CalibrationOptions(target_fmr=0.01, code_bits=1)
    )
    assert code.kind == "code-offset" and code.sketch.t >= 1
    # One registry: every kind found by name, each calibrated with the one options value.
    assert set(fitting.FITTERS) == {"interval", "thermometer", "code-offset", "asymmetric-interval", "angular"}
    for module in (fitting.interval, fitting.thermometer, fitting.asymmetric, fitting.code_offset, fitting.angular):
        assert fitting.FITTERS[module.KIND] is module.for_target_fmr
        assert list(inspect.signature(module.for_target_fmr).parameters) == ["transform", "heldout", "options"]


def test_choose_error_tolerance_hits_an_exact_target_fnmr(monkeypatch) -> None:
    # 5 of 100 genuine trials rejected is FNMR 0.05 exactly: it meets target 0.05.
    import sketchauth.evaluate.fitting.code_offset as pl

    genuine = np.array([0] * 60 + [1] * 35 + [2] * 5)
    monkeypatch.setattr(pl, "byte_error_scores", lambda *a, **k: (genuine, np.array([3, 4, 5])))
    monkeypatch.setattr(pl, "code_dims", lambda *a, **k: np.arange(48))  # 6 bytes at 1 bit: t ≤ 2
    monkeypatch.setattr(pl, "projected_trials", lambda *a, **k: None)
    from types import SimpleNamespace

    choice = pl.choose_error_tolerance(SimpleNamespace(project=None), None, bits=1, target_fnmr=0.05)  # type: ignore[arg-type]
    assert choice.t == 1 and choice.fnmr == 0.05
