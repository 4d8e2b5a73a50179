"""ChaffPointSketch: maximal sets, exact ranks, exact randomness (run tables against the step-by-step fill)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import exact_sketch_loss
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.chaff import (
    MAX_ENUMERATED_UNIVERSE,
    ChaffPointSketch,
    fill_by_orders,
    segment_set_counts,
)
from sketchauth.sketches.format import pack_helper


def _maximal_sets_brute_force(n: int, d: int) -> list[list[int]]:
    out = []
    for mask in range(1, 1 << n):
        pts = [i for i in range(n) if mask >> i & 1]
        if any(b - a <= d for a, b in itertools.pairwise(pts)):
            continue
        if all(any(abs(x - p) <= d for p in pts) for x in range(n)):
            out.append(pts)
    return sorted(out)


@pytest.mark.parametrize("n,d", [(n, d) for n in range(2, 12) for d in range(1, n)])
def test_count_and_ranks_match_brute_force(n, d):
    sk = ChaffPointSketch(n, d)
    sets = _maximal_sets_brute_force(n, d)
    assert sk.sketch_count == len(sets)
    assert [sk.unrank(r) for r in range(sk.sketch_count)] == sets  # lexicographic ranks
    assert all(sk.rank(s) == r for r, s in enumerate(sets))


def test_known_counts():
    assert [ChaffPointSketch(n, 1).sketch_count for n in range(2, 12)] == [2, 2, 3, 4, 5, 7, 9, 12, 16, 21]
    assert ChaffPointSketch(100, 4, points=2).sketch_count == 27980709239
    with pytest.raises(ParameterError):
        ChaffPointSketch(400, 4)  # more sketches than a 63-bit symbol holds


def test_randomness_space_by_hand():
    sk = ChaffPointSketch(6, 1)
    # Secret 2: free {0, 4, 5}; 0 then {4 or 5}; 4 then 0; 5 then 0.
    assert sk.randomness_space([2]) == [((0, 4), 0.5), ((0, 5), 0.5)]
    # Secret 1: free {3, 4, 5}: 3 then 5, 4 alone, 5 then 3.
    assert sk.randomness_space([1]) == [((4,), 1 / 3), ((3, 5), 2 / 3)]
    assert sum(p for _, p in sk.randomness_space([0])) == pytest.approx(1.0)


def test_report_exact_numbers():
    r = ChaffPointSketch(6, 1).report()
    assert r.sketch_bits == math.log2(5)
    assert r.randomness_bits == pytest.approx(math.log2(1.5))  # worst secret: 1 (or 4), p = 2/3
    assert r.loss_bound_bits == pytest.approx(math.log2(5) - math.log2(1.5))
    assert r.extra["randomness_support_bits"] == pytest.approx(math.log2(3))
    big = ChaffPointSketch(100, 4).report()
    assert big.randomness_bits == 0.0 and any("trivial" in n for n in big.notes)


@pytest.mark.parametrize("n,d", [(6, 1), (8, 1), (9, 2), (11, 3)])
def test_exact_loss_within_bound(n, d):
    sk = ChaffPointSketch(n, d)
    exact = exact_sketch_loss(sk, list(sk.secret_space()))
    assert exact <= sk.report().loss_bound_bits + 1e-9


def test_exact_loss_of_the_smallest_example():
    sk = ChaffPointSketch(6, 1)
    # H(b) = log2 6, H~(b|S) = log2 9/4 (hand computation: P_succ = 4/9).
    assert exact_sketch_loss(sk, list(sk.secret_space())) == pytest.approx(math.log2(6) - math.log2(9 / 4))


@settings(max_examples=60, deadline=None)
@given(st.integers(10, 120), st.integers(1, 9), st.data())
def test_encode_is_maximal_holds_secret_and_decodes_within_tolerance(n, d, data):
    d = min(d, n - 1)
    sk = ChaffPointSketch(n, d, points=1)
    x = data.draw(st.integers(0, n - 1))
    helper = sk.encode([x])
    pts = sk.sketch_points(helper).tolist()
    assert x in pts
    sk._check_maximal(pts)
    noise = data.draw(st.integers(-sk.tolerance, sk.tolerance))
    sample = min(max(x + noise, 0), n - 1)
    assert sk.decode(helper, [sample]).tolist() == [x]


def test_beyond_tolerance_returns_a_sketch_point_or_fails():
    sk = ChaffPointSketch(60, 6, points=2)
    helper = sk.encode_with([10, 40], (0, 17, 24, 31, 47, 54))
    assert sk.sketch_points(helper).tolist() == [0, 10, 17, 24, 31, 40, 47, 54]
    assert sk.decode(helper, [13, 38]).tolist() == [10, 40]
    assert sk.decode(helper, [15, 38]).tolist() == [17, 40]  # nearer chaff: another secret
    with pytest.raises(DecodeError):
        sk.decode(helper, [9, 11])


def test_validation():
    sk = ChaffPointSketch(30, 3, points=2)
    with pytest.raises(SampleError):
        sk.encode([4, 6])  # too close
    with pytest.raises(SampleError):
        sk.encode([4])
    with pytest.raises(SampleError):
        sk.encode([4, 40])
    with pytest.raises(ParameterError):
        sk.encode_with([4, 20], (0,))  # not maximal
    with pytest.raises(ParameterError):
        ChaffPointSketch(10, 3, points=4)
    with pytest.raises(SampleError):
        sk.decode(sk.encode([4, 20]), [4])


def test_payload_is_the_rank_and_is_parsed_strictly():
    sk = ChaffPointSketch(12, 2)
    helper = sk.encode([5])
    assert load_sketch(helper) == sk
    for bad in (bytes([31]), b"", bytes(2)):
        with pytest.raises(SketchFormatError):
            sk.decode(pack_helper(7, sk.params(), bad), [5])


def test_symbols_every_rank_is_a_valid_sketch():
    sk = ChaffPointSketch(12, 2)
    helper = sk.encode([5])
    _symbols, space = sk.symbols(sk.payload(helper))
    assert space.kind == "mod" and space.moduli.tolist() == [31]
    for r in range(31):
        moved = sk.with_symbols(helper, np.array([r], dtype=np.uint64))
        assert sk.sketch_points(moved).tolist() == sk.unrank(r)


# -- exact chaff distributions by free runs, against the step-by-step fill -------------------------
def _parameters(max_universe: int):
    for n in range(2, max_universe + 1):
        for d in range(1, n):
            for points in (1, 2, 3):
                if (points - 1) * (d + 1) < n:
                    yield n, d, points


def test_run_tables_equal_the_step_by_step_fill_exhaustively():
    checked = 0
    for n, d, points in _parameters(13):
        sk = ChaffPointSketch(n, d, points=points)
        for secret in sk.secret_space():
            assert dict(sk.exact_randomness_space(secret)) == fill_by_orders(n, d, secret.tolist())
            checked += 1
    assert checked == 2520


def test_exact_min_entropy_of_the_randomness_equals_the_brute_force_minimum():
    for n, d, points in _parameters(11):
        sk = ChaffPointSketch(n, d, points=points)
        spaces = [fill_by_orders(n, d, s.tolist()) for s in sk.secret_space()]
        worst = max(max(space.values()) for space in spaces)  # H(R): the most predictable secret
        widest = max(len(space) for space in spaces)
        report = sk.report()
        assert report.randomness_bits == pytest.approx(-math.log2(worst), abs=1e-12), (n, d, points)
        assert report.extra["randomness_support_bits"] == pytest.approx(math.log2(widest), abs=1e-12)


def test_segment_set_counts_are_the_sketch_counts():
    counts = segment_set_counts(60, 3)
    assert counts[:4] == [1, 1, 2, 3]  # a run of L <= d + 1 positions holds one point: L sets
    assert all(counts[n] == ChaffPointSketch(n, 3).sketch_count for n in range(4, 61))
    assert counts[24] == 605
    assert segment_set_counts(10**6, 1, limit=100) is None  # stops at the limit, whatever the length


def test_universe_24_is_exact_and_fast():
    sk = ChaffPointSketch(24, 3)
    report = sk.report()
    assert report.randomness_bits == pytest.approx(4.512895511891562, abs=1e-12)
    assert any("exact min-entropy" in note for note in report.notes)
    distribution = sk.sketch_distribution()
    assert len(distribution) == 605 and sum(distribution.values()) == 1  # exact Fractions
    assert sum(p for _, p in sk.exact_randomness_space([11])) == 1
    assert all(sum(q for _, q in sk.randomness_space([x])) == pytest.approx(1.0) for x in range(24))


def test_exact_tables_refuse_beyond_the_limit():
    sk = ChaffPointSketch(100, 2)
    with pytest.raises(ParameterError, match="smaller universe"):
        sk.randomness_space([50])
    assert sk.report().randomness_bits == 0.0
    with pytest.raises(ParameterError):
        fill_by_orders(MAX_ENUMERATED_UNIVERSE + 1, 2, [3])
