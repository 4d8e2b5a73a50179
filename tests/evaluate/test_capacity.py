"""The capacity side of the angular pipeline: cap areas, the capacity cosine, the code-size curve and its rule.

The cap area comes from a continued fraction of the regularised incomplete beta function; it is
checked against closed forms on small spheres, against an independent Gauss–Legendre quadrature
of ``∫_0^θ sin^(n−2)φ dφ`` (normalised by the Gamma-function integral over ``[0, π]``) and
against scipy's ``betainc``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.evaluate import capacity
from sketchauth.evaluate.capacity import (
    CodeSizePoint,
    CrossCheckError,
    cap_fraction,
    capacity_cos,
    capacity_floor,
    choose_code_size,
    code_sizes,
    log2_cap_fraction,
    log_betainc,
    random_code_fnmr,
)

NODES, WEIGHTS = np.polynomial.legendre.leggauss(600)


def _quadrature_log2_cap(n: int, cos: float) -> float:
    """``log2`` of the cap share by Gauss–Legendre on ``[0, θ]`` in log space (independent of the beta function)."""
    theta = math.acos(cos)
    phi = (NODES + 1.0) * theta / 2.0
    log_f = (n - 2) * np.log(np.sin(phi))
    top = float(log_f.max())
    integral = float(np.sum(WEIGHTS * np.exp(log_f - top)) * theta / 2.0)
    norm = 0.5 * math.log(math.pi) + math.lgamma((n - 1) / 2) - math.lgamma(n / 2)
    return (math.log(integral) + top - norm) / math.log(2.0)


@pytest.mark.parametrize("cos", [-0.9, -0.3, 0.0, 0.2, 0.77, 0.999])
def test_closed_forms_on_small_spheres(cos: float) -> None:
    theta = math.acos(cos)
    assert cap_fraction(2, cos) == pytest.approx(theta / math.pi, rel=1e-12)
    assert cap_fraction(3, cos) == pytest.approx((1 - cos) / 2, rel=1e-12)
    assert cap_fraction(4, cos) == pytest.approx((theta - math.sin(theta) * cos) / math.pi, rel=1e-11)


@settings(max_examples=120, deadline=None)
@given(st.integers(3, 600), st.floats(0.02, 0.9))
def test_cap_area_equals_an_independent_quadrature(n: int, cos: float) -> None:
    assert log2_cap_fraction(n, cos) == pytest.approx(_quadrature_log2_cap(n, cos), rel=1e-9, abs=1e-9)


@settings(max_examples=120, deadline=None)
@given(st.floats(0.5, 400.0), st.floats(0.1, 5.0), st.floats(0.0, 1.0))
def test_incomplete_beta_equals_scipy(a: float, b: float, x: float) -> None:
    special = pytest.importorskip("scipy.special")
    expected = float(special.betainc(a, b, x))
    got = log_betainc(a, b, x)
    if expected > 1e-290:
        # Both are float evaluations (a continued fraction each): they were seen to differ by 3e-9
        # relative at a = 400, far below what the capacity floor's four printed digits can show.
        assert math.exp(got) == pytest.approx(expected, rel=1e-8, abs=1e-15)
    else:
        assert got < math.log(1e-280)


@pytest.mark.parametrize(("n", "bits"), [(128, 32), (192, 64), (256, 64), (512, 128), (128, 96)])
def test_capacity_cosine_holds_exactly_its_share_of_the_sphere(n: int, bits: int) -> None:
    cos = capacity_cos(n, bits)
    assert log2_cap_fraction(n, cos) == pytest.approx(-bits, abs=1e-6)
    assert _quadrature_log2_cap(n, cos) == pytest.approx(-bits, abs=1e-6)


def test_capacity_figures_of_the_issue() -> None:
    """At 192-D the 32-, 48- and 64-bit caps end at cos 0.429, 0.522 and 0.593."""
    assert [round(capacity_cos(192, k), 3) for k in (32, 48, 64)] == [0.429, 0.522, 0.593]
    genuine = np.array([0.3, 0.45, 0.55, 0.6, 0.9])
    assert capacity_floor(genuine, 192, 32) == 0.2
    assert capacity_floor(genuine, 192, 64) == 0.6


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_random_code_fnmr_in_closed_form_on_the_two_sphere(bits: int) -> None:
    """On S² a cap's share is (1 − cos)/2, so a random code of M words fails with 1 − ((1 + cos)/2)^(M−1)."""
    cos = np.array([-0.5, 0.0, 0.3, 0.9, 1.0])
    exact = np.mean(1.0 - ((1.0 + cos) / 2.0) ** (2**bits - 1))
    assert random_code_fnmr(cos, 3, bits) == pytest.approx(exact, rel=1e-12)


