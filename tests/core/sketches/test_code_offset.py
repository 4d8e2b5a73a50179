"""CodeOffsetSketch (Dodis–Ostrovsky–Reyzin–Smith §5): recovers within t byte errors, fails cleanly beyond."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.format import pack_helper


@st.composite
def noisy_pairs(draw: st.DrawFn, beyond: bool = False):
    n = draw(st.integers(4, 64))
    t = draw(st.integers(1, (n - 1) // 2))
    w = draw(st.binary(min_size=n, max_size=n))
    errors = draw(st.integers(t + 1, min(n, 2 * t + 2)) if beyond else st.integers(0, t))
    positions = draw(st.lists(st.integers(0, n - 1), min_size=errors, max_size=errors, unique=True))
    noisy = bytearray(w)
    for pos in positions:
        noisy[pos] ^= draw(st.integers(1, 255))
    return CodeOffsetSketch(n, t), w, bytes(noisy)


@settings(max_examples=100, deadline=None)
@given(noisy_pairs())
def test_recovers_within_t_errors(case) -> None:
    sketch, w, noisy = case
    assert sketch.decode(sketch.encode(w), noisy) == w


@settings(max_examples=100, deadline=None)
@given(noisy_pairs(beyond=True))
def test_beyond_t_errors_never_returns_the_secret(case) -> None:
    sketch, w, noisy = case
    helper = sketch.encode(w)
    try:
        recovered = sketch.decode(helper, noisy)
    except DecodeError:
        return
    # a bounded-distance decoder can only land on a codeword within t of the sample
    assert recovered != w


def test_fresh_randomness_each_encoding() -> None:
    sketch = CodeOffsetSketch(32, 4)
    w = bytes(range(32))
    assert len({sketch.encode(w) for _ in range(5)}) == 5


def test_known_answer_with_fixed_message() -> None:
    sketch = CodeOffsetSketch(6, 1)
    w = bytes([1, 2, 3, 4, 5, 6])
    message = bytes([0, 0, 0, 0])
    # the all-zero message encodes to the all-zero codeword, so S = w
    assert sketch.payload(sketch.encode_with(w, message)) == w
    helper = sketch.encode_with(w, bytes([1, 0, 0, 0]))
    assert sketch.decode(helper, bytes([1, 2, 3, 9, 5, 6])) == w


def test_report() -> None:
    report = CodeOffsetSketch(64, 5).report()
    assert (report.sketch_bits, report.randomness_bits, report.loss_bound_bits) == (512.0, 432.0, 80.0)


def test_samples_as_int_arrays() -> None:
    sketch = CodeOffsetSketch(4, 1)
    helper = sketch.encode(np.array([1, 2, 3, 4]))
    assert sketch.decode(helper, [1, 2, 3, 200]) == bytes([1, 2, 3, 4])


@pytest.mark.parametrize("sample", [b"abc", b"abcde", [1, 2, 3, 256], [1, 2, 3, -1], [[1, 2, 3, 4]], "abcd"])
def test_bad_samples(sample) -> None:
    sketch = CodeOffsetSketch(4, 1)
    helper = sketch.encode(b"abcd")
    with pytest.raises(SampleError):
        sketch.decode(helper, sample)


@pytest.mark.parametrize("n,t", [(1, 1), (256, 1), (10, 0), (10, 5), (3.0, 1)])
def test_bad_parameters(n, t) -> None:
    with pytest.raises(ParameterError):
        CodeOffsetSketch(n, t)


def test_short_payload_rejected() -> None:
    sketch = CodeOffsetSketch(4, 1)
    with pytest.raises(SketchFormatError):
        sketch.decode(pack_helper(2, sketch.params(), b"abc"), b"abcd")


def test_randomness_space_only_for_tiny_codes() -> None:
    assert len(list(CodeOffsetSketch(3, 1).randomness_space(b"abc"))) == 256
    with pytest.raises(ParameterError):
        CodeOffsetSketch(10, 1).randomness_space(bytes(10))


def test_xor_symbols() -> None:
    sketch = CodeOffsetSketch(4, 1)
    helper = sketch.encode(b"abcd")
    symbols, space = sketch.symbols(sketch.payload(helper))
    assert space.kind == "xor" and space.bits == 8
    mixed = sketch.with_symbols(helper, symbols ^ np.uint64(0xFF))
    assert sketch.payload(mixed) == bytes(b ^ 0xFF for b in sketch.payload(helper))
