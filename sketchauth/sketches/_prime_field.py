"""Arithmetic over a prime field F_p in numpy int64, and a Reed–Solomon decoder (private).

This is the engine under the fuzzy vaults of Juels–Sudan; Fang's thesis §6.3 (:mod:`sketchauth.sketches.vault`);
nothing here validates caller input beyond what the algebra needs — the vault modules do that.

Backends
    The same operations run on the compiled kernels of :mod:`sketchauth.sketches._native` when
    the package was built with a C compiler (``backend="auto"`` or ``"native"``), else on numpy
    (``backend="numpy"``, also the choice of the tests that check the two against each other):
    Berlekamp–Welch in C is Gaussian elimination with Barrett reduction (``μ = ⌊2^64/p⌋``, one
    correction), and evaluating a polynomial of degree D at every point ``0 … N−1`` (the vault's
    lock and read-back) uses forward differences — after D + 1 Horner evaluations each further
    value costs D modular additions and no multiplication.

Why plain numpy and not galois
    galois compiles its ufuncs with numba on first use in every fresh process (about 20 s here
    for a field, ``lagrange_poly`` and an RS decode) and caches nothing to disk. A command-line
    call or a freshly started worker would pay that on its first decode. Every operation a vault
    needs is a handful of vectorised multiply-and-reduce steps: with ``p < 2^31`` every product
    of two reduced residues is below ``2^62`` and fits in int64, so numpy does it directly, starts
    in milliseconds and runs as fast as galois' compiled kernels for these sizes. galois is used
    only in the tests, as an independent oracle.

What is here
    * primality (:func:`is_prime`, deterministic Miller–Rabin for ``n < 3.3·10^9``) and
      :func:`next_prime`;
    * :func:`uniform_below`: exactly uniform integers from :mod:`secrets` (rejection sampling);
    * :func:`inv_mod`, :func:`poly_eval` (Horner, vectorised over points and over a batch);
    * :func:`solve_mod`: batched Gauss–Jordan elimination mod p returning *a* solution of a
      possibly singular system, or reporting it inconsistent;
    * :func:`berlekamp_welch`: batched Reed–Solomon decoding at arbitrary distinct evaluation
      points; :func:`rs_decode` is the single-word front that raises :class:`DecodeError`;
    * :func:`eval_range`, :func:`agreeing_points`, :func:`lock_values`: a polynomial at every
      point ``0 … N−1``, the points where it matches a vault, a vault's values (F on the genuine
      points, chaff elsewhere);
    * :func:`reference_berlekamp_welch`: the same algorithm on plain Python integers, short and
      readable, that the tests check the fast path against.

Berlekamp–Welch (the decoder)
    Points ``(x_i, y_i)``, ``i < n``, distinct ``x_i``; message polynomials of degree ``< k``;
    ``e = ⌊(n − k)/2⌋``. Unknowns: monic ``E`` of degree ``e`` and ``Q`` of degree ``< e + k``
    (``2e + k ≤ n`` unknowns); equations ``Q(x_i) = y_i·E(x_i)``. If some ``F`` of degree ``< k``
    disagrees with at most ``e`` of the points, ``(F·E_0, E_0)`` with ``E_0`` the error locator
    (padded to degree ``e``) is a solution; and for *every* solution ``(Q, E)``,
    ``Q·E_0 − F·E_0·E`` has degree ``< 2e + k ≤ n`` and vanishes at all ``n`` points, so
    ``Q / E = F``. Hence: any solution found gives ``F`` (rank deficiency is harmless). If the
    system is inconsistent, ``E`` does not divide ``Q``, or the quotient disagrees with more than
    ``e`` points, no polynomial of degree ``< k`` is within ``e`` of the word: decoding fails.

Example::

    >>> import numpy as np
    >>> xs = np.array([1, 2, 3, 4, 5]); ys = poly_eval(np.array([3, 1]), xs, 13)   # F = 3 + x
    >>> ys[0] = (ys[0] + 5) % 13                                                     # one error
    >>> rs_decode(xs, ys, 2, 13).tolist()
    [3, 1]
"""

