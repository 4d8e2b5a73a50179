"""GF(2^m) arithmetic and the BCH decoding steps of sketchauth.sketches._gf2m.

Both fast paths ("tables", "clmul") are checked exhaustively against the shift-and-add reference
on GF(2^8), and against galois (the independent oracle; the only module of the PinSketch tests
that imports it, once per session) on random inputs for m = 8, 16, 24, 32.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest

from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.sketches import _gf2m as gf
from sketchauth.sketches._gf2m import (
    PRIMITIVE_POLYNOMIALS,
    berlekamp_massey,
    binary_field,
    expand_syndromes,
    find_roots,
    odd_power_sums,
    odd_power_sums_segments,
    poly_eval,
    poly_gcd,
    poly_mod,
    reference_inv,
    reference_mul,
    reference_pow,
)

ORACLE_MS = (8, 16, 24, 32)
METHODS = [(m, "tables") for m in (8, 16)] + [(m, "clmul") for m in (8, 16, 24, 32)]


@pytest.fixture(scope="session")
def galois_module():
    """galois, imported once per test session (its JIT costs seconds per process)."""
    return pytest.importorskip("galois")


@pytest.fixture(scope="session")
def oracle_fields(galois_module) -> dict[int, type]:
    return {
        m: galois_module.GF(2**m, irreducible_poly=PRIMITIVE_POLYNOMIALS[m], verify=False)
        for m in ORACLE_MS
    }


def _seeded(seed: int) -> Callable[[int], int]:
    return random.Random(seed).randrange


def _poly_from_roots(field: gf.BinaryField, roots: list[int]) -> list[int]:
    """Monic Π (z − r), coefficients low degree first."""
    poly = [1]
    for r in roots:
        shifted = [0] + poly
        for i in range(len(poly)):
            shifted[i] ^= field.mul(r, poly[i])
        poly = shifted
    return poly


# -- the polynomial table ----------------------------------------------------------------------------


def test_every_polynomial_is_the_first_minimal_weight_primitive_one(galois_module) -> None:
    assert sorted(PRIMITIVE_POLYNOMIALS) == list(range(8, 33))
    for m, poly in PRIMITIVE_POLYNOMIALS.items():
        p = galois_module.Poly.Int(poly)
        assert p.degree == m
        assert p.is_primitive()
        assert int(galois_module.primitive_poly(2, m, terms="min")) == poly


def test_unknown_m_and_method_are_parameter_errors() -> None:
    with pytest.raises(ParameterError):
        binary_field(7)
    with pytest.raises(ParameterError):
        binary_field(33)
    with pytest.raises(ParameterError):
        binary_field(20, "tables")
    with pytest.raises(ParameterError):
        binary_field(16, "galois")  # type: ignore[arg-type]


# -- exhaustive on GF(2^8) -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tables", "clmul"])
def test_gf256_products_squares_inverses_exhaustively(method: str) -> None:
    field = binary_field(8, method)
    poly = PRIMITIVE_POLYNOMIALS[8]
    a = np.repeat(np.arange(256, dtype=np.uint64), 256)
    b = np.tile(np.arange(256, dtype=np.uint64), 256)
    expected = np.array([reference_mul(x, y, 8, poly) for x in range(256) for y in range(256)], dtype=np.uint64)
    assert np.array_equal(field.vmul(a, b), expected)
    assert [field.mul(x, y) for x in range(256) for y in range(0, 256, 5)] == [
        reference_mul(x, y, 8, poly) for x in range(256) for y in range(0, 256, 5)
    ]
    squares = [reference_mul(x, x, 8, poly) for x in range(256)]
    assert [field.sqr(x) for x in range(256)] == squares
    assert field.vsqr(np.arange(256, dtype=np.uint64)).tolist() == squares
    assert [field.inv(x) for x in range(1, 256)] == [reference_inv(x, 8, poly) for x in range(1, 256)]
    assert all(field.mul(x, field.inv(x)) == 1 for x in range(1, 256))
    assert field.vmul_xpow(np.arange(256, dtype=np.uint64), np.full(256, 13)).tolist() == [
        reference_mul(x, reference_pow(2, 13, 8, poly), 8, poly) for x in range(256)
    ]


def test_reference_is_what_galois_computes_on_gf256(oracle_fields) -> None:
    GF = oracle_fields[8]
    x = GF(np.arange(256))
    for y in (0, 1, 2, 0x53, 0xFF):
        assert (x * GF(y)).tolist() == [reference_mul(v, y, 8, PRIMITIVE_POLYNOMIALS[8]) for v in range(256)]


def test_zero_has_no_inverse() -> None:
    for method in ("tables", "clmul"):
        with pytest.raises(ParameterError):
            binary_field(8, method).inv(0)
    with pytest.raises(ParameterError):
        reference_inv(0, 8, PRIMITIVE_POLYNOMIALS[8])


def test_artin_schreier_solver_on_every_gf256_element() -> None:
    field = binary_field(8)
    for k in range(256):
        if field.trace(k):
            with pytest.raises(DecodeError):
                field.solve_artin_schreier(k)
        else:
            y = field.solve_artin_schreier(k)
            assert field.sqr(y) ^ y == k


# -- random inputs against galois, every method ------------------------------------------------------


@pytest.mark.parametrize(("m", "method"), METHODS)
def test_random_arithmetic_matches_galois(m: int, method: str, oracle_fields) -> None:
    GF = oracle_fields[m]
    field = binary_field(m, method)
    rng = np.random.default_rng(m)  # test inputs only
    a = rng.integers(0, 1 << m, size=2000, dtype=np.uint64)
    b = rng.integers(1, 1 << m, size=2000, dtype=np.uint64)
    ga, gb = GF(a.astype(np.int64)), GF(b.astype(np.int64))
    assert np.array_equal(field.vmul(a, b), np.asarray(ga * gb, dtype=np.uint64))
    assert np.array_equal(field.vsqr(a), np.asarray(ga**2, dtype=np.uint64))
    head = [(int(x), int(y)) for x, y in zip(a[:200], b[:200])]
    assert [field.mul(x, y) for x, y in head] == [int(GF(x) * GF(y)) for x, y in head]
    assert [field.inv(y) for _, y in head] == [int(GF(y) ** -1) for _, y in head]
    assert [field.pow(x, 12345) for x, _ in head[:50]] == [int(GF(x) ** 12345) for x, _ in head[:50]]
    assert [field.trace(x) for x, _ in head[:50]] == [int(GF(x).field_trace()) for x, _ in head[:50]]
    # broadcasting: a column times a row
    assert np.array_equal(
        field.vmul(a[:7, None], b[None, :9]), np.asarray(ga[:7, None] * gb[None, :9], dtype=np.uint64)
    )


def test_clmul_and_tables_agree_on_gf2_16() -> None:
    tables, clmul = binary_field(16, "tables"), binary_field(16, "clmul")
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 16, size=50_000, dtype=np.uint64)
    b = rng.integers(0, 1 << 16, size=50_000, dtype=np.uint64)
    assert np.array_equal(tables.vmul(a, b), clmul.vmul(a, b))
    assert [tables.mul(int(x), int(y)) for x, y in zip(a[:500], b[:500])] == [
        clmul.mul(int(x), int(y)) for x, y in zip(a[:500], b[:500])
    ]


@pytest.mark.parametrize(("m", "method"), METHODS)
def test_lazy_products_reduce_to_the_products(m: int, method: str) -> None:
    field = binary_field(m, method)
    rng = random.Random(m)
    values = [rng.randrange(1 << m) for _ in range(20)]
    c = rng.randrange(1 << m)
    assert [field.reduce(v) for v in field.scale_lazy(c, values)] == [field.mul(c, v) for v in values]
    acc = 0
    for v in field.scale_lazy(c, values):
        acc ^= v
    assert field.reduce(acc) == field.dot([c] * 20, values)


# -- power sums ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "method"), METHODS)
def test_odd_power_sums_match_galois(m: int, method: str, oracle_fields) -> None:
    GF = oracle_fields[m]
    field = binary_field(m, method)
    rng = np.random.default_rng(100 + m)
    elements = np.unique(rng.integers(1, 1 << m, size=40, dtype=np.uint64))
    t = 11
    g = GF(elements.astype(np.int64))
    expected = [int(np.bitwise_xor.reduce(np.asarray(g**i, dtype=np.int64))) for i in range(1, 2 * t, 2)]
    assert odd_power_sums(field, elements, t).tolist() == expected
    assert odd_power_sums(field, elements[:0], t).tolist() == [0] * t


def test_segmented_power_sums_equal_one_at_a_time() -> None:
    field = binary_field(24)
    rng = np.random.default_rng(3)
    sets = [rng.integers(1, 1 << 24, size=n, dtype=np.uint64) for n in (5, 0, 1, 17, 0)]
    lengths = np.array([s.size for s in sets])
    batched = odd_power_sums_segments(field, np.concatenate(sets), lengths, 9)
    assert batched.tolist() == [odd_power_sums(field, s, 9).tolist() for s in sets]
    assert odd_power_sums_segments(field, np.zeros(0, dtype=np.uint64), np.array([0, 0]), 3).tolist() == [[0] * 3] * 2


# -- Berlekamp–Massey ---------------------------------------------------------------------------------------


def _plain_berlekamp_massey(field: gf.BinaryField, s: list[int]) -> tuple[list[int], int]:
    """Massey's algorithm with every step computed (no binary shortcut)."""
    c, b, length, gap, bb = [1], [1], 0, 1, 1
    for n in range(len(s)):
        d = s[n]
        for i in range(1, length + 1):
            if i < len(c):
                d ^= field.mul(c[i], s[n - i])
        if d == 0:
            gap += 1
            continue
        coef = field.mul(d, field.inv(bb))
        update = [0] * gap + [field.mul(coef, v) for v in b]
        size = max(len(c), len(update))
        new = [(c[i] if i < len(c) else 0) ^ (update[i] if i < len(update) else 0) for i in range(size)]
        if 2 * length <= n:
            b, bb, length, gap = c, d, n + 1 - length, 1
        else:
            gap += 1
        c = new
    while len(c) > 1 and c[-1] == 0:
        c.pop()
    return c, length