def test_random_code_fnmr_against_random_codes_drawn() -> None:
    """Seeded random codebooks of 8 words on S³, probes at a fixed angle from word 0, nearest-word
    decoding: the share decoded wrongly matches the formula within four standard errors."""
    rng = np.random.default_rng(20261206)
    n, bits, cos, trials = 4, 3, 0.6, 20_000
    words = rng.standard_normal((trials, 2**bits, n))
    words /= np.linalg.norm(words, axis=2, keepdims=True)
    side = rng.standard_normal((trials, n))
    side -= np.sum(side * words[:, 0], axis=1, keepdims=True) * words[:, 0]
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    probe = cos * words[:, 0] + math.sqrt(1 - cos * cos) * side
    wrong = np.mean(np.argmax(np.einsum("tmn,tn->tm", words, probe), axis=1) != 0)
    p = random_code_fnmr([cos], n, bits)
    assert abs(wrong - p) < 4 * math.sqrt(p * (1 - p) / trials)
    with pytest.raises(ParameterError, match="genuine pairs"):
        random_code_fnmr([], n, bits)


def test_code_sizes_follow_the_dimension() -> None:
    assert code_sizes(512) == (32, 48, 64, 96, 128)
    assert code_sizes(64) == (32, 48)
    assert code_sizes(8) == ()


def _point(bits: int, fnmr: float, cosine: float = 0.1, floor: float = 0.05) -> CodeSizePoint:
    return CodeSizePoint(bits, 0.5, floor, fnmr, 0.0, 0, 1000, 100, cosine, 0.4)


def test_rule_takes_the_largest_code_within_the_factor_and_never_below_the_floor() -> None:
    points = [_point(32, 0.10), _point(48, 0.12), _point(64, 0.15), _point(96, 0.16), _point(128, 0.4)]
    assert choose_code_size(points).bits == 64  # 0.15 <= 1.5 x 0.1; 0.16 is not
    assert choose_code_size(points, factor=2.0).bits == 96
    assert choose_code_size(points, floor_bits=128).bits is None
    # A strong model (cosine FNMR 0): one percentage point of slack.
    strong = [_point(32, 0.004, cosine=0.0), _point(64, 0.009, cosine=0.0), _point(128, 0.02, cosine=0.0)]
    assert choose_code_size(strong).bits == 64


def test_no_acceptable_size_is_said_with_the_figures() -> None:
    choice = choose_code_size([_point(32, 0.79, cosine=0.3, floor=0.78), _point(64, 0.9, cosine=0.3)])
    assert choice.bits is None
    assert "no code size is acceptable" in choice.reason and "79.0%" in choice.reason
    # Never above UNUSABLE_FNMR, whatever the cosine matcher does.
    assert choose_code_size([_point(32, 0.55, cosine=0.5)]).bits is None


def test_attack_cost_is_log2_tries_over_successes_and_a_bound_without_success() -> None:
    point = CodeSizePoint(64, 0.6, 0.1, 0.12, 4 / 4096, 4, 4096, 300, 0.02, 0.5, attack_tries=4096, attack_successes=4)
    assert point.attack_bits == 10.0 and point.ratio == pytest.approx(1.2)
    none = CodeSizePoint(64, 0.6, 0.1, 0.12, 0.0, 0, 4096, 300, 0.02, 0.5, attack_tries=4096)
    assert none.attack_bits == 12.0 and none.to_dict()["attack_bits_is_lower_bound"]
    assert CodeSizePoint(64, 0.6, 0.1, 0.12, 0.0, 0, 4096, 300, 0.02, 0.5).attack_bits is None


@pytest.fixture(scope="module")
def fitted():
    from sketchauth.evaluate.embeddings import EmbeddingPopulation
    from sketchauth.evaluate.fitting.transform import fit_transform

    population = EmbeddingPopulation(informative=48, useless=4, noise_scale=0.35, seed=5)
    background = population.draw(60, 4, seed=1)
    transform = fit_transform(background, projection="centre", normalise=True)
    curve, pipelines = capacity.background_curve(
        transform, background, target_fmr=1e-2, enrol_samples=1, sizes=(32, 48), folds=3
    )
    return curve, pipelines, population.draw(20, 4, seed=2)


