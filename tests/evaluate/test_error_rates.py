"""Tests of sketchauth.evaluate.error_rates: exact counts on seeded data, agreement with decode/verify."""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors, VectorModel, synthetic_strings, synthetic_vectors
from sketchauth.evaluate.error_rates import (
    SweepSpec,
    crosscheck_with_verify,
    decide_by_decoding,
    decide_interval,
    enrol_byte_mode,
    enrol_majority_set,
    enrol_population,
    enrol_rounded_mean,
    evaluate_adapter,
    evaluate_scheme,
    plan_trials,
)
from sketchauth.sketches.interval import IntervalSketch


def small_population() -> LabelledVectors:
    return synthetic_vectors(12, 3, 4, n=64, seed=3, model=VectorModel(spread=3, noise=1.5))


def test_plan_counts_and_seeded_subsampling() -> None:
    data = small_population()
    trials = plan_trials(data, enrol_samples=1)
    assert trials.genuine.shape == (2, 12 * 2)
    # Impostor probes are the other identities' probes (not their enrolment samples).
    assert trials.impostor.shape == (2, 12 * 11 * 2)
    owner = data.identities
    assert np.all(owner[trials.genuine[1]] == np.array(trials.labels)[trials.genuine[0]])
    assert not np.any(owner[trials.impostor[1]] == np.array(trials.labels)[trials.impostor[0]])
    a = plan_trials(data, max_impostors_per_identity=5, seed=4)
    b = plan_trials(data, max_impostors_per_identity=5, seed=4)
    assert a.impostor.shape == (2, 60) and np.array_equal(a.impostor, b.impostor)
    with pytest.raises(ParameterError, match="no genuine trials"):
        plan_trials(data, enrol_samples=3)
    with pytest.raises(ParameterError, match="fewer than 4"):
        plan_trials(data, enrol_samples=4)


def test_interval_exact_counts() -> None:
    result = evaluate_adapter("interval", {"n": 64, "features": 4}, small_population(), [2, 3, 4, 6, 8], seed=0)
    counts = [
        (p.setting, p.false_non_matches, p.genuine_trials, p.false_matches, p.impostor_trials) for p in result.points
    ]
    assert counts == [
        (2, 20, 24, 1, 264),
        (3, 11, 24, 4, 264),
        (4, 4, 24, 19, 264),
        (6, 0, 24, 83, 264),
        (8, 0, 24, 149, 264),
    ]
    # The sweep crosses between v=4 (FNMR 4/24 > FMR 19/264) and v=6 (0/24 < 83/264).
    assert result.eer == pytest.approx(0.12808641975308643)
    assert {b.metric for b in result.baselines} == {"euclidean", "chebyshev"}


def test_interval_counts_equal_chebyshev_rule() -> None:
    # With integer data, decoding succeeds iff every feature is within v − 1: the protected
    # decisions equal the unprotected Chebyshev rule "distance < v" on the rounded template.
    data = small_population()
    trials = plan_trials(data)
    result = evaluate_adapter("interval", {"n": 64, "features": 4}, data, [3], seed=0)
    templates = np.stack([data.samples[r[0]] for r in trials.enrol_rows])
    d_gen = np.abs(data.samples[trials.genuine[1]] - templates[trials.genuine[0]]).max(axis=1)
    d_imp = np.abs(data.samples[trials.impostor[1]] - templates[trials.impostor[0]]).max(axis=1)
    assert result.points[0].false_non_matches == int(np.sum(d_gen >= 3))
    assert result.points[0].false_matches == int(np.sum(d_imp < 3))


def test_vectorised_interval_agrees_with_decode() -> None:
    data = synthetic_vectors(8, 3, 6, n=40, seed=9, model=VectorModel(spread=8, noise=3))
    trials = plan_trials(data)
    pairs = np.hstack([trials.genuine, trials.impostor])
    for v in (1, 2, 5, 9):
        sketch = IntervalSketch(n=40, v=v, features=6)
        enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
        fast, _ = decide_interval(sketch, enrolled, data.samples, pairs[0], pairs[1])
        slow, malformed = decide_by_decoding(sketch, enrolled, data.samples, pairs[0], pairs[1])
        assert np.array_equal(fast, slow) and not malformed.any()