@pytest.mark.parametrize("m", [8, 16, 24, 32])
def test_binary_shortcut_equals_plain_massey_on_arbitrary_syndromes(m: int) -> None:
    field = binary_field(m)
    rng = random.Random(m)
    for t in (1, 2, 3, 5, 8):
        for _ in range(15):
            odd = [rng.randrange(1 << m) for _ in range(t)]
            full = expand_syndromes(field, odd)
            assert berlekamp_massey(field, full) == _plain_berlekamp_massey(field, full)


@pytest.mark.parametrize("m", [8, 16, 32])
def test_locator_of_a_small_set_has_its_elements_as_reciprocal_roots(m: int) -> None:
    field = binary_field(m)
    rng = random.Random(5 * m)
    for size in range(1, 7):
        elements = rng.sample(range(1, 1 << m), size)
        sums = odd_power_sums(field, np.array(elements, dtype=np.uint64), 6).tolist()
        locator, length = berlekamp_massey(field, expand_syndromes(field, sums))
        assert length == size == len(locator) - 1
        assert all(poly_eval(field, locator, field.inv(x)) == 0 for x in elements)


# -- root finding ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "method"), METHODS)
def test_find_roots_recovers_random_root_sets(m: int, method: str) -> None:
    field = binary_field(m, method)
    rng = random.Random(1000 + m)
    for degree in (0, 1, 2, 3, 4, 7, 16, 33):
        roots = rng.sample(range(1, 1 << m), degree)
        poly = _poly_from_roots(field, roots)
        assert sorted(find_roots(field, poly, randbelow=_seeded(degree))) == sorted(roots)
        assert sorted(find_roots(field, poly)) == sorted(roots)  # randomness from secrets


