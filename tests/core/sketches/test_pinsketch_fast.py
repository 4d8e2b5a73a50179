"""PinSketch's one-call encode and decode agree exactly with the general path they shortcut.

With the compiled extension, ``PinSketch.encode`` and ``.decode`` validate plain sets in C (type,
range, size, duplicates), write and read records from a cached header, check the payload's
cyclotomic relations in C and draw the trace multiplier there. Every input — accepted or refused,
with its message — must come out as the general path (``encode_with`` / ``payload`` +
``_decode_payload``, the strict Python validation) gives it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, SampleError, SketchFormatError
from sketchauth.sketches import samples
from sketchauth.sketches.format import pack_helper, parse_helper
from sketchauth.sketches.pinsketch import PinSketch

pytestmark = pytest.mark.skipif(samples._NATIVE is None, reason="the extension is not built")


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        value = fn()
    except (SampleError, SketchFormatError, DecodeError) as exc:
        return type(exc).__name__, str(exc)
    if isinstance(value, bytes):
        return "ok", value
    return "ok", np.asarray(value).tolist()


def _general_encode(sketch: PinSketch, values: Any) -> tuple[str, Any]:
    return _outcome(lambda: sketch.encode_with(values, None))


def _general_decode(sketch: PinSketch, helper: Any, sample: Any) -> tuple[str, Any]:
    return _outcome(lambda: sketch._decode_payload(sketch.payload(helper), sample))


def _inputs(m: int, size: int, seed: int) -> list[Any]:
    """Plain sets of every kind, and every defect a plain-looking input can have."""
    rng = random.Random(seed)
    top = 1 << m
    base = rng.sample(range(1, top), size)
    arr = np.array(base, dtype=np.int64)
    return [
        base,
        tuple(base),
        set(base),
        frozenset(base),
        arr,
        arr.astype(np.uint64),
        [*base, base[-1]],  # duplicate at the end
        [base[0], *base],  # duplicate at the start
        np.append(arr, arr[size // 2]),
        [*base, 0],
        [*base, top],
        [*base, -1],
        [*base, 2**64 + 1],
        [*base, True],
        {*base, True},
        [*base, 3.0],
        [*base, np.int64(5)],
        [*base, Fraction(2, 1)],
        [*base, "7"],
        np.append(arr, 0),
        np.append(arr, top),
        np.array([2**63 + 1], dtype=np.uint64),
        np.array([-5], dtype=np.int64),
        arr.astype(np.int32),
        arr.astype(">i8"),
        arr[::2],
        arr.reshape(1, -1),
        arr.astype(np.float64),
        [],
        set(),
        np.array([], dtype=np.int64),
        range(1, 9),
        b"\x01\x02",
        bytearray(b"\x01\x02"),
        "12",
        7,
        {1: 2},
    ]


@pytest.mark.parametrize(("m", "t", "size"), [(8, 4, 20), (8, 64, 100), (12, 6, 40), (16, 8, 300), (32, 16, 70)])
def test_encode_agrees_with_the_general_path(m: int, t: int, size: int) -> None:
    sketch = PinSketch(m, t)
    for i, values in enumerate(_inputs(m, size, m * t)):
        fast = _outcome(partial(sketch.encode, values))
        assert fast == _general_encode(sketch, values), f"input {i}"
    ordered = sorted(random.Random(1).sample(range(1, 1 << m), size))
    assert sketch.encode(ordered) == sketch.encode(ordered[::-1]) == sketch.encode(set(ordered))


@pytest.mark.parametrize(("m", "t", "size"), [(8, 4, 20), (8, 64, 100), (12, 6, 40), (16, 8, 300), (32, 16, 70)])
def test_decode_agrees_with_the_general_path(m: int, t: int, size: int) -> None:
    sketch = PinSketch(m, t)
    rng = random.Random(size)
    enrolled = rng.sample(range(1, 1 << m), size)
    helper = sketch.encode(enrolled)
    for i, sample in enumerate(_inputs(m, size, m * t + 1) + _inputs(m, size, m * t)):
        fast = _outcome(partial(sketch.decode, helper, sample))
        assert fast == _general_decode(sketch, helper, sample), f"sample {i}"
    members = set(enrolled)
    spare = [x for x in rng.sample(range(1, 1 << m), min((1 << m) - 1, size + 2 * t)) if x not in members]
    for distance in (0, 1, t // 2, t, t + 1, t + 3):
        outsiders = spare[: distance - distance // 2]
        sample = enrolled[distance // 2 :] + outsiders
        rng.shuffle(sample)
        fast = _outcome(partial(sketch.decode, helper, sample))
        assert fast == _general_decode(sketch, helper, sample), f"distance {distance}"
        if distance <= t:
            assert fast == ("ok", sorted(enrolled))


def _with_payload(sketch: PinSketch, payload: bytes) -> bytes:
    return pack_helper(sketch.scheme_id, sketch.params(), payload)


@pytest.mark.parametrize(("m", "t"), [(8, 9), (8, 64), (8, 127), (9, 20), (10, 40), (12, 40), (16, 3)])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_untrusted_payloads_are_refused_in_the_same_words(m: int, t: int, data: st.DataObject) -> None:
    """Payloads with a valid digest but words wider than m bits or syndromes that violate the
    cyclotomic relations (only possible for large t against m): the compiled check refuses
    exactly what ``_check_payload`` refuses, with its message."""
    sketch = PinSketch(m, t)
    enrolled = data.draw(st.sets(st.integers(1, (1 << m) - 1), min_size=1, max_size=2 * t))
    payload = bytearray(parse_helper(sketch.encode(sorted(enrolled))).payload)
    for _ in range(data.draw(st.integers(0, 3))):
        index = data.draw(st.integers(0, len(payload) - 1))
        payload[index] ^= data.draw(st.integers(1, 255))
    helper = _with_payload(sketch, bytes(payload))
    sample = sorted(enrolled)[: max(1, len(enrolled) - 1)]
    fast = _outcome(lambda: sketch.decode(helper, sample))
    general = _general_decode(sketch, helper, sample)
    assert fast[0] == general[0]
    if fast[0] != "ok":  # a successful decode may differ only if the set is not unique (never here)
        assert fast == general


def test_the_relations_check_catches_each_kind_of_defect() -> None:
    sketch = PinSketch(8, 64)  # dependent syndromes and subfield ones
    payload = bytearray(parse_helper(sketch.encode([1, 2, 3])).payload)
    dependent = next(k for k, _, _ in sketch._dependent)
    subfield = next(k for k, _ in sketch._subfield if k not in {j for _, j, _ in sketch._dependent})
    for k, words in ((dependent, "violate a cyclotomic relation"), (subfield, "outside its subfield")):
        broken = bytearray(payload)
        for value in range(1, 256):
            broken[k] = payload[k] ^ value
            helper = _with_payload(sketch, bytes(broken))
            general = _general_decode(sketch, helper, [1, 2])
            if general[0] == "SketchFormatError" and words in general[1]:
                break
        assert _outcome(partial(sketch.decode, helper, [1, 2])) == general
    wide = PinSketch(12, 3)  # 16-bit words for 12-bit elements
    helper = _with_payload(wide, b"\xf0\x00" + bytes(4))
    assert _outcome(lambda: wide.decode(helper, [1])) == (
        "SketchFormatError",
        "PinSketch syndrome wider than 12 bits",
    )


def test_large_inputs_take_the_linear_sort_and_find_duplicates_anywhere() -> None:
    sketch = PinSketch(32, 8)
    rng = random.Random(5)
    values = rng.sample(range(1, 1 << 32), 5000)
    helper = sketch.encode(values)
    assert helper == sketch.encode_with(np.array(sorted(values), dtype=np.int64), None)
    for position in (0, 1, 2500, 4999):
        duplicated = [*values, values[position]]
        assert _outcome(partial(sketch.encode, duplicated)) == _general_encode(sketch, duplicated)
        assert _outcome(partial(sketch.decode, helper, duplicated)) == _general_decode(sketch, helper, duplicated)
    assert sketch.decode(helper, [*values[4:], 1, 2, 3]).tolist() == sorted(values)


def test_subclasses_numpy_and_pickled_sketches_give_the_same_records() -> None:
    import pickle

    class Child(PinSketch):
        pass

    values = [3, 70, 1000, 2024, 65535]
    native = PinSketch(16, 4)
    helper = native.encode(values)
    for other in (Child(16, 4), PinSketch(16, 4, backend="numpy"), pickle.loads(pickle.dumps(native))):
        assert other.encode(values) == helper
        assert other.decode(helper, [3, 70, 1001, 2024, 65535, 9]).tolist() == sorted(values)
    assert native._fast is not None and Child(16, 4)._fast_path() is None


def test_parameters_are_read_only() -> None:
    sketch = PinSketch(16, 4)
    with pytest.raises(AttributeError):
        sketch.t = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        sketch.m = 8  # type: ignore[misc]


def test_decode_draws_a_fresh_multiplier_and_returns_a_fresh_array() -> None:
    sketch = PinSketch(16, 8)
    values = list(range(100, 140))
    helper = sketch.encode(values)
    sample = [*values[4:], 7, 8, 9, 10]
    first, second = sketch.decode(helper, sample), sketch.decode(helper, sample)
    assert first.tolist() == second.tolist() == values and first.dtype == np.int64
    first[0] = 0
    assert second[0] == 100
