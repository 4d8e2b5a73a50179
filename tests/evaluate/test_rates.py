"""Tests of sketchauth.evaluate.rates: Wilson intervals, DET curves, EER, FNMR at a target FMR."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import RatePoint, det_from_scores, eer, fnmr_at_fmr, fnmr_at_fmr_on_det, wilson_interval


def test_wilson_matches_hand_computation() -> None:
    # p = 0.25, z² = 3.8416: centre = (0.25 + 0.09604)/1.19208, half = 1.96·sqrt(0.011776)/1.19208
    lo, hi = wilson_interval(5, 20)
    assert lo == pytest.approx(0.11186, abs=1e-5)
    assert hi == pytest.approx(0.46871, abs=1e-5)


def test_wilson_zero_and_all() -> None:
    lo, hi = wilson_interval(0, 100)
    assert lo == 0.0
    assert hi == pytest.approx(1.96**2 / (100 + 1.96**2), rel=1e-12)
    lo, hi = wilson_interval(100, 100)
    assert hi == 1.0
    assert lo == pytest.approx(100 / (100 + 1.96**2), rel=1e-12)


def test_wilson_other_z() -> None:
    # z = 1: p=0.5, n=4 → centre 0.5, half = sqrt(1/16 + 1/64)/1.25
    lo, hi = wilson_interval(2, 4, z=1.0)
    half = math.sqrt(1 / 16 + 1 / 64) / 1.25
    assert (lo, hi) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))


@pytest.mark.parametrize("k,n", [(0, 0), (-1, 5), (6, 5), (True, 5)])
def test_wilson_rejects_bad_counts(k: int, n: int) -> None:
    with pytest.raises(ParameterError):
        wilson_interval(k, n)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10_000), st.data())
def test_wilson_contains_estimate(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_rate_point_from_counts() -> None:
    p = RatePoint.from_counts(3, 5, 20, 0, 100)
    assert p.fnmr == 0.25 and p.fmr == 0.0
    assert p.false_non_matches == 5 and p.false_matches == 0
    assert p.to_dict()["fnmr_ci"] == list(wilson_interval(5, 20))
    with pytest.raises(ParameterError):
        RatePoint.from_counts(3, 0, 0, 0, 10)


def test_det_small_example() -> None:
    fmr, fnmr, thr = det_from_scores([0.1, 0.2, 0.6], [0.5, 0.7, 0.9])
    assert thr[0] == -np.inf
    np.testing.assert_allclose(thr[1:], [0.1, 0.2, 0.5, 0.6, 0.7, 0.9])
    np.testing.assert_allclose(fmr, [0, 0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(fnmr, [1, 2 / 3, 1 / 3, 1 / 3, 0, 0, 0])
    assert eer(fmr, fnmr) == pytest.approx(1 / 3)


def test_det_higher_is_genuine_mirrors() -> None:
    g, i = np.array([0.1, 0.2, 0.6]), np.array([0.5, 0.7, 0.9])
    fmr, fnmr, thr = det_from_scores(-g, -i, higher_is_genuine=True)
    fmr0, fnmr0, thr0 = det_from_scores(g, i)
    np.testing.assert_allclose(fmr, fmr0)
    np.testing.assert_allclose(fnmr, fnmr0)
    np.testing.assert_allclose(thr, -thr0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=30),
    st.lists(st.integers(0, 20), min_size=1, max_size=30),
)
def test_det_agrees_with_brute_force(gen: list[int], imp: list[int]) -> None:
    fmr, fnmr, thr = det_from_scores(gen, imp)
    g, i = np.array(gen), np.array(imp)
    for a, b, t in zip(fmr, fnmr, thr, strict=False):
        assert a == pytest.approx(np.mean(i <= t))
        assert b == pytest.approx(np.mean(g > t))
    e = eer(fmr, fnmr)
    assert 0.0 <= e <= 1.0


def test_eer_interpolates() -> None:
    # gap (FNMR − FMR) goes 0.5 → −0.3 between points 1 and 2: crossing at w = 0.5/0.8.
    assert eer([0.0, 0.1, 0.3], [1.0, 0.6, 0.0]) == pytest.approx(0.1 + 0.625 * 0.2)


def test_eer_rejects_unordered() -> None:
    with pytest.raises(ParameterError):
        eer([0.2, 0.1], [1.0, 0.0])
    with pytest.raises(ParameterError):
        eer([0.1], [0.1, 0.2])


def test_fnmr_at_fmr() -> None:
    gen = [0.1, 0.2, 0.6]
    imp = [0.5, 0.7, 0.9]
    fnmr, thr, ci = fnmr_at_fmr(gen, imp, 0.0)
    assert (fnmr, thr) == (pytest.approx(1 / 3), 0.2)
    assert ci == wilson_interval(1, 3)
    fnmr, thr, _ = fnmr_at_fmr(gen, imp, 0.5)
    assert (fnmr, thr) == (0.0, 0.6)
    # Only rejecting everything meets the target when the best impostor beats every genuine.
    fnmr, thr, _ = fnmr_at_fmr([5.0], [0.0], 0.0)
    assert fnmr == 1.0 and thr == -math.inf


def test_scores_validated() -> None:
    with pytest.raises(ParameterError):
        det_from_scores([], [1.0])
    with pytest.raises(ParameterError):
        det_from_scores([np.nan], [1.0])
    with pytest.raises(ParameterError):
        fnmr_at_fmr([1.0], [1.0], 1.5)


@pytest.mark.parametrize("higher", [False, True])
def test_fnmr_at_fmr_on_det_is_fnmr_at_fmr_without_a_second_sort(higher: bool) -> None:
    rng = np.random.default_rng(5)
    gen, imp = rng.integers(0, 30, size=200).astype(float), rng.integers(10, 60, size=900).astype(float)
    if higher:
        gen, imp = -gen, -imp
    det = det_from_scores(gen, imp, higher_is_genuine=higher)
    for target in (0.0, 1e-3, 0.01, 0.2, 1.0):
        assert fnmr_at_fmr_on_det(*det, target, genuine_trials=gen.size) == fnmr_at_fmr(
            gen, imp, target, higher_is_genuine=higher
        )
    with pytest.raises(ParameterError):
        fnmr_at_fmr_on_det(*det, -0.1, genuine_trials=gen.size)