def test_vectorised_interval_on_shuffled_chunks_agrees_with_decode() -> None:
    # Chunks compare a few identities in any order: only those helpers are parsed, re-indexed.
    data = synthetic_vectors(8, 3, 6, n=40, seed=9, model=VectorModel(spread=8, noise=3))
    trials = plan_trials(data)
    pairs = np.hstack([trials.genuine, trials.impostor])
    pairs = pairs[:, np.random.default_rng(3).permutation(pairs.shape[1])]
    sketch = IntervalSketch(n=40, v=5, features=6)
    enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
    slow, _ = decide_by_decoding(sketch, enrolled, data.samples, pairs[0], pairs[1])
    for chunk in (1, 7, 50):
        parts = [pairs[:, i : i + chunk] for i in range(0, pairs.shape[1], chunk)]
        fast = np.concatenate([decide_interval(sketch, enrolled, data.samples, c[0], c[1])[0] for c in parts])
        assert np.array_equal(fast, slow)
    assert slow.any() and not slow.all()
    empty = np.zeros(0, dtype=np.int64)
    assert decide_interval(sketch, enrolled, data.samples, empty, empty)[0].shape == (0,)


def test_vectorised_interval_with_step_and_per_feature_tolerance() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(10.0, 2.0, size=(20, 3))
    data = LabelledVectors(np.repeat(np.arange(5), 4), x)
    trials = plan_trials(data, enrol_samples=2)
    pairs = np.hstack([trials.genuine, trials.impostor])
    sketch = IntervalSketch(n=200, v=[2, 5, 9], step=0.25)
    enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
    fast, _ = decide_interval(sketch, enrolled, data.samples, pairs[0], pairs[1])
    slow, _ = decide_by_decoding(sketch, enrolled, data.samples, pairs[0], pairs[1])
    assert np.array_equal(fast, slow)
    assert fast.any() and not fast.all()


def test_decisions_agree_with_argon2_verify() -> None:
    result = evaluate_adapter(
        "interval", {"n": 64, "features": 4}, small_population(), [4], seed=0, crosscheck_trials=12
    )
    assert result.crosscheck == {"checked": 12, "agreed": 12}
    strings = synthetic_strings(6, 3, 10, error_rate=0.1, seed=1)
    result = evaluate_adapter("code-offset", {"n": 10}, strings, [2], seed=0, crosscheck_trials=10)
    assert result.crosscheck == {"checked": 10, "agreed": 10}


def test_crosscheck_detects_a_wrong_decision() -> None:
    data = small_population()
    trials = plan_trials(data)
    sketch = IntervalSketch(n=64, v=4, features=4)
    enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
    pairs = trials.genuine
    accepted, _ = decide_interval(sketch, enrolled, data.samples, pairs[0], pairs[1])
    agreed, checked = crosscheck_with_verify(sketch, enrolled, data.samples, pairs, ~accepted, 6, seed=1)
    assert checked == 6 and agreed == 0


def test_code_offset_exact_counts_and_parallel_equal() -> None:
    strings = synthetic_strings(10, 3, 8, error_rate=0.1, seed=4)
    one = evaluate_adapter("code-offset", {"n": 8}, strings, [1, 2, 3], seed=0)
    counts = [(p.setting, p.false_non_matches, p.false_matches) for p in one.points]
    assert counts == [(1, 9, 0), (2, 2, 0), (3, 0, 0)]
    assert one.points[0].genuine_trials == 20 and one.points[0].impostor_trials == 180
    assert one.eer == 0.0
    two = evaluate_adapter("code-offset", {"n": 8}, strings, [1, 2, 3], seed=0, jobs=2)
    assert [p.to_dict() for p in two.points] == [p.to_dict() for p in one.points]


