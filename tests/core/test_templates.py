"""Enrolment from several samples: enrol_interval and enrol_weighted_set (Fang's thesis, ch. 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.templates import enrol_interval, enrol_weighted_set


def test_interval_known_values_range() -> None:
    samples = [[10, 50, 0], [12, 50, 0], [11, 53, 9]]
    b, v = enrol_interval(samples, n=100, q=8)
    # means 11, 51, 3 (exact); ranges 2, 3, 9 → v = range + 1, the last clipped to q = 8.
    assert b.tolist() == [11, 51, 3] and v.tolist() == [3, 4, 8]
    assert b.dtype == np.int64 and v.dtype == np.int64


def test_interval_rounds_half_up_exactly() -> None:
    b, _ = enrol_interval([[1, 2], [2, 3]], n=10, q=4)  # means 1.5 and 2.5
    assert b.tolist() == [2, 3]
    b, _ = enrol_interval([[0], [0], [1]], n=10, q=4)  # 1/3 → 0
    assert b.tolist() == [0]


def test_interval_std_spread_and_parameters() -> None:
    samples = [[10], [12], [14], [16]]  # sample std (ddof=1) = sqrt(20/3) = 2.582
    s = math.sqrt(20 / 3)
    b, v = enrol_interval(samples, n=100, q=20, spread="std")
    assert b.tolist() == [13] and v.tolist() == [math.ceil(3 * s) + 1]  # 8 + 1
    _, v = enrol_interval(samples, n=100, q=20, spread="std", scale=1.0, margin=0)
    assert v.tolist() == [3]
    _, v = enrol_interval(samples, n=100, q=20, spread="range", scale=0.5, margin=2)
    assert v.tolist() == [3 + 2]
    # scale = 0 and margin = 0 would give 0: clipped up to 1.
    _, v = enrol_interval(samples, n=100, q=20, scale=0.0, margin=0)
    assert v.tolist() == [1]


def test_interval_exact_multiple_is_not_bumped_by_float_error() -> None:
    # 0.1 · 30 = 3.0000000000000004 in floating point; the ceiling must still be 3.
    _, v = enrol_interval([[0], [30]], n=100, q=50, scale=0.1, margin=0)
    assert v.tolist() == [3]


def test_interval_quantises_floats_with_step() -> None:
    samples = [[1.02, 4.9], [1.11, 5.2], [0.97, 5.0]]
    b, v = enrol_interval(samples, n=100, q=10, step=0.1)
    # quantised: [10, 49], [11, 52], [10, 50] → means 10.33, 50.33 → 10, 50; ranges 1, 3.
    assert b.tolist() == [10, 50] and v.tolist() == [2, 4]


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_every_enrolment_sample_decodes_when_not_clipped(data: st.DataObject) -> None:
    n = data.draw(st.integers(4, 500))
    features = data.draw(st.integers(1, 5))
    k = data.draw(st.integers(2, 6))
    row = st.lists(st.integers(0, n - 1), min_size=features, max_size=features)
    samples = np.array(data.draw(st.lists(row, min_size=k, max_size=k)))
    q = n
    b, v = enrol_interval(samples, n=n, q=q)
    assert np.all((b >= 0) & (b < n)) and np.all(v >= 1)
    assert np.all(v == samples.max(axis=0) - samples.min(axis=0) + 1)
    for scheme in ("s1", "s2"):
        sketch = AsymmetricIntervalSketch(n, q, scheme=scheme, features=features)
        helper = sketch.encode((b, v))
        for row in samples:
            got_b, got_v = sketch.decode(helper, row)
            assert got_b.tolist() == b.tolist() and got_v.tolist() == v.tolist()


@pytest.mark.parametrize(
    ("samples", "kwargs", "error"),
    [
        ([[1, 2]], {}, SampleError),  # one capture
        ([1, 2, 3], {}, SampleError),  # not k x features
        ([[1, 2], [3]], {}, SampleError),  # ragged
        ([[1.5], [2.0]], {}, SampleError),  # non-integer without a step
        ([[1.0], [np.nan]], {"step": 0.5}, SampleError),
        ([[1], [100]], {}, SampleError),  # outside [0, n)
        ([[-1], [3]], {}, SampleError),
        ([[1], [2]], {"spread": "mad"}, ParameterError),
        ([[1], [2]], {"scale": -1.0}, ParameterError),
        ([[1], [2]], {"scale": math.inf}, ParameterError),
        ([[1], [2]], {"margin": -1}, ParameterError),
        ([[1], [2]], {"step": 0}, ParameterError),
        ([["a"], ["b"]], {}, SampleError),
    ],
)
def test_interval_rejects(samples, kwargs, error) -> None:
    with pytest.raises(error):
        enrol_interval(samples, n=100, q=8, **kwargs)


def test_interval_rejects_bad_n_q() -> None:
    with pytest.raises(ParameterError):
        enrol_interval([[1], [2]], n=10, q=11)
    with pytest.raises(ParameterError):
        enrol_interval([[1], [2]], n=1, q=1)


def test_interval_error_messages_do_not_echo_values() -> None:
    with pytest.raises(SampleError) as info:
        enrol_interval([[12345], [67890]], n=100, q=8)
    assert "12345" not in str(info.value) and "67890" not in str(info.value)


# -- weighted sets -------------------------------------------------------------------------------
def test_weighted_known_values() -> None:
    sets = [{1, 2, 3}, {1, 2}, {1, 4}, {1, 2, 5}]
    elements, weights = enrol_weighted_set(sets, q=8, p=10)
    # k = 4, counts 1:4 2:3 3:1 4:1 5:1; majority = 2; w = round(7·c/4): 7, 5.25 → 5.
    assert elements.tolist() == [1, 2] and weights.tolist() == [7, 5]
    elements, weights = enrol_weighted_set(sets, q=8, p=10, min_count=1)
    # c = 1: 7/4 = 1.75 → 2
    assert elements.tolist() == [1, 2, 3, 4, 5] and weights.tolist() == [7, 5, 2, 2, 2]


def test_weighted_rounds_half_up_and_drops_weight_zero() -> None:
    # q = 2: w = round(c/k); k = 4, c = 2 → 0.5 → 1; c = 1 → 0.25 → 0 (dropped even if allowed).
    sets = [[1, 2], [1, 3], [1], [1]]
    elements, weights = enrol_weighted_set(sets, q=2, min_count=1)
    assert elements.tolist() == [1] and weights.tolist() == [1]
    sets = [[1, 2], [1, 2], [1], [1]]
    elements, weights = enrol_weighted_set(sets, q=2, min_count=1)
    assert elements.tolist() == [1, 2] and weights.tolist() == [1, 1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 30), max_size=12), min_size=2, max_size=6),
    st.integers(2, 16),
)
def test_weighted_properties(sets, q: int) -> None:
    elements, weights = enrol_weighted_set([sorted(s) for s in sets], q=q, p=31)
    k = len(sets)
    assert np.all(np.diff(elements) > 0)
    assert np.all((weights >= 1) & (weights < q))
    for x, w in zip(elements.tolist(), weights.tolist(), strict=False):
        count = sum(x in s for s in sets)
        assert count >= math.ceil(k / 2)
        assert w == math.floor((q - 1) * count / k + 0.5)
    everywhere = set.intersection(*map(set, sets))
    for x in everywhere:  # seen every time: the heaviest weight
        assert weights[elements.tolist().index(x)] == q - 1


@pytest.mark.parametrize(
    ("sets", "kwargs", "error"),
    [
        ([{1, 2}], {}, SampleError),
        ("ab", {}, SampleError),
        ([[1, 1], [1]], {}, SampleError),  # duplicates
        ([[1, 10], [1]], {"p": 10}, SampleError),  # outside [0, p)
        ([[-1], [1]], {}, SampleError),
        ([[1.5], [1]], {}, SampleError),
        ([[1], [1]], {"min_count": 3}, ParameterError),
        ([[1], [1]], {"min_count": 0}, ParameterError),
        ([[1], [1]], {"p": 1}, ParameterError),
    ],
)
def test_weighted_rejects(sets, kwargs, error) -> None:
    with pytest.raises(error):
        enrol_weighted_set(sets, q=4, **kwargs)


def test_weighted_rejects_q_below_two() -> None:
    with pytest.raises(ParameterError):
        enrol_weighted_set([[1], [1]], q=1)


def test_fit_weights_trims_the_least_consistent_and_raises_the_heaviest() -> None:
    from sketchauth.templates import fit_weights

    e = np.array([5, 1, 9, 3])
    w = np.array([1, 3, 2, 3])
    # heaviest first, ties by element: 1(3), 3(3), 9(2), 5(1); total 7 cuts 9 to 1 and drops 5
    fe, fw = fit_weights(e, w, 7, 4)
    assert fe.tolist() == [1, 3, 9] and fw.tolist() == [3, 3, 1]
    # short of 12 by 3: raise towards q - 1 = 4 heaviest first: 1->4, 3->4, 9->3
    fe, fw = fit_weights(e, w, 12, 5)
    assert fe.tolist() == [1, 3, 5, 9] and fw.tolist() == [4, 4, 1, 3]
    with pytest.raises(SampleError):
        fit_weights(e, w, 20, 4)


def test_enrol_weighted_set_with_total() -> None:
    from sketchauth.templates import enrol_weighted_set

    sets = [[1, 2, 3, 4], [1, 2, 3], [1, 2, 5]]
    elements, weights = enrol_weighted_set(sets, 4, total=7)
    assert int(weights.sum()) == 7
    assert elements.tolist() == [1, 2, 3]
    assert weights.tolist() == [3, 3, 1]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    sets=st.lists(st.sets(st.integers(0, 29), min_size=1, max_size=12).map(sorted), min_size=2, max_size=6),
    total=st.integers(1, 40),
)
def test_fit_weights_properties(sets: list[list[int]], total: int) -> None:
    """Sum is exactly total; cuts fall on lighter elements, raises on heavier ones; weights in [1, q)."""
    q = 4
    elements, weights = enrol_weighted_set(sets, q, p=30)
    derived = dict(zip(elements.tolist(), weights.tolist(), strict=False))
    if len(derived) * (q - 1) < total:
        with pytest.raises(SampleError, match="total weight"):
            enrol_weighted_set(sets, q, p=30, total=total)
        return
    fe, fw = enrol_weighted_set(sets, q, p=30, total=total)
    fitted = dict(zip(fe.tolist(), fw.tolist(), strict=False))
    assert fe.tolist() == sorted(fitted)
    assert sum(fitted.values()) == total and all(1 <= w <= q - 1 for w in fitted.values())
    if sum(derived.values()) >= total:
        assert all(fitted[x] <= derived[x] for x in fitted)
        cut = {x for x in derived if fitted.get(x, 0) < derived[x]}
        whole = {x for x in derived if fitted.get(x, 0) == derived[x]}
        if cut and whole:
            assert max(derived[x] for x in cut) <= min(derived[x] for x in whole)
    else:
        assert set(fitted) == set(derived) and all(fitted[x] >= derived[x] for x in derived)


def test_template_hooks_enrol_with_the_sketchs_own_parameters() -> None:
    """The schemes' template hooks (``SchemeDescriptor.template``) are the rules above, applied
    with the sketch's universe, cap, quantisation and total weight."""
    from sketchauth.sketches.interval import IntervalSketch
    from sketchauth.sketches.vault import WeightedFuzzyVault
    from sketchauth.templates import asymmetric_template, weighted_vault_template

    captures = [[1.0, 5.2], [1.4, 5.0], [0.6, 5.9]]
    sketch = AsymmetricIntervalSketch(64, 8, scheme="s2", features=2, step=0.5, offset=-2.0)
    b, v = asymmetric_template(sketch, captures, margin=2)
    expected = enrol_interval(captures, 64, 8, step=0.5, offset=-2.0, margin=2)
    assert (b.tolist(), v.tolist()) == (expected[0].tolist(), expected[1].tolist())
    vault = WeightedFuzzyVault(50, 4, 9, 3)
    sets = [[3, 17, 40], [3, 17, 40], [3, 17, 40, 5]]
    got, want = weighted_vault_template(vault, sets), enrol_weighted_set(sets, 4, p=50, total=9)
    assert (got[0].tolist(), got[1].tolist()) == (want[0].tolist(), want[1].tolist())
    assert int(got[1].sum()) == 9
    with pytest.raises(ParameterError, match="asymmetric interval sketch"):
        asymmetric_template(IntervalSketch(64, 3), captures)
