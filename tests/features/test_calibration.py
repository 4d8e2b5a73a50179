"""Calibration on the background: exact Clopper–Pearson bounds, identity-disjoint folds, pluggable deciders.

Exact where the arithmetic is exact (binomial tails as Fractions, integer counts); the bounds are
cross-checked against ``scipy.stats.beta`` and ``mpmath.betainc`` where installed; the vectorised
deciders of every pipeline against real encode → decode, at and around the chosen setting.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting import fit_pipeline
from sketchauth.evaluate.fitting.calibrated import heldout_check, heldout_table
from sketchauth.evaluate.fitting.calibration import (
    Decider,
    binomial_cdf,
    calibrate,
    clopper_pearson_interval,
    clopper_pearson_upper,
    design_effect,
    fold_count,
    identity_folds,
    max_false_matches,
    people_needed,
    trials_needed,
)
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.trials import projected_trials
from sketchauth.features.transform import FeatureTransform

POPULATION = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
CASES = [(0, 1), (0, 10), (3, 10), (10, 10), (3, 1000), (50, 100_000), (999, 1000), (200, 2_000_000)]


# -- exact binomial tails and bounds ----------------------------------------------------------------
@pytest.mark.parametrize(("k", "n", "p"), [(0, 7, Fraction(1, 3)), (3, 10, Fraction(3, 10)), (9, 20, Fraction(2, 5))])
def test_binomial_cdf_matches_exact_rational_sum(k: int, n: int, p: Fraction) -> None:
    exact = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
    assert binomial_cdf(k, n, float(p)) == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize(("k", "n"), CASES)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_clopper_pearson_against_scipy(k: int, n: int, confidence: float) -> None:
    stats = pytest.importorskip("scipy.stats")
    upper = 1.0 if k == n else stats.beta.ppf(confidence, k + 1, n - k)
    assert clopper_pearson_upper(k, n, confidence) == pytest.approx(upper, rel=1e-9, abs=1e-15)
    half = (1 - confidence) / 2
    low = 0.0 if k == 0 else stats.beta.ppf(half, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - half, k + 1, n - k)
    assert clopper_pearson_interval(k, n, confidence) == pytest.approx((low, high), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("k", "n"), CASES)
def test_clopper_pearson_solves_the_incomplete_beta_equation(k: int, n: int) -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    upper = clopper_pearson_upper(k, n, 0.95)
    if k < n:
        # P[Bin(n, p) <= k] = I_{1-p}(n - k, k + 1) = 1 - I_p(k + 1, n - k) = 0.05 at the upper bound.
        assert float(mpmath.betainc(k + 1, n - k, 0, upper, regularized=True)) == pytest.approx(0.95, abs=1e-9)
    low, _ = clopper_pearson_interval(k, n, 0.95)
    if k > 0:
        assert float(mpmath.betainc(k, n - k + 1, 0, low, regularized=True)) == pytest.approx(0.025, abs=1e-9)


def test_zero_false_matches_bound_is_the_rule_of_three_closed_form() -> None:
    for n in (1, 59, 3000, 10**6):
        assert clopper_pearson_upper(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 50_000), st.sampled_from([1e-1, 1e-2, 1e-3, 1e-4]), st.sampled_from([0.9, 0.95]))
def test_max_false_matches_is_the_largest_admissible_count(n: int, target: float, confidence: float) -> None:
    cap = max_false_matches(n, target, confidence)
    if cap >= 0:
        assert clopper_pearson_upper(cap, n, confidence) <= target * (1 + 1e-9)
    if cap + 1 <= n:
        assert clopper_pearson_upper(cap + 1, n, confidence) > target * (1 - 1e-9)


def test_bad_counts_and_confidences_are_refused() -> None:
    for k, n in ((-1, 5), (6, 5), (0, 0), (True, 5)):
        with pytest.raises(ParameterError):
            clopper_pearson_upper(k, n)
    for confidence in (0.0, 1.0, True):
        with pytest.raises(ParameterError, match="confidence"):
            clopper_pearson_upper(1, 10, confidence)


# -- folds ------------------------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from("abcdefghijklmnop"), min_size=6, max_size=60), st.integers(2, 6), st.integers(0, 9))
def test_identity_folds_keep_people_whole_and_balanced(labels: list[str], folds: int, seed: int) -> None:
    people = sorted(set(labels))
    if len(people) < folds:
        with pytest.raises(ParameterError, match="folds"):
            identity_folds(labels, folds, seed)
        return
    fold = identity_folds(labels, folds, seed)
    owner = {}
    for label, f in zip(labels, fold.tolist(), strict=True):
        assert owner.setdefault(label, f) == f  # every capture of a person in one fold
    sizes = np.bincount(list(owner.values()), minlength=folds)
    assert sizes.max() - sizes.min() <= 1


# -- the generic calibration ------------------------------------------------------------------------
def _squared_distance(model: object, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.sum((t - p) ** 2, axis=-1)


GRID = np.linspace(0.0, 400.0, 201)


def test_score_and_accept_deciders_give_the_same_counts_and_choice() -> None:
    data = POPULATION.draw(60, 3, seed=4)
    by_score = calibrate(Decider(grid=GRID, score=_squared_distance), data, target_fmr=0.02)
    by_accept = calibrate(
        Decider(grid=GRID, accept=lambda m, t, p, g: _squared_distance(m, t, p)[None, :] <= np.asarray(g)[:, None]),
        data,
        target_fmr=0.02,
    )
    assert np.array_equal(by_score.false_matches, by_accept.false_matches)
    assert np.array_equal(by_score.false_non_matches, by_accept.false_non_matches)
    assert by_score.point == by_accept.point and by_score.fmr_upper <= 0.02
    # Counted directly: every ordered pair of a template and another person's probe.
    trials = projected_trials(lambda x: x, data, 1)
    d = _squared_distance(None, trials.templates[:, None], trials.probes[None])
    impostor = d[np.arange(trials.identities)[:, None] != trials.owner[None, :]]
    assert by_score.impostor_trials == impostor.size == 60 * 120 - 120
    assert by_score.false_matches[by_score.index] == int(np.count_nonzero(impostor <= by_score.point))


def test_every_pair_is_scored_once_by_a_model_that_saw_neither_person() -> None:
    data = POPULATION.draw(25, 3, seed=6)
    seen: list[tuple[str, str]] = []

    def fit(train: LabelledVectors) -> frozenset[int]:
        return frozenset(np.unique(train.identities).tolist())

    def features(model: frozenset[int], trials: object) -> tuple[np.ndarray, np.ndarray]:
        return trials.templates, trials.probes  # type: ignore[attr-defined]

    def score(model: frozenset[int], t: np.ndarray, p: np.ndarray) -> np.ndarray:
        # Each person's captures are tagged by their first feature: recover who is compared.
        people = {int(x) for x in np.round(np.concatenate([t[:, -1], p[:, -1]]))}
        assert not people & model, "a model scored a person it was fitted on"
        seen.extend(zip(np.round(t[:, -1]).astype(int).tolist(), np.round(p[:, -1]).astype(int).tolist(), strict=True))
        return np.zeros(t.shape[0])

    tagged = LabelledVectors(data.identities, np.hstack([data.samples, data.identities[:, None].astype(float)]))
    result = calibrate(Decider(grid=[-1.0], score=score, fit=fit, features=features), tagged, target_fmr=0.5, folds=4)
    pairs = np.array(seen)
    impostor = pairs[pairs[:, 0] != pairs[:, 1]]
    assert len(impostor) == result.impostor_trials == 25 * 50 - 50 and result.folds == 4
    # Every ordered pair of distinct people appears exactly 2 times (2 probes each), never more.
    _, counts = np.unique(impostor, axis=0, return_counts=True)
    assert counts.tolist() == [2] * (25 * 24)


def test_no_admissible_setting_says_how_many_trials_would_do() -> None:
    data = POPULATION.draw(8, 2, seed=1)
    with pytest.raises(
        ParameterError, match=r"with no false match would need 2995 impostor trials: about 56 background"
    ):
        calibrate(Decider(grid=[1e9], score=_squared_distance), data, target_fmr=1e-3)


def test_design_effect_is_one_for_even_counts_and_grows_when_one_person_takes_them_all() -> None:
    trials = np.full(10, 100)
    even = np.full((10, 1), 5)
    assert design_effect((even,), (trials,)).tolist() == [1.0]
    lumped = np.zeros((10, 1), dtype=np.int64)
    lumped[0] = 50
    assert design_effect((lumped,), (trials,))[0] > 5


def test_realised_on_the_calibration_people_reproduces_the_pooled_rates() -> None:
    data = POPULATION.draw(50, 3, seed=8)
    choice = calibrate(Decider(grid=GRID, score=_squared_distance), data, target_fmr=0.05)
    again = choice.realised(data, enrol_samples=1)
    assert (again["fmr"], again["fnmr"]) == (choice.fmr, choice.fnmr)
    assert again["fmr_within_predicted_interval"] and again["fmr_within_prediction_interval"]


# -- every pipeline's decider against real encode -> decode ----------------------------------------
@pytest.fixture(scope="module")
def fitted() -> tuple[FeatureTransform, LabelledVectors]:
    background = POPULATION.draw(90, 4, seed=1)
    return fit_transform(background, levels=16), background


@pytest.mark.parametrize("kind", ["interval", "thermometer", "code-offset", "asymmetric-interval"])
def test_pipeline_deciders_agree_with_real_decodes_around_the_setting(kind: str, fitted) -> None:
    transform, background = fitted
    m = 2 if kind == "asymmetric-interval" else 1
    pipeline = fit_pipeline(
        kind, transform, background, CalibrationOptions(target_fmr=0.02, enrol_samples=m, refit=True, code_bits=2)
    )
    calibration = pipeline.calibration
    assert calibration is not None and calibration.fmr_upper <= 0.02 and calibration.folds == 5
    decider = calibration.decider
    assert decider is not None
    people = POPULATION.draw(12, m + 2, seed=30)
    trials = projected_trials(lambda x: x, people, m)
    templates, probes = decider.features(calibration.model, trials)
    rows, cols = np.meshgrid(np.arange(trials.identities), np.arange(probes.shape[0]), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    people_ids = np.arange(rows.size)
    (by_pair,) = decider.accepted(calibration.model, templates[rows], probes[cols], (people_ids,), rows.size)
    fast = by_pair[:, calibration.index] == 1
    for r, c, accepted in zip(rows.tolist(), cols.tolist(), fast.tolist(), strict=True):
        assert pipeline.accepts(trials.enrolment[r], trials.probes[c]) is accepted, (r, c)
    assert fast.any() and not fast.all()  # both outcomes were compared


def test_heldout_check_reports_realised_against_predicted(fitted) -> None:
    transform, background = fitted
    rows = heldout_check(
        transform,
        background,
        POPULATION.draw(40, 3, seed=40),
        kinds=["thermometer", "code-offset"],
        options=CalibrationOptions(refit=True, code_bits=2),
    )
    thermometer = rows[0]
    assert thermometer["realised"]["impostor_trials"] == 40 * 80 - 80
    assert thermometer["predicted"]["predicted_fmr_upper"] <= 0.01
    table = heldout_table(rows)
    assert table.count("\n") == 4 and "| thermometer | 0.01 |" in table


# -- small backgrounds: leave-one-person-out, and refusals that say what would do ----------------
def _small(people: int, samples: int = 8) -> tuple[FeatureTransform, LabelledVectors]:
    data = POPULATION.draw(people, samples, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SmallPopulationWarning: expected here
        return fit_transform(data, levels=4, projection="whiten"), data


@pytest.mark.parametrize("people", [6, 9])
def test_a_small_background_calibrates_leave_one_person_out_and_says_how_wide_its_bound_is(people: int) -> None:
    transform, data = _small(people)
    pipeline = fit_pipeline("thermometer", transform, data, CalibrationOptions(target_fmr=0.05, refit=True))
    calibration = pipeline.calibration
    assert calibration is not None and calibration.folds == people == calibration.identities
    assert calibration.fmr_upper <= 0.05
    record = calibration.to_dict()
    assert record["method"].startswith("leave-one-person-out")
    note = record["small_background"]
    assert f"only {people} background people" in note and f"<= {calibration.fmr_upper:.2g}" in note
    # Every impostor pair of distinct people is scored once, by a transform fitted without both.
    assert calibration.impostor_trials == people * (people - 1) * 7


def test_fold_count_switches_to_one_person_per_fold_below_two_people_per_fold() -> None:
    assert [fold_count(people, 5) for people in (4, 9, 10, 40)] == [4, 9, 5, 5]


def test_a_refusal_says_how_many_people_would_do() -> None:
    transform, data = _small(6, samples=5)
    with pytest.raises(ParameterError) as refused:
        fit_pipeline("thermometer", transform, data, CalibrationOptions(target_fmr=0.01, refit=True))
    message = str(refused.value)
    # 0 false matches in 6·5·4 = 120 trials; 299 are needed at 95%: 10 people with 4 probes each give 360.
    assert "0 false matches in 120 impostor trials of 6 background people" in message
    assert "about 299 impostor trials" in message and "about 10 background people with 4 probes each" in message
    assert people_needed(299, 4.0) == 10 and 9 * 8 * 4 < 299 <= 10 * 9 * 4
    assert trials_needed(0, 120, 0.01) == math.ceil(math.log(0.05) / math.log(0.99)) == 299


def test_a_rate_at_the_target_is_refused_as_beyond_more_people() -> None:
    assert trials_needed(5, 100, 0.05) is None and trials_needed(4, 100, 0.05) is not None


def test_fewer_than_four_people_cannot_be_cross_validated_and_the_refusal_says_so() -> None:
    transform, data = _small(3)
    with pytest.raises(ParameterError, match=r"at least 4 background people .*got 3: add 1 more"):
        fit_pipeline("interval", transform, data, CalibrationOptions(target_fmr=0.05, refit=True))
