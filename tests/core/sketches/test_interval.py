"""IntervalSketch (Fang's thesis, ch. 6): exact recovery within tolerance, documented behaviour beyond."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import exact_sketch_loss
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.sketches.interval import IntervalSketch


@st.composite
def configs(draw: st.DrawFn) -> tuple[IntervalSketch, np.ndarray]:
    features = draw(st.integers(1, 8))
    n = draw(st.integers(2, 5000))
    v = draw(st.lists(st.integers(1, max(1, n // 2)), min_size=features, max_size=features))
    b = draw(st.lists(st.integers(0, n - 1), min_size=features, max_size=features))
    return IntervalSketch(n=n, v=v), np.array(b)


@settings(max_examples=150, deadline=None)
@given(configs(), st.data())
def test_recovers_exactly_within_tolerance(config, data) -> None:
    sketch, b = config
    noise = np.array([data.draw(st.integers(-(int(v) - 1), int(v) - 1)) for v in sketch.v])
    helper = sketch.encode(b)
    np.testing.assert_array_equal(sketch.decode(helper, b + noise), b)


@settings(max_examples=150, deadline=None)
@given(configs(), st.data())
def test_never_returns_the_secret_beyond_tolerance(config, data) -> None:
    sketch, b = config
    i = data.draw(st.integers(0, sketch.features - 1))
    v = int(sketch.v[i])
    offset = data.draw(st.integers(v, 3 * v + 5)) * data.draw(st.sampled_from([-1, 1]))
    sample = b.copy()
    sample[i] += offset
    helper = sketch.encode(b)
    try:
        recovered = sketch.decode(helper, sample)
    except DecodeError:
        return
    assert not np.array_equal(recovered, b)
    assert recovered[i] != b[i]


def test_known_answer() -> None:
    sketch = IntervalSketch(n=100, v=[3, 5])  # moduli 5 and 9
    helper = sketch.encode([42, 17])
    assert sketch.payload(helper) == bytes([42 % 5, 17 % 9])
    assert sketch.decode(helper, [44, 13]).tolist() == [42, 17]
    # 45 is 3 away from 42: the nearest point congruent to 2 mod 5 is 47
    assert sketch.decode(helper, [45, 17]).tolist() == [47, 17]


def test_decode_error_when_nearest_point_leaves_the_universe() -> None:
    sketch = IntervalSketch(n=10, v=3)
    helper = sketch.encode([1])
    with pytest.raises(DecodeError):
        sketch.decode(helper, [-2])


def test_quantised_float_input() -> None:
    sketch = IntervalSketch(n=1000, v=4, step=0.25, features=3)
    helper = sketch.encode([10.0, 12.6, 0.1])  # quantised to [40, 50, 0]
    assert sketch.decode(helper, [10.6, 12.3, 0.0]).tolist() == [40, 50, 0]


def test_report_sums_per_feature_losses() -> None:
    report = IntervalSketch(n=1000, v=[1, 2, 8]).report()
    assert report.sketch_bits == pytest.approx(math.log2(1) + math.log2(3) + math.log2(15))
    assert report.randomness_bits == 0.0
    assert report.loss_bound_bits == report.sketch_bits
    # modulus larger than the universe: the sketch takes only n values
    assert IntervalSketch(n=4, v=4).report().sketch_bits == pytest.approx(2.0)


@pytest.mark.parametrize("n,v", [(6, 1), (6, 2), (7, 3), (9, 2)])
def test_exact_loss_within_bound_exhaustive(n: int, v: int) -> None:
    sketch = IntervalSketch(n=n, v=v, features=2)
    secrets = [[a, b] for a in range(n) for b in range(n)]
    loss = exact_sketch_loss(sketch, secrets)
    assert loss <= sketch.report().loss_bound_bits + 1e-9
    assert loss == pytest.approx(2 * math.log2(min(2 * v - 1, n)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": 1, "v": 1},
        {"n": 10, "v": 0},
        {"n": 10, "v": 11},
        {"n": 10, "v": []},
        {"n": 10, "v": [1, 2], "features": 3},
        {"n": 10, "v": 1, "step": 0},
        {"n": 10, "v": 1, "step": math.inf},
        {"n": 10.5, "v": 1},
        {"n": True, "v": 1},
        {"n": 10, "v": "3"},
    ],
)
def test_bad_parameters(kwargs) -> None:
    with pytest.raises(ParameterError):
        IntervalSketch(**kwargs)


@pytest.mark.parametrize(
    "secret",
    [[1, 2], [1], [[1, 2, 3]], [1, 2, 10], [1, 2, -1], [1.5, 2, 3], [math.nan, 1, 2], ["a", "b", "c"], [1 + 1j, 2, 3]],
)
def test_bad_secrets(secret) -> None:
    with pytest.raises(SampleError):
        IntervalSketch(n=10, v=2, features=3).encode(secret)


def test_bad_samples_do_not_echo_values() -> None:
    sketch = IntervalSketch(n=10, v=2, features=3)
    helper = sketch.encode([1, 2, 3])
    with pytest.raises(SampleError) as err:
        sketch.decode(helper, [1, math.inf, 3])
    assert "inf" not in str(err.value).replace("infinite", "")
    with pytest.raises(SampleError):
        sketch.decode(helper, [1, 2])


def test_symbols_round_trip_to_valid_helpers() -> None:
    sketch = IntervalSketch(n=100, v=[3, 5])
    helper = sketch.encode([42, 17])
    symbols, space = sketch.symbols(sketch.payload(helper))
    assert space.kind == "mod"
    assert space.moduli.tolist() == [5, 9]
    shifted = (symbols + np.array([4, 8], dtype=np.uint64)) % space.moduli
    other = sketch.with_symbols(helper, shifted)
    assert sketch.symbols(sketch.payload(other))[0].tolist() == [1, 7]
    with pytest.raises(ParameterError):
        sketch.with_symbols(helper, np.array([5, 0], dtype=np.uint64))


def test_params_round_trip() -> None:
    sketch = IntervalSketch(n=50, v=[2, 2, 3], step=0.5)
    assert IntervalSketch.from_params(sketch.params()) == sketch
    assert repr(sketch).startswith("IntervalSketch(")