def test_curves_on_the_background_and_on_new_people(fitted) -> None:
    curve, pipelines, people = fitted
    assert [p.bits for p in curve.points] == [32, 48] == sorted(pipelines)
    measured = capacity.measured_curve(pipelines, people, enrol_samples=1, target_fmr=1e-2)
    for p in measured.points:
        assert p.genuine_trials == 20 * 3 and p.impostor_trials == 20 * 19 * 3
        assert 0.0 <= p.floor_fnmr <= p.fnmr + 1.0 and 0.0 <= p.fmr <= 1.0
        assert p.capacity_cos == pytest.approx(capacity_cos(52, p.bits))
    assert "Default code size" in curve.table() and "choice" in curve.to_dict()
    # The rule reads the background's curve only: the one on new people shows no choice.
    assert "Default code size" not in measured.table() and "choice" not in measured.to_dict()
    assert measured.to_dict()["points"][0]["bits"] == 32
    for p in (*curve.points, *measured.points):
        assert 0 < p.attack_tries <= capacity.ATTACK_PAIRS and p.attack_bits is not None


def test_the_background_curve_says_what_sample_its_attack_comes_from(fitted) -> None:
    """``features fit`` runs the curve's attack on a seeded sample: the figures and the text agree."""
    curve, _, _ = fitted
    # 60 people enrolled (fewer than CURVE_ATTACK_TEMPLATES), 60 x 59 x 3 impostor pairs: the pair cap binds.
    assert [p.attack_tries for p in curve.points] == [capacity.CURVE_ATTACK_PAIRS] * 2
    assert f"population attack on 60 enrolled templates (seeded sample) x at most {capacity.CURVE_ATTACK_PAIRS}" in (
        curve.source
    )
    assert curve.to_dict()["source"] == curve.source and curve.source in curve.table()


def test_the_attack_sample_takes_whole_rows_of_the_impostor_mask(monkeypatch) -> None:
    monkeypatch.setattr(capacity, "CURVE_ATTACK_TEMPLATES", 7)
    impostor = np.random.default_rng(3).random((20, 50)) < 0.5
    rows, mask = capacity._attack_sample(impostor, np.random.default_rng(0))
    assert rows.size == 7 == np.unique(rows).size and np.all(np.diff(rows) > 0)
    assert np.array_equal(mask, impostor[rows])
    again, _ = capacity._attack_sample(impostor, np.random.default_rng(0))
    assert np.array_equal(rows, again)  # seeded
    every, whole = capacity._attack_sample(impostor[:5], np.random.default_rng(0))
    assert every.tolist() == list(range(5)) and np.array_equal(whole, impostor[:5])


def test_a_decider_that_is_not_the_scheme_stops_the_measurement(fitted, monkeypatch) -> None:
    _, pipelines, people = fitted

    def everything(sketch, enrolled, probes, e, p):
        return np.ones(e.size, dtype=bool), np.zeros(e.size, dtype=bool)

    monkeypatch.setattr(capacity, "decide_exact", everything)
    with pytest.raises(CrossCheckError, match="real decode"):
        capacity.measured_curve(pipelines, people, enrol_samples=1, target_fmr=1e-2)


def test_attempts_of_several_captures_and_the_code_alone(fitted) -> None:
    """Three captures per attempt: one attempt per person (3 probes beyond the enrolment); the code
    alone ignores the angle check: a 2-bit code decodes every genuine attempt whatever ``min_cos``,
    a code of n − 1 bits with a list of 1 almost none."""
    from sketchauth.features.angular import AngularPipeline

    _, pipelines, people = fitted
    three = capacity.measured_curve(pipelines, people, enrol_samples=1, target_fmr=1e-2, probe_captures=3)
    for p3 in three.points:
        assert p3.genuine_trials == 20 and p3.impostor_trials == 20 * 19
    assert "3 per attempt" in three.source
    first = pipelines[32]
    wide = AngularPipeline(first.transform, first.dims, min_cos=0.99, bits=2)
    narrow = AngularPipeline(first.transform, first.dims, min_cos=0.0, bits=first.dims.size - 1, list_size=1)
    assert capacity.code_fnmr(wide, people, enrol_samples=1) == (0.0, 0.0)
    assert capacity.code_fnmr(wide, people, enrol_samples=1, probe_captures=3) == (0.0, 0.0)
    alone, floor = capacity.code_fnmr(narrow, people, enrol_samples=1)
    assert alone > 0.5 and floor == _floor_of(people, first, 51) > 0.0
    # The achievable end on the same attempts: a random code of the size, at least the floor.
    lo, random_code = capacity.code_limits(narrow, people, enrol_samples=1)
    assert lo == floor and floor <= random_code <= 1.0
    assert capacity.code_limits(wide, people, enrol_samples=1) == (0.0, pytest.approx(0.0, abs=1e-9))