def test_find_roots_on_all_of_a_small_set_including_extremes() -> None:
    field = binary_field(8)
    roots = [1, 2, 3, 254, 255, 128, 77]
    assert sorted(find_roots(field, _poly_from_roots(field, roots))) == sorted(roots)


@pytest.mark.parametrize("m", [8, 16, 24, 32])
def test_polynomials_that_do_not_split_into_distinct_nonzero_roots_fail(m: int) -> None:
    field = binary_field(m)
    rng = random.Random(m)
    a, b, c = rng.sample(range(1, 1 << m), 3)
    k = next(1 << j for j in range(m) if field.trace(1 << j))  # Tr(k) = 1: z^2 + z + k is irreducible
    irreducible_quadratic = [k, 1, 1]
    cases = [
        _poly_from_roots(field, [a, a]),  # repeated root, degree 2
        _poly_from_roots(field, [a, a, b]),  # repeated root
        _poly_from_roots(field, [0, a, b]),  # zero root
        _poly_from_roots(field, [a, b, c, c, 1]),
        irreducible_quadratic,
    ]
    # an irreducible quadratic times linear factors: only some roots in the field
    times_linear = irreducible_quadratic
    for r in (a, b):
        times_linear = [0] + times_linear
        for i in range(len(times_linear) - 1):
            times_linear[i] ^= field.mul(r, times_linear[i + 1])
    cases.append(times_linear)
    for poly in cases:
        with pytest.raises(DecodeError):
            find_roots(field, poly)
    with pytest.raises(ParameterError):
        find_roots(field, [1, 2])  # not monic


