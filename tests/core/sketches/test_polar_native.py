"""The compiled polar list decoder (``_native.polar_scl``) returns exactly the bits of the numpy
decoder (``polar._decode_numpy``, the specification) on every input.

Random codes (n from 2 to 600, powers of two or not; k < n; lists 1 to 32) and random decoder
inputs: small integers full of zeros and ties, huge values (scaled down to the 2^28 bound), noisy
codewords, and, on the kernel directly, any integers within its 2^29 bound and any frozen mask
(which exercises every node kind at every depth). Then the kernel's refusals: sizes, values and
types it does not take are errors, never reads out of bounds. Native cases are skipped (not silently
dropped) when the extension is not built.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.sketches import polar
from sketchauth.sketches.polar import PolarCode, decode_batch, decode_paths, decoder_inputs

NATIVE = pytest.mark.skipif(polar._NATIVE is None, reason="the compiled extension is not built")
BOUND = 1 << 29


def _kernel(llr: np.ndarray, frozen: np.ndarray, n: int, list_size: int) -> np.ndarray:
    assert polar._NATIVE is not None
    out = polar._NATIVE.polar_scl(np.ascontiguousarray(llr, dtype=np.float64), frozen.tobytes(), n, list_size)
    return np.frombuffer(out, dtype=np.uint8).reshape(llr.shape[0], n)


#: Lists up to the sketch's 128 and beyond, to 256 (beyond 32, a rate-one node forks on at most 31
#: positions; beyond 128 the kernel's selection runs as for the lists the benchmarks use, up to 1024).
LISTS = st.one_of(st.integers(1, 32), st.sampled_from([33, 64, 100, 128, 129, 200, 256]))


@st.composite
def probes(draw: Any) -> tuple[PolarCode, np.ndarray, int]:
    """A code, a batch of probes ``y`` for it and a list size."""
    n = draw(st.integers(2, 600))
    k = draw(st.integers(1, n - 1))
    list_size = draw(LISTS)
    crc = draw(st.sampled_from([0, 0, 4, 6, 8, 11]))
    code = PolarCode(n, k, crc if k + crc < n else 0)
    batch = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["ties", "huge", "noisy", "signs", "exact"]))
    if kind == "ties":  # zeros and equal magnitudes everywhere
        y = rng.integers(-2, 3, size=(batch, n)).astype(np.float64)
    elif kind == "huge":  # scaled down by a power of two, then rounded: ties after rounding too
        y = rng.integers(-(1 << 52), 1 << 52, size=(batch, n)).astype(np.float64)
    elif kind == "signs":  # only the sign is known: every magnitude ties
        y = rng.choice([-1.0, 0.0, 1.0], size=(batch, n)) * draw(st.sampled_from([1.0, 3.0, float(1 << 28)]))
    else:
        word = code.encode(rng.integers(0, 2, size=(batch, k)))
        amplitude = draw(st.integers(1, 1 << 20))
        noise = 0 if kind == "exact" else draw(st.integers(0, 3 * amplitude))
        y = (1.0 - 2.0 * word) * amplitude + rng.integers(-noise, noise + 1, size=(batch, n))
    return code, y, list_size


@NATIVE
@settings(max_examples=150, deadline=None)
@given(probes())
def test_decode_batch_native_equals_numpy(case: tuple[PolarCode, np.ndarray, int]) -> None:
    code, y, list_size = case
    expected = decode_batch(y, code, list_size, backend="numpy")
    got = decode_batch(y, code, list_size, backend="native")
    assert got.dtype == expected.dtype == np.uint8
    assert got.shape == expected.shape == y.shape
    assert got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(decode_batch(y, code, list_size), expected)  # auto: the native one


@NATIVE
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 9), LISTS, st.integers(0, 2**32 - 1), st.data())
def test_kernel_equals_numpy_on_any_mask_and_any_inputs(log_n: int, list_size: int, seed: int, data: Any) -> None:
    size = 1 << log_n
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(0, size))
    density = data.draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    frozen = rng.random(size) < density
    batch = data.draw(st.integers(0, 3))
    magnitude = data.draw(st.sampled_from([1, 2, 1000, BOUND]))
    llr = rng.integers(-magnitude, magnitude + 1, size=(batch, size)).astype(np.float64)
    llr[rng.random(llr.shape) < 0.05] = BOUND * rng.choice([-1.0, 1.0])  # the extremes
    code = SimpleNamespace(frozen=frozen, n=n)
    expected = polar._decode_numpy(llr, code, list_size)  # type: ignore[arg-type]
    np.testing.assert_array_equal(_kernel(llr, frozen.astype(np.uint8), n, list_size), expected)


@NATIVE
@settings(max_examples=100, deadline=None)
@given(probes())
def test_every_path_and_metric_native_equals_numpy(case: tuple[PolarCode, np.ndarray, int]) -> None:
    """The whole final list (bits, metrics, order), which the CRC-aided choice reads, is the same on both."""
    code, y, list_size = case
    bits, metrics = decode_paths(y, code, list_size, backend="numpy")
    got_bits, got_metrics = decode_paths(y, code, list_size, backend="native")
    np.testing.assert_array_equal(got_bits, bits)
    np.testing.assert_array_equal(got_metrics, metrics)
    assert bits.shape[:2] == metrics.shape and 1 <= bits.shape[1] <= list_size
    # the plain decoder's choice is the first path of least metric
    plain = PolarCode(code.n, code.k + code.crc)
    first = bits[np.arange(len(y)), np.argmin(metrics, axis=1)]
    np.testing.assert_array_equal(decode_batch(y, plain, list_size, backend="numpy"), first)


@NATIVE
def test_single_paths_and_full_lists() -> None:
    """List 1 (successive cancellation), and lists that keep every codeword of a small code."""
    rng = np.random.default_rng(7)
    for n, k in [(2, 1), (3, 2), (8, 3), (17, 5), (64, 6), (100, 5)]:
        code = PolarCode(n, k)
        y = rng.integers(-9, 10, size=(20, n)).astype(np.float64)
        for list_size in (1, 2, 31, 32, 33, 128, 1024):
            np.testing.assert_array_equal(
                decode_batch(y, code, list_size, backend="native"), decode_batch(y, code, list_size, backend="numpy")
            )


@NATIVE
@pytest.mark.parametrize(
    ("llr", "frozen", "n", "list_size", "error"),
    [
        (np.zeros((1, 4)), bytes(3), 3, 4, ValueError),  # N not a power of two
        (np.zeros((1, 0)), b"", 0, 4, ValueError),  # N = 0
        (np.zeros((1, 8192)), bytes(8192), 8, 4, ValueError),  # N > 4096
        (np.zeros((1, 4)), bytes(4), 5, 4, ValueError),  # n > N
        (np.zeros((1, 4)), bytes(4), -1, 4, ValueError),
        (np.zeros((1, 4)), bytes(4), 4, 0, ValueError),  # list size
        (np.zeros((1, 4)), bytes(4), 4, 1025, ValueError),
        (np.zeros(6), bytes(4), 4, 4, ValueError),  # not B x N values
        (np.zeros((1, 4)), b"\x00\x02\x00\x00", 4, 4, ValueError),  # frozen not 0/1
        (np.array([[0.5, 0, 0, 0]]), bytes(4), 4, 4, ValueError),  # not an integer
        (np.array([[np.nan, 0, 0, 0]]), bytes(4), 4, 4, ValueError),
        (np.array([[0, np.inf, 0, 0]]), bytes(4), 4, 4, ValueError),
        (np.array([[0, 0, BOUND + 1.0, 0]]), bytes(4), 4, 4, ValueError),  # beyond 2^29
        (np.array([[0, 0, 0, -BOUND - 1.0]]), bytes(4), 4, 4, ValueError),
        (np.zeros((1, 4), dtype=np.int64), bytes(4), 4, 4, TypeError),  # not float64
        (np.zeros((1, 4), dtype=np.float32), bytes(4), 4, 4, TypeError),
        (np.zeros((4, 4))[:, ::2], bytes(2), 2, 4, (TypeError, ValueError, BufferError)),  # not contiguous
    ],
)
def test_kernel_refuses(llr: np.ndarray, frozen: bytes, n: int, list_size: int, error: Any) -> None:
    assert polar._NATIVE is not None
    with pytest.raises(error):
        polar._NATIVE.polar_scl(llr, frozen, n, list_size)


@NATIVE
def test_kernel_bounds_and_empty_batches() -> None:
    assert polar._NATIVE is not None
    ones = bytes([1, 1, 1, 1])
    assert polar._NATIVE.polar_scl(np.zeros((0, 4)), ones, 4, 4) == b""
    assert polar._NATIVE.polar_scl(np.full((2, 4), float(BOUND)), ones, 0, 4) == b""
    extremes = np.array([[BOUND, -BOUND, -BOUND, BOUND]], dtype=np.float64)
    for mask in ([1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 0], [1, 0, 1, 0]):
        frozen = np.array(mask, dtype=np.uint8)
        code = SimpleNamespace(frozen=frozen.astype(bool), n=4)
        expected = polar._decode_numpy(extremes, code, 3)  # type: ignore[arg-type]
        np.testing.assert_array_equal(_kernel(extremes, frozen, 4, 3), expected)
    # a bad row after good ones: an error, not a partial answer
    llr = np.zeros((3, 4))
    llr[2, 1] = 0.25
    with pytest.raises(ValueError, match="row 2"):
        polar._NATIVE.polar_scl(llr, bytes(4), 4, 2)


@NATIVE
def test_backend_choice() -> None:
    code = PolarCode(6, 2)
    y = np.array([[1000.0, -900, 800, 0, 10, -40]])
    with pytest.raises(ParameterError):
        decode_batch(y, code, 1025, backend="native")  # beyond the kernel's list
    with pytest.raises(ParameterError):
        decode_batch(y, code, 4, backend="fast")
    np.testing.assert_array_equal(decode_batch(y, code, 1025), decode_batch(y, code, 1025, backend="numpy"))
    # inputs that are not finite stay with the specification (whatever it makes of them)
    with np.errstate(all="ignore"):
        bad = y.copy()
        bad[0, 1] = np.inf
        with pytest.raises(ParameterError):
            decode_batch(bad, code, 4, backend="native")
        np.testing.assert_array_equal(decode_batch(bad, code, 4), decode_batch(bad, code, 4, backend="numpy"))


def test_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the extension is not built, ``auto`` is numpy and ``native`` says why it cannot run."""
    monkeypatch.setattr(polar, "_NATIVE", None)
    code = PolarCode(6, 2)
    word = code.encode(np.array([1, 0]))
    y = (1.0 - 2.0 * word[None, :]) * 1000 + np.array([30, -50, 20, 0, 10, -40])
    np.testing.assert_array_equal(decode_batch(y, code, 4)[0], word)
    with pytest.raises(ParameterError):
        decode_batch(y, code, 4, backend="native")


