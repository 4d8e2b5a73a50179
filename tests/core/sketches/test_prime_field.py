"""The private prime-field engine: arithmetic, Gauss–Jordan, Berlekamp–Welch, vault evaluation.

Both backends (numpy, and the compiled kernels when built) are checked against the plain-integer
reference, against a brute-force search over every polynomial of a tiny field, against
hand-computed vectors, against galois, and against each other.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches._backend import backend as default_backend
from sketchauth.sketches._prime_field import (
    agreeing_points,
    berlekamp_welch,
    eval_range,
    inv_mod,
    is_prime,
    lock_values,
    next_prime,
    poly_divmod_monic,
    poly_eval,
    reference_berlekamp_welch,
    rs_decode,
    solve_mod,
    uniform_below,
)

SMALL_PRIMES = [2, 3, 5, 7, 11, 13, 17, 31, 101, 257]
BACKENDS = [
    "numpy",
    pytest.param(
        "native", marks=pytest.mark.skipif(default_backend() != "native", reason="the compiled extension is not built")
    ),
]


def _sieve(limit: int) -> set[int]:
    flags = [True] * limit
    flags[0] = flags[1] = False
    for i in range(2, int(limit**0.5) + 1):
        if flags[i]:
            flags[i * i :: i] = [False] * len(flags[i * i :: i])
    return {i for i, f in enumerate(flags) if f}


def test_is_prime_matches_a_sieve() -> None:
    primes = _sieve(20000)
    assert [n for n in range(20000) if is_prime(n)] == sorted(primes)


def test_is_prime_large_known_values() -> None:
    assert is_prime(2**31 - 1) and is_prime(65521) and is_prime(10007)
    assert not is_prime(2**31 - 3) and not is_prime(65521 * 3)
    assert not is_prime(25326001)  # strong pseudoprime to bases 2, 3, 5


def test_next_prime() -> None:
    assert next_prime(65520) == 65521
    assert next_prime(10000) == 10007
    assert next_prime(200) == 211
    assert next_prime(12) == 13
    assert next_prime(0) == 2
    assert next_prime(13) == 13


def test_uniform_below_range_and_shape() -> None:
    for bound in (1, 2, 12, 65520, 2**31):
        values = uniform_below(bound, 5000)
        assert values.shape == (5000,) and values.dtype == np.int64
        assert values.min() >= 0 and values.max() < bound
    assert uniform_below(7, 0).shape == (0,)
    with pytest.raises(ParameterError):
        uniform_below(0, 3)
    with pytest.raises(ParameterError):
        uniform_below(2**31 + 1, 3)


def test_uniform_below_covers_every_value() -> None:
    # 20000 draws over 12 values: each count is ~1667; a value missing or a count off by 30%
    # would mean a broken mapping (probability of a false alarm is astronomically small).
    counts = np.bincount(uniform_below(12, 20000), minlength=12)
    assert counts.shape == (12,)
    assert counts.min() > 1667 * 0.7 and counts.max() < 1667 * 1.3


@pytest.mark.parametrize("p", [2, 3, 13, 257])
def test_inv_mod_exhaustive(p: int) -> None:
    a = np.arange(1, p)
    assert np.all(a * inv_mod(a, p) % p == 1)
    assert inv_mod(np.array([0]), p)[0] == 0


def test_inv_mod_large_prime() -> None:
    p = 2**31 - 1
    a = uniform_below(p - 1, 1000) + 1
    assert np.all((a * inv_mod(a, p)) % p == 1)


def test_poly_eval_hand_values() -> None:
    # F = 2 + 5x + x^2 over F_13 at x = 0..12 (computed by hand).
    expected = [2, 8, 3, 0, 12, 0, 3, 8, 2, 11, 9, 9, 11]
    assert poly_eval(np.array([2, 5, 1]), np.arange(13), 13).tolist() == expected


def test_poly_eval_batch_shapes() -> None:
    coeffs = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    xs = np.array([2, 3, 4])
    out = poly_eval(coeffs, xs, 13)
    assert out.tolist() == [[1, 1, 1], [2, 3, 4], [4, 9, 3]]
    assert poly_eval(np.array([5]), np.arange(4), 7).tolist() == [5, 5, 5, 5]


def test_poly_eval_large_prime_no_overflow() -> None:
    p = 2**31 - 1
    coeffs = np.array([p - 1] * 6)
    xs = np.array([p - 1, p - 2, 1, 0])
    expected = [sum(c * pow(x, j, p) for j, c in enumerate(coeffs.tolist())) % p for x in xs.tolist()]
    assert poly_eval(coeffs, xs, p).tolist() == expected


def test_poly_eval_agrees_with_galois() -> None:
    galois = pytest.importorskip("galois")
    GF = galois.GF(257)
    rng = np.random.default_rng(7)
    coeffs = rng.integers(0, 257, 9)
    xs = np.arange(257)
    oracle = galois.Poly(coeffs[::-1], field=GF)(GF(xs))
    assert poly_eval(coeffs, xs, 257).tolist() == np.asarray(oracle).tolist()


def test_solve_mod_nonsingular_matches_galois() -> None:
    galois = pytest.importorskip("galois")
    GF = galois.GF(101)
    rng = np.random.default_rng(3)
    A = rng.integers(0, 101, (6, 6))
    while np.linalg.det(GF(A)) == 0:
        A = rng.integers(0, 101, (6, 6))
    b = rng.integers(0, 101, 6)
    x, ok = solve_mod(A[None], b[None], 101)
    assert ok[0]
    assert x[0].tolist() == np.asarray(np.linalg.solve(GF(A), GF(b))).tolist()


def test_solve_mod_singular_and_inconsistent() -> None:
    p = 13
    A = np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]])
    consistent_b = np.array([1, 2, 5])
    inconsistent_b = np.array([1, 3, 5])
    x, ok = solve_mod(np.stack([A, A]), np.stack([consistent_b, inconsistent_b]), p)
    assert ok.tolist() == [True, False]
    assert ((A @ x[0]) % p).tolist() == consistent_b.tolist()


def test_solve_mod_batch_with_different_pivot_columns() -> None:
    # The first system has an all-zero first column (x_0 free), the second does not: the
    # elimination must pick pivots per system.
    p = 13
    A = np.array([[[0, 1, 2], [0, 3, 4], [0, 5, 6]], [[1, 1, 2], [2, 3, 4], [3, 5, 7]]])
    b = np.array([[5, 11, 4], [1, 2, 3]])
    x, ok = solve_mod(A, b, p)
    assert ok.tolist() == [True, True]
    for system, rhs, sol in zip(A, b, x, strict=False):
        assert ((system @ sol) % p).tolist() == rhs.tolist()
    assert x[0, 0] == 0  # free variable set to 0


def test_poly_divmod_monic() -> None:
    # (x^2 + 5x + 2)(x + 3) = x^3 + 8x^2 + 17x + 6 ≡ x^3 + 8x^2 + 4x + 6 (mod 13), plus remainder 7.
    num = np.array([[0, 4, 8, 1]])
    quot, rem = poly_divmod_monic(num, np.array([[3, 1]]), 13)
    assert quot.tolist() == [[2, 5, 1]] and rem.tolist() == [[7]]


# -- Berlekamp–Welch ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_rs_decode_hand_vector_one_error(backend: str) -> None:
    xs = np.array([1, 2, 3, 4, 5])
    ys = np.array([9, 5, 6, 7, 8])  # F = 3 + x, error at x = 1 (4 -> 9)
    assert rs_decode(xs, ys, 2, 13, backend=backend).tolist() == [3, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rs_decode_hand_vector_two_errors(backend: str) -> None:
    # F = 2 + 5x + x^2 over F_13 at x = 0..6 is 2, 8, 3, 0, 12, 0, 3; errors at x = 3 and x = 6.
    xs = np.arange(7)
    ys = np.array([2, 8, 3, 5, 12, 0, 1])
    assert rs_decode(xs, ys, 3, 13, backend=backend).tolist() == [2, 5, 1]
    assert reference_berlekamp_welch(xs.tolist(), ys.tolist(), 3, 13) == [2, 5, 1]


def _brute_force(xs: list[int], ys: list[int], k: int, p: int) -> list[list[int]]:
    """Every polynomial of degree < k within ⌊(n−k)/2⌋ of the points (exhaustive)."""
    radius = (len(xs) - k) // 2
    found = []
    for coeffs in itertools.product(range(p), repeat=k):
        values = [sum(c * pow(x, j, p) for j, c in enumerate(coeffs)) % p for x in xs]
        if sum(v != y for v, y in zip(values, ys, strict=False)) <= radius:
            found.append(list(coeffs))
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_rs_decode_three_errors_is_detected(backend: str) -> None:
    xs = list(range(7))
    ys = [2, 8, 3, 5, 12, 0, 1]
    ys[0] = 9  # third error: beyond radius 2
    assert _brute_force(xs, ys, 3, 13) == []
    with pytest.raises(DecodeError):
        rs_decode(np.array(xs), np.array(ys), 3, 13, backend=backend)
    with pytest.raises(DecodeError):
        reference_berlekamp_welch(xs, ys, 3, 13)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=120, deadline=None)
@given(st.sampled_from([5, 7, 11]), st.data())
def test_berlekamp_welch_equals_brute_force(backend: str, p: int, data) -> None:
    n = data.draw(st.integers(1, p))
    k = data.draw(st.integers(1, min(n, 3)))
    xs = data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n, unique=True))
    coeffs = data.draw(st.lists(st.integers(0, p - 1), min_size=k, max_size=k))
    errors = data.draw(st.integers(0, n))
    ys = [sum(c * pow(x, j, p) for j, c in enumerate(coeffs)) % p for x in xs]
    for i in data.draw(st.lists(st.integers(0, n - 1), min_size=errors, max_size=errors)):
        ys[i] = (ys[i] + data.draw(st.integers(1, p - 1))) % p
    expected = _brute_force(xs, ys, k, p)
    assert len(expected) <= 1  # unique decoding radius
    got, ok = berlekamp_welch(np.array([xs]), np.array([ys]), k, p, backend=backend)
    assert bool(ok[0]) == bool(expected)
    if expected:
        assert got[0].tolist() == expected[0]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=80, deadline=None)
@given(st.sampled_from([101, 257, 65521]), st.data())
def test_fast_path_matches_reference(backend: str, p: int, data) -> None:
    n = data.draw(st.integers(1, 24))
    k = data.draw(st.integers(1, n))
    batch = data.draw(st.integers(1, 4))
    xs, ys, refs = [], [], []
    for _ in range(batch):
        x = data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n, unique=True))
        coeffs = data.draw(st.lists(st.integers(0, p - 1), min_size=k, max_size=k))
        y = [sum(c * pow(v, j, p) for j, c in enumerate(coeffs)) % p for v in x]
        for i in data.draw(st.lists(st.integers(0, n - 1), max_size=n)):
            y[i] = data.draw(st.integers(0, p - 1))
        xs.append(x)
        ys.append(y)
        try:
            refs.append(reference_berlekamp_welch(x, y, k, p))
        except DecodeError:
            refs.append(None)
    got, ok = berlekamp_welch(np.array(xs), np.array(ys), k, p, backend=backend)
    for row, ref in enumerate(refs):
        assert bool(ok[row]) == (ref is not None)
        if ref is not None:
            assert got[row].tolist() == ref


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(st.sampled_from([13, 10007, 65521, 2**31 - 1]), st.data())
def test_decodes_within_radius(backend: str, p: int, data) -> None:
    n = data.draw(st.integers(1, min(p, 40)))
    k = data.draw(st.integers(1, n))
    xs = np.array(data.draw(st.lists(st.integers(0, min(p, 10**6) - 1), min_size=n, max_size=n, unique=True)))
    coeffs = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=k, max_size=k)))
    ys = poly_eval(coeffs, xs, p)
    wrong = data.draw(st.lists(st.integers(0, n - 1), max_size=(n - k) // 2, unique=True))
    ys[wrong] = (ys[wrong] + 1 + np.array(wrong) % (p - 1)) % p
    assert rs_decode(xs, ys, k, p, backend=backend).tolist() == coeffs.tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_rs_decode_agrees_with_galois_interpolation(backend: str) -> None:
    # galois solves the Vandermonde system of the error-free points; rs_decode sees one error too.
    galois = pytest.importorskip("galois")
    GF = galois.GF(101)
    xs = np.array([1, 4, 6, 9, 11, 30, 77])
    coeffs = np.array([12, 0, 99, 5, 1])
    ys = poly_eval(coeffs, xs, 101)
    vandermonde = GF(np.vander(xs[:5], 5, increasing=True) % 101)
    oracle = np.linalg.solve(vandermonde, GF(ys[:5]))
    ys[6] = (ys[6] + 1) % 101
    assert rs_decode(xs, ys, 5, 101, backend=backend).tolist() == np.asarray(oracle).tolist() == coeffs.tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameter_errors(backend: str) -> None:
    with pytest.raises(ParameterError):
        berlekamp_welch(np.array([[1, 2]]), np.array([[1, 2]]), 3, 13, backend=backend)
    with pytest.raises(ParameterError):
        berlekamp_welch(np.array([[1, 2]]), np.array([[1, 2]]), 0, 13, backend=backend)
    with pytest.raises(ParameterError):
        berlekamp_welch(np.array([[1, 2]]), np.array([[1, 2]]), 1, 13, backend="fortran")


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_points_never_decode_on_the_native_path_and_agree_otherwise(backend: str) -> None:
    # Distinct points are the decoder's precondition; the native kernel checks it (a repeat fails
    # the row) rather than trusting it, so no input can make the elimination misbehave.
    xs = np.array([[1, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    ys = np.array([[4, 4, 5, 6, 7], [4, 5, 6, 7, 8]])  # F = 3 + x
    coeffs, ok = berlekamp_welch(xs, ys, 2, 13, backend=backend)
    assert bool(ok[1]) and coeffs[1].tolist() == [3, 1]
    if backend == "native":
        assert not ok[0]


# -- evaluation at every point, vault lock and read-back -----------------------------------------


def _horner(coeffs: list[int], x: int, p: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % p
    return acc


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(st.sampled_from([2, 3, 13, 10007, 65521, 2**31 - 1]), st.data())
def test_eval_range_equals_horner(backend: str, p: int, data) -> None:
    rows = data.draw(st.integers(1, 3))
    k = data.draw(st.integers(0, 12))
    count = data.draw(st.integers(0, 300))
    coeffs = [data.draw(st.lists(st.integers(0, p - 1), min_size=k, max_size=k)) for _ in range(rows)]
    got = eval_range(np.array(coeffs, dtype=np.int64).reshape(rows, k), count, p, backend=backend)
    assert got.shape == (rows, count)
    assert got.tolist() == [[_horner(c, x, p) for x in range(count)] for c in coeffs]


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_range_across_blocks_and_high_degree(backend: str) -> None:
    p = 65521
    rng = np.random.default_rng(5)
    coeffs = rng.integers(0, p, (2, 40))
    got = eval_range(coeffs, 9000, p, backend=backend)  # more than one 4096-value block
    xs = np.array([0, 1, 4095, 4096, 4097, 8191, 8999])
    assert got[:, xs].tolist() == poly_eval(coeffs, xs, p).tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_agreeing_points_and_limit(backend: str) -> None:
    p = 10007
    coeffs = np.array([5, 3, 1])
    values = poly_eval(coeffs, np.arange(p), p)
    values[[0, 7, 100]] = (values[[0, 7, 100]] + 1) % p
    found = agreeing_points(coeffs, values, p, limit=p)
    assert found.tolist() == [x for x in range(p) if x not in (0, 7, 100)]
    assert agreeing_points(coeffs, values, p, limit=3, backend=backend).tolist() == [1, 2, 3, 4]
    assert agreeing_points(coeffs, values, p, limit=0, backend=backend).tolist() == [1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_lock_values_put_f_on_genuine_points_and_chaff_elsewhere(backend: str) -> None:
    p = 101
    coeffs = np.array([7, 0, 2])
    genuine = np.array([3, 50, 99])
    offsets = np.arange(p - 3) % (p - 1)
    values = lock_values(coeffs, p, p, genuine, offsets, backend=backend)
    f = [_horner([7, 0, 2], x, p) for x in range(p)]
    chaff_points = [x for x in range(p) if x not in (3, 50, 99)]
    assert [int(values[x]) for x in genuine] == [f[x] for x in genuine]
    for x, u in zip(chaff_points, offsets.tolist(), strict=False):
        assert int(values[x]) == u + (u >= f[x]) != f[x]


def test_lock_values_refuse_bad_genuine_indices() -> None:
    if default_backend() != "native":
        pytest.skip("the compiled extension is not built")
    with pytest.raises(ValueError):
        lock_values(np.array([1]), 13, 13, np.array([5, 5]), np.zeros(11, dtype=np.int64), backend="native")
    with pytest.raises(ValueError):
        lock_values(np.array([1]), 13, 13, np.array([20]), np.zeros(12, dtype=np.int64), backend="native")
    with pytest.raises(ValueError):
        lock_values(np.array([1]), 13, 13, np.array([2]), np.full(12, 12, dtype=np.int64), backend="native")


@pytest.mark.skipif(default_backend() != "native", reason="the compiled extension is not built")
@settings(max_examples=40, deadline=None)
@given(st.sampled_from([257, 65521, 2**31 - 1]), st.data())
def test_native_berlekamp_welch_equals_numpy_on_larger_words(p: int, data) -> None:
    n = data.draw(st.integers(1, 90))
    k = data.draw(st.integers(1, n))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    xs = np.stack([rng.choice(min(p, 10**6), n, replace=False) for _ in range(3)])
    coeffs = rng.integers(0, p, (3, k))
    ys = poly_eval(coeffs, xs, p)
    errors = data.draw(st.integers(0, n))
    ys[:, :errors] = rng.integers(0, p, (3, errors))
    native, ok_native = berlekamp_welch(xs, ys, k, p, backend="native")
    numpy_, ok_numpy = berlekamp_welch(xs, ys, k, p, backend="numpy")
    assert ok_native.tolist() == ok_numpy.tolist()
    assert native[ok_native].tolist() == numpy_[ok_numpy].tolist()