from __future__ import annotations

from typing import cast

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches import _backend

# secrets loads hmac, hashlib and OpenSSL: on first use (sketchauth._lazy).
_secrets = LazyModule("secrets")

__all__ = [
    "MAX_MODULUS",
    "agreeing_points",
    "berlekamp_welch",
    "eval_range",
    "inv_mod",
    "is_prime",
    "lock_values",
    "next_prime",
    "poly_divmod_monic",
    "poly_eval",
    "reference_berlekamp_welch",
    "rs_decode",
    "solve_mod",
    "uniform_below",
]

#: Moduli must stay below this so that a product of two residues fits in int64.
MAX_MODULUS = 2**31

_INT64_MAX = 2**63 - 1
#: inv_mod inverts up to this many values one by one with Python's pow.
_SCALAR_INVERSES = 8

# Deterministic Miller–Rabin: these bases decide primality for every n < 3,215,031,751.
_MR_BASES = (2, 3, 5, 7)


def is_prime(n: int) -> bool:
    """Whether ``n`` is prime (exact for ``n < 3.2·10^9``, which covers every modulus here)."""
    if n < 2:
        return False
    for small in (2, 3, 5, 7, 11, 13):
        if n % small == 0:
            return n == small
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def next_prime(n: int) -> int:
    """The smallest prime ``≥ n``."""
    candidate = max(2, n)
    while not is_prime(candidate):
        candidate += 1
    return candidate


def uniform_below(bound: int, count: int) -> np.ndarray:
    """``count`` independent integers, each exactly uniform in ``[0, bound)``, from :mod:`secrets`.

    Draws 32-bit words and keeps those below the largest multiple of ``bound`` that fits
    (``⌊2^32/bound⌋·bound``), reducing them mod ``bound``; every residue then has the same number
    of preimages, so the result is exactly uniform. At least half of the words are kept for
    ``bound ≤ 2^31``; rejected positions are redrawn.
    """
    if not 1 <= bound <= MAX_MODULUS:
        raise ParameterError(f"bound must be in [1, 2^31], got {bound}")
    out = np.empty(count, dtype=np.int64)
    limit = (1 << 32) // bound * bound
    todo = np.arange(count)
    while todo.size:
        words = np.frombuffer(_secrets.token_bytes(4 * todo.size), dtype="<u4").astype(np.int64)
        keep = words < limit
        out[todo[keep]] = words[keep] % bound
        todo = todo[~keep]
    return out


def inv_mod(a: np.ndarray, p: int) -> np.ndarray:
    """Elementwise inverse mod prime ``p`` (``a^(p−2)``, square-and-multiply); 0 maps to 0."""
    base = np.asarray(a, dtype=np.int64) % p
    if base.size <= _SCALAR_INVERSES:
        # A few values (one pivot per system in a small batch): Python's pow is far cheaper
        # than ~2·log2(p) numpy calls.
        return np.array([pow(int(v), p - 2, p) if v else 0 for v in base.ravel()], dtype=np.int64).reshape(base.shape)
    zero = base == 0
    result = np.ones_like(base)
    exponent = p - 2
    while exponent:
        if exponent & 1:
            result = result * base % p
        base = base * base % p
        exponent >>= 1
    return np.where(zero, 0, result)  # p = 2 has exponent 0 and would map 0 to 1


def poly_eval(coeffs: np.ndarray, xs: np.ndarray, p: int) -> np.ndarray:
    """Evaluate polynomials at points mod ``p`` by Horner's rule, vectorised over the points.

    ``coeffs[..., j]`` is the coefficient of ``x^j`` (lowest first), points ``xs`` lie in
    ``[0, p)``. Shapes broadcast: one polynomial ``(k,)`` at points ``(n,)`` gives ``(n,)``; a
    batch ``(B, k)`` at ``(B, n)`` or ``(n,)`` gives ``(B, n)``.

    The reduction mod ``p`` (the slow part: an integer division per value) is delayed while
    the accumulator provably stays below ``2^63``: for ``p < 2^16`` every other step, for
    ``p ≈ 10^4`` every third.
    """
    coeffs = np.asarray(coeffs, dtype=np.int64) % p
    xs = np.asarray(xs, dtype=np.int64)
    shape = np.broadcast_shapes(coeffs[..., -1:].shape, xs.shape)
    acc = np.broadcast_to(coeffs[..., -1:], shape).copy()
    bound = p - 1  # an upper bound on every entry of acc
    for j in range(coeffs.shape[-1] - 2, -1, -1):
        if bound * (p - 1) + (p - 1) > _INT64_MAX:
            acc %= p
            bound = p - 1
        acc *= xs
        acc += coeffs[..., j : j + 1]
        bound = bound * (p - 1) + (p - 1)
    if bound >= p:
        acc %= p
    return acc


