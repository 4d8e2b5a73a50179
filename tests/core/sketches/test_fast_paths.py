"""The fast paths of the public calls agree exactly with the general paths they shortcut.

``as_element_set`` reads plain containers and integer vectors in one pass (compiled when the
extension is built), a sketch reads its own helper records by matching its header bytes, and
PinSketch payloads go to the kernels packed. Each must return what the general path returns and
leave every refusal — with its message — to the general path.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from sketchauth.errors import DecodeError, SampleError, SketchFormatError
from sketchauth.sketches import _gf2m, samples
from sketchauth.sketches.format import pack_helper, parse_helper
from sketchauth.sketches.pinsketch import PinSketch

LOW, HIGH, MAX = 1, 1 << 16, 300


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        value = fn()
    except (SampleError, SketchFormatError, DecodeError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", np.asarray(value).tolist()


def _inputs() -> list[Any]:
    rng = random.Random(7)
    base = rng.sample(range(LOW, HIGH), 40)
    big = np.array(base, dtype=np.int64)
    return [
        base,
        tuple(base),
        set(base),
        frozenset(base),
        [],
        set(),
        [5],
        [*base, base[3]],  # duplicate
        [*base, 0],  # below
        [*base, HIGH],  # above
        [*base, -1],
        [*base, 2**63],  # beyond int64
        [*base, -(2**70)],
        [*base, True],
        {*base, True},
        [*base, 2.0],
        [*base, np.int64(9)],
        [*base, Fraction(4, 1)],
        [*base, "7"],
        [*base, [1]],
        list(range(LOW, LOW + MAX + 1)),  # too many
        set(range(LOW, LOW + MAX + 1)),
        big,
        big.astype(np.uint64),
        big.astype(np.int32),
        big.astype(">i8"),
        big[::2],  # not contiguous
        np.append(big, big[0]),
        np.append(big, 0),
        np.append(big, HIGH),
        np.array([2**63 + 5], dtype=np.uint64),
        np.array([], dtype=np.int64),
        np.arange(LOW, LOW + MAX + 1, dtype=np.int64),
        big.reshape(4, 10),
        big.astype(np.float64),
        np.array(base, dtype=object),
        range(LOW, 50),
        (x for x in base),
        7,
        "123",
    ]


def _general(values: Any) -> tuple[str, Any]:
    original = samples._plain_element_set
    samples._plain_element_set = lambda *args: None
    try:
        return _outcome(lambda: samples.as_element_set(values, LOW, HIGH, max_size=MAX, name="sample"))
    finally:
        samples._plain_element_set = original


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_element_set_fast_path_agrees_with_the_general_path(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if compiled and samples._NATIVE is None:
        pytest.skip("the extension is not built")
    if not compiled:
        monkeypatch.setattr(samples, "_NATIVE", None)
    for i, values in enumerate(_inputs()):
        again = values if not hasattr(values, "__next__") else None
        fast = _outcome(lambda v=values: samples.as_element_set(v, LOW, HIGH, max_size=MAX, name="sample"))
        if again is None:
            continue  # a generator is read once; the general path is the only one it takes
        assert fast == _general(again), f"input {i}"


def test_element_set_fast_path_returns_a_fresh_sorted_array() -> None:
    arr = np.array([9, 3, 7], dtype=np.int64)
    out = samples.as_element_set(arr, LOW, HIGH)
    assert out.tolist() == [3, 7, 9] and out.dtype == np.int64
    out[0] = 100
    assert arr.tolist() == [9, 3, 7]


@pytest.mark.parametrize(("m", "t"), [(16, 8), (20, 5), (32, 8), (12, 40)])
def test_own_records_read_fast_exactly_as_parsed(m: int, t: int) -> None:
    sketch = PinSketch(m, t)
    rng = random.Random(m * t)
    enrolled = rng.sample(range(1, 1 << m), t + 10)
    helper = sketch.encode(enrolled)
    assert helper == pack_helper(sketch.scheme_id, sketch.params(), parse_helper(helper).payload)
    sample = enrolled[t // 2 :] + rng.sample(range(1, 1 << m), 2)

    def general(h: Any) -> tuple[str, Any]:
        return _outcome(lambda: sketch._decode_payload(sketch.payload(h), sample))

    variants: list[Any] = [helper, bytearray(helper), memoryview(helper), helper[:-1], helper + b"\0", b""]
    for i in range(len(helper)):
        flipped = bytearray(helper)
        flipped[i] ^= 0x40
        variants.append(bytes(flipped))
    variants += [PinSketch(m, t + 1).encode(enrolled), PinSketch(m, max(1, t - 1)).encode(enrolled)]
    for v in variants:
        fast = _outcome(lambda v=v: sketch.decode(v, sample))
        if fast[0] == "ok":
            assert fast == ("ok", sorted(enrolled)) or fast == general(v)
        else:
            assert fast == general(v)
    assert _outcome(lambda: sketch.decode(helper, sample)) == ("ok", sorted(enrolled))


@pytest.mark.parametrize("m", [8, 12, 16, 20, 24, 32])
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_packed_kernels_agree(m: int, backend: str) -> None:
    if backend == "native" and samples._NATIVE is None:
        pytest.skip("the extension is not built")
    field = _gf2m.binary_field(m, backend=backend)
    width = (m + 7) // 8
    rng = random.Random(m)
    elements = np.array(sorted(rng.sample(range(1, 1 << m), 30)), dtype=np.int64)
    sums = _gf2m.odd_power_sums(field, elements, 6)
    payload = _gf2m.odd_power_sums_packed(field, elements, 6, width)
    assert payload == _gf2m.pack_words(sums, width)
    assert _gf2m.unpack_words(payload, width).tolist() == sums.tolist()
    sample = elements[3:]
    expected = _gf2m.decode_set(field, sums, sample, beta=3).tolist()
    assert expected == elements.tolist()
    assert _gf2m.decode_payload(field, payload, width, sample, beta=3).tolist() == expected


def test_other_schemes_read_their_own_records_as_the_general_parser_does() -> None:
    from sketchauth.sketches.code_offset import CodeOffsetSketch
    from sketchauth.sketches.interval import IntervalSketch

    code = CodeOffsetSketch(n=32, t=4)
    secret = bytes(range(32))
    noisy = bytes([secret[0] ^ 1, *secret[1:]])
    interval = IntervalSketch(n=64, v=3, features=4)
    cases = [(code, code.encode(secret), noisy), (interval, interval.encode([10, 20, 30, 40]), [11, 20, 29, 40])]
    for sketch, helper, sample in cases:
        fast = _outcome(lambda s=sketch, h=helper, x=sample: s.decode(h, x))
        general = _outcome(lambda s=sketch, h=helper, x=sample: s._decode_payload(s.payload(h), x))
        assert fast == general and fast[0] == "ok"
        damaged = helper[:-1] + bytes([helper[-1] ^ 1])
        assert _outcome(lambda s=sketch, h=damaged, x=sample: s.decode(h, x)) == (
            "SketchFormatError",
            "helper data digest mismatch (corrupted or tampered)",
        )


def test_header_bytes_follow_the_parameters_and_only_stand_for_them_when_they_parse_back() -> None:
    sketch = PinSketch(16, 8)
    prefix, own = sketch._helper_prefix()
    assert own and prefix.endswith(b'{"m":16,"t":8}')
    assert sketch._helper_prefix()[0] is prefix  # computed once

    class Tupled(PinSketch):
        def params(self) -> dict[str, Any]:
            return {"m": self.m, "t": (self.t,)}  # JSON has no tuples: it would parse back as a list

    assert Tupled(16, 8)._helper_prefix()[1] is False
