"""GF(2^m) arithmetic and the BCH decoding steps of sketchauth.sketches._gf2m, on every backend.

Every implementation — numpy "tables" and "clmul", native "tables", "clmul" (the CPU
instruction) and "clmul-portable" — is checked exhaustively against the shift-and-add
reference on GF(2^8), against galois (the independent oracle; the only module of the PinSketch
tests that imports it, once per session) on random inputs for m = 8, 16, 24, 32, and the
decoding steps against plain-integer references and brute force on small fields. Native cases
are skipped (not silently dropped) when the extension is not built.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.sketches import _gf2m as gf
from sketchauth.sketches._backend import backend
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
    recover_set,
    reference_inv,
    reference_mul,
    reference_pow,
)

ORACLE_MS = (8, 16, 24, 32)
NATIVE = pytest.mark.skipif(backend() != "native", reason="the compiled extension is not built")


def _configs(ms: tuple[int, ...]) -> list:
    """(m, method, backend) for every implementation, native ones marked."""
    out = []
    for m in ms:
        methods = (["tables"] if m <= 16 else []) + ["clmul"]
        out += [pytest.param(m, meth, "numpy", id=f"{m}-numpy-{meth}") for meth in methods]
        out += [
            pytest.param(m, meth, "native", id=f"{m}-native-{meth}", marks=NATIVE)
            for meth in [*methods, "clmul-portable"]
        ]
    return out


ALL = _configs(ORACLE_MS)
GF256 = _configs((8,))
SMALL = _configs((8, 16))


@pytest.fixture(scope="session")
def galois_module():
    """galois, imported once per test session (its JIT costs seconds per process)."""
    return pytest.importorskip("galois")


@pytest.fixture(scope="session")
def oracle_fields(galois_module) -> dict[int, type]:
    return {m: galois_module.GF(2**m, irreducible_poly=PRIMITIVE_POLYNOMIALS[m], verify=False) for m in ORACLE_MS}


def _reference_poly_mul(a: list[int], b: list[int], m: int) -> list[int]:
    out = [0] * (len(a) + len(b) - 1) if a and b else []
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] ^= reference_mul(x, y, m, PRIMITIVE_POLYNOMIALS[m])
    while out and out[-1] == 0:
        out.pop()
    return out


def _poly_from_roots(m: int, roots: list[int]) -> list[int]:
    """Monic Π (z − r), coefficients low degree first, by the reference product."""
    poly = [1]
    for r in roots:
        poly = _reference_poly_mul(poly, [r, 1], m)
    return poly


def _reference_eval(p: list[int], x: int, m: int) -> int:
    acc = 0
    for c in reversed(p):
        acc = reference_mul(acc, x, m, PRIMITIVE_POLYNOMIALS[m]) ^ c
    return acc


def _reference_power_sums(elements: list[int], t: int, m: int) -> list[int]:
    poly = PRIMITIVE_POLYNOMIALS[m]
    sums = [0] * t
    for a in elements:
        for k in range(t):
            sums[k] ^= reference_pow(a, 2 * k + 1, m, poly)
    return sums


# -- the polynomial table, construction ------------------------------------------------------------


def test_every_polynomial_is_the_first_minimal_weight_primitive_one(galois_module) -> None:
    assert sorted(PRIMITIVE_POLYNOMIALS) == list(range(8, 65))
    for m, poly in PRIMITIVE_POLYNOMIALS.items():
        p = galois_module.Poly.Int(poly)
        assert p.degree == m
        assert p.is_primitive()
        assert int(galois_module.primitive_poly(2, m, terms="min")) == poly


def test_unknown_m_method_and_backend_are_parameter_errors() -> None:
    with pytest.raises(ParameterError):
        binary_field(7)
    with pytest.raises(ParameterError):
        binary_field(65)
    with pytest.raises(ParameterError):
        binary_field(20, "tables")
    with pytest.raises(ParameterError):
        binary_field(16, "galois")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        binary_field(16, backend="fortran")
    with pytest.raises(ParameterError, match="backend"):
        binary_field(16, "clmul-portable", backend="numpy")


def test_default_backend_and_methods() -> None:
    assert binary_field(16, backend="numpy").method == "tables"
    assert binary_field(17, backend="numpy").method == "clmul"
    field = binary_field(24)
    assert field.backend == backend()
    assert binary_field(24) is field  # cached


@NATIVE
def test_native_auto_uses_the_cpu_instruction_when_present() -> None:
    from sketchauth.sketches import _native

    has = _native.cpu_features()["pclmul"]
    field = binary_field(32, backend="native")
    assert field.kernel == ("pclmul" if has else "portable")
    assert binary_field(32, "clmul-portable", backend="native").kernel == "portable"
    assert binary_field(16, "tables", backend="native").kernel == "tables"


# -- exhaustive on GF(2^8) -----------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_gf256_products_squares_inverses_exhaustively(m: int, method: str, backend_name: str) -> None:
    field = binary_field(8, method, backend_name)
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
    assert field.scale(7, list(range(256))) == [reference_mul(7, x, 8, poly) for x in range(256)]
    assert [field.mulx(x) for x in range(256)] == [reference_mul(2, x, 8, poly) for x in range(256)]


@pytest.mark.parametrize("method", ["tables", "clmul"])
def test_numpy_monomial_products_exhaustively(method: str) -> None:
    field = binary_field(8, method, "numpy")
    poly = PRIMITIVE_POLYNOMIALS[8]
    x = np.arange(256, dtype=np.uint64)
    for s in (0, 1, 13, 31):
        assert field.vmul_xpow(x, np.full(256, s)).tolist() == [
            reference_mul(v, reference_pow(2, s, 8, poly), 8, poly) for v in range(256)
        ]


def test_reference_is_what_galois_computes_on_gf256(oracle_fields) -> None:
    GF = oracle_fields[8]
    x = GF(np.arange(256))
    for y in (0, 1, 2, 0x53, 0xFF):
        assert (x * GF(y)).tolist() == [reference_mul(v, y, 8, PRIMITIVE_POLYNOMIALS[8]) for v in range(256)]


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_zero_has_no_inverse(m: int, method: str, backend_name: str) -> None:
    with pytest.raises(ParameterError):
        binary_field(8, method, backend_name).inv(0)
    with pytest.raises(ParameterError):
        reference_inv(0, 8, PRIMITIVE_POLYNOMIALS[8])


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_artin_schreier_solver_on_every_gf256_element(m: int, method: str, backend_name: str) -> None:
    field = binary_field(8, method, backend_name)
    for k in range(256):
        if field.trace(k):
            with pytest.raises(DecodeError):
                field.solve_artin_schreier(k)
        else:
            y = field.solve_artin_schreier(k)
            assert field.sqr(y) ^ y == k


def _quadratic_roots_by_brute_force() -> dict[tuple[int, int], list[int]]:
    """(b, c) -> the x in GF(2^8) with x² + b·x = c, by evaluating every x (reference products)."""
    poly = PRIMITIVE_POLYNOMIALS[8]
    roots: dict[tuple[int, int], list[int]] = {}
    for b in range(256):
        for x in range(256):
            value = reference_mul(x, x, 8, poly) ^ reference_mul(b, x, 8, poly)
            roots.setdefault((b, value), []).append(x)
    return roots


QUADRATIC_ROOTS = _quadratic_roots_by_brute_force()


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_every_monic_quadratic_of_gf256_against_brute_force(m: int, method: str, backend_name: str) -> None:
    """find_roots on all 65,536 monic quadratics: two distinct non-zero roots, or DecodeError."""
    field = binary_field(8, method, backend_name)
    for b in range(256):
        for c in range(256):
            roots = QUADRATIC_ROOTS.get((b, c), [])
            if len(roots) == 2 and 0 not in roots:
                assert sorted(find_roots(field, [c, b, 1], beta=1)) == roots
            else:
                with pytest.raises(DecodeError):
                    find_roots(field, [c, b, 1], beta=1)


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_every_difference_of_up_to_two_elements_is_recovered(m: int, method: str, backend_name: str) -> None:
    """GF(2^8), t = 2: every set D with |D| ≤ 2 (32,641 of them) from its reference power sums.

    The numpy carry-less field (the default only above m = 16) takes the pairs with a < 48.
    """
    field = binary_field(8, method, backend_name)
    poly = PRIMITIVE_POLYNOMIALS[8]
    cubes = [reference_pow(x, 3, 8, poly) for x in range(256)]
    empty = np.zeros(0, dtype=np.int64)
    first_limit = 48 if (backend_name, method) == ("numpy", "clmul") else 256
    assert recover_set(field, np.zeros(2, dtype=np.uint64), empty).tolist() == []
    for a in range(1, 256):
        assert recover_set(field, np.array([a, cubes[a]], dtype=np.uint64), empty).tolist() == [a]
        if a >= first_limit:
            continue
        for b in range(a + 1, 256):
            sums = np.array([a ^ b, cubes[a] ^ cubes[b]], dtype=np.uint64)
            assert recover_set(field, sums, empty, beta=1 + (a * b) % 255).tolist() == [a, b]


# -- random inputs against galois, every implementation ----------------------------------------------


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_random_arithmetic_matches_galois(m: int, method: str, backend_name: str, oracle_fields) -> None:
    GF = oracle_fields[m]
    field = binary_field(m, method, backend_name)
    rng = np.random.default_rng(m)  # test inputs only
    a = rng.integers(0, 1 << m, size=2000, dtype=np.uint64)
    b = rng.integers(1, 1 << m, size=2000, dtype=np.uint64)
    ga, gb = GF(a.astype(np.int64)), GF(b.astype(np.int64))
    assert np.array_equal(field.vmul(a, b), np.asarray(ga * gb, dtype=np.uint64))
    assert np.array_equal(field.vsqr(a), np.asarray(ga**2, dtype=np.uint64))
    head = [(int(x), int(y)) for x, y in zip(a[:200], b[:200], strict=False)]
    assert [field.mul(x, y) for x, y in head] == [int(GF(x) * GF(y)) for x, y in head]
    assert [field.inv(y) for _, y in head] == [int(GF(y) ** -1) for _, y in head]
    assert [field.pow(x, 12345) for x, _ in head[:50]] == [int(GF(x) ** 12345) for x, _ in head[:50]]
    assert [field.trace(x) for x, _ in head[:50]] == [int(GF(x).field_trace()) for x, _ in head[:50]]
    # broadcasting: a column times a row
    assert np.array_equal(
        field.vmul(a[:7, None], b[None, :9]), np.asarray(ga[:7, None] * gb[None, :9], dtype=np.uint64)
    )


def test_numpy_clmul_and_tables_agree_on_gf2_16() -> None:
    tables, clmul = binary_field(16, "tables", "numpy"), binary_field(16, "clmul", "numpy")
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 16, size=50_000, dtype=np.uint64)
    b = rng.integers(0, 1 << 16, size=50_000, dtype=np.uint64)
    assert np.array_equal(tables.vmul(a, b), clmul.vmul(a, b))
    assert [tables.mul(int(x), int(y)) for x, y in zip(a[:500], b[:500], strict=False)] == [
        clmul.mul(int(x), int(y)) for x, y in zip(a[:500], b[:500], strict=False)
    ]


def test_numpy_vector_product_works_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    field = binary_field(32, "clmul", "numpy")
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1 << 32, size=(37, 11), dtype=np.uint64)
    b = rng.integers(0, 1 << 32, size=(37, 11), dtype=np.uint64)
    whole = field.vmul(a, b)
    monkeypatch.setattr(gf, "VMUL_CHUNK", 5)
    assert np.array_equal(field.vmul(a, b), whole)
    assert whole[3, 4] == reference_mul(int(a[3, 4]), int(b[3, 4]), 32, PRIMITIVE_POLYNOMIALS[32])


@NATIVE
@pytest.mark.parametrize("m", range(8, 33))
def test_native_kernels_agree_with_numpy_for_every_m(m: int) -> None:
    numpy_field = binary_field(m, backend="numpy")
    rng = np.random.default_rng(1000 + m)
    a = rng.integers(0, 1 << m, size=4000, dtype=np.uint64)
    b = rng.integers(0, 1 << m, size=4000, dtype=np.uint64)
    expected = numpy_field.vmul(a, b)
    methods = ["clmul", "clmul-portable"] + (["tables"] if m <= 16 else [])
    for method in methods:
        native = binary_field(m, method, "native")
        assert np.array_equal(native.vmul(a, b), expected), method
        assert [native.inv(int(x)) for x in b[:50] if x] == [numpy_field.inv(int(x)) for x in b[:50] if x]


@NATIVE
def test_native_kernels_refuse_values_outside_the_field() -> None:
    field = binary_field(16, "tables", "native")
    with pytest.raises(ValueError):
        field.vmul(np.array([1 << 16], dtype=np.uint64), np.array([3], dtype=np.uint64))
    with pytest.raises(ValueError):
        odd_power_sums(field, np.array([5, 1 << 20], dtype=np.uint64), 3)
    with pytest.raises(ValueError):
        field.mul(1 << 16, 2)
    with pytest.raises(TypeError):
        field._core.power_sums(b"abc", 2)  # not 64-bit words


# -- power sums ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_odd_power_sums_match_galois(m: int, method: str, backend_name: str, oracle_fields) -> None:
    GF = oracle_fields[m]
    field = binary_field(m, method, backend_name)
    rng = np.random.default_rng(100 + m)
    elements = np.unique(rng.integers(1, 1 << m, size=150, dtype=np.uint64))
    t = 11
    g = GF(elements.astype(np.int64))
    expected = [int(np.bitwise_xor.reduce(np.asarray(g**i, dtype=np.int64))) for i in range(1, 2 * t, 2)]
    assert odd_power_sums(field, elements, t).tolist() == expected
    assert odd_power_sums(field, elements[:0], t).tolist() == [0] * t
    assert odd_power_sums(field, elements[:3], t).tolist() == _reference_power_sums(elements[:3].tolist(), t, m)


@pytest.mark.parametrize(("m", "method", "backend_name"), _configs((24,)))
def test_segmented_power_sums_equal_one_at_a_time(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = np.random.default_rng(3)
    sets = [rng.integers(1, 1 << 24, size=n, dtype=np.uint64) for n in (5, 0, 1, 17, 0, 130)]
    lengths = np.array([s.size for s in sets])
    batched = odd_power_sums_segments(field, np.concatenate(sets), lengths, 9)
    assert batched.tolist() == [odd_power_sums(field, s, 9).tolist() for s in sets]
    assert odd_power_sums_segments(field, np.zeros(0, dtype=np.uint64), np.array([0, 0]), 3).tolist() == [[0] * 3] * 2


def test_power_sums_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    field = binary_field(16, backend="numpy")
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


# -- Berlekamp–Massey ---------------------------------------------------------------------------------------


def _plain_berlekamp_massey(m: int, s: list[int]) -> tuple[list[int], int]:
    """Massey's algorithm with every step computed (no binary shortcut), reference products."""
    poly = PRIMITIVE_POLYNOMIALS[m]

    def mul(x: int, y: int) -> int:
        return reference_mul(x, y, m, poly)

    c, b, length, gap, bb = [1], [1], 0, 1, 1
    for n in range(len(s)):
        d = s[n]
        for i in range(1, length + 1):
            if i < len(c):
                d ^= mul(c[i], s[n - i])
        if d == 0:
            gap += 1
            continue
        coef = mul(d, reference_inv(bb, m, poly))
        update = [0] * gap + [mul(coef, v) for v in b]
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


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_binary_shortcut_equals_plain_massey_on_arbitrary_syndromes(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(m)
    for t in (1, 2, 3, 5, 8):
        for _ in range(12):
            odd = [rng.randrange(1 << m) for _ in range(t)]
            full = expand_syndromes(field, odd)
            assert berlekamp_massey(field, full) == _plain_berlekamp_massey(m, full)


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_locator_of_a_small_set_has_its_elements_as_reciprocal_roots(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(5 * m)
    for size in range(1, 7):
        elements = rng.sample(range(1, 1 << m), size)
        sums = odd_power_sums(field, np.array(elements, dtype=np.uint64), 6).tolist()
        locator, length = berlekamp_massey(field, expand_syndromes(field, sums))
        assert length == size == len(locator) - 1
        assert all(_reference_eval(locator, reference_inv(x, m, PRIMITIVE_POLYNOMIALS[m]), m) == 0 for x in elements)


# -- root finding ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_find_roots_recovers_random_root_sets(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(1000 + m)
    for degree in (0, 1, 2, 3, 4, 7, 16, 33):
        roots = rng.sample(range(1, 1 << m), degree)
        poly = _poly_from_roots(m, roots)
        assert sorted(find_roots(field, poly, beta=1 + degree)) == sorted(roots)
        assert sorted(find_roots(field, poly)) == sorted(roots)  # β from the OS generator


@pytest.mark.parametrize(("m", "method", "backend_name"), SMALL)
def test_every_multiplier_splits_within_m_rounds(m: int, method: str, backend_name: str) -> None:
    """The β_i = β·x^i form a basis: any β, even the worst one, splits every root set."""
    field = binary_field(m, method, backend_name)
    rng = random.Random(m)
    roots = rng.sample(range(1, 1 << m), 40)
    poly = _poly_from_roots(m, roots)
    every = m == 8 and backend_name == "native"  # all 255 multipliers; numpy: every fourth
    betas = range(1, 256, 1 if every else 4) if m == 8 else [1, 2, 3, (1 << m) - 1, 1 << (m - 1), 12345]
    for beta in betas:
        assert sorted(find_roots(field, poly, beta=beta)) == sorted(roots)
    with pytest.raises(ParameterError):
        find_roots(field, poly, beta=0)


@pytest.mark.parametrize(("m", "method", "backend_name"), GF256)
def test_find_roots_on_all_of_a_small_set_including_extremes(m: int, method: str, backend_name: str) -> None:
    field = binary_field(8, method, backend_name)
    roots = [1, 2, 3, 254, 255, 128, 77]
    assert sorted(find_roots(field, _poly_from_roots(8, roots))) == sorted(roots)
    everything = list(range(1, 256))  # z^255 − 1: every non-zero element
    assert sorted(find_roots(field, _poly_from_roots(8, everything))) == everything


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_polynomials_that_do_not_split_into_distinct_nonzero_roots_fail(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(m)
    a, b, c = rng.sample(range(1, 1 << m), 3)
    k = next(1 << j for j in range(m) if field.trace(1 << j))  # Tr(k) = 1: z^2 + z + k is irreducible
    irreducible_quadratic = [k, 1, 1]
    cases = [
        _poly_from_roots(m, [a, a]),  # repeated root, degree 2
        _poly_from_roots(m, [a, a, b]),  # repeated root
        _poly_from_roots(m, [0, a, b]),  # zero root
        _poly_from_roots(m, [a, b, c, c, 1]),
        irreducible_quadratic,
        _reference_poly_mul(irreducible_quadratic, _poly_from_roots(m, [a, b]), m),  # only some roots
    ]
    for poly in cases:
        with pytest.raises(DecodeError):
            find_roots(field, poly)
    with pytest.raises(ParameterError):
        find_roots(field, [1, 2])  # not monic


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_polynomial_helpers(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    f = _poly_from_roots(m, [3, 5, 7])
    g = _poly_from_roots(m, [5, 9])
    assert poly_gcd(field, f, g) == [5, 1]
    assert poly_gcd(field, f, []) == f
    assert poly_mod(field, f, f) == []
    assert poly_eval(field, f, 7) == 0 and poly_eval(field, f, 8) == _reference_eval(f, 8, m) != 0


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_polynomial_products_equal_reference(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(31 + m)
    for la, lb in ((0, 3), (1, 1), (4, 9), (17, 33), (64, 5)):
        a = [rng.randrange(1 << m) for _ in range(la)]
        b = [rng.randrange(1 << m) for _ in range(lb)]
        assert gf.poly_mul(field, a, b) == _reference_poly_mul(a, b, m)
    assert gf.poly_mul(field, [3, 0, 0], [0, 0]) == []


@pytest.mark.parametrize(("m", "method", "backend_name"), ALL)
def test_multipoint_evaluation_and_deflation(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(77 + m)
    roots = rng.sample(range(1, 1 << m), 9)
    poly = _poly_from_roots(m, roots)
    xs = np.array([*roots[:4], 0, *rng.sample(range(1, 1 << m), 20)], dtype=np.uint64)
    assert gf.poly_eval_many(field, poly, xs).tolist() == [_reference_eval(poly, int(x), m) for x in xs]
    assert gf.poly_eval_many(field, [], xs).tolist() == [0] * xs.size
    deflated = gf.poly_deflate(field, poly, roots[3])
    assert deflated == _poly_from_roots(m, roots[:3] + roots[4:])


@pytest.mark.parametrize(("m", "method", "backend_name"), _configs((8, 17, 24, 32)))
def test_division_equals_reference(m: int, method: str, backend_name: str) -> None:
    field = binary_field(m, method, backend_name)
    rng = random.Random(m)
    for da, db in ((0, 0), (3, 1), (5, 5), (16, 7), (40, 16), (9, 12), (30, 1)):
        a = [rng.randrange(1 << m) for _ in range(da)] + [rng.randrange(1, 1 << m)]
        b = [rng.randrange(1 << m) for _ in range(db)] + [rng.randrange(1, 1 << m)]
        quotient, remainder = field.divide(a, b)
        assert len(remainder) < len(b) and (not quotient or quotient[-1])
        # a = q·b + r, checked with the reference product
        product = _reference_poly_mul(quotient, b, m)
        product += [0] * (len(a) - len(product))
        for i, r in enumerate(remainder):
            product[i] ^= r
        while product and product[-1] == 0:
            product.pop()
        assert product == a


@pytest.mark.parametrize("m", [8, 16, 17, 32])
def test_packed_even_powers_equal_reference(m: int) -> None:
    field = binary_field(m, backend="numpy")
    rng = random.Random(m)
    for degree in (2, 3, 9, 16):
        sigma = [rng.randrange(1 << m) for _ in range(degree)] + [1]
        rows = field.even_powers_mod(sigma)
        for i in (0, 1, degree - 1):
            monomial = [0] * (2 * i) + [1]
            expected = poly_mod(field, monomial, sigma)
            assert rows[i] == expected + [0] * (degree - len(expected))


@pytest.mark.parametrize("t", [1, 3, 8])
def test_small_field_pipeline_exhaustively_against_brute_force(t: int) -> None:
    """m = 8: every odd-power-sum vector reached by the sets of ≤ 1 element decodes on both
    backends to the same set, and random 3..t-element sets round-trip on both."""
    fields = [binary_field(8, backend="numpy")] + ([binary_field(8, backend="native")] if backend() == "native" else [])
    rng = random.Random(t)
    sets = [[]] + [[a] for a in range(1, 256)] + [rng.sample(range(1, 256), rng.randint(1, t)) for _ in range(60)]
    for elements in sets:
        sums = np.array(_reference_power_sums(elements, t, 8), dtype=np.uint64)
        for field in fields:
            assert odd_power_sums(field, np.array(elements, dtype=np.uint64), t).tolist() == sums.tolist()
            assert recover_set(field, sums, np.zeros(0, dtype=np.int64)).tolist() == sorted(elements)


def test_recovery_beyond_t_never_returns_a_set_with_other_power_sums() -> None:
    fields = [binary_field(16, backend="numpy")] + (
        [binary_field(16, backend="native")] if backend() == "native" else []
    )
    rng = random.Random(99)
    for _ in range(40):
        t = rng.randint(2, 6)
        far = rng.sample(range(1, 1 << 16), t + rng.randint(1, 4))
        sums = odd_power_sums(fields[0], np.array(far, dtype=np.uint64), t)
        outcomes = []
        for field in fields:
            try:
                got = recover_set(field, sums, np.zeros(0, dtype=np.int64))
            except DecodeError:
                outcomes.append(None)
                continue
            assert len(got) <= t and odd_power_sums(field, got.astype(np.uint64), t).tolist() == sums.tolist()
            outcomes.append(got.tolist())
        assert len(set(map(repr, outcomes))) == 1


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


def test_iteration_helpers_are_consistent() -> None:
    # expand_syndromes agrees on both backends and with plain squaring
    fields = [binary_field(24, backend="numpy")] + (
        [binary_field(24, backend="native")] if backend() == "native" else []
    )
    odd = [5, 77, 1 << 23, 0]
    expanded = [expand_syndromes(f, odd) for f in fields]
    assert all(e == expanded[0] for e in expanded)
    for i, j in itertools.product(range(1, 5), repeat=2):
        if 2 * i == j:
            assert expanded[0][j - 1] == reference_mul(
                expanded[0][i - 1], expanded[0][i - 1], 24, PRIMITIVE_POLYNOMIALS[24]
            )


def test_random_multiplier_is_a_nonzero_field_element_and_varies() -> None:
    field = binary_field(8, backend="numpy")
    draws = [gf.random_multiplier(field) for _ in range(2000)]
    assert all(0 < d < 256 for d in draws)
    assert len(set(draws)) > 200  # 255 values; missing more than 55 of them has negligible probability