def test_eer_is_none_when_sweep_does_not_cross() -> None:
    result = evaluate_adapter("interval", {"n": 64, "features": 4}, small_population(), [2], seed=0)
    assert result.eer is None


def test_malformed_probes_counted_and_all_malformed_is_an_error() -> None:
    data = small_population()

    # A probe transform that truncates the probes of identity 0: those trials are malformed.
    def truncate(x: np.ndarray) -> np.ndarray:
        return x[:2] if np.array_equal(x, data.samples[1]) else x

    result = evaluate_scheme(
        lambda v: IntervalSketch(n=64, v=v, features=4),
        enrol_rounded_mean,
        data,
        [4],
        sweep=SweepSpec(probe_fn=truncate),
    )
    # Sample 1 is a genuine probe of identity 0 and an impostor probe for the 11 others.
    assert result.malformed_probes == (12,)
    with pytest.raises(SampleError, match="does not fit"):
        evaluate_scheme(
            lambda v: IntervalSketch(n=64, v=v, features=4),
            enrol_rounded_mean,
            data,
            [4],
            sweep=SweepSpec(probe_fn=lambda x: x[:2]),
        )
    with pytest.raises(SampleError, match="cannot enrol identity 0"):
        evaluate_adapter("code-offset", {"n": 4}, LabelledVectors(np.array([0, 0, 1, 1]), np.full((4, 2), 7)), [1])


def test_enrolment_templates() -> None:
    sk = IntervalSketch(n=10, v=2, features=3)
    assert enrol_rounded_mean(sk, np.array([[1, 2, 9], [2, 2, 9], [2, 5, 9]])).tolist() == [2, 3, 9]
    assert enrol_byte_mode(None, np.array([[1, 2], [1, 3], [4, 3]])) == bytes([1, 3])  # type: ignore[arg-type]
    assert enrol_majority_set(None, [np.array([1, 2, 3]), np.array([2, 3]), np.array([3, 9])]).tolist() == [2, 3]  # type: ignore[arg-type]


def test_wrong_data_kind_and_unknown_scheme() -> None:
    with pytest.raises(ParameterError, match="no evaluation adapter"):
        evaluate_adapter("nonesuch", {}, small_population(), [1])
    with pytest.raises(ParameterError, match="at least one setting"):
        evaluate_adapter("interval", {"n": 64, "features": 4}, small_population(), [])


def _counts(result) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    return [(p.false_non_matches, p.false_matches) for p in result.points]


def test_pinsketch_counts_equal_set_difference_rule() -> None:
    from sketchauth.evaluate.data import synthetic_sets

    data = synthetic_sets(10, 3, low=1, high=2**10, set_size=12, dropout=0.15, insertion=0.15, seed=6)
    trials = plan_trials(data)
    diff_gen = np.array(
        [np.setxor1d(data.sets[trials.enrol_rows[e][0]], data.sets[q]).size for e, q in trials.genuine.T]
    )
    diff_imp = np.array(
        [np.setxor1d(data.sets[trials.enrol_rows[e][0]], data.sets[q]).size for e, q in trials.impostor.T]
    )
    result = evaluate_adapter("pinsketch", {"m": 10}, data, [2, 4, 6], seed=0)
    # PinSketch recovers A exactly when |A Δ B| ≤ t, and never returns A otherwise.
    assert _counts(result) == [(int(np.sum(diff_gen > t)), int(np.sum(diff_imp <= t))) for t in (2, 4, 6)]
    assert result.points[0].false_non_matches > 0


