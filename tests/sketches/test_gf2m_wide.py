"""GF(2^m) for 32 < m <= 64 and PinSketch over it: known answers, round trips, backends, untrusted input.

Known answers come from galois (``vectors/gf2m_wide_kat.json``, written by
``vectors/make_gf2m_wide_kat.py``: products, inverses, power sums and decodings for
m = 33, 48, 63, 64). Every implementation — numpy ``clmul`` (carry-less Karatsuba on 32-bit
halves), native ``clmul`` (the CPU instruction where present) and native ``clmul-portable`` (the
plain-C window product, always tested) — must give them, and the numpy fallback must equal the
native kernels on every pair checked, for every m from 33 to 64. Native cases are skipped (not
dropped) when the extension is not built.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, SampleError, SketchFormatError
from sketchauth.sketches import _gf2m as gf
from sketchauth.sketches._backend import backend
from sketchauth.sketches.pinsketch import PinSketch

KAT = json.loads((Path(__file__).parent / "vectors" / "gf2m_wide_kat.json").read_text())
FIELDS = {entry["m"]: entry for entry in KAT["fields"]}
NATIVE = pytest.mark.skipif(backend() != "native", reason="the compiled extension is not built")
WIDE_MS = range(gf.NARROW_MAX_M + 1, gf.MAX_M + 1)

#: (method, backend) of every implementation of the wide fields.
IMPLEMENTATIONS = [
    pytest.param("clmul", "numpy", id="numpy"),
    pytest.param("clmul", "native", id="native-clmul", marks=NATIVE),
    pytest.param("clmul-portable", "native", id="native-portable", marks=NATIVE),
]
BACKENDS = [pytest.param("numpy", id="numpy"), pytest.param("native", id="native", marks=NATIVE)]


def _dtype(m: int) -> Any:
    return np.uint64 if m == 64 else np.int64


# -- known answers (galois) -------------------------------------------------------------------------


@pytest.mark.parametrize("m", sorted(FIELDS))
def test_the_polynomials_are_galois_minimal_primitive_ones(m: int) -> None:
    assert gf.PRIMITIVE_POLYNOMIALS[m] == FIELDS[m]["polynomial"]
    assert gf.MAX_M == 64 and sorted(gf.PRIMITIVE_POLYNOMIALS) == list(range(8, 65))


@pytest.mark.parametrize("m", sorted(FIELDS))
@pytest.mark.parametrize(("method", "backend_name"), IMPLEMENTATIONS)
def test_products_and_inverses_match_galois(m: int, method: Any, backend_name: str) -> None:
    field = gf.binary_field(m, method, backend_name)
    assert field.backend == backend_name
    vectors = FIELDS[m]
    a = np.array([v["a"] for v in vectors["mul"]], dtype=np.uint64)
    b = np.array([v["b"] for v in vectors["mul"]], dtype=np.uint64)
    products = [v["product"] for v in vectors["mul"]]
    assert [field.mul(int(x), int(y)) for x, y in zip(a, b, strict=True)] == products
    assert field.vmul(a, b).tolist() == products
    for v in vectors["inv"]:
        assert field.inv(v["a"]) == v["inverse"]
        assert field.mul(v["a"], v["inverse"]) == 1
    squares = [gf.reference_mul(int(x), int(x), m, gf.PRIMITIVE_POLYNOMIALS[m]) for x in a]
    assert [field.sqr(int(x)) for x in a] == squares
    assert field.vsqr(a).tolist() == squares


@pytest.mark.parametrize("m", sorted(FIELDS))
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_pinsketch_encodes_and_decodes_as_galois_says(m: int, backend_name: str) -> None:
    vectors = FIELDS[m]
    sketch = PinSketch(m, vectors["t"], backend=backend_name)
    helpers = []
    for case in vectors["encode"]:
        helper = sketch.encode(case["set"])
        assert sketch.payload(helper).hex() == case["payload_hex"]
        assert sketch.syndromes(helper).tolist() == case["syndromes"]
        assert sketch.encode(np.array(case["set"], dtype=np.uint64)) == helper  # the other input path
        helpers.append(helper)
    for case in vectors["decode"]:
        helper = helpers[case["set"]]
        if case["expected"] is None:
            with pytest.raises(DecodeError):
                sketch.decode(helper, case["sample"])
            continue
        recovered = sketch.decode(helper, case["sample"])
        assert recovered.dtype == _dtype(m)
        assert recovered.tolist() == case["expected"]
        assert sketch.decode_many([helper], [case["sample"]])[0].tolist() == case["expected"]


# -- the numpy fallback equals the compiled kernels ---------------------------------------------------


@NATIVE
@pytest.mark.parametrize("m", WIDE_MS)
def test_numpy_products_equal_native_ones_for_every_wide_m(m: int) -> None:
    rng = np.random.default_rng(m)
    top = (1 << m) - 1
    a = rng.integers(0, 2**64, size=4096, dtype=np.uint64) & np.uint64(top)
    b = rng.integers(0, 2**64, size=4096, dtype=np.uint64) & np.uint64(top)
    a[:4] = np.array([0, 1, top, top], dtype=np.uint64)
    b[:4] = np.array([top, top, top, 1], dtype=np.uint64)
    numpy_field = gf.binary_field(m, "clmul", "numpy")
    expected = numpy_field.vmul(a, b)
    for method in ("clmul", "clmul-portable"):
        assert np.array_equal(gf.binary_field(m, method, "native").vmul(a, b), expected), method
    poly = gf.PRIMITIVE_POLYNOMIALS[m]
    for i in range(0, 4096, 256):  # and the shift-and-add reference on a sample of them
        assert int(expected[i]) == gf.reference_mul(int(a[i]), int(b[i]), m, poly)
    assert np.array_equal(numpy_field.vsqr(a), gf.binary_field(m, "clmul", "native").vsqr(a))


@NATIVE
@pytest.mark.parametrize("m", [33, 41, 48, 55, 58, 63, 64])
def test_numpy_decoding_steps_equal_native_ones(m: int) -> None:
    rng = random.Random(m)
    elements = np.array(sorted({rng.randrange(1, 1 << m) for _ in range(300)}), dtype=np.uint64)
    numpy_field = gf.binary_field(m, "clmul", "numpy")
    native = gf.binary_field(m, "clmul-portable", "native")
    t = 12
    sums = gf.odd_power_sums(numpy_field, elements, t)
    assert np.array_equal(sums, gf.odd_power_sums(native, elements, t))
    difference = elements[:t]
    diff_sums = gf.odd_power_sums(numpy_field, difference, t)
    full = gf.expand_syndromes(numpy_field, diff_sums.tolist())
    assert gf.berlekamp_massey(numpy_field, full) == gf.berlekamp_massey(native, full)
    locator, _ = gf.berlekamp_massey(numpy_field, full)
    sigma = locator[::-1]
    beta = rng.randrange(1, 1 << m)
    roots = sorted(gf.find_roots(numpy_field, sigma, beta=beta))
    assert roots == sorted(gf.find_roots(native, sigma, beta=beta)) == difference.tolist()
    sample = elements[t:].astype(_dtype(m))
    for field in (numpy_field, native):
        assert gf.recover_set(field, diff_sums, sample, beta=beta).tolist() == elements.tolist()


# -- round trips ------------------------------------------------------------------------------------------


@st.composite
def _set_and_sample(draw: st.DrawFn) -> tuple[int, int, list[int], list[int], int]:
    m = draw(st.sampled_from([33, 48, 63, 64]))
    t = draw(st.integers(1, 12))
    rng = random.Random(draw(st.integers(0, 2**32)))  # the sets themselves: seeded, not shrunk
    high = draw(st.booleans())  # elements near the top of the field (>= 2^63 at m = 64)
    low_end = (1 << (m - 1)) if high else 1
    secret = sorted({rng.randrange(low_end, 1 << m) for _ in range(draw(st.integers(0, 40)))})
    errors = draw(st.integers(0, t))
    removed = min(errors, len(secret))
    sample = set(secret[removed:])
    while len(sample) < len(secret) - removed + (errors - removed):
        sample.add(rng.randrange(1, 1 << m))
    return m, t, secret, sorted(sample), len(set(secret) ^ sample)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=_set_and_sample(), backend_name=st.sampled_from(["numpy", "native"] if backend() == "native" else ["numpy"])
)
def test_round_trip_within_t(case: tuple[int, int, list[int], list[int], int], backend_name: str) -> None:
    m, t, secret, sample, distance = case
    sketch = PinSketch(m, t, backend=backend_name)
    helper = sketch.encode(secret)
    if distance <= t:
        assert sketch.decode(helper, sample).tolist() == secret
        assert sketch.decode(helper, np.array(sample, dtype=np.uint64)).tolist() == secret
    else:
        try:
            recovered = sketch.decode(helper, sample)
        except DecodeError:
            return
        assert sketch.encode(recovered) == helper  # another set within t of the sample, same sketch


# -- untrusted input at m = 64 -----------------------------------------------------------------------------


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize(
    "bad",
    [[0], [2**64], [-1], [1.5], [True], [2**64 - 1, 2**64 - 1], ["7"], [[1]]],
    ids=["zero", "2^64", "negative", "fraction", "bool", "duplicate", "str", "nested"],
)
def test_strict_elements_at_m64(bad: list[Any], backend_name: str) -> None:
    sketch = PinSketch(64, 4, backend=backend_name)
    helper = sketch.encode([1, 2**63, 2**64 - 1])
    with pytest.raises(SampleError):
        sketch.encode(bad)
    with pytest.raises(SampleError):
        sketch.decode(helper, bad)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_strict_arrays_at_m64(backend_name: str) -> None:
    sketch = PinSketch(64, 4, backend=backend_name)
    helper = sketch.encode([5, 2**63 + 7])
    for bad in (np.array([-1, 5], dtype=np.int64), np.array([0], dtype=np.uint64), np.array([2.5]), np.array([[5]])):
        with pytest.raises(SampleError):
            sketch.encode(bad)
        with pytest.raises(SampleError):
            sketch.decode(helper, bad)
    # the elements below 2^63 of an int64 array are elements; float arrays of whole numbers too
    assert sketch.decode(helper, np.array([5], dtype=np.int64)).tolist() == [5, 2**63 + 7]
    assert sketch.encode(np.array([5.0, float(2**63)])) == sketch.encode([5, 2**63])


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_m63_payload_words_must_fit_the_field(backend_name: str) -> None:
    sketch = PinSketch(63, 3, backend=backend_name)
    helper = sketch.encode([1, 2**62])
    payload = bytearray(sketch.payload(helper))
    payload[0] |= 0x80  # bit 63 of the first syndrome: outside GF(2^63)
    forged = sketch._wrap(bytes(payload))
    with pytest.raises(SketchFormatError, match="wider than 63 bits"):
        sketch.decode(forged, [1])
    with pytest.raises(SketchFormatError):
        sketch.decode(sketch._wrap(bytes(payload[:-1])), [1])  # not a whole number of words


def _cpu_bounded(seconds: float, call: Any) -> Any:
    start = time.process_time()
    try:
        return call()
    finally:
        elapsed = time.process_time() - start
        assert elapsed < seconds, f"took {elapsed:.2f} s of CPU time"


@NATIVE
def test_random_payloads_at_m64_t256_decode_or_fail_in_bounded_time() -> None:
    """Every 256-word payload is a possible sketch at m = 64 (no out-of-range word, no relation):
    random ones must end in a set within t of the sample or a DecodeError, quickly."""
    sketch = PinSketch(64, 256)
    rng = random.Random(64)
    sample = sorted({rng.randrange(1, 1 << 64) for _ in range(4096)})
    for _ in range(4):
        payload = bytes(rng.getrandbits(8) for _ in range(256 * 8))
        helper = sketch._wrap(payload)
        try:
            recovered = _cpu_bounded(1.0, lambda h=helper: sketch.decode(h, sample))
        except DecodeError:
            continue
        assert sketch.encode(recovered) == helper


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_a_crafted_locator_of_full_degree_decodes_in_bounded_time(backend_name: str) -> None:
    """The hardest legitimate case for the root finder: t differences, none of them in the sample."""
    t = 64 if backend_name == "native" else 16
    sketch = PinSketch(64, t, backend=backend_name)
    rng = random.Random(7)
    secret = sorted({rng.randrange(2**63, 2**64) for _ in range(t)})
    helper = sketch.encode(secret)
    recovered = _cpu_bounded(2.0, lambda: sketch.decode(helper, []))
    assert recovered.tolist() == secret and recovered.dtype == np.uint64