def test_attempts_of_one_two_and_three_captures_share_people_enrolments_and_thresholds(fitted, monkeypatch) -> None:
    """Like for like: each person enrolled once per size for every number of captures, attempts from
    the same three probes (groups of 1, 2 — the third dropped — and 3), the same ``min_cos``."""
    _, pipelines, people = fitted
    calls = []
    enrol = capacity._enrol
    monkeypatch.setattr(
        capacity, "_enrol", lambda sketch, templates: calls.append(sketch.bits) or enrol(sketch, templates)
    )
    curves = capacity.measured_captures(pipelines, people, enrol_samples=1, target_fmr=1e-2)
    assert sorted(calls) == sorted(pipelines)  # one enrolment per size, shared by k = 1, 2, 3
    assert sorted(curves) == [1, 2, 3]
    for k, attempts in ((1, 3), (2, 1), (3, 1)):
        assert f"20 people outside the background, 1 capture(s) to enrol, {k} per attempt" in curves[k].source
        for point in curves[k].points:
            assert point.genuine_trials == 20 * attempts and point.impostor_trials == 20 * 19 * attempts
            assert point.min_cos == float(pipelines[point.bits].sketch.min_cos)


def _floor_of(people, pipeline, bits: int) -> float:
    """The floor of a ``bits``-bit code on the genuine cosines of ``people`` (one capture to enrol)."""
    trials, templates, probes, _ = capacity._cosines(pipeline.transform, pipeline.dims, people, 1)
    genuine = np.einsum("ij,ij->i", templates[trials.owner], probes)
    return capacity.capacity_floor(genuine, 52, bits)
    with pytest.raises(ParameterError, match="4 probes"):
        capacity.grouped_probes(np.eye(3), np.array([0, 1, 2]), 4)


def test_the_curve_shares_fold_fits_and_the_cosine_rule_with_the_figures_of_fitting_afresh(monkeypatch) -> None:
    """Every size refits the same fold transforms, projects the same people and calibrates the same
    cosine rule: done once (:class:`SharedFolds`), the curve and its pipelines are those of doing it
    all afresh for every size."""
    from sketchauth.evaluate.embeddings import EmbeddingPopulation
    from sketchauth.evaluate.fitting import angular
    from sketchauth.evaluate.fitting.calibration import calibrate
    from sketchauth.evaluate.fitting.transform import fit_transform, refit_transform

    background = EmbeddingPopulation(informative=44, useless=4, noise_scale=0.35, seed=7).draw(30, 4, seed=3)
    transform = fit_transform(background, projection="centre", normalise=True, levels=8)

    def curve() -> tuple[dict[str, object], dict[int, object]]:
        found, pipelines = capacity.background_curve(
            transform, background, target_fmr=2e-2, enrol_samples=1, sizes=(32, 40), folds=3, refit=True
        )
        points = [{k: v for k, v in p.to_dict().items() if not k.startswith("attack_")} for p in found.points]
        kept = {bits: (p.sketch.params(), p.calibration.to_dict()) for bits, p in pipelines.items()}
        return {"points": points, "choice": found.choice().to_dict()}, kept

    fits: list[int] = []

    def counted(model: object, train: object) -> object:
        fits.append(1)
        return refit_transform(model, train)

    monkeypatch.setattr(angular, "refit_transform", counted)
    shared = curve()
    distinct = len(fits)

    def afresh(self: angular.SharedFolds, train: object) -> object:
        return angular.refit_transform(self.transform, train)

    def cosine_afresh(self: angular.SharedFolds, dims: np.ndarray, options: object) -> object:
        decider = angular.angular_decider(self.transform, dims, refit=True)
        return calibrate(decider, self.background, target_fmr=2e-2, enrol_samples=1, folds=3)

    def directions_afresh(self: angular.SharedFolds, model: object, dims: np.ndarray, trials: object) -> object:
        return angular.projected_directions(self.transform if model is None else model, dims, trials)

    pair_cosines = angular._pair_cosines
    fits.clear()
    monkeypatch.setattr(angular.SharedFolds, "fit", afresh)
    monkeypatch.setattr(angular.SharedFolds, "cosine", cosine_afresh)
    monkeypatch.setattr(angular.SharedFolds, "directions", directions_afresh)
    monkeypatch.setattr(angular, "_pair_cosines", lambda shared, *rows: pair_cosines(None, *rows))
    naive = curve()
    # 3 folds and 3 pairs of folds: 6 training sets, fitted once; afresh 6 per calibration, of which
    # there are 1 (the cosine rule) + 2 per size.
    assert distinct == 6 and len(fits) == 6 * (1 + 2 * 2)
    assert shared == naive


