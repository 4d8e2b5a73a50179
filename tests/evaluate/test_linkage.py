"""Linkage evaluation of s1/s2 sketches (Fang's thesis §6.2): simulation, scores, accuracy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _helpers import randomness_from_draws
from hypothesis import given, settings
from hypothesis import strategies as st

import sketchauth.evaluate.linkage as linkage
from sketchauth.errors import ParameterError
from sketchauth.evaluate.linkage import (
    LinkageSetup,
    PartitionBatch,
    ReenrolmentNoise,
    best_threshold,
    linkage_experiment,
    s1_linkage_score,
    s2_partitions_from_draws,
    s2_similar_interval_counts,
    s2_similar_intervals,
    s3_partitions_from_draws,
    simulate_enrolments,
    simulate_s2_partitions,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch


# -- the vectorised encoder is the real encoder ---------------------------------------------------
@pytest.mark.parametrize("scheme", ["s2", "s3"])
@settings(max_examples=40, deadline=None)
@given(st.integers(2, 120), st.data())
def test_vectorised_partitions_equal_real_encoder(scheme: str, n: int, data: st.DataObject) -> None:
    q_min = 2 if scheme == "s3" else 1  # s3 needs q >= 2
    q = data.draw(st.integers(q_min, max(q_min, min(n, 12))))
    n = max(n, q)
    rows = 6
    b = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=rows, max_size=rows)))
    v = np.array(data.draw(st.lists(st.integers(1, q), min_size=rows, max_size=rows)))
    seed = data.draw(st.integers(0, 2**32))
    values = q + 1 if scheme == "s3" else q  # s3 draws one value more: its odd gap
    draws = np.random.default_rng(seed).integers(1, values + 1, size=(rows, n + 2))
    if scheme == "s3":
        batch, short = s3_partitions_from_draws(b, v, n, q, draws)
        assert batch.doubled
    else:
        batch, short = s2_partitions_from_draws(b, v, n, draws)
    assert not short.any()  # n + 2 draws always cover
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme)
    for i in range(rows):
        randomness = randomness_from_draws(int(b[i]), int(v[i]), n, q, draws[i])
        helper = sketch.encode_with(([b[i]], [v[i]]), (randomness,))
        assert sketch.partition(helper)[0].tolist() == batch.points(i).tolist()
        if scheme == "s2":
            assert batch.counts[i] == len(randomness[0]) + len(randomness[1]) + 1


def test_short_rows_are_flagged() -> None:
    draws = np.ones((2, 3), dtype=np.int64)
    _, short = s2_partitions_from_draws(np.array([50, 1]), np.array([1, 1]), 100, draws)
    assert short.tolist() == [True, True]
    _, short = s2_partitions_from_draws(np.array([3, 1]), np.array([2, 1]), 4, draws)
    assert short.tolist() == [False, False]


@pytest.mark.parametrize("scheme", ["s2", "s3"])
@pytest.mark.parametrize("columns", [None, 1])
def test_simulated_partitions_follow_the_exact_distribution(monkeypatch, columns, scheme: str) -> None:
    # Every partition of (b, v) = (4, 1) over n = 9, q = 3 against its enumerated probability
    # (q^(−draws) for s2); columns=1 forces the extension path (rows running out of draws).
    if columns is not None:
        monkeypatch.setattr(linkage, "expected_draw_columns", lambda n, q: columns)
    n, q, rows = 9, 3, 20000
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme)
    expected = {
        tuple(sketch.partition(sketch.encode_with(((4,), (1,)), r))[0].tolist()): p
        for r, p in sketch.randomness_space(((4,), (1,)))
    }
    batch = simulate_s2_partitions(np.random.default_rng(5), np.full(rows, 4), np.full(rows, 1), n, q, scheme)
    seen: dict[tuple[int, ...], int] = {}
    for i in range(rows):
        key = tuple(batch.points(i).tolist())
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= set(expected)
    chi2 = sum((seen.get(k, 0) - rows * p) ** 2 / (rows * p) for k, p in expected.items())
    dof = len(expected) - 1
    assert chi2 < dof + 6 * math.sqrt(2 * dof)


# -- scores ----------------------------------------------------------------------------------------
def test_s2_similar_intervals_hand_example() -> None:
    a = np.array([-1, 1, 3, 7, 11])  # intervals (c, w): (0,2) (2,2) (5,4) (9,4)
    b = np.array([0, 2, 6, 10])  # (1,2) (4,4) (8,4)
    # τ = 1: exact matches only → none. τ = 2: |Δc| ≤ 1 and |Δw| ≤ 3:
    # (0,2)~(1,2), (2,2)~(1,2), (5,4)~(4,4), (9,4)~(8,4) → 4.
    assert s2_similar_intervals(a, b, 1) == 0
    assert s2_similar_intervals(a, b, 2) == 4
    assert s2_similar_intervals([a, a], [b, a], 1) == 4  # features add up; a matches itself 4 times
    with pytest.raises(ParameterError):
        s2_similar_intervals([a], [a, a], 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 150), st.integers(1, 6), st.integers(0, 2**32))
def test_vectorised_counts_equal_reference(n: int, tau: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = int(rng.integers(1, min(n, 10) + 1))
    rows = 12
    make = lambda: simulate_s2_partitions(  # noqa: E731
        rng, rng.integers(0, n, rows), rng.integers(1, q + 1, rows), n, q
    )
    a, b = make(), make()
    counts = s2_similar_interval_counts(a, b, tau)
    assert counts.tolist() == [s2_similar_intervals(a.points(i), b.points(i), tau) for i in range(rows)]


def test_grid_blocks_do_not_change_counts(monkeypatch) -> None:
    rng = np.random.default_rng(2)
    a = simulate_s2_partitions(rng, rng.integers(0, 300, 50), rng.integers(1, 9, 50), 300, 8)
    b = simulate_s2_partitions(rng, rng.integers(0, 300, 50), rng.integers(1, 9, 50), 300, 8)
    whole = s2_similar_interval_counts(a, b, 3)
    monkeypatch.setattr(linkage, "GRID_CELLS", 1000)  # a few rows per block
    assert s2_similar_interval_counts(a, b, 3).tolist() == whole.tolist()


def test_scores_from_real_helpers_equal_vectorised_path() -> None:
    n, q, tau, rows = 200, 8, 2, 8
    rng = np.random.default_rng(9)
    sketch = AsymmetricIntervalSketch(n, q, scheme="s2")
    b, v, b2, v2 = simulate_enrolments(rng, rows, n, q, tau)
    b, v, b2, v2 = (x.ravel() for x in (b, v, b2, v2))
    draws1 = rng.integers(1, q + 1, size=(rows, n))
    draws2 = rng.integers(1, q + 1, size=(rows, n))
    first, _ = s2_partitions_from_draws(b, v, n, draws1)
    second, _ = s2_partitions_from_draws(b2, v2, n, draws2)
    vectorised = s2_similar_interval_counts(first, second, tau).tolist()
    from_helpers = []
    for i in range(rows):
        h1 = sketch.encode_with(([b[i]], [v[i]]), (randomness_from_draws(b[i], v[i], n, q, draws1[i]),))
        h2 = sketch.encode_with(([b2[i]], [v2[i]]), (randomness_from_draws(b2[i], v2[i], n, q, draws2[i]),))
        from_helpers.append(s2_similar_intervals(sketch.partition(h1), sketch.partition(h2), tau))
    assert from_helpers == vectorised
    assert all(s >= 1 for s in vectorised)  # the true intervals are similar by construction
    s1 = AsymmetricIntervalSketch(n, q, scheme="s1")
    scores = [
        int(
            s1_linkage_score(
                s1.published_tolerances(s1.encode(([b[i]], [v[i]]))),
                s1.published_tolerances(s1.encode(([b2[i]], [v2[i]]))),
                tau,
            )
        )
        for i in range(rows)
    ]
    assert scores == s1_linkage_score(v[:, None], v2[:, None], tau).tolist()


def test_s1_score_and_best_threshold_by_hand() -> None:
    assert s1_linkage_score([[1, 5, 9]], [[2, 5, 12]], 2).tolist() == [2]
    mated = np.array([3, 3, 2, 1])
    nonmated = np.array([0, 1, 2, 0])
    # t = 2: mated ≥ 2 → 3, non-mated < 2 → 3 → 6/8; t = 1: 4 + 2 = 6 too; ties → smallest.
    assert best_threshold(mated, nonmated) == (1, 0.75)
    assert best_threshold(np.array([5, 5]), np.array([0, 0])) == (1, 1.0)
    assert best_threshold(np.array([0, 0]), np.array([0, 0])) == (0, 0.5)


# -- population model ----------------------------------------------------------------------------
def test_reenrolment_moves_within_tau_and_tolerance() -> None:
    n, q, tau = 100, 8, 3
    b, v, b2, v2 = simulate_enrolments(np.random.default_rng(1), 20000, n, q, tau, features=2)
    assert b.shape == (20000, 2)
    assert np.all((b2 >= 0) & (b2 < n)) and np.all((v2 >= 1) & (v2 <= q))
    assert np.abs(v2 - v).max() == tau - 1
    assert np.all(np.abs(b2 - b) < np.minimum(tau, v))
    assert np.abs(b2 - b).max() == tau - 1


# -- the experiment ---------------------------------------------------------------------------------
def test_fixed_seed_results() -> None:
    s1 = linkage_experiment(LinkageSetup("s1", 100, 8, 2), 1000, 5)
    assert (s1.accuracy, s1.threshold) == (0.827, 1)
    assert (int(s1.mated_scores.sum()), int(s1.nonmated_scores.sum())) == (1000, 346)
    s2 = linkage_experiment(LinkageSetup("s2", 100, 8, 2), 1000, 5)
    assert (s2.accuracy, s2.threshold) == (0.6865, 2)
    assert (int(s2.mated_scores.sum()), int(s2.nonmated_scores.sum())) == (2600, 1435)
    multi = linkage_experiment(LinkageSetup("s2", 200, 8, 2, features=3), 300, 11, chunk_rows=100)
    assert (multi.accuracy, multi.threshold) == (0.7183333333333334, 10)


def test_s1_with_tau_one_is_exact() -> None:
    # τ = 1: re-enrolment does not move v, so every mated score is 1; accuracy at threshold 1
    # misses exactly the non-mated pairs with equal v.
    result = linkage_experiment(LinkageSetup("s1", 60, 4, 1), 500, 3)
    assert np.all(result.mated_scores == 1)
    equal = int(np.count_nonzero(result.nonmated_scores == 1))
    assert result.threshold == 1
    assert result.accuracy == (1000 - equal) / 1000
    assert abs(equal / 500 - 0.25) < 0.06  # P(v = v') = 1/q for independent people


def test_s2_is_harder_to_link_than_s1() -> None:
    s1 = linkage_experiment(LinkageSetup("s1", 1000, 16, 2), 20000, 1)
    s2 = linkage_experiment(LinkageSetup("s2", 1000, 16, 2), 20000, 1)
    assert s1.accuracy > 0.88 and s2.accuracy < 0.7


def test_result_is_independent_of_progress_and_serialises() -> None:
    calls: list[int] = []
    a = linkage_experiment(LinkageSetup("s2", 100, 8, 2), 250, 4, chunk_rows=60, progress=calls.append)
    b = linkage_experiment(LinkageSetup("s2", 100, 8, 2), 250, 4, chunk_rows=60)
    assert calls == [60, 60, 60, 60, 10]
    calls.clear()
    # Non-mated partners come from the same chunk: a lone last person joins the previous chunk.
    linkage_experiment(LinkageSetup("s1", 100, 8, 2), 121, 4, chunk_rows=60, progress=calls.append)
    assert calls == [60, 61]
    assert np.array_equal(a.mated_scores, b.mated_scores) and a.accuracy == b.accuracy
    data = json.loads(json.dumps(a.to_dict()))
    assert sum(data["histogram"]["mated"]) == 250 and sum(data["histogram"]["nonmated"]) == 250
    assert data["accuracy"] == a.accuracy and data["threshold"] == a.threshold


@pytest.mark.parametrize(
    "args",
    [
        ("s4", 100, 8, 2, 10, 1),
        ("s3", 100, 1, 2, 10, 1),  # s3 needs q >= 2
        ("s1", 1, 1, 2, 10, 1),
        ("s1", 100, 101, 2, 10, 1),
        ("s1", 100, 8, 0, 10, 1),
        ("s1", 100, 8, 2, 1, 1),
        ("s1", 100, 8, 2, 10, -1),
    ],
)
def test_bad_arguments(args) -> None:
    with pytest.raises(ParameterError):
        scheme, n, q, tau, pairs, seed = args
        linkage_experiment(LinkageSetup(scheme, n, q, tau), pairs, seed)
    with pytest.raises(ParameterError):
        linkage_experiment(LinkageSetup("s1", 100, 8, 2, features=0), 10, 1)


def test_partition_batch_rows() -> None:
    batch = PartitionBatch(centres=np.array([[5, 2, 0, 9]]), halves=np.array([[2, 1, 1, 2]]), counts=np.array([4]))
    assert batch.rows == 1 and batch.points(0).tolist() == [-1, 1, 3, 7, 11]


# -- re-enrolment noise models, separate from the adversary's τ -------------------------------------


def _moved(noise: ReenrolmentNoise, n: int = 50, q: int = 5, tau: int = 1, people: int = 4000):
    return simulate_enrolments(np.random.default_rng(9), people, n, q, tau, features=2, noise=noise)


def test_identical_noise_keeps_b_and_v() -> None:
    b, v, b2, v2 = _moved(ReenrolmentNoise.identical(), tau=3)
    assert (b2 == b).all() and (v2 == v).all()


def test_plus_minus_noise_moves_exactly_one_value_by_one() -> None:
    b, v, b2, v2 = _moved(ReenrolmentNoise.b_plus_minus())
    inside = (b > 0) & (b < 49)
    assert set((b2 - b).ravel().tolist()) <= {-1, 0, 1}
    assert (np.abs(b2 - b)[inside] == 1).all() and (v2 == v).all()
    assert {-1, 1} <= set((b2 - b)[inside].tolist())
    b, v, b2, v2 = _moved(ReenrolmentNoise.v_plus_minus())
    assert (b2 == b).all() and (np.abs(v2 - v)[(v > 1) & (v < 5)] == 1).all()
    assert v2.min() >= 1 and v2.max() <= 5


def test_within_tolerance_noise_stays_accepted_by_the_first_sketch() -> None:
    b, v, b2, v2 = _moved(ReenrolmentNoise.within_tolerance(), n=1000)
    assert (np.abs(b2 - b) < v).all() and (v2 == v).all()
    shift = (b2 - b)[v == 3]
    assert set(shift.tolist()) == {-2, -1, 0, 1, 2}  # every accepted value occurs


def test_empirical_noise_draws_measured_movements_jointly() -> None:
    first = (np.array([10, 20, 30]), np.array([2, 3, 4]))
    second = (np.array([11, 20, 28]), np.array([2, 4, 4]))
    noise = ReenrolmentNoise.from_enrolments(first, second)
    assert noise.deltas == ((1, 0), (0, 1), (-2, 0)) and noise.to_dict()["measured_movements"] == 3
    b, v, b2, v2 = _moved(noise, n=1000, q=8)
    free = (b >= 2) & (b <= 997) & (v < 8)  # nothing clipped
    pairs = set(zip((b2 - b)[free].tolist(), (v2 - v)[free].tolist(), strict=False))
    assert pairs == {(1, 0), (0, 1), (-2, 0)}
    with pytest.raises(ParameterError):
        ReenrolmentNoise.empirical([1.5], [0])
    with pytest.raises(ParameterError):
        ReenrolmentNoise.empirical([], [])
    with pytest.raises(ParameterError):
        ReenrolmentNoise("sideways")


def test_default_noise_is_the_tied_model_and_reports_it() -> None:
    a = linkage_experiment(LinkageSetup("s2", 100, 8, 2), 500, 5)
    b = linkage_experiment(LinkageSetup("s2", 100, 8, 2, noise=ReenrolmentNoise.tied()), 500, 5)
    assert (a.mated_scores == b.mated_scores).all() and (a.nonmated_scores == b.nonmated_scores).all()
    assert a.to_dict()["noise"] == {"kind": "tied", "label": "tied"}
    with pytest.raises(ParameterError):
        linkage_experiment(LinkageSetup("s2", 100, 8, 2, noise="identical"), 500, 5)


def test_s2_parity_links_identical_reenrolments_but_not_a_move_of_b() -> None:
    # Every s2 boundary has the parity of b − v: identical re-enrolments keep it (≥ 0.75 at τ = 1),
    # moving b alone by one flips it, and the exact-match adversary sees no shared interval at all.
    same = linkage_experiment(LinkageSetup("s2", 1000, 5, 1, noise=ReenrolmentNoise.identical()), 3000, 2)
    moved = linkage_experiment(LinkageSetup("s2", 1000, 5, 1, noise=ReenrolmentNoise.b_plus_minus()), 3000, 2)
    both = linkage_experiment(
        LinkageSetup("s2", 1000, 5, 1, noise=ReenrolmentNoise.steps(b=(-1, 1), v=(-1, 1))), 3000, 2
    )
    assert same.accuracy >= 0.74
    # (only a b clipped at 0 or n − 1 keeps its parity)
    assert (moved.mated_scores > 0).mean() < 0.005 and moved.accuracy == 0.5
    assert 0.6 < both.accuracy < same.accuracy  # b − v keeps its parity when both move
    more = linkage_experiment(LinkageSetup("s2", 1000, 5, 1, features=4, noise=ReenrolmentNoise.identical()), 1000, 2)
    assert more.accuracy > same.accuracy
