"""The common helper-data format is parsed strictly (sketches/format.py, base.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.sketches.base import load_sketch, scheme_class
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.format import MAGIC, pack_helper, parse_helper
from sketchauth.sketches.interval import IntervalSketch


def _helper() -> bytes:
    return IntervalSketch(n=100, v=[3, 4, 5]).encode([10, 20, 30])


def test_round_trip_and_load_sketch() -> None:
    helper = _helper()
    record = parse_helper(helper)
    assert helper.startswith(MAGIC)
    assert record.params == {"n": 100, "v": [3, 4, 5], "features": 3, "step": None}
    assert load_sketch(helper) == IntervalSketch(n=100, v=[3, 4, 5])


def test_every_truncation_is_rejected() -> None:
    helper = _helper()
    for cut in range(len(helper)):
        with pytest.raises(SketchFormatError):
            parse_helper(helper[:cut])


def test_every_single_byte_change_is_rejected() -> None:
    helper = _helper()
    for i in range(len(helper)):
        tampered = bytearray(helper)
        tampered[i] ^= 0x01
        with pytest.raises(SketchFormatError):
            IntervalSketch(n=100, v=[3, 4, 5]).decode(bytes(tampered), [10, 20, 30])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_escape_as_other_errors(data: bytes) -> None:
    with pytest.raises(SketchFormatError):
        load_sketch(data)


def test_oversized_and_non_bytes_rejected() -> None:
    with pytest.raises(SketchFormatError, match="more than"):
        parse_helper(_helper(), max_bytes=10)
    with pytest.raises(SketchFormatError, match="must be bytes"):
        parse_helper("SKAH")  # type: ignore[arg-type]


def test_trailing_garbage_rejected() -> None:
    with pytest.raises(SketchFormatError, match="length mismatch"):
        parse_helper(_helper() + b"\x00")


def test_wrong_scheme_and_wrong_params_rejected() -> None:
    helper = _helper()
    with pytest.raises(SketchFormatError, match="not code-offset"):
        CodeOffsetSketch(n=3, t=1).decode(helper, b"abc")
    with pytest.raises(SketchFormatError, match="different parameters"):
        IntervalSketch(n=100, v=[3, 4, 6]).decode(helper, [10, 20, 30])


def test_valid_digest_but_impossible_payload_rejected() -> None:
    sketch = IntervalSketch(n=100, v=3)  # modulus 5: a payload byte of 5 is impossible
    forged = pack_helper(1, sketch.params(), bytes([5]))
    with pytest.raises(SketchFormatError, match="out of range"):
        sketch.decode(forged, [0])
    with pytest.raises(SketchFormatError):
        sketch.decode(pack_helper(1, sketch.params(), b""), [0])


def test_non_canonical_or_non_finite_params_rejected() -> None:
    sketch = IntervalSketch(n=100, v=3)
    good = parse_helper(sketch.encode([1]))
    with pytest.raises(SketchFormatError):
        pack_helper(1, {"x": float("nan")}, b"")
    body = pack_helper(1, good.params, good.payload)
    spaced = body.replace(b'"n":100', b'"n": 100')
    with pytest.raises(SketchFormatError):
        parse_helper(spaced)


def test_unknown_scheme_id_and_bad_params_in_helper() -> None:
    with pytest.raises(SketchFormatError, match="unknown scheme id"):
        load_sketch(pack_helper(999, {}, b""))
    with pytest.raises(SketchFormatError, match="invalid for interval"):
        load_sketch(pack_helper(1, {"n": -3, "v": 1}, b""))


def test_scheme_class_unknown_name() -> None:
    with pytest.raises(ParameterError, match="unknown scheme"):
        scheme_class("nope")