def test_a_simulated_enrolment_is_a_rotation_sending_the_template_to_its_codeword() -> None:
    """The calibration's simulated rotation, drawn where it acts: an isometry on every direction it
    has seen (inner products kept), the template sent to the normalised codeword, the same rotation
    for a template decoded again, the same draws from the same seed whatever else is decoded, and
    the caller's generator advanced as by drawing once."""
    from sketchauth.evaluate.fitting.angular import _SimulatedHelper
    from sketchauth.sketches.angular_polar import PolarAngularSketch

    n = 64
    sketch = PolarAngularSketch(n, 16, 8, crc=6)
    rng, twin = np.random.default_rng(4), np.random.default_rng(4)
    template = np.arange(1.0, n + 1.0) / np.linalg.norm(np.arange(1.0, n + 1.0))
    helper = _SimulatedHelper(sketch, template, rng)
    probes = np.random.default_rng(5).standard_normal((6, n))
    first = helper.rotated(probes[:3])
    more = helper.rotated(probes)
    np.testing.assert_allclose(more[:3], first, atol=1e-12)
    np.testing.assert_allclose(more @ more.T, probes @ probes.T, atol=1e-9)
    codeword = np.asarray(helper.secret, dtype=np.float64)
    np.testing.assert_allclose(helper.rotated(template[None, :])[0], codeword / np.linalg.norm(codeword), atol=1e-12)
    again = _SimulatedHelper(sketch, template, twin)
    np.testing.assert_allclose(again.rotated(probes), more, atol=1e-12)
    assert rng.integers(1 << 62) == twin.integers(1 << 62)
    assert helper.decodes(np.stack([template, -template])).tolist() == [True, False]


@pytest.mark.parametrize(("n", "bits"), [(64, 32), (128, 48)])
def test_simulated_enrolments_decode_as_often_as_real_helpers(n: int, bits: int) -> None:
    """Seeded probes near the capacity angle, one per template: the share the simulated rotations
    decode equals the share real helpers (real ``encode``, the exact decider) decode, within four
    standard errors of their difference — the calibration's decisions have the scheme's law."""
    from sketchauth.evaluate.deciders import decide_exact
    from sketchauth.evaluate.fitting.angular import _SimulatedHelper
    from sketchauth.evaluate.trials import Enrolled
    from sketchauth.sketches.angular_polar import PolarAngularSketch

    sketch = PolarAngularSketch(n, bits, 32, crc=6)
    rng = np.random.default_rng([n, bits])
    cos, trials, simulated, real = capacity_cos(n, bits) + 0.02, 600, 0, 0
    for _ in range(trials):
        t = rng.standard_normal(n)
        t /= np.linalg.norm(t)
        side = rng.standard_normal(n)
        side -= (side @ t) * t
        probe = (cos * t + math.sqrt(1 - cos * cos) * side / np.linalg.norm(side))[None, :]
        simulated += int(_SimulatedHelper(sketch, t, rng).decodes(probe)[0])
        secret = sketch.check_secret(t)
        enrolled = Enrolled((sketch.encode(secret),), (sketch.secret_bytes(secret),), (secret,))
        real += int(
            decide_exact(sketch, enrolled, probe, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))[0][0]
        )
    p = (simulated + real) / (2 * trials)
    assert 0.2 < p < 0.95
    assert abs(simulated - real) / trials < 4 * math.sqrt(2 * p * (1 - p) / trials)