def test_polynomial_helpers() -> None:
    field = binary_field(16)
    f = _poly_from_roots(field, [3, 5, 7])
    g = _poly_from_roots(field, [5, 9])
    assert poly_gcd(field, f, g) == [5, 1]
    assert poly_mod(field, f, f) == []
    assert poly_eval(field, f, 7) == 0 and poly_eval(field, f, 8) != 0


# -- PinSketch input from galois arrays (here because this module owns the galois fixture) -------------


@pytest.mark.parametrize("m", [8, 16])
def test_pinsketch_accepts_galois_arrays(m: int, oracle_fields) -> None:
    from sketchauth.sketches.pinsketch import PinSketch

    GF = oracle_fields[m]
    sketch = PinSketch(m, 3)
    elements = [3, 70, 200, 255]
    helper = sketch.encode(GF(elements))
    assert helper == sketch.encode(elements)
    assert sketch.decode(helper, GF([3, 70, 201, 255])).tolist() == elements
    with pytest.raises(SampleError):
        sketch.encode(GF([0, 3]))


@pytest.mark.parametrize(("m", "method"), METHODS)
def test_multipoint_evaluation_and_deflation(m: int, method: str) -> None:
    field = binary_field(m, method)
    rng = random.Random(77 + m)
    roots = rng.sample(range(1, 1 << m), 9)
    poly = _poly_from_roots(field, roots)
    xs = np.array(roots[:4] + [0] + rng.sample(range(1, 1 << m), 20), dtype=np.uint64)
    assert gf.poly_eval_many(field, poly, xs).tolist() == [poly_eval(field, poly, int(x)) for x in xs]
    assert gf.poly_eval_many(field, [], xs).tolist() == [0] * xs.size
    deflated = gf.poly_deflate(field, poly, roots[3])
    assert deflated == _poly_from_roots(field, roots[:3] + roots[4:])


def test_power_sums_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    field = binary_field(16)
    rng = np.random.default_rng(11)
    sets = [rng.integers(1, 1 << 16, size=n, dtype=np.uint64) for n in (30, 0, 7, 45)]
    lengths = np.array([s.size for s in sets])
    whole = odd_power_sums_segments(field, np.concatenate(sets), lengths, 5)
    single = odd_power_sums(field, sets[3], 5)
    monkeypatch.setattr(gf, "POWER_CHUNK_ENTRIES", 8)  # one element (5 powers) per chunk
    assert np.array_equal(odd_power_sums_segments(field, np.concatenate(sets), lengths, 5), whole)
    assert np.array_equal(odd_power_sums(field, sets[3], 5), single)
    monkeypatch.setattr(gf, "POWER_CHUNK_ENTRIES", 64)
    assert np.array_equal(odd_power_sums_segments(field, np.concatenate(sets), lengths, 5), whole)


@pytest.mark.parametrize("m", [8, 17, 24, 32])
def test_packed_division_equals_schoolbook(m: int) -> None:
    field = binary_field(m, "clmul")
    rng = random.Random(m)
    for da, db in ((0, 0), (3, 1), (5, 5), (16, 7), (40, 16), (9, 12), (30, 1)):
        a = [rng.randrange(1 << m) for _ in range(da)] + [rng.randrange(1, 1 << m)]
        b = [rng.randrange(1 << m) for _ in range(db)] + [rng.randrange(1, 1 << m)]
        quotient, remainder = field.divide(a, b)
        assert (quotient, remainder) == gf.BinaryField.divide(field, a, b)
        # a = q·b + r, checked with the reference product
        product = [0] * (len(quotient) + len(b))
        for i, x in enumerate(quotient):
            for j, y in enumerate(b):
                product[i + j] ^= reference_mul(x, y, m, PRIMITIVE_POLYNOMIALS[m])
        for i, r in enumerate(remainder):
            product[i] ^= r
        while product and product[-1] == 0:
            product.pop()
        assert product == a


@pytest.mark.parametrize("m", [8, 17, 32])
def test_packed_even_powers_equal_schoolbook(m: int) -> None:
    field = binary_field(m, "clmul")
    rng = random.Random(m)
    for degree in (2, 3, 9, 16):
        sigma = [rng.randrange(1 << m) for _ in range(degree)] + [1]
        rows = field.even_powers_mod(sigma)
        assert rows == gf.BinaryField.even_powers_mod(field, sigma)
        assert rows[1] == gf.poly_mod(field, [0, 0, 1], sigma) + [0] * (degree - len(gf.poly_mod(field, [0, 0, 1], sigma)))
        top = [0] * (2 * (degree - 1)) + [1]
        expected = gf.poly_mod(field, top, sigma)
        assert rows[-1] == expected + [0] * (degree - len(expected))
