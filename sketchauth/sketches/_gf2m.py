"""Hazmat: GF(2^m) arithmetic (8 ≤ m ≤ 32) and the binary-BCH decoding steps PinSketch uses.

**This is a low-level module.** It validates nothing it is not told to, trusts its callers to
pass field elements in range, and is private to :mod:`sketchauth.sketches.pinsketch` (SPEC §2.2)
and its tests. Use :class:`~sketchauth.sketches.pinsketch.PinSketch` instead.

Field representation
--------------------
An element of GF(2^m) is a Python ``int`` (scalars) or a ``uint64`` numpy array entry (vectors)
in ``[0, 2^m)``: bit ``i`` is the coefficient of ``x^i`` in the polynomial basis modulo the fixed
primitive polynomial ``PRIMITIVE_POLYNOMIALS[m]`` — for each m the lexicographically first
primitive polynomial with the fewest terms (a trinomial where one exists, else a pentanomial;
``galois.primitive_poly(2, m, terms="min")``, checked against galois in the tests)::

    m   polynomial                       m   polynomial
    8   x^8+x^4+x^3+x^2+1      (0x11d)   21  x^21+x^2+1              (0x200005)
    9   x^9+x^4+1              (0x211)   22  x^22+x+1                (0x400003)
    10  x^10+x^3+1             (0x409)   23  x^23+x^5+1              (0x800021)
    11  x^11+x^2+1             (0x805)   24  x^24+x^4+x^3+x+1        (0x100001b)
    12  x^12+x^6+x^4+x+1       (0x1053)  25  x^25+x^3+1              (0x2000009)
    13  x^13+x^4+x^3+x+1       (0x201b)  26  x^26+x^6+x^2+x+1        (0x4000047)
    14  x^14+x^5+x^3+x+1       (0x402b)  27  x^27+x^5+x^2+x+1        (0x8000027)
    15  x^15+x+1               (0x8003)  28  x^28+x^3+1              (0x10000009)
    16  x^16+x^5+x^3+x^2+1     (0x1002d) 29  x^29+x^2+1              (0x20000005)
    17  x^17+x^3+1             (0x20009) 30  x^30+x^6+x^4+x+1        (0x40000053)
    18  x^18+x^7+1             (0x40081) 31  x^31+x^3+1              (0x80000009)
    19  x^19+x^5+x^2+x+1       (0x80027) 32  x^32+x^7+x^6+x^2+1      (0x1000000c5)
    20  x^20+x^3+1             (0x100009)

Addition is XOR. PinSketch treats elements only as labels of set members, so the polynomial
choice is part of the helper format (it fixes which power sums a set has) and never changes.

Two implementations, chosen by explicit argument (:func:`binary_field`, ``method=``):

* ``"tables"`` (default for m ≤ 16): log/antilog tables of the generator ``x`` (primitive
  polynomial), built lazily per m in one Python loop (≈7 ms at m = 16, 2·2^m entries as
  Python lists for scalar work and as numpy arrays for vector work). A product is two lookups
  and an add; zero is handled without branches in the vector path by a log of zero that points
  into a zero-filled tail of the antilog table.
* ``"clmul"`` (default for m > 16, available for every m): 2^m-entry tables are out of the
  question at m = 32, so products are carry-less multiplications reduced by table. Scalars use
  Python ints: the 16 multiples of ``a`` by 4-bit polynomials, eight nibble lookups of ``b``
  (≈1.3 µs per product at m = 32, measured faster than 8×8-bit product tables or bit-spreading
  tricks with big-int multiplication), then reduction of the high half with four 256-entry
  tables (reduction is linear, so each byte of the high half reduces independently). Vectors
  use numpy: an 8×8-bit carry-less product table (64 Ki entries) gathers the byte products of
  whole arrays at once, followed by the same table reduction. Polynomial division (Euclid in
  the root finder) and the powers ``z^(2i) mod σ`` pack a whole polynomial into one Python
  int, one 64-bit slot per coefficient, left unreduced: XOR never carries between slots and a
  carry-less product of two 32-bit values fits in 63 bits, so a whole "scalar times
  polynomial" step is eight big-int lookups and shifts (measured 15–30 % faster decodes at
  m = 32 than coefficient-by-coefficient products).

A plain shift-and-add reference (:func:`reference_mul`, :func:`reference_pow`,
:func:`reference_inv`) is kept beside both, slow and obviously correct; the tests check both
fast paths against it exhaustively on GF(2^8) and against galois on random inputs for every m.

Why not galois at run time: galois JIT-compiles its ufuncs with numba in every fresh process
(measured here: import 1–2 s, ``GF(2**16)`` ≈2 s, the first polynomial operations several
seconds more) and caches nothing to disk. A command-line call or a freshly started worker must
decode within 2 s of starting, and PinSketch decoding is dominated by many tiny operations
(polynomials of degree ≤ t) where per-call overhead matters more than throughput. The tables
here cost milliseconds to build, and the tests use galois as an independent oracle.

Decoding steps (binary BCH; see minisketch's ``doc/math.md`` for the same pipeline)
----------------------------------------------------------------------------------
* :func:`odd_power_sums` — ``s_i = Σ_{a∈A} a^i`` for ``i = 1, 3, …, 2t−1`` (vectorised).
* :func:`berlekamp_massey` — the shortest LFSR (connection polynomial ``Λ``) generating
  ``s_1 … s_2t`` (even terms by squaring, ``s_2i = s_i²``; their discrepancies vanish, so only
  the odd steps are computed).
* :func:`poly_eval_many` — a polynomial at many points at once (powers by discrete logs or by
  doubling, then one product and XOR-reduction): PinSketch uses it to pick out the locator's
  roots that are elements of the sample itself (the sample's spurious elements) before
  splitting.
* :func:`find_roots` — the roots of ``σ(z) = z^L Λ(1/z) = Π (z − X_j)`` by Berlekamp's trace
  algorithm: first ``z^(2^i) mod σ`` for ``i ≤ m`` (a GF(2)-linear squaring map applied m
  times) — ``σ`` splits into distinct linear factors over GF(2^m) iff ``z^(2^m) ≡ z (mod σ)``,
  which is checked before any splitting. Then for a random ``β`` (from :mod:`secrets`, so a
  crafted sketch cannot steer the splitting into its worst case) the trace polynomial
  ``Tr(βz) mod σ = Σ_i β^(2^i) z^(2^i)`` takes the value 0 or 1 at every root, and
  ``gcd(h, Tr(βz))`` splits every pending factor ``h`` whose roots it separates. Factors of
  degree 2 are solved in closed form (``z = b·y`` with ``y² + y = c/b²``, a GF(2)-linear
  system solved by a precomputed echelon basis), degree 1 directly. No field element is
  scanned exhaustively.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

from sketchauth.errors import DecodeError, ParameterError

__all__ = [
    "PRIMITIVE_POLYNOMIALS",
    "MIN_M",
    "MAX_M",
    "BinaryField",
    "binary_field",
    "reference_mul",
    "reference_pow",
    "reference_inv",
    "odd_power_sums",
    "odd_power_sums_segments",
    "expand_syndromes",
    "berlekamp_massey",
    "find_roots",
    "poly_eval",
    "poly_eval_many",
    "poly_deflate",
    "poly_mod",
    "poly_gcd",
]

MIN_M = 8
MAX_M = 32
#: Largest m for which "tables" (log/antilog) is the default implementation.
LOG_TABLE_MAX_M = 16

PRIMITIVE_POLYNOMIALS: dict[int, int] = {
    8: 0x11D, 9: 0x211, 10: 0x409, 11: 0x805, 12: 0x1053, 13: 0x201B, 14: 0x402B,
    15: 0x8003, 16: 0x1002D, 17: 0x20009, 18: 0x40081, 19: 0x80027, 20: 0x100009,
    21: 0x200005, 22: 0x400003, 23: 0x800021, 24: 0x100001B, 25: 0x2000009,
    26: 0x4000047, 27: 0x8000027, 28: 0x10000009, 29: 0x20000005, 30: 0x40000053,
    31: 0x80000009, 32: 0x1000000C5,
}  # fmt: skip

Poly = list[int]
"""A polynomial over GF(2^m): coefficients low degree first, no trailing zeros (zero is ``[]``)."""


# -- reference implementation (slow, obviously correct) -----------------------------------------


def reference_mul(a: int, b: int, m: int, poly: int) -> int:
    """Shift-and-add product of ``a`` and ``b`` modulo ``poly`` (degree ``m``)."""
    result = 0
    while b:
        if b & 1:
            result ^= a
        b >>= 1
        a <<= 1
        if a >> m:
            a ^= poly
    return result


def reference_pow(a: int, e: int, m: int, poly: int) -> int:
    """``a^e`` by square and multiply with :func:`reference_mul` (``0^0 = 1``)."""
    result = 1
    while e:
        if e & 1:
            result = reference_mul(result, a, m, poly)
        a = reference_mul(a, a, m, poly)
        e >>= 1
    return result


def reference_inv(a: int, m: int, poly: int) -> int:
    """``a^(2^m − 2)``, the inverse of a non-zero ``a`` (Fermat)."""
    if a == 0:
        raise ParameterError("zero has no inverse")
    return reference_pow(a, (1 << m) - 2, m, poly)


def _clmul(a: int, b: int) -> int:
    result = 0
    while b:
        if b & 1:
            result ^= a
        a <<= 1
        b >>= 1
    return result


def _reduce_slow(value: int, m: int, poly: int) -> int:
    for bit in range(value.bit_length() - 1, m - 1, -1):
        if value >> bit & 1:
            value ^= poly << (bit - m)
    return value


# -- fields ----------------------------------------------------------------------------------------


class BinaryField(ABC):
    """GF(2^m) modulo ``PRIMITIVE_POLYNOMIALS[m]``: scalar (int) and vector (uint64) arithmetic.

    Subclasses provide ``mul``, ``scale``, ``vmul``; everything else is built on them and on the
    GF(2)-linearity of squaring. Get instances from :func:`binary_field` (cached per m, method).
    """

    method: str

    def __init__(self, m: int) -> None:
        if m not in PRIMITIVE_POLYNOMIALS:
            raise ParameterError(f"m must be in [{MIN_M}, {MAX_M}], got {m}")
        self.m = m
        self.poly = PRIMITIVE_POLYNOMIALS[m]
        self.order = 1 << m
        self.mask = self.order - 1
        # Squaring is GF(2)-linear: the square of each byte of an element, reduced, by table.
        sq = [_reduce_slow(_clmul(1 << j, 1 << j), m, self.poly) for j in range(m)]
        self._sqr_tables = [
            [self._combine(sq[8 * k : 8 * k + 8], byte) for byte in range(256)] for k in range(4)
        ]
        self._sqr_np = np.array(self._sqr_tables, dtype=np.uint64)
        self._x_powers = np.array([_reduce_slow(1 << s, m, self.poly) for s in range(32)], dtype=np.uint64)
        self._artin_schreier: list[tuple[int, int, int]] | None = None

    @staticmethod
    def _combine(basis: Sequence[int], bits: int) -> int:
        out = 0
        for j, value in enumerate(basis):
            if bits >> j & 1:
                out ^= value
        return out

    def __repr__(self) -> str:
        return f"BinaryField(m={self.m}, poly={self.poly:#x}, method={self.method!r})"

    # scalar ------------------------------------------------------------------------------------
    @abstractmethod
    def mul(self, a: int, b: int) -> int:
        """``a·b``."""

    @abstractmethod
    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        """``[c·v for v in values]``."""

    def scale_lazy(self, c: int, values: Sequence[int]) -> list[int]:
        """Like :meth:`scale` but possibly unreduced (XOR-able; finish with :meth:`reduce`)."""
        return self.scale(c, values)

    def reduce(self, value: int) -> int:
        """The field element represented by an XOR of :meth:`scale_lazy` outputs."""
        return value

    def dot(self, xs: Sequence[int], ys: Sequence[int]) -> int:
        """``Σ x_i·y_i``."""
        acc = 0
        for x, y in zip(xs, ys):
            acc ^= self.mul(x, y)
        return acc

    def even_powers_mod(self, sigma: Sequence[int]) -> list[list[int]]:
        """``z^(2i) mod σ`` for ``i < L = deg σ`` (σ monic, L ≥ 2), each as L coefficients."""
        L = len(sigma) - 1
        low = list(sigma[:L])
        current = [1] + [0] * (L - 1)
        rows = [current]
        for k in range(1, 2 * L - 1):
            top = current[-1]
            current = [0] + current[:-1]
            if top:
                current = [x ^ y for x, y in zip(current, self.scale(top, low))]
            if k % 2 == 0:
                rows.append(current)
        return rows

    def divide(self, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
        """``(quotient, remainder)`` of polynomials ``a`` by a non-zero ``b`` (schoolbook)."""
        r = list(a)
        db = len(b) - 1
        if len(r) <= db:
            return [], _trim(r)
        low = b[:db]
        lead_inv = 1 if b[-1] == 1 else self.inv(b[-1])
        reduce, scale_lazy, mul = self.reduce, self.scale_lazy, self.mul
        quotient = [0] * (len(r) - db)
        for k in range(len(r) - 1, db - 1, -1):
            q = reduce(r[k])
            if q:
                if lead_inv != 1:
                    q = mul(q, lead_inv)
                quotient[k - db] = q
                base = k - db
                for i, v in enumerate(scale_lazy(q, low)):
                    r[base + i] ^= v
        return _trim(quotient), _trim([reduce(v) for v in r[:db]])

    def sqr(self, a: int) -> int:
        t = self._sqr_tables
        return t[0][a & 255] ^ t[1][a >> 8 & 255] ^ t[2][a >> 16 & 255] ^ t[3][a >> 24 & 255]

    def inv(self, a: int) -> int:
        """Inverse of a non-zero ``a`` (binary extended Euclid on GF(2)[x])."""
        if a == 0:
            raise ParameterError("zero has no inverse")
        u, v, g1, g2 = a, self.poly, 1, 0
        while u != 1:
            j = u.bit_length() - v.bit_length()
            if j < 0:
                u, v, g1, g2, j = v, u, g2, g1, -j
            u ^= v << j
            g1 ^= g2 << j
        return g1

    def pow(self, a: int, e: int) -> int:
        result = 1
        while e:
            if e & 1:
                result = self.mul(result, a)
            a = self.sqr(a)
            e >>= 1
        return result

    def trace(self, a: int) -> int:
        """``Tr(a) = a + a^2 + … + a^(2^(m−1))`` ∈ {0, 1}."""
        total, power = a, a
        for _ in range(self.m - 1):
            power = self.sqr(power)
            total ^= power
        return total

    def solve_artin_schreier(self, k: int) -> int:
        """A ``y`` with ``y² + y = k``, or ``DecodeError`` if none exists (``Tr(k) = 1``).

        ``y ↦ y² + y`` is GF(2)-linear with kernel {0, 1}; an echelon basis of its image (each
        row remembering which inputs it combines) is built once per field.
        """
        if self._artin_schreier is None:
            rows: list[tuple[int, int, int]] = []
            for j in range(self.m):
                value, combo = self.sqr(1 << j) ^ (1 << j), 1 << j
                for pivot, row, row_combo in rows:
                    if value >> pivot & 1:
                        value ^= row
                        combo ^= row_combo
                if value:
                    rows.append((value.bit_length() - 1, value, combo))
            self._artin_schreier = rows
        y = 0
        for pivot, row, combo in self._artin_schreier:
            if k >> pivot & 1:
                k ^= row
                y ^= combo
        if k:
            raise DecodeError("quadratic factor has no root in the field")
        return y

    # vector ------------------------------------------------------------------------------------
    @abstractmethod
    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Element-wise product of two ``uint64`` arrays (broadcasting)."""

    def vmul_xpow(self, a: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """``a · x^s`` element-wise for shifts ``0 ≤ s < 32`` (broadcasting)."""
        return self.vmul(a, self._x_powers[np.asarray(shifts, dtype=np.int64)])

    def vsqr(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        t = self._sqr_np
        out = t[0][a & np.uint64(255)] ^ t[1][(a >> np.uint64(8)) & np.uint64(255)]
        if self.m > 16:
            out ^= t[2][(a >> np.uint64(16)) & np.uint64(255)] ^ t[3][a >> np.uint64(24)]
        return out


class _LogTableField(BinaryField):
    """GF(2^m), m ≤ 16, by log/antilog tables of the primitive element ``x``."""

    method = "tables"

    def __init__(self, m: int) -> None:
        if m > LOG_TABLE_MAX_M:
            raise ParameterError(f"log tables are only built for m <= {LOG_TABLE_MAX_M}")
        super().__init__(m)
        n = self.order - 1
        exp = [0] * (2 * n)
        log = [0] * self.order
        value = 1
        for i in range(n):
            exp[i] = exp[i + n] = value
            log[value] = i
            value <<= 1
            if value & self.order:
                value ^= self.poly
        self._exp, self._log, self._n = exp, log, n
        # Vector tables: log(0) points into a zero-filled tail, so no branch is needed for zero.
        self._zero_log = 2 * self.order
        self._exp_np = np.zeros(4 * self.order + 1, dtype=np.uint64)
        self._exp_np[: 2 * n] = np.array(exp, dtype=np.uint64)
        log_np = np.array(log, dtype=np.int64)
        log_np[0] = self._zero_log
        self._log_np = log_np

    def mul(self, a: int, b: int) -> int:
        if a and b:
            return self._exp[self._log[a] + self._log[b]]
        return 0

    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        if not c:
            return [0] * len(values)
        exp, log, lc = self._exp, self._log, self._log[c]
        return [exp[lc + log[v]] if v else 0 for v in values]

    def inv(self, a: int) -> int:
        if a == 0:
            raise ParameterError("zero has no inverse")
        return self._exp[self._n - self._log[a]]

    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        log = self._log_np
        return self._exp_np[log[np.asarray(a, dtype=np.uint64)] + log[np.asarray(b, dtype=np.uint64)]]

    def vlog(self, a: np.ndarray) -> np.ndarray:
        """Discrete logs of non-zero elements (int64)."""
        return self._log_np[np.asarray(a, dtype=np.uint64)]

    def vexp(self, e: np.ndarray) -> np.ndarray:
        """``x^e`` for integer exponents ``e`` (any sign)."""
        return self._exp_np[np.mod(e, self._n)]


class _ClmulField(BinaryField):
    """GF(2^m), any m ≤ 32, by carry-less multiplication and table reduction."""

    method = "clmul"

    def __init__(self, m: int) -> None:
        super().__init__(m)
        # (byte << (m + 8k)) mod poly, for the four bytes of the high half of a product.
        self._red = [
            [_reduce_slow(byte << (m + 8 * k), m, self.poly) for byte in range(256)] for k in range(4)
        ]
        self._red_np = np.array(self._red, dtype=np.uint64)
        # 8x8-bit carry-less products, indexed (x << 8) | y.
        x = np.arange(256, dtype=np.uint64)
        cl8 = np.zeros((256, 256), dtype=np.uint64)
        a_bits = ((x[:, None] >> np.arange(8, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)
        for bit in range(8):
            cl8 ^= np.where(a_bits[:, bit][:, None], x[None, :] << np.uint64(bit), np.uint64(0))
        self._cl8_np = cl8.reshape(-1)
        self._nbytes = (m + 7) // 8
        shifts = np.arange(self._nbytes, dtype=np.uint64) * np.uint64(8)
        self._byte_shifts = shifts
        self._pair_shifts = (shifts[:, None] + shifts[None, :]).reshape(-1)

    def _reduce(self, r: int) -> int:
        h = r >> self.m
        red = self._red
        return (r & self.mask) ^ red[0][h & 255] ^ red[1][h >> 8 & 255] ^ red[2][h >> 16 & 255] ^ red[3][h >> 24]

    @staticmethod
    def _multiples(a: int) -> tuple[int, ...]:
        a2 = a << 1
        a4 = a << 2
        a8 = a << 3
        a3, a5, a6 = a2 ^ a, a4 ^ a, a4 ^ a2
        a7 = a6 ^ a
        return (0, a, a2, a3, a4, a5, a6, a7, a8, a8 ^ a, a8 ^ a2, a8 ^ a3, a8 ^ a4, a8 ^ a5, a8 ^ a6, a8 ^ a7)

    def _clmul_with(self, mult: tuple[int, ...], b: int) -> int:
        return (
            mult[b & 15] ^ mult[b >> 4 & 15] << 4 ^ mult[b >> 8 & 15] << 8 ^ mult[b >> 12 & 15] << 12
            ^ mult[b >> 16 & 15] << 16 ^ mult[b >> 20 & 15] << 20 ^ mult[b >> 24 & 15] << 24
            ^ mult[b >> 28] << 28
        )  # fmt: skip

    def mul(self, a: int, b: int) -> int:
        return self._reduce(self._clmul_with(self._multiples(a), b))

    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        mult = self._multiples(c)
        return [self._reduce(self._clmul_with(mult, v)) for v in values]

    # Reduction is linear, so sums of carry-less products are reduced once, at the end.
    def scale_lazy(self, c: int, values: Sequence[int]) -> list[int]:
        mult = self._multiples(c)
        return [self._clmul_with(mult, v) for v in values]

    def reduce(self, value: int) -> int:
        return self._reduce(value)

    def dot(self, xs: Sequence[int], ys: Sequence[int]) -> int:
        acc = 0
        for x, y in zip(xs, ys):
            if x:
                acc ^= self._clmul_with(self._multiples(x), y)
        return self._reduce(acc)

    def _vreduce(self, r: np.ndarray) -> np.ndarray:
        """Reduce products of up to 2m − 1 (< 64) bits, four table lookups on the high half."""
        ff = np.uint64(255)
        h = r >> np.uint64(self.m)
        red = self._red_np
        out = (r & np.uint64(self.mask)) ^ red[0][h & ff] ^ red[1][(h >> np.uint64(8)) & ff]
        out ^= red[2][(h >> np.uint64(16)) & ff] ^ red[3][h >> np.uint64(24)]
        return out

    def vmul_xpow(self, a: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        # A monomial product is a shift: a < 2^32 and s < 32 keep it below 2^63.
        return self._vreduce(np.asarray(a, dtype=np.uint64) << np.asarray(shifts, dtype=np.uint64))

    def even_powers_mod(self, sigma: Sequence[int]) -> list[list[int]]:
        # Packed as in divide(): multiplying by z is a 64-bit shift, the overflowing slot is
        # reduced and folded back with one whole-vector carry-less product.
        L = len(sigma) - 1
        low = 0
        for i, v in enumerate(sigma[:L]):
            low |= v << (64 * i)
        mult = self._multiples(low)
        slot, top_shift, mask = (1 << 64) - 1, 64 * L, (1 << (64 * L)) - 1
        current = 1
        packed = [1]
        for k in range(1, 2 * L - 1):
            current <<= 64
            top = self._reduce(current >> top_shift)
            current &= mask
            if top:
                current ^= self._clmul_with(mult, top)
            if k % 2 == 0:
                packed.append(current)
        return [[self._reduce((p >> (64 * i)) & slot) for i in range(L)] for p in packed]

    def divide(self, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
        """Schoolbook division with the remainder packed into one Python int.

        Coefficient i lives in bits ``[64i, 64i + 64)``, unreduced (carry-less products of two
        32-bit values fit in 63 bits, and XOR never carries into the next slot). The divisor's
        low part is packed once with its 16 multiples by 4-bit polynomials, so ``q · low`` for a
        whole quotient step is eight big-int lookups and shifts instead of ``deg b`` products.
        """
        db = len(b) - 1
        if len(a) <= db or db == 0:
            return super().divide(a, b)
        low = 0
        for i, v in enumerate(b[:db]):
            low |= v << (64 * i)
        mult = self._multiples(low)
        r = 0
        for i, v in enumerate(a):
            r |= v << (64 * i)
        lead_inv = 1 if b[-1] == 1 else self.inv(b[-1])
        reduce, slot = self._reduce, (1 << 64) - 1
        quotient = [0] * (len(a) - db)
        for k in range(len(a) - 1, db - 1, -1):
            q = reduce((r >> (64 * k)) & slot)
            if q:
                if lead_inv != 1:
                    q = self.mul(q, lead_inv)
                quotient[k - db] = q
                r ^= self._clmul_with(mult, q) << (64 * (k - db))
        remainder = [reduce((r >> (64 * i)) & slot) for i in range(db)]
        return _trim(quotient), _trim(remainder)

    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        b = np.asarray(b, dtype=np.uint64)
        ff = np.uint64(255)
        a_bytes = (a[..., None] >> self._byte_shifts) & ff
        b_bytes = (b[..., None] >> self._byte_shifts) & ff
        index = (a_bytes[..., :, None] << np.uint64(8)) | b_bytes[..., None, :]
        shape = index.shape[:-2] + (self._nbytes * self._nbytes,)
        products = self._cl8_np[index.reshape(shape)] << self._pair_shifts
        r = np.bitwise_xor.reduce(products, axis=-1)
        h = r >> np.uint64(self.m)
        red = self._red_np
        out = (r & np.uint64(self.mask)) ^ red[0][h & ff] ^ red[1][(h >> np.uint64(8)) & ff]
        if self.m > 17:
            out ^= red[2][(h >> np.uint64(16)) & ff]
        if self.m > 25:
            out ^= red[3][h >> np.uint64(24)]
        return out


@lru_cache(maxsize=None)
def binary_field(m: int, method: Literal["auto", "tables", "clmul"] = "auto") -> BinaryField:
    """The (cached) field GF(2^m) with the given implementation.

    ``"auto"`` uses log tables for m ≤ 16 and carry-less multiplication above.
    """
    if method == "auto":
        method = "tables" if m <= LOG_TABLE_MAX_M else "clmul"
    if method == "tables":
        return _LogTableField(m)
    if method == "clmul":
        return _ClmulField(m)
    raise ParameterError(f"unknown field method {method!r}")


# -- power sums -----------------------------------------------------------------------------------


def _odd_power_matrix(field: BinaryField, elements: np.ndarray, t: int) -> np.ndarray:
    """``P[j, k] = elements[j] ** (2k + 1)`` for ``k < t`` (uint64, shape (n, t))."""
    elements = np.asarray(elements, dtype=np.uint64)
    if isinstance(field, _LogTableField):
        odd = np.arange(1, 2 * t, 2, dtype=np.int64)
        return field.vexp(field.vlog(elements)[:, None] * odd[None, :])
    # Doubling: odd powers 1..2k-1 times x^(2k) give 2k+1..4k-1.
    powers = elements[:, None]
    step = field.vsqr(elements)[:, None]  # x^2
    while powers.shape[1] < t:
        powers = np.concatenate([powers, field.vmul(powers, step)], axis=1)
        step = field.vsqr(step)
    return powers[:, :t]


#: Rows of the power matrix computed at once: bounds memory to ~8 MiB whatever the set size.
POWER_CHUNK_ENTRIES = 1 << 20


def _chunks(n: int, t: int) -> range:
    return range(0, n, max(1, POWER_CHUNK_ENTRIES // max(t, 1)))


def odd_power_sums(field: BinaryField, elements: np.ndarray, t: int) -> np.ndarray:
    """``[Σ_a a^1, Σ_a a^3, …, Σ_a a^(2t−1)]`` for non-zero ``elements`` (uint64, shape (t,))."""
    elements = np.asarray(elements, dtype=np.uint64)
    out = np.zeros(t, dtype=np.uint64)
    step = max(1, POWER_CHUNK_ENTRIES // t)
    for start in _chunks(elements.size, t):
        out ^= np.bitwise_xor.reduce(_odd_power_matrix(field, elements[start : start + step], t), axis=0)
    return out


def odd_power_sums_segments(field: BinaryField, elements: np.ndarray, lengths: np.ndarray, t: int) -> np.ndarray:
    """Odd power sums of many sets at once: ``elements`` concatenated, ``lengths`` per set.

    Returns shape ``(len(lengths), t)``; empty sets give zero rows.
    """
    elements = np.asarray(elements, dtype=np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros((lengths.size, t), dtype=np.uint64)
    owner = np.repeat(np.arange(lengths.size), lengths)
    step = max(1, POWER_CHUNK_ENTRIES // t)
    for start in _chunks(elements.size, t):
        rows = owner[start : start + step]
        matrix = _odd_power_matrix(field, elements[start : start + step], t)
        # rows are sorted: reduce each run of equal owners, then XOR into its set's sums
        firsts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        out[rows[firsts]] ^= np.bitwise_xor.reduceat(matrix, firsts, axis=0)
    return out


def expand_syndromes(field: BinaryField, odd: Sequence[int]) -> list[int]:
    """``s_1 … s_2t`` from the odd ones: ``s_2i = s_i²`` (characteristic 2)."""
    t = len(odd)
    full = [0] * (2 * t)
    for i in range(1, 2 * t + 1):
        full[i - 1] = int(odd[(i - 1) // 2]) if i & 1 else field.sqr(full[i // 2 - 1])
    return full


# -- Berlekamp–Massey ---------------------------------------------------------------------------


def berlekamp_massey(field: BinaryField, syndromes: Sequence[int]) -> tuple[Poly, int]:
    """Shortest LFSR ``(Λ, L)`` generating ``syndromes`` = ``s_1 … s_2t`` with ``s_2i = s_i²``.

    ``Λ(x) = 1 + Λ_1 x + … `` satisfies ``s_k = Σ_{i=1}^{L} Λ_i s_{k−i}`` for ``L < k ≤ 2t``.
    For sequences with ``s_2i = s_i²`` the discrepancy at every even step is zero (Berlekamp's
    binary simplification), so only odd steps are computed. Returns the trimmed ``Λ`` and the
    register length ``L`` (``len(Λ) − 1 ≤ L``; the caller compares them).
    """
    s = [int(v) for v in syndromes]
    c: Poly = [1]
    b: Poly = [1]
    length, gap, b_inv = 0, 1, 1
    for n in range(len(s)):
        if n & 1:  # s_{n+1} with n+1 even: discrepancy is zero
            gap += 1
            continue
        top = min(length, len(c) - 1)
        d = s[n] ^ field.dot(c[1 : top + 1], [s[n - i] for i in range(1, top + 1)])
        if d == 0:
            gap += 1
            continue
        # C(x) ← C(x) − (d / b) x^gap B(x)
        updated = _add(c, [0] * gap + field.scale(field.mul(d, b_inv), b))
        if 2 * length <= n:
            b, b_inv, gap, length = c, field.inv(d), 1, n + 1 - length
        else:
            gap += 1
        c = updated
    return _trim(c) or [1], length


def _add(a: Poly, b: Poly) -> Poly:
    """Coefficient-wise XOR of two polynomials of any lengths."""
    if len(a) < len(b):
        a, b = b, a
    return [x ^ y for x, y in zip(a, b)] + a[len(b) :]


# -- polynomials (scalar) ----------------------------------------------------------------------------


def _trim(p: Poly) -> Poly:
    while p and p[-1] == 0:
        p.pop()
    return p


def poly_eval(field: BinaryField, p: Sequence[int], x: int) -> int:
    """``p(x)`` by Horner's rule."""
    acc = 0
    for coef in reversed(p):
        acc = field.mul(acc, x) ^ coef
    return acc


def _divide(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
    """``(quotient, remainder)`` of ``a`` by a non-zero ``b``."""
    return field.divide(a, b)


def poly_eval_many(field: BinaryField, p: Sequence[int], xs: np.ndarray) -> np.ndarray:
    """``p(x)`` for every ``x`` in ``xs`` at once: a matrix of powers times the coefficients.

    Powers come from discrete logs (tables) or by doubling (``x^k … x^(2k−1) = x^0 … x^(k−1)
    times x^k``), so the cost is O(log deg p) vector operations, not deg p of them.
    """
    xs = np.asarray(xs, dtype=np.uint64)
    count = len(p)
    if count == 0 or xs.size == 0:
        return np.zeros(xs.shape, dtype=np.uint64)
    if isinstance(field, _LogTableField):
        powers = field.vexp(field.vlog(xs)[:, None] * np.arange(count, dtype=np.int64)[None, :])
        powers[xs == 0, 1:] = 0
        powers[xs == 0, 0] = 1
    else:
        powers = np.stack([np.ones_like(xs), xs], axis=1)
        step = field.vsqr(xs)[:, None]  # x^2
        while powers.shape[1] < count:
            powers = np.concatenate([powers, field.vmul(powers, step)], axis=1)
            step = field.vsqr(step)
        powers = powers[:, :count]
    return np.bitwise_xor.reduce(field.vmul(powers, np.array(p, dtype=np.uint64)[None, :]), axis=1)


def poly_deflate(field: BinaryField, p: Sequence[int], root: int) -> Poly:
    """``p(z) / (z − root)`` for a root of the monic ``p`` (synthetic division)."""
    quotient = [0] * (len(p) - 1)
    carry = 0
    for i in range(len(p) - 1, 0, -1):
        carry = p[i] ^ field.mul(root, carry)
        quotient[i - 1] = carry
    return quotient


def poly_mod(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """``a mod b`` for a non-zero ``b``."""
    return _divide(field, a, b)[1]


def _monic(field: BinaryField, p: Poly) -> Poly:
    lead = p[-1]
    return p if lead == 1 else field.scale(field.inv(lead), p)


def poly_gcd(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """Monic ``gcd(a, b)`` (Euclid; only the result is normalised); ``a`` non-zero."""
    a = _trim(list(a))
    b = _trim(list(b))
    while b:
        a, b = b, poly_mod(field, a, b)
    return _monic(field, a)


def poly_divexact(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """Quotient ``a / b`` for a ``b`` dividing ``a``."""
    return _divide(field, a, b)[0]


# -- root finding -------------------------------------------------------------------------------------


def _frobenius_powers(field: BinaryField, sigma: Poly) -> np.ndarray:
    """``Z[i] = z^(2^i) mod σ`` for ``i = 0 … m`` as a uint64 array of shape (m+1, L).

    Squaring modulo σ is GF(2)-linear on the ``m·L`` coefficient bits, so its matrix is built
    once (row for bit j of coefficient k: ``x^(2j) · (z^(2k) mod σ)``) and each of the m
    squarings is an XOR of the rows selected by the bits of the current value.
    """
    L = len(sigma) - 1
    q = np.array(field.even_powers_mod(sigma), dtype=np.uint64)  # (L, L): z^(2k) mod σ
    # x^(2j)·Q for j < m as shifts: exponents below 32 directly, the rest via x^31·x^(2j−31).
    exponents = 2 * np.arange(field.m, dtype=np.int64)
    low_e, high_e = exponents[exponents < 32], exponents[exponents >= 32]
    parts = [field.vmul_xpow(q[:, None, :], low_e[None, :, None])]
    if high_e.size:
        q31 = field.vmul_xpow(q, np.full(q.shape, 31))
        parts.append(field.vmul_xpow(q31[:, None, :], (high_e - 31)[None, :, None]))
    # Rows padded to 16 or 32 bits per coefficient so np.unpackbits yields the selector directly.
    width = 16 if field.m <= 16 else 32
    rows = np.zeros((L, width, L), dtype=np.uint64)
    rows[:, : field.m, :] = np.concatenate(parts, axis=1)
    rows = rows.reshape(L * width, L)  # row k·width + j
    word = np.dtype(f"<u{width // 8}")
    powers = np.zeros((field.m + 1, L), dtype=np.uint64)
    powers[0, 1] = 1  # z (L >= 2)
    for i in range(1, field.m + 1):
        bits = np.unpackbits(powers[i - 1].astype(word).view(np.uint8), bitorder="little").view(bool)
        powers[i] = np.bitwise_xor.reduce(rows[bits], axis=0)
    return powers


#: Random multipliers whose traces are computed in one vectorised product (one per round).
TRACE_BATCH = 4


def _trace_polynomials(
    field: BinaryField, frob: np.ndarray, randbelow: Callable[[int], int]
) -> Iterator[Poly]:
    """Endless ``Tr(βz) mod σ = Σ_i β^(2^i) z^(2^i) mod σ`` for independent random ``β``.

    ``TRACE_BATCH`` of them come from one vectorised product: at m = 32 a product's fixed
    numpy overhead dominates a round, and about log2(deg σ) + 2 rounds are needed. (XOR
    combinations of a batch would be traces too, but useless: the roots they separate are
    exactly those the batch's own traces already separate.)
    """
    m = field.m
    while True:
        conj = np.empty((TRACE_BATCH, m), dtype=np.uint64)
        for row in range(TRACE_BATCH):
            beta = 1 + randbelow(field.order - 1)
            for i in range(m):
                conj[row, i] = beta
                beta = field.sqr(beta)
        traces = np.bitwise_xor.reduce(field.vmul(conj[:, :, None], frob[None, :m, :]), axis=1)
        for row in traces:
            yield _trim([int(v) for v in row])


def _quadratic_roots(field: BinaryField, b: int, c: int) -> list[int]:
    """Roots of ``z² + b z + c``; ``DecodeError`` unless they are two distinct non-zero elements."""
    if b == 0 or c == 0:
        raise DecodeError("quadratic factor has a repeated or zero root")
    y = field.solve_artin_schreier(field.mul(c, field.inv(field.sqr(b))))
    root = field.mul(b, y)
    return [root, root ^ b]


#: Splitting rounds before giving up. Each round separates any two remaining roots with
#: probability 1/2, so reaching this bound on a polynomial that splits has probability < 2^-100.
MAX_SPLIT_ROUNDS = 128


def find_roots(
    field: BinaryField,
    sigma: Sequence[int],
    *,
    randbelow: Callable[[int], int] = secrets.randbelow,
) -> list[int]:
    """The roots of the monic ``σ``, which must be ``deg σ`` distinct non-zero field elements.

    Raises :class:`DecodeError` when they are not: a zero root, a repeated root, or roots
    outside GF(2^m) (``z^(2^m) ≢ z mod σ``). ``randbelow`` draws the trace multipliers
    (:func:`secrets.randbelow` by default; a seeded generator only in tests).
    """
    sigma = [int(v) for v in sigma]
    if not sigma or sigma[-1] != 1:
        raise ParameterError("find_roots needs a monic polynomial")
    degree = len(sigma) - 1
    if degree == 0:
        return []
    if sigma[0] == 0:
        raise DecodeError("locator has a zero root")
    if degree == 1:
        return [sigma[0]]
    if degree == 2:
        return _quadratic_roots(field, sigma[1], sigma[0])
    frob = _frobenius_powers(field, sigma)
    z = np.zeros(degree, dtype=np.uint64)
    z[1] = 1
    if not np.array_equal(frob[field.m], z):
        raise DecodeError("locator does not split into distinct linear factors over the field")
    roots: list[int] = []
    pending: list[Poly] = [sigma]
    traces = _trace_polynomials(field, frob, randbelow)
    for _ in range(MAX_SPLIT_ROUNDS):
        trace_poly = next(traces)
        still: list[Poly] = []
        for h in pending:
            part = poly_gcd(field, h, poly_mod(field, trace_poly, h) if len(h) - 1 < degree else trace_poly)
            if len(part) in (1, len(h)):
                still.append(h)
                continue
            for factor in (part, poly_divexact(field, h, part)):
                d = len(factor) - 1
                if d == 1:
                    roots.append(factor[0])
                elif d == 2:
                    roots.extend(_quadratic_roots(field, factor[1], factor[0]))
                else:
                    still.append(factor)
        pending = still
        if not pending:
            break
    if pending or len(roots) != degree or len(set(roots)) != degree or 0 in roots:
        raise DecodeError("locator roots are not distinct non-zero field elements")
    return roots