def test_decoder_inputs_stay_in_the_kernels_bounds() -> None:
    """Finite probes give integers of magnitude <= 2^28 (known bits 2^29): the kernel's domain."""
    code = PolarCode(300, 40)
    rng = np.random.default_rng(3)
    for scale in (1.0, 2.0**27, 2.0**28 - 1, 2.0**28, 2.0**60):
        y = np.round(rng.uniform(-1, 1, size=(5, 300)) * scale)
        y[0, 0] = scale
        llr = decoder_inputs(y, code)
        assert np.all(llr == np.round(llr))
        assert np.max(np.abs(llr[:, :300])) <= 1 << 28
        assert np.all(llr[:, 300:] == 1 << 29)


@NATIVE
@pytest.mark.parametrize(("n", "k", "crc"), [(128, 64, 6), (128, 32, 11), (96, 40, 8), (256, 64, 8)])
def test_long_lists_native_equals_numpy(n: int, k: int, crc: int) -> None:
    """Lists of 512 and 1024 (the kernel's largest) keep every path and metric of the specification,
    near the capacity angle where the list fills and ties in the selection are frequent."""
    rng = np.random.default_rng(n + k)
    code = PolarCode(n, k, crc)
    words = 1.0 - 2.0 * code.encode(rng.integers(0, 2, size=(3, k)))
    y = np.rint(words * 64 + rng.normal(0.0, 80.0, size=words.shape))  # small integers: many ties
    for list_size in (512, 1024):
        bits, metrics = decode_paths(y, code, list_size, backend="numpy")
        got_bits, got_metrics = decode_paths(y, code, list_size, backend="native")
        np.testing.assert_array_equal(got_bits, bits)
        np.testing.assert_array_equal(got_metrics, metrics)