def test_fuzzy_vault_counts_equal_wrong_element_rule() -> None:
    from sketchauth.evaluate.data import synthetic_sets
    from sketchauth.evaluate.error_rates import fit_set_size

    data = synthetic_sets(10, 3, low=0, high=97, set_size=10, dropout=0.2, insertion=0.2, seed=7)
    trials = plan_trials(data)
    fitted = [fit_set_size(s, 10, 97) for s in data.sets]

    def wrong(e: int, q: int) -> int:
        return int(np.setdiff1d(fitted[q], fitted[trials.enrol_rows[e][0]]).size)

    gen = np.array([wrong(e, q) for e, q in trials.genuine.T])
    imp = np.array([wrong(e, q) for e, q in trials.impostor.T])
    result = evaluate_adapter("fuzzy-vault", {"p": 97, "m": 10}, data, [1, 2, 3], seed=0)
    # The complete vault returns d if and only if |d' \ d| ≤ t (FuzzyVault docstring).
    assert _counts(result) == [(int(np.sum(gen > t)), int(np.sum(imp <= t))) for t in (1, 2, 3)]


def test_weighted_vault_counts_equal_acceptance_condition() -> None:
    from sketchauth.evaluate.data import synthetic_sets
    from sketchauth.templates import enrol_weighted_set, fit_weights

    p, q, g = 61, 4, 24
    data = synthetic_sets(8, 4, low=0, high=p, set_size=10, dropout=0.1, insertion=0.1, seed=8)
    trials = plan_trials(data, enrol_samples=2)
    templates = []
    for rows in trials.enrol_rows:
        e, w = enrol_weighted_set([data.sets[r] for r in rows], q, p=p)
        templates.append(dict(zip(*fit_weights(e, w, g, q), strict=False)))

    def margin(e: int, probe: int) -> int:
        sample = data.sets[probe][: 512 // q]
        c = sum(templates[e].get(int(x), 0) for x in sample)
        return c - (q * sample.size - c)

    gen = np.array([margin(e, s) for e, s in trials.genuine.T])
    imp = np.array([margin(e, s) for e, s in trials.impostor.T])
    result = evaluate_adapter("weighted-vault", {"p": p, "q": q, "g": g}, data, [6, 9], seed=0, enrol_samples=2)
    # Accepted exactly when c − w ≥ g − 2t (WeightedFuzzyVault docstring).
    assert _counts(result) == [(int(np.sum(gen < g - 2 * t)), int(np.sum(imp >= g - 2 * t))) for t in (6, 9)]


@pytest.mark.parametrize("scheme", ["s1", "s2"])
def test_asymmetric_counts_equal_tolerance_rule(scheme: str) -> None:
    from sketchauth.templates import enrol_interval

    data = synthetic_vectors(8, 4, 5, n=64, seed=9, model=VectorModel(spread=4, noise=1.5, reliability_spread=0.5))
    trials = plan_trials(data, enrol_samples=2)
    params = {"n": 64, "q": 8, "scheme": scheme, "features": 5}
    result = evaluate_adapter("asymmetric-interval", params, data, [0, 2], seed=0, enrol_samples=2)
    expected = []
    for margin in (0, 2):
        bv = [enrol_interval(data.samples[rows], 64, 8, margin=margin) for rows in trials.enrol_rows]

        def close(e: int, s: int) -> bool:
            b, v = bv[e]  # noqa: B023 - evaluated inside this iteration
            d = data.samples[s] - b
            # s1 accepts |d' − b| < v; s2's decoder (Fang's thesis §6.2: the first g_i > d') takes the
            # interval [b − v, b + v), so it also accepts d' = b − v.
            low = -v if scheme == "s2" else -v + 1
            return bool(np.all((d >= low) & (d < v)))

        fnm = sum(not close(e, s) for e, s in trials.genuine.T)
        fm = sum(close(e, s) for e, s in trials.impostor.T)
        expected.append((fnm, fm))
    assert _counts(result) == expected
    assert result.parameter == "margin"


def test_adapters_enforce_their_enrolment() -> None:
    data = synthetic_vectors(4, 4, 3, n=64, seed=1)
    with pytest.raises(ParameterError, match="at least 2 samples"):
        evaluate_adapter("asymmetric-interval", {"n": 64, "q": 8, "scheme": "s1", "features": 3}, data, [1])
    with pytest.raises(ParameterError, match="needs parameter 'q'"):
        evaluate_adapter("asymmetric-interval", {"n": 64, "scheme": "s1", "features": 3}, data, [1], enrol_samples=2)