def solve_mod(A: np.ndarray, b: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A x = b`` mod prime ``p`` for a batch of systems by Gauss–Jordan elimination.

    ``A`` has shape ``(B, n, u)``, ``b`` shape ``(B, n)``, entries reduced mod ``p``. Returns
    ``(x, consistent)``: ``x`` of shape ``(B, u)`` is a solution (free variables set to 0)
    wherever ``consistent`` is True; elsewhere the system has no solution and ``x`` is
    meaningless. The elimination is vectorised over the whole batch: each system picks its own
    pivot row per column (the first non-zero entry at or below its current row).
    """
    B, n, u = A.shape
    M = np.concatenate([A, b[:, :, None]], axis=2).astype(np.int64) % p
    next_row = np.zeros(B, dtype=np.int64)
    pivot_col = np.full((B, n), -1, dtype=np.int64)
    rows = np.arange(n)
    for col in range(u):
        candidates = (M[:, :, col] != 0) & (rows[None, :] >= next_row[:, None])
        has_pivot = candidates.any(axis=1)
        if not has_pivot.any():
            continue
        sel = np.flatnonzero(has_pivot)
        # Work in place when every system has a pivot here (the usual case), else on a copy.
        sub = M if sel.size == B else M[sel]
        idx = np.arange(sel.size)
        r = next_row[sel]
        found = candidates[sel].argmax(axis=1)
        pivot_rows = sub[idx, found]
        sub[idx, found] = sub[idx, r]
        pivot_rows = pivot_rows * inv_mod(pivot_rows[:, col], p)[:, None] % p
        sub[idx, r] = pivot_rows
        factors = sub[:, :, col].copy()
        factors[idx, r] = 0
        sub -= factors[:, :, None] * pivot_rows[:, None, :]
        sub %= p
        if sub is not M:
            M[sel] = sub
        pivot_col[sel, r] = col
        next_row[sel] += 1
    # Rows at or below next_row have no pivot: all-zero coefficients, so their rhs must be 0.
    below = rows[None, :] >= next_row[:, None]
    consistent = ~np.any(below & (M[:, :, u] != 0), axis=1)
    x = np.zeros((B, u), dtype=np.int64)
    bi, ri = np.nonzero(pivot_col >= 0)
    x[bi, pivot_col[bi, ri]] = M[bi, ri, u]
    return x, consistent


def poly_divmod_monic(num: np.ndarray, den: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Batched long division by monic polynomials mod ``p`` (coefficients lowest first).

    ``num`` has shape ``(B, a)``, ``den`` shape ``(B, e + 1)`` with ``den[:, e] == 1``; returns the
    quotient ``(B, a − e)`` and remainder ``(B, e)``.
    """
    rem = np.array(num, dtype=np.int64, copy=True)
    e = den.shape[1] - 1
    a = rem.shape[1]
    quot = np.zeros((rem.shape[0], max(a - e, 0)), dtype=np.int64)
    for shift in range(a - e - 1, -1, -1):
        lead = rem[:, shift + e].copy()
        quot[:, shift] = lead
        rem[:, shift : shift + e + 1] = (rem[:, shift : shift + e + 1] - lead[:, None] * den) % p
    return quot, rem[:, :e]


def berlekamp_welch(
    xs: np.ndarray, ys: np.ndarray, k: int, p: int, *, backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """Batched Reed–Solomon decoding: the polynomial of degree ``< k`` within ``⌊(n−k)/2⌋`` errors.

    ``xs`` (distinct per row) and ``ys`` have shape ``(B, n)``; returns ``(coeffs, ok)`` where
    ``coeffs`` is ``(B, k)`` (lowest degree first) and ``ok[b]`` says whether row ``b`` decoded:
    True exactly when some polynomial of degree ``< k`` agrees with at least ``n − ⌊(n−k)/2⌋``
    of its points (that polynomial is then unique and returned). Needs ``1 ≤ k ≤ n``.
    """
    xs = np.asarray(xs, dtype=np.int64) % p
    ys = np.asarray(ys, dtype=np.int64) % p
    B, n = xs.shape
    if not 1 <= k <= n:
        raise ParameterError(f"need 1 <= k <= n, got k={k}, n={n}")
    if _backend.resolve(backend) == "native":
        data, ok = _backend.native_module().fp_berlekamp_welch(
            np.ascontiguousarray(xs), np.ascontiguousarray(ys), B, n, k, p
        )
        return np.frombuffer(data, dtype=np.int64).reshape(B, k), np.frombuffer(ok, dtype=np.bool_)
    e = (n - k) // 2
    powers = np.ones((B, n, e + k + 1), dtype=np.int64)
    for j in range(1, e + k + 1):
        powers[:, :, j] = powers[:, :, j - 1] * xs % p
    q_part = powers[:, :, : e + k]
    e_part = (p - ys[:, :, None]) * powers[:, :, :e] % p
    A = np.concatenate([q_part, e_part], axis=2)
    rhs = ys * powers[:, :, e] % p
    solution, ok = solve_mod(A, rhs, p)
    Q = solution[:, : e + k]
    E = np.concatenate([solution[:, e + k :], np.ones((B, 1), dtype=np.int64)], axis=1)
    coeffs, remainder = poly_divmod_monic(Q, E, p)
    ok &= ~np.any(remainder != 0, axis=1)
    agree = (poly_eval(coeffs, xs, p) == ys).sum(axis=1)
    ok &= agree >= n - e
    return coeffs, ok


def rs_decode(xs: np.ndarray, ys: np.ndarray, k: int, p: int, *, backend: str = "auto") -> np.ndarray:
    """Single-word :func:`berlekamp_welch`; raises :class:`DecodeError` when it does not decode."""
    coeffs, ok = berlekamp_welch(np.asarray(xs)[None, :], np.asarray(ys)[None, :], k, p, backend=backend)
    if not ok[0]:
        raise DecodeError("too many disagreeing points: no polynomial of the vault's degree fits")
    return cast("np.ndarray", coeffs[0])


#: Values per block when the numpy path evaluates a batch at every point (2^16 int64 = 512 KiB).
_EVAL_BLOCK = 1 << 16


def eval_range(coeffs: np.ndarray, count: int, p: int, *, backend: str = "auto") -> np.ndarray:
    """``F_b(x)`` for every row ``F_b`` of ``coeffs`` ``(B, k)`` and every ``x < count``: ``(B, count)``.

    Native: forward differences per row. numpy: :func:`poly_eval` on blocks of at most
    ``_EVAL_BLOCK`` values (a Horner pass streams the whole block, which then stays in cache).
    """
    coeffs = np.asarray(coeffs, dtype=np.int64)
    rows, k = coeffs.shape
    if _backend.resolve(backend) == "native":
        data = _backend.native_module().fp_eval_range(np.ascontiguousarray(coeffs), rows, k, p, count)
        return np.frombuffer(data, dtype=np.int64).reshape(rows, count)
    points = np.arange(count, dtype=np.int64) % p
    out = np.zeros((rows, count), dtype=np.int64)
    if k == 0:
        return out
    step = max(1, _EVAL_BLOCK // max(count, 1))
    for start in range(0, rows, step):
        out[start : start + step] = poly_eval(coeffs[start : start + step], points, p)
    return out


def agreeing_points(coeffs: np.ndarray, values: np.ndarray, p: int, limit: int, *, backend: str = "auto") -> np.ndarray:
    """The ``x`` (ascending, int64) with ``F(x) = values[x]``; at most ``limit + 1`` of them.

    The vault read-back: a caller that needs exactly ``limit`` agreeing points learns whether
    there are more without collecting (possibly millions of) them.
    """
    coeffs = np.asarray(coeffs, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    if _backend.resolve(backend) == "native":
        data = _backend.native_module().fp_agree(np.ascontiguousarray(coeffs), np.ascontiguousarray(values), p, limit)
        return np.frombuffer(data, dtype=np.int64)
    found = np.flatnonzero(eval_range(coeffs[None, :], values.shape[0], p, backend="numpy")[0] == values)
    return found[: limit + 1].astype(np.int64)


def lock_values(
    coeffs: np.ndarray, p: int, count: int, genuine: np.ndarray, offsets: np.ndarray, *, backend: str = "auto"
) -> np.ndarray:
    r"""Vault values for ``x < count``: ``F(x)`` at the ``genuine`` points (strictly increasing),
    chaff ``u + [u ≥ F(x)]`` for the offsets ``u ∈ [0, p−1)`` everywhere else, in order.

    ``u ↦ u + [u ≥ F(x)]`` is a bijection ``[0, p−1) → F_p \ {F(x)}``, so a uniform offset gives a
    uniform chaff value different from ``F(x)``.
    """
    coeffs = np.asarray(coeffs, dtype=np.int64)
    genuine = np.asarray(genuine, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if _backend.resolve(backend) == "native":
        data = _backend.native_module().fp_lock(
            np.ascontiguousarray(coeffs), p, count, np.ascontiguousarray(genuine), np.ascontiguousarray(offsets)
        )
        return np.frombuffer(data, dtype=np.int64)
    values = eval_range(coeffs[None, :], count, p, backend="numpy")[0]
    chaff = np.ones(count, dtype=bool)
    chaff[genuine] = False
    f_chaff = values[chaff]
    values[chaff] = offsets + (offsets >= f_chaff)
    return cast("np.ndarray", values)


# -- plain-integer reference (tests check the fast path against it) ------------------------------


def _reference_solve(rows: list[list[int]], p: int) -> list[int]:
    """Gauss–Jordan on an augmented matrix of Python ints; one solution or DecodeError."""
    rows = [r[:] for r in rows]
    unknowns = len(rows[0]) - 1
    pivots: list[tuple[int, int]] = []
    r = 0
    for c in range(unknowns):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] % p), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        inv = pow(rows[r][c], p - 2, p)
        rows[r] = [v * inv % p for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] % p:
                f = rows[i][c]
                rows[i] = [(a - f * b) % p for a, b in zip(rows[i], rows[r], strict=False)]
        pivots.append((r, c))
        r += 1
    if any(row[-1] % p for row in rows[r:]):
        raise DecodeError("inconsistent system")
    x = [0] * unknowns
    for i, c in pivots:
        x[c] = rows[i][-1]
    return x


def reference_berlekamp_welch(xs: list[int], ys: list[int], k: int, p: int) -> list[int]:
    """Berlekamp–Welch on Python integers: coefficients of F (lowest first) or DecodeError."""
    n = len(xs)
    e = (n - k) // 2
    system = [
        [pow(x, j, p) for j in range(e + k)] + [(-y * pow(x, j, p)) % p for j in range(e)] + [y * pow(x, e, p) % p]
        for x, y in zip(xs, ys, strict=False)
    ]
    sol = _reference_solve(system, p)
    Q, E = sol[: e + k], [*sol[e + k :], 1]
    quotient = [0] * k
    for shift in range(k - 1, -1, -1):
        lead = Q[shift + e]
        quotient[shift] = lead
        for j in range(e + 1):
            Q[shift + j] = (Q[shift + j] - lead * E[j]) % p
    if any(Q[:e]):
        raise DecodeError("error locator does not divide Q")
    agree = sum(sum(c * pow(x, j, p) for j, c in enumerate(quotient)) % p == y for x, y in zip(xs, ys, strict=False))
    if agree < n - e:
        raise DecodeError("too many disagreeing points")
    return quotient
