"""Hazmat: GF(2^m) arithmetic (8 ≤ m ≤ 64) and the binary-BCH decoding steps PinSketch uses.

**This is a low-level module.** It validates nothing it is not told to, trusts its callers to
pass field elements in range, and is private to :mod:`sketchauth.sketches.pinsketch`
(Dodis–Ostrovsky–Reyzin–Smith, "Fuzzy extractors", §6.3) and its tests. Use
:class:`~sketchauth.sketches.pinsketch.PinSketch` instead.

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

    m   polynomial                       m   polynomial
    33  x^33+x^13+1                      49  x^49+x^9+1
    34  x^34+x^8+x^4+x^3+1               50  x^50+x^4+x^3+x^2+1
    35  x^35+x^2+1                       51  x^51+x^6+x^3+x+1
    36  x^36+x^11+1                      52  x^52+x^3+1
    37  x^37+x^6+x^4+x+1                 53  x^53+x^6+x^2+x+1
    38  x^38+x^6+x^5+x+1                 54  x^54+x^8+x^6+x^3+1
    39  x^39+x^4+1                       55  x^55+x^24+1
    40  x^40+x^5+x^4+x^3+1               56  x^56+x^7+x^4+x^2+1
    41  x^41+x^3+1                       57  x^57+x^7+1
    42  x^42+x^7+x^4+x^3+1               58  x^58+x^19+1
    43  x^43+x^6+x^4+x^3+1               59  x^59+x^7+x^4+x^2+1
    44  x^44+x^6+x^5+x^2+1               60  x^60+x+1
    45  x^45+x^4+x^3+x+1                 61  x^61+x^5+x^2+x+1
    46  x^46+x^8+x^7+x^6+1               62  x^62+x^6+x^5+x^3+1
    47  x^47+x^5+1                       63  x^63+x+1
    48  x^48+x^9+x^7+x^4+1               64  x^64+x^4+x^3+x+1

Every low part ``poly − x^m`` has degree at most ``(m + 1)/2`` (the largest: x^24 at m = 55), so
two folds reduce any product.

Addition is XOR. PinSketch treats elements only as labels of set members, so the polynomial
choice is part of the helper format (it fixes which power sums a set has) and never changes.

Backends and methods
--------------------
:func:`binary_field` ``(m, method, backend)`` builds a field; both choices are explicit
arguments, never a global switch, and every combination computes the same values.

* ``backend="native"``: the compiled extension :mod:`sketchauth.sketches._native` (built by
  ``pip install`` when a C compiler is available). Its methods: ``"clmul"`` uses the CPU's
  carry-less multiply instruction (PCLMULQDQ, detected at run time) and reduces with two
  carry-less folds (above m = 32 in the vector registers: the operand shifted by 64 − m makes
  the product's high word its quotient by x^m); ``"tables"`` (m ≤ 16) log/antilog tables; ``"clmul-portable"`` a
  4-bit-window carry-less product in plain C. ``"auto"`` picks ``"clmul"`` where the CPU has the
  instruction, else ``"tables"`` for m ≤ 16 and ``"clmul-portable"`` above. A whole PinSketch
  recovery (Berlekamp–Massey, root finding, verification, the symmetric difference with the
  sample) is one call into C: :func:`recover_set`. The C source is compiled twice: elements in
  32-bit words with 64-bit unreduced products for m ≤ 32, and 64-bit words with 128-bit products
  above (only where the compiler has a 128-bit integer; elsewhere :func:`binary_field` gives the
  numpy field for those m).
* ``backend="numpy"`` (the fallback when the extension is absent): ``"tables"`` (default for
  m ≤ 16) log/antilog tables built in one Python loop (≈7 ms at m = 16), products by table
  lookups, vectors by numpy gathers; ``"clmul"`` (default above 16) carry-less products.
  Vectors multiply with the masked-integer trick (each operand split into four bit classes
  ``x & 0x1111…<<i``; the 16 integer products of the classes hold every column count below 16,
  so bit ``c`` of ``Σ_{i+j≡c mod 4} x_i·y_j`` is the carry-less column parity): sixteen 64-bit
  multiplications, no table gathers, no per-product index arrays, in chunks of
  :data:`VMUL_CHUNK` values so temporaries stay a few MiB at any size. Reduction folds the high
  half twice with the low part of the polynomial (shifts and XORs). Scalars are Python ints: the
  16 multiples of ``a`` by 4-bit polynomials and eight nibble lookups of ``b``, reduced by four
  byte tables. Above m = 32 (:data:`NARROW_MAX_M`) a product has up to 127 bits: vectors split
  each 64-bit operand into 32-bit halves and multiply by carry-less Karatsuba (three of the
  products above), keep the result as two uint64 halves and reduce them by two folds; scalars use
  sixteen nibble lookups and eight byte tables. Polynomial division (Euclid in the root finder)
  and the powers ``z^(2i) mod σ`` pack a whole polynomial into one Python int, one slot per
  coefficient (64 bits; 32 for m ≤ 16, 128 above m = 32), left unreduced: XOR never carries
  between slots, so a whole "scalar times polynomial" step is a few big-int lookups and shifts,
  for both methods.

:func:`sketchauth.sketches.backend` reports the default (``"native"`` when the extension is
built). A plain shift-and-add reference (:func:`reference_mul`, :func:`reference_pow`,
:func:`reference_inv`) is kept beside them, slow and obviously correct; the tests check every
backend and method against it exhaustively on GF(2^8), against galois on random inputs for
every m, and against each other.

Why not galois at run time: galois JIT-compiles its ufuncs with numba in every fresh process
(measured here: import 1–2 s, ``GF(2**16)`` ≈2 s, the first polynomial operations several
seconds more) and caches nothing to disk. A command-line call or a freshly started worker must
decode within 0.2 s of starting, and PinSketch decoding is dominated by many small operations
(polynomials of degree ≤ t) where per-call overhead matters more than throughput.

Decoding steps (binary BCH; see minisketch's ``doc/math.md`` for the same pipeline)
----------------------------------------------------------------------------------
* :func:`odd_power_sums` — ``s_i = Σ_{a∈A} a^i`` for ``i = 1, 3, …, 2t−1``.
* :func:`berlekamp_massey` — the shortest LFSR (connection polynomial ``Λ``) generating
  ``s_1 … s_2t`` (even terms by squaring, ``s_2i = s_i²``; their discrepancies vanish, so only
  the odd steps are computed).
* :func:`poly_eval_many` — a polynomial at many points at once: used to pick out the locator's
  roots that are elements of the sample itself before splitting (when the sample is small
  against ``m·deg σ``, where evaluating is cheaper than splitting).
* :func:`find_roots` — the roots of ``σ(z) = z^L Λ(1/z) = Π (z − X_j)`` by Berlekamp's trace
  algorithm: first ``Z_i = z^(2^i) mod σ`` for ``i ≤ m`` — ``σ`` splits into distinct linear
  factors over GF(2^m) iff ``z^(2^m) ≡ z (mod σ)``, which is checked before any splitting. Then
  for ``β_i = β·x^i`` with one random non-zero ``β`` (from ``os.urandom``, so a crafted sketch
  cannot steer the splitting into its worst case) the trace polynomials
  ``Tr(β_i z) mod σ = Σ_k β_i^(2^k) Z_k`` take the value 0 or 1 at every root, and
  ``gcd(h, Tr(β_i z))`` splits every pending factor ``h`` whose roots they separate. The
  ``β_i``, ``i < m``, are a GF(2)-basis of the field, so any two distinct roots ``r, s`` are
  separated within m rounds (``Tr(β_i (r + s))`` is a non-zero linear functional of ``β_i``):
  splitting *always* ends within m rounds, a hard bound on the work for any input. Factors of
  degree 2 are solved in closed form (``z = b·y`` with ``y² + y = c/b²``, a GF(2)-linear system
  solved by a precomputed echelon basis), degree 1 directly. No field element is scanned
  exhaustively.
* :func:`recover_set` — all of the above for PinSketch: from the power sums of ``D = A Δ B``
  and the sample ``B``, the set ``A = B Δ D`` or :class:`DecodeError`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, Literal, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches import _backend

__all__ = [
    "MAX_M",
    "MIN_M",
    "PRIMITIVE_POLYNOMIALS",
    "BinaryField",
    "berlekamp_massey",
    "binary_field",
    "decode_set",
    "expand_syndromes",
    "find_roots",
    "odd_power_sums",
    "odd_power_sums_segments",
    "poly_deflate",
    "poly_eval",
    "poly_eval_many",
    "poly_gcd",
    "poly_mod",
    "poly_mul",
    "recover_set",
    "reference_inv",
    "reference_mul",
    "reference_pow",
]

MIN_M = 8
MAX_M = 64
#: Largest m whose elements and unreduced products fit the narrow (32/64-bit) code paths.
NARROW_MAX_M = 32
#: Largest m for which "tables" (log/antilog) is available (and the numpy default).
LOG_TABLE_MAX_M = 16

PRIMITIVE_POLYNOMIALS: dict[int, int] = {
    8: 0x11D, 9: 0x211, 10: 0x409, 11: 0x805, 12: 0x1053, 13: 0x201B, 14: 0x402B,
    15: 0x8003, 16: 0x1002D, 17: 0x20009, 18: 0x40081, 19: 0x80027, 20: 0x100009,
    21: 0x200005, 22: 0x400003, 23: 0x800021, 24: 0x100001B, 25: 0x2000009,
    26: 0x4000047, 27: 0x8000027, 28: 0x10000009, 29: 0x20000005, 30: 0x40000053,
    31: 0x80000009, 32: 0x1000000C5,
    33: 0x200002001, 34: 0x400000119, 35: 0x800000005, 36: 0x1000000801,
    37: 0x2000000053, 38: 0x4000000063, 39: 0x8000000011, 40: 0x10000000039,
    41: 0x20000000009, 42: 0x40000000099, 43: 0x80000000059, 44: 0x100000000065,
    45: 0x20000000001B, 46: 0x4000000001C1, 47: 0x800000000021, 48: 0x1000000000291,
    49: 0x2000000000201, 50: 0x400000000001D, 51: 0x800000000004B, 52: 0x10000000000009,
    53: 0x20000000000047, 54: 0x40000000000149, 55: 0x80000001000001, 56: 0x100000000000095,
    57: 0x200000000000081, 58: 0x400000000080001, 59: 0x800000000000095, 60: 0x1000000000000003,
    61: 0x2000000000000027, 62: 0x4000000000000069, 63: 0x8000000000000003, 64: 0x1000000000000001B,
}  # fmt: skip

Poly = list[int]
"""A polynomial over GF(2^m): coefficients low degree first, no trailing zeros (zero is ``[]``)."""

Method = Literal["auto", "tables", "clmul", "clmul-portable"]

#: Values per chunk in the numpy carry-less vector product (≈10 live uint64 temporaries of this
#: size: about 1.3 MiB, whatever the array size).
VMUL_CHUNK = 1 << 14


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

    Get instances from :func:`binary_field` (cached per m, method and backend). ``backend`` is
    ``"native"`` or ``"numpy"``, ``method`` the multiplication scheme.
    """

    method: str
    backend: str

    def __init__(self, m: int) -> None:
        if m not in PRIMITIVE_POLYNOMIALS:
            raise ParameterError(f"m must be in [{MIN_M}, {MAX_M}], got {m}")
        self.m = m
        self.poly = PRIMITIVE_POLYNOMIALS[m]
        self.order = 1 << m
        self.mask = self.order - 1

    def __repr__(self) -> str:
        return f"BinaryField(m={self.m}, poly={self.poly:#x}, method={self.method!r}, backend={self.backend!r})"

    # scalar ------------------------------------------------------------------------------------
    @abstractmethod
    def mul(self, a: int, b: int) -> int:
        """``a·b``."""

    @abstractmethod
    def sqr(self, a: int) -> int:
        """``a²``."""

    @abstractmethod
    def inv(self, a: int) -> int:
        """``1/a`` (``ParameterError`` for zero)."""

    @abstractmethod
    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        """``[c·v for v in values]``."""

    @abstractmethod
    def solve_artin_schreier(self, k: int) -> int:
        """A ``y`` with ``y² + y = k``, or ``DecodeError`` if none exists (``Tr(k) = 1``)."""

    @abstractmethod
    def divide(self, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
        """``(quotient, remainder)`` of polynomials ``a`` by a non-zero ``b``."""

    def dot(self, xs: Sequence[int], ys: Sequence[int]) -> int:
        """``Σ x_i·y_i``."""
        acc = 0
        for x, y in zip(xs, ys, strict=False):
            acc ^= self.mul(x, y)
        return acc

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

    def mulx(self, a: int) -> int:
        """``a·x`` (a shift and at most one reduction)."""
        a <<= 1
        return a ^ self.poly if a >> self.m else a

    # vector ------------------------------------------------------------------------------------
    @abstractmethod
    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Element-wise product of two ``uint64`` arrays (broadcasting)."""

    def vsqr(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        return self.vmul(a, a)


# -- numpy backend -----------------------------------------------------------------------------------


class _NumpyField(BinaryField):
    """Machinery shared by the numpy fields: byte tables, packed (big-int) polynomial steps."""

    backend = "numpy"

    def __init__(self, m: int) -> None:
        super().__init__(m)
        # Squaring is GF(2)-linear: the square of each byte of an element, reduced, by table.
        # Byte tables: four for elements and high halves of up to 32 bits, eight above.
        self._bytes = 4 if m <= NARROW_MAX_M else 8
        sq = [_reduce_slow(_clmul(1 << j, 1 << j), m, self.poly) for j in range(m)]
        self._sqr_tables = [
            [self._combine(sq[8 * k : 8 * k + 8], byte) for byte in range(256)] for k in range(self._bytes)
        ]
        self._sqr_np = np.array(self._sqr_tables, dtype=np.uint64)
        # (byte << (m + 8k)) mod poly, for the bytes of the high half of a product.
        self._red = [
            [_reduce_slow(byte << (m + 8 * k), m, self.poly) for byte in range(256)] for k in range(self._bytes)
        ]
        self._x_powers = np.array([_reduce_slow(1 << s, m, self.poly) for s in range(32)], dtype=np.uint64)
        self._red_np = np.array(self._red, dtype=np.uint64)
        # Packed polynomials: one slot per coefficient, wide enough for an unreduced product
        # (2m − 1 bits: 32-bit slots to m = 16, 64-bit to m = 32, 128-bit above).
        self._slot_bits = 32 if m <= 16 else (64 if m <= NARROW_MAX_M else 128)
        self._slot_dtype = np.dtype(f"<u{min(self._slot_bits, 64) // 8}")
        self._artin_schreier: list[tuple[int, int, int]] | None = None

    @staticmethod
    def _combine(basis: Sequence[int], bits: int) -> int:
        out = 0
        for j, value in enumerate(basis):
            if bits >> j & 1:
                out ^= value
        return out

    # scalar ------------------------------------------------------------------------------------
    def sqr(self, a: int) -> int:
        t = self._sqr_tables
        out = t[0][a & 255] ^ t[1][a >> 8 & 255] ^ t[2][a >> 16 & 255] ^ t[3][a >> 24 & 255]
        if self._bytes == 8:
            out ^= t[4][a >> 32 & 255] ^ t[5][a >> 40 & 255] ^ t[6][a >> 48 & 255] ^ t[7][a >> 56]
        return out

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

    def _reduce(self, r: int) -> int:
        """The field element of an unreduced carry-less product (or XOR of them)."""
        h = r >> self.m
        red = self._red
        out = (r & self.mask) ^ red[0][h & 255] ^ red[1][h >> 8 & 255] ^ red[2][h >> 16 & 255] ^ red[3][h >> 24 & 255]
        if self._bytes == 8:
            out ^= red[4][h >> 32 & 255] ^ red[5][h >> 40 & 255] ^ red[6][h >> 48 & 255] ^ red[7][h >> 56]
        return out

    @staticmethod
    def _multiples(a: int) -> tuple[int, ...]:
        """``a`` times every polynomial of degree < 4 (``a`` may be a packed polynomial)."""
        a2 = a << 1
        a4 = a << 2
        a8 = a << 3
        a3, a5, a6 = a2 ^ a, a4 ^ a, a4 ^ a2
        a7 = a6 ^ a
        return (0, a, a2, a3, a4, a5, a6, a7, a8, a8 ^ a, a8 ^ a2, a8 ^ a3, a8 ^ a4, a8 ^ a5, a8 ^ a6, a8 ^ a7)

    def _clmul_with(self, mult: tuple[int, ...], b: int) -> int:
        """Carry-less product of ``b`` (< 2^m) with the value whose :meth:`_multiples` are given."""
        if self.m <= 16:
            return mult[b & 15] ^ mult[b >> 4 & 15] << 4 ^ mult[b >> 8 & 15] << 8 ^ mult[b >> 12] << 12
        if self.m > NARROW_MAX_M:
            out = 0
            for shift in range(0, self.m, 4):
                out ^= mult[b >> shift & 15] << shift
            return out
        return (
            mult[b & 15] ^ mult[b >> 4 & 15] << 4 ^ mult[b >> 8 & 15] << 8 ^ mult[b >> 12 & 15] << 12
            ^ mult[b >> 16 & 15] << 16 ^ mult[b >> 20 & 15] << 20 ^ mult[b >> 24 & 15] << 24
            ^ mult[b >> 28] << 28
        )  # fmt: skip

    def solve_artin_schreier(self, k: int) -> int:
        """``y ↦ y² + y`` is GF(2)-linear with kernel {0, 1}; an echelon basis of its image (each
        row remembering which inputs it combines) is built once per field."""
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

    # packed polynomials --------------------------------------------------------------------------
    def _pack(self, coefficients: Sequence[int]) -> int:
        """One slot per coefficient, lowest first (little-endian bytes of the slot words)."""
        words = np.asarray(coefficients, dtype=np.uint64).astype(self._slot_dtype)
        if self._slot_bits == 128:  # each element in the low half of its slot
            wide = np.zeros((words.size, 2), dtype="<u8")
            wide[:, 0] = words
            return int.from_bytes(wide.tobytes(), "little")
        return int.from_bytes(words.tobytes(), "little")

    def _unpack(self, packed: int, count: int) -> list[int]:
        """The reduced field elements of the lowest ``count`` slots."""
        w = self._slot_bits
        packed &= (1 << (w * count)) - 1
        if count <= 16 or w == 128:
            slot, reduce = (1 << w) - 1, self._reduce
            return [reduce((packed >> (w * i)) & slot) for i in range(count)]
        words = np.frombuffer(packed.to_bytes(count * w // 8, "little"), dtype=self._slot_dtype)
        r = words.astype(np.uint64)
        h = r >> np.uint64(self.m)
        red, ff = self._red_np, np.uint64(255)
        out = (r & np.uint64(self.mask)) ^ red[0][h & ff] ^ red[1][(h >> np.uint64(8)) & ff]
        out ^= red[2][(h >> np.uint64(16)) & ff] ^ red[3][h >> np.uint64(24)]
        return cast("list[int]", out.tolist())

    def divide(self, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
        """Schoolbook division with the remainder packed into one Python int.

        Coefficient i lives in slot ``[w·i, w·i + w)`` unreduced (a carry-less product of two
        m-bit values has 2m − 1 < w bits, and XOR never carries into the next slot). The
        divisor's low part is packed once with its 16 multiples by 4-bit polynomials, so
        ``q · low`` for a whole quotient step is a few big-int lookups and shifts instead of
        ``deg b`` products.
        """
        db = len(b) - 1
        if len(a) <= db:
            return [], _trim([int(v) for v in a])
        mult = self._multiples(self._pack(b[:db]))
        r = self._pack(a)
        lead_inv = 1 if b[-1] == 1 else self.inv(b[-1])
        w, slot, reduce, mul = self._slot_bits, (1 << self._slot_bits) - 1, self._reduce, self.mul
        quotient = [0] * (len(a) - db)
        for k in range(len(a) - 1, db - 1, -1):
            q = reduce((r >> (w * k)) & slot)
            if q:
                if lead_inv != 1:
                    q = mul(q, lead_inv)
                quotient[k - db] = q
                r ^= self._clmul_with(mult, q) << (w * (k - db))
        return _trim(quotient), _trim(self._unpack(r, db))

    def even_powers_mod(self, sigma: Sequence[int]) -> list[list[int]]:
        """``z^(2i) mod σ`` for ``i < L = deg σ`` (σ monic, L ≥ 2), each as L coefficients.

        Packed as in :meth:`divide`: multiplying by z is a one-slot shift, the overflowing slot
        is reduced and folded back with one whole-vector carry-less product.
        """
        L = len(sigma) - 1
        mult = self._multiples(self._pack(sigma[:L]))
        w = self._slot_bits
        top_shift, mask = w * L, (1 << (w * L)) - 1
        current = 1
        packed = [1]
        for k in range(1, 2 * L - 1):
            current <<= w
            top = self._reduce(current >> top_shift)
            current &= mask
            if top:
                current ^= self._clmul_with(mult, top)
            if k % 2 == 0:
                packed.append(current)
        return [self._unpack(p, L) for p in packed]

    # vector ------------------------------------------------------------------------------------
    def vsqr(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        t = self._sqr_np
        out: np.ndarray = t[0][a & np.uint64(255)] ^ t[1][(a >> np.uint64(8)) & np.uint64(255)]
        for k in range(2, (self.m + 7) // 8):
            out ^= t[k][(a >> np.uint64(8 * k)) & np.uint64(255)]
        return out

    def vmul_xpow(self, a: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """``a · x^s`` element-wise for shifts ``0 ≤ s < 32`` (broadcasting)."""
        return self.vmul(a, self._x_powers[np.asarray(shifts, dtype=np.int64)])


class _LogTableField(_NumpyField):
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
        return cast(
            "np.ndarray", self._exp_np[log[np.asarray(a, dtype=np.uint64)] + log[np.asarray(b, dtype=np.uint64)]]
        )

    def vlog(self, a: np.ndarray) -> np.ndarray:
        """Discrete logs of non-zero elements (int64)."""
        return self._log_np[np.asarray(a, dtype=np.uint64)]

    def vexp(self, e: np.ndarray) -> np.ndarray:
        """``x^e`` for integer exponents ``e`` (any sign)."""
        return cast("np.ndarray", self._exp_np[np.mod(e, self._n)])


_CLASS_MASKS = tuple(np.uint64((0x1111111111111111 << i) & (2**64 - 1)) for i in range(4))


def _vclmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Carry-less products of 1-D uint64 arrays of values below 2^32 (results below 2^63).

    Each operand is split into its four bit classes ``x_i = x & (0x1111… << i)``. An integer
    product ``x_i·y_j`` has its column sums at positions ``≡ i + j (mod 4)``; every column sums at
    most 8 bit products (32 / 4), and all lower columns of the class together stay below the
    column's own weight, so bit ``c`` of the product is the parity of column ``c``: XOR the four
    products of each class and mask. (The same trick as constant-time GHASH without a carry-less
    multiply instruction.) The 32-bit inputs keep every integer product below 2^64.
    """
    m0, m1, m2, m3 = _CLASS_MASKS
    x0, x1, x2, x3 = a & m0, a & m1, a & m2, a & m3
    y0, y1, y2, y3 = b & m0, b & m1, b & m2, b & m3
    z = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1)
    out = z & m0
    z = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2)
    out |= z & m1
    z = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3)
    out |= z & m2
    z = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0)
    out |= z & m3
    return out


_LOW32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)


def _vclmul_wide(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Carry-less products of 1-D uint64 arrays of any values, as ``(high, low)`` 64-bit halves.

    Each operand is split into 32-bit halves ``a = a1·2^32 + a0`` and multiplied by carry-less
    Karatsuba: ``p0 = a0·b0``, ``p2 = a1·b1``, ``p1 = (a0 + a1)(b0 + b1) + p0 + p2`` (three
    :func:`_vclmul` products of 32-bit values, each exact below 2^63), and
    ``a·b = p2·2^64 + p1·2^32 + p0``. Everything stays in uint64: exact, no floating point.
    """
    a0, a1 = a & _LOW32, a >> _U32
    b0, b1 = b & _LOW32, b >> _U32
    p0 = _vclmul(a0, b0)
    p2 = _vclmul(a1, b1)
    p1 = _vclmul(a0 ^ a1, b0 ^ b1) ^ p0 ^ p2
    return p2 ^ (p1 >> _U32), p0 ^ (p1 << _U32)


def _shr128(high: np.ndarray, low: np.ndarray, shift: int) -> np.ndarray:
    """The low 64 bits of ``(high·2^64 + low) >> shift`` for ``0 < shift ≤ 64``."""
    if shift == 64:
        return high
    return (low >> np.uint64(shift)) | (high << np.uint64(64 - shift))


class _ClmulField(_NumpyField):
    """GF(2^m), any m ≤ 64, by carry-less multiplication and reduction (numpy and Python ints).

    Above m = 32 a product has up to 127 bits: it is kept as two uint64 halves
    (:func:`_vclmul_wide`) and reduced by :meth:`_vreduce_wide`.
    """

    method = "clmul"

    def __init__(self, m: int) -> None:
        super().__init__(m)
        low = self.poly ^ (1 << m)
        # The low part has degree ≤ (m + 1)/2 for every polynomial of the table, so two folds of
        # the high half by it reach below x^m.
        self._low_bits = tuple(np.uint64(j) for j in range(low.bit_length()) if low >> j & 1)

    def mul(self, a: int, b: int) -> int:
        return self._reduce(self._clmul_with(self._multiples(a), b))

    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        mult = self._multiples(c)
        return [self._reduce(self._clmul_with(mult, v)) for v in values]

    def dot(self, xs: Sequence[int], ys: Sequence[int]) -> int:
        acc = 0
        for x, y in zip(xs, ys, strict=False):
            if x:
                acc ^= self._clmul_with(self._multiples(x), y)
        return self._reduce(acc)

    def _fold(self, r: np.ndarray) -> np.ndarray:
        """``(r mod x^m) + (r div x^m)·low``: one reduction step (shifts and XORs)."""
        h = r >> np.uint64(self.m)
        out = r & np.uint64(self.mask)
        for j in self._low_bits:
            out ^= h << j
        return out

    def _vreduce(self, r: np.ndarray, bits: int | None = None) -> np.ndarray:
        """Reduce values of at most ``bits`` bits (default 2m − 1, a product).

        A fold turns an excess of ``e`` bits over m into at most ``e + deg(low) − m``, so
        ``⌈e / (m − deg low)⌉`` folds finish (two for a product: deg low ≤ (m + 1)/2).
        """
        excess = (2 * self.m - 1 if bits is None else bits) - self.m
        shrink = self.m - (len(bin(self.poly ^ (1 << self.m))) - 3)
        while excess > 0:
            r = self._fold(r)
            excess -= shrink
        return r

    def _vreduce_wide(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """Reduce products of up to 2m − 1 bits given as 64-bit halves (m > 32).

        Two folds, as in :meth:`_vreduce`: with ``d = deg low ≤ (m + 1)/2`` the first turns the
        product into ``r' < 2^(m − 1 + d)`` (kept in two halves: ``h << j`` may pass bit 64) and
        the second, with ``h' = r' >> m < 2^(d − 1)``, leaves ``h'·low < 2^(2d − 1) ≤ 2^m``.
        """
        m, mask = self.m, np.uint64(self.mask)
        h = _shr128(high, low, m)
        fold_low, fold_high = low & mask, np.zeros_like(low)
        for j in self._low_bits:
            fold_low ^= h << j
            if j:
                fold_high ^= h >> (np.uint64(64) - j)
        h = _shr128(fold_high, fold_low, m)
        out = fold_low & mask
        for j in self._low_bits:
            out ^= h << j
        return out

    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
        flat_a, flat_b = a.reshape(-1), b.reshape(-1)
        out = np.empty(flat_a.shape, dtype=np.uint64)
        wide = self.m > NARROW_MAX_M
        for start in range(0, out.size, VMUL_CHUNK):
            stop = start + VMUL_CHUNK
            if wide:
                out[start:stop] = self._vreduce_wide(*_vclmul_wide(flat_a[start:stop], flat_b[start:stop]))
            else:
                out[start:stop] = self._vreduce(_vclmul(flat_a[start:stop], flat_b[start:stop]))
        return out.reshape(a.shape)

    def vmul_xpow(self, a: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        if self.m > NARROW_MAX_M:
            return super().vmul_xpow(a, shifts)
        # A monomial product is a shift: a < 2^32 and s < 32 keep it below 2^63.
        return self._vreduce(np.asarray(a, dtype=np.uint64) << np.asarray(shifts, dtype=np.uint64), self.m + 31)


# -- native backend ------------------------------------------------------------------------------------

_NATIVE_KERNELS = {"clmul": "pclmul", "tables": "tables", "clmul-portable": "portable"}


class _NativeField(BinaryField):
    """GF(2^m) on the compiled kernels of :mod:`sketchauth.sketches._native`."""

    backend = "native"

    def __init__(self, m: int, method: str) -> None:
        super().__init__(m)
        self.method = method
        kernel = _NATIVE_KERNELS[method]
        if method == "clmul" and not _backend.native_module().cpu_features()["pclmul"]:
            kernel = "portable"  # no instruction on this CPU: the same products in plain C
        self.kernel = kernel
        self._core = _backend.native_module().GF2m(m, kernel)

    def mul(self, a: int, b: int) -> int:
        return cast("int", self._core.mul(a, b))

    def sqr(self, a: int) -> int:
        return cast("int", self._core.sqr(a))

    def inv(self, a: int) -> int:
        if a == 0:
            raise ParameterError("zero has no inverse")
        return cast("int", self._core.inv(a))

    def scale(self, c: int, values: Sequence[int]) -> list[int]:
        return cast("list[int]", self._core.scale(c, values))

    def solve_artin_schreier(self, k: int) -> int:
        return cast("int", self._core.solve_artin_schreier(k))

    def divide(self, a: Sequence[int], b: Sequence[int]) -> tuple[Poly, Poly]:
        return cast("tuple[Poly, Poly]", self._core.poly_divmod(a, b))

    def vmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
        out = np.empty(a.shape, dtype=np.uint64)
        self._core.vmul(np.ascontiguousarray(a), np.ascontiguousarray(b), out)
        return out


@cache
def _field(m: int, method: str, backend: str) -> BinaryField:
    if backend == "native":
        return _NativeField(m, method)
    if method == "tables":
        return _LogTableField(m)
    return _ClmulField(m)


def binary_field(m: int, method: Method = "auto", backend: str = "auto") -> BinaryField:
    """The (cached) field GF(2^m) with the given implementation.

    ``backend``: ``"auto"`` (the compiled kernels when installed, see
    :func:`sketchauth.sketches.backend`), ``"native"`` or ``"numpy"``. ``method``: ``"auto"``,
    ``"tables"`` (m ≤ 16), ``"clmul"``, or ``"clmul-portable"`` (native only: the plain-C
    carry-less product even where the CPU has the instruction).
    """
    if m not in PRIMITIVE_POLYNOMIALS:
        raise ParameterError(f"m must be in [{MIN_M}, {MAX_M}], got {m}")
    chosen = _backend.resolve(backend)
    if method not in ("auto", "tables", "clmul", "clmul-portable"):
        raise ParameterError(f"unknown field method {method!r}")
    if method == "tables" and m > LOG_TABLE_MAX_M:
        raise ParameterError(f"log tables are only built for m <= {LOG_TABLE_MAX_M}")
    if method == "clmul-portable" and chosen != "native":
        raise ParameterError('method "clmul-portable" exists only with backend="native"')
    if chosen == "native" and m > getattr(_backend.native_module(), "GF_MAX_M", NARROW_MAX_M):
        # A compiler without 128-bit integers builds the kernels for m <= 32 only (see _native.c).
        chosen = "numpy"
        method = "clmul" if method == "clmul-portable" else method
    if method == "auto":
        if chosen == "native":
            has_instruction = _backend.native_module().cpu_features()["pclmul"]
            method = "clmul" if has_instruction else ("tables" if m <= LOG_TABLE_MAX_M else "clmul-portable")
        else:
            method = "tables" if m <= LOG_TABLE_MAX_M else "clmul"
    return _field(m, method, chosen)


def _words(values: Any) -> np.ndarray:
    """A contiguous array of 64-bit integers (what the native kernels read; they reject values
    outside the field, negative ones included)."""
    if isinstance(values, np.ndarray) and values.dtype in (np.int64, np.uint64):  # native byte order
        return values if values.flags.c_contiguous else np.ascontiguousarray(values)
    return np.ascontiguousarray(values, dtype=np.uint64)


def _set_dtype(field: BinaryField) -> type[np.integer[Any]]:
    """The integers of sets the kernels return: uint64 in GF(2^64) (elements up to 2^64 − 1), else int64."""
    return np.uint64 if field.m == 64 else np.int64


def _native_words(data: bytearray) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint64)


# -- power sums -----------------------------------------------------------------------------------


def _odd_power_matrix(field: _NumpyField, elements: np.ndarray, t: int) -> np.ndarray:
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


#: Entries of the numpy power matrix computed at once: bounds its memory (2 MiB, with the
#: doubling's copies under 8 MiB) whatever the set size.
POWER_CHUNK_ENTRIES = 1 << 18


def _chunks(n: int, t: int) -> range:
    return range(0, n, max(1, POWER_CHUNK_ENTRIES // max(t, 1)))


def odd_power_sums(field: BinaryField, elements: np.ndarray, t: int) -> np.ndarray:
    """``[Σ_a a^1, Σ_a a^3, …, Σ_a a^(2t−1)]`` for non-zero ``elements`` (uint64, shape (t,))."""
    if isinstance(field, _NativeField):
        return _native_words(field._core.power_sums(_words(elements), t))
    numpy_field = cast(_NumpyField, field)  # the other backend
    elements = np.asarray(elements, dtype=np.uint64)
    out = np.zeros(t, dtype=np.uint64)
    step = max(1, POWER_CHUNK_ENTRIES // max(t, 1))
    for start in _chunks(elements.size, t):
        out ^= np.bitwise_xor.reduce(_odd_power_matrix(numpy_field, elements[start : start + step], t), axis=0)
    return out


#: Big-endian numpy word types by byte width (3, 5, 6 and 7 bytes have none: such words are cut from 8).
_BIG_ENDIAN = {width: np.dtype(f">u{width}") for width in (1, 2, 4, 8)}


def pack_words(words: np.ndarray, width: int) -> bytes:
    """Field elements as big-endian words of ``width`` bytes each (``8 · width ≥ m``)."""
    word = _BIG_ENDIAN.get(width)
    if word is not None:
        return np.asarray(words, dtype=np.uint64).astype(word).tobytes()
    raw = np.asarray(words, dtype=np.uint64).astype(">u8").view(np.uint8).reshape(-1, 8)
    return raw[:, 8 - width :].tobytes()


def unpack_words(payload: bytes, width: int) -> np.ndarray:
    """Inverse of :func:`pack_words`: big-endian words of ``width`` bytes as uint64."""
    if width in _BIG_ENDIAN:  # a numpy big-endian integer type of that width exists
        return np.frombuffer(payload, dtype=_BIG_ENDIAN[width]).astype(np.uint64)
    raw = np.zeros((len(payload) // width, 8), dtype=np.uint8)
    raw[:, 8 - width :] = np.frombuffer(payload, dtype=np.uint8).reshape(-1, width)
    return raw.view(">u8").reshape(-1).astype(np.uint64)


def odd_power_sums_packed(field: BinaryField, elements: np.ndarray, t: int, width: int) -> bytes:
    """:func:`odd_power_sums` written as :func:`pack_words` (a PinSketch payload; one native call)."""
    if isinstance(field, _NativeField):
        return cast("bytes", field._core.power_sums_packed(_words(elements), t, width))
    return pack_words(odd_power_sums(field, elements, t), width)


def odd_power_sums_segments(field: BinaryField, elements: np.ndarray, lengths: np.ndarray, t: int) -> np.ndarray:
    """Odd power sums of many sets at once: ``elements`` concatenated, ``lengths`` per set.

    Returns shape ``(len(lengths), t)``; empty sets give zero rows.
    """
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if isinstance(field, _NativeField):
        data = field._core.power_sums_segments(_words(elements), lengths, t)
        return _native_words(data).reshape(lengths.size, t)
    numpy_field = cast(_NumpyField, field)  # the other backend
    elements = np.asarray(elements, dtype=np.uint64)
    out = np.zeros((lengths.size, t), dtype=np.uint64)
    owner = np.repeat(np.arange(lengths.size), lengths)
    step = max(1, POWER_CHUNK_ENTRIES // max(t, 1))
    for start in _chunks(elements.size, t):
        rows = owner[start : start + step]
        matrix = _odd_power_matrix(numpy_field, elements[start : start + step], t)
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
    if isinstance(field, _NativeField):
        locator, length = field._core.berlekamp_massey(s)
        return locator, length
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
        c = _trim(updated) or [1]
    return _trim(c) or [1], length


def _add(a: Poly, b: Poly) -> Poly:
    """Coefficient-wise XOR of two polynomials of any lengths."""
    if len(a) < len(b):
        a, b = b, a
    return [x ^ y for x, y in zip(a, b, strict=False)] + a[len(b) :]


# -- polynomials (scalar) ----------------------------------------------------------------------------


def _trim(p: Poly) -> Poly:
    while p and p[-1] == 0:
        p.pop()
    return p


def poly_eval(field: BinaryField, p: Sequence[int], x: int) -> int:
    """``p(x)`` by Horner's rule."""
    if isinstance(field, _NativeField):
        return cast("int", field._core.poly_eval([int(v) for v in p], x))
    acc = 0
    for coef in reversed(p):
        acc = field.mul(acc, x) ^ coef
    return acc


#: Points evaluated at once by the numpy :func:`poly_eval_many` (bounds its power matrix).
EVAL_CHUNK_ENTRIES = 1 << 18


def poly_eval_many(field: BinaryField, p: Sequence[int], xs: np.ndarray) -> np.ndarray:
    """``p(x)`` for every ``x`` in ``xs`` at once.

    numpy: a matrix of powers times the coefficients, powers from discrete logs (tables) or by
    doubling (``x^k … x^(2k−1) = x^0 … x^(k−1)`` times ``x^k``), so the cost is O(log deg p)
    vector operations; in chunks of points so the matrix stays below 2 MiB.
    """
    xs = np.asarray(xs, dtype=np.uint64)
    if isinstance(field, _NativeField):
        return _native_words(field._core.poly_eval_many([int(v) for v in p], _words(xs)))
    count = len(p)
    if count == 0 or xs.size == 0:
        return np.zeros(xs.shape, dtype=np.uint64)
    coefficients = np.array(p, dtype=np.uint64)[None, :]
    step = max(1, EVAL_CHUNK_ENTRIES // count)
    out = np.empty(xs.size, dtype=np.uint64)
    flat = xs.reshape(-1)
    for start in range(0, flat.size, step):
        chunk = flat[start : start + step]
        powers = _power_matrix(field, chunk, count)
        out[start : start + step] = np.bitwise_xor.reduce(field.vmul(powers, coefficients), axis=1)
    return out.reshape(xs.shape)


def _power_matrix(field: BinaryField, xs: np.ndarray, count: int) -> np.ndarray:
    """``P[j, k] = xs[j]^k`` for ``k < count`` (``0^0 = 1``)."""
    if isinstance(field, _LogTableField):
        powers = field.vexp(field.vlog(xs)[:, None] * np.arange(count, dtype=np.int64)[None, :])
        powers[xs == 0, 1:] = 0
        powers[xs == 0, 0] = 1
        return powers
    powers = np.stack([np.ones_like(xs), xs], axis=1)
    step = field.vsqr(xs)[:, None]  # x^2
    while powers.shape[1] < count:
        powers = np.concatenate([powers, field.vmul(powers, step)], axis=1)
        step = field.vsqr(step)
    return powers[:, :count]


def poly_deflate(field: BinaryField, p: Sequence[int], root: int) -> Poly:
    """``p(z) / (z − root)`` for a root of the monic ``p`` (synthetic division)."""
    if isinstance(field, _NativeField):
        return cast("Poly", field._core.poly_deflate([int(v) for v in p], root))
    quotient = [0] * (len(p) - 1)
    carry = 0
    for i in range(len(p) - 1, 0, -1):
        carry = p[i] ^ field.mul(root, carry)
        quotient[i - 1] = carry
    return quotient


def poly_mul(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """The product polynomial ``a·b`` (schoolbook; native: unreduced products, one reduction per
    coefficient)."""
    if isinstance(field, _NativeField):
        return cast("Poly", field._core.poly_mul([int(v) for v in a], [int(v) for v in b]))
    a, b = _trim([int(v) for v in a]), _trim([int(v) for v in b])
    if not a or not b:
        return []
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(field.scale(x, b)):
            out[i + j] ^= y
    return _trim(out)


def poly_mod(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """``a mod b`` for a non-zero ``b``."""
    return field.divide(a, b)[1]


def _monic(field: BinaryField, p: Poly) -> Poly:
    lead = p[-1]
    return p if lead == 1 else field.scale(field.inv(lead), p)


def poly_gcd(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """Monic ``gcd(a, b)`` (Euclid); ``a`` non-zero."""
    if isinstance(field, _NativeField):
        return cast("Poly", field._core.poly_gcd([int(v) for v in a], [int(v) for v in b]))
    a = _trim(list(a))
    b = _trim(list(b))
    while b:
        a, b = b, poly_mod(field, a, b)
    return _monic(field, a)


def poly_divexact(field: BinaryField, a: Sequence[int], b: Sequence[int]) -> Poly:
    """Quotient ``a / b`` for a ``b`` dividing ``a``."""
    return field.divide(a, b)[0]


# -- root finding -------------------------------------------------------------------------------------


def _frobenius_powers(field: _NumpyField, sigma: Poly) -> np.ndarray:
    """``Z[i] = z^(2^i) mod σ`` for ``i = 0 … m`` as a uint64 array of shape (m+1, L).

    Squaring modulo σ is GF(2)-linear on the ``m·L`` coefficient bits, so its matrix is built
    once (row for bit j of coefficient k: ``x^(2j) · (z^(2k) mod σ)``) and each of the m
    squarings is an XOR of the rows selected by the bits of the current value. The matrix
    (``L·w·L`` words, w = 16 or 32) is built and applied in blocks so that no temporary is more
    than ``L²`` words beside it (the matrix: 16 MiB at m = 32, L = 256).
    """
    L = len(sigma) - 1
    value = np.array(field.even_powers_mod(sigma), dtype=np.uint64)  # (L, L): z^(2k) mod σ
    width = 16 if field.m <= 16 else (32 if field.m <= NARROW_MAX_M else 64)  # bits per coefficient (unpackbits)
    rows = np.zeros((L, width, L), dtype=np.uint64)
    for j in range(field.m):  # rows[k, j] = x^(2j)·(z^(2k) mod σ)
        rows[:, j, :] = value
        value = field.vmul_xpow(value, np.full(value.shape, 2))
    flat = rows.reshape(L * width, L)  # row k·width + j
    word = np.dtype(f"<u{width // 8}")
    powers = np.zeros((field.m + 1, L), dtype=np.uint64)
    powers[0, 1] = 1  # z (L >= 2)
    for i in range(1, field.m + 1):
        bits = np.flatnonzero(np.unpackbits(powers[i - 1].astype(word).view(np.uint8), bitorder="little"))
        acc = np.zeros(L, dtype=np.uint64)
        for s in range(0, bits.size, FROBENIUS_ROWS):
            acc ^= np.bitwise_xor.reduce(flat[bits[s : s + FROBENIUS_ROWS]], axis=0)
        powers[i] = acc
    return powers


#: Rows of the squaring matrix XORed at once in :func:`_frobenius_powers`.
FROBENIUS_ROWS = 512

#: Multipliers ``β_i`` whose traces are computed in one vectorised product (numpy path).
TRACE_BATCH = 4


def _trace_polynomials(field: _NumpyField, frob: np.ndarray, beta: int) -> Iterator[Poly]:
    """``Tr(β_i z) mod σ = Σ_k β_i^(2^k) z^(2^k) mod σ`` for ``β_i = β·x^i``, ``i < m``.

    ``TRACE_BATCH`` of them come from one vectorised product: a product's fixed numpy overhead
    dominates a round, and about log2(deg σ) + 2 rounds are needed.
    """
    m = field.m
    betas = [beta]
    for _ in range(m - 1):
        betas.append(field.mulx(betas[-1]))
    for start in range(0, m, TRACE_BATCH):
        batch = betas[start : start + TRACE_BATCH]
        conj = np.empty((len(batch), m), dtype=np.uint64)
        for row, first in enumerate(batch):
            b = first
            for k in range(m):
                conj[row, k] = b
                b = field.sqr(b)
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


_ROOT_ERRORS = {
    "zero": "locator has a zero root",
    "split": "locator does not split into distinct linear factors over the field",
}


def random_multiplier(field: BinaryField) -> int:
    """A uniformly random non-zero field element from the OS generator (the trace multiplier β).

    ``os.urandom`` (what :mod:`secrets` reads; importing that module costs a cold start ~5 ms):
    m random bits, redrawn in the rare case (2^-m) that they are all zero — exactly uniform.
    """
    while True:
        value = int.from_bytes(os.urandom(4 if field.m <= NARROW_MAX_M else 8), "little") & field.mask
        if value:
            return value


def find_roots(field: BinaryField, sigma: Sequence[int], *, beta: int | None = None) -> list[int]:
    """The roots of the monic ``σ``, which must be ``deg σ`` distinct non-zero field elements.

    Raises :class:`DecodeError` when they are not: a zero root, a repeated root, or roots
    outside GF(2^m) (``z^(2^m) ≢ z mod σ``). ``beta`` is the non-zero trace multiplier (drawn
    from the OS generator when ``None``; fixed only in tests). The split always completes within
    m rounds, whatever ``beta``; the randomness only keeps an adversary from knowing which.
    """
    sigma = [int(v) for v in sigma]
    if not sigma or sigma[-1] != 1:
        raise ParameterError("find_roots needs a monic polynomial")
    if beta is None:
        beta = random_multiplier(field)
    if not 0 < beta < field.order:
        raise ParameterError("beta must be a non-zero field element")
    if isinstance(field, _NativeField):
        return cast("list[int]", field._core.find_roots(sigma, beta))
    degree = len(sigma) - 1
    if degree == 0:
        return []
    if sigma[0] == 0:
        raise DecodeError(_ROOT_ERRORS["zero"])
    if degree == 1:
        return [sigma[0]]
    if degree == 2:
        return _quadratic_roots(field, sigma[1], sigma[0])
    numpy_field = cast(_NumpyField, field)  # the other backend
    frob = _frobenius_powers(numpy_field, sigma)
    z = np.zeros(degree, dtype=np.uint64)
    z[1] = 1
    if not np.array_equal(frob[field.m], z):
        raise DecodeError(_ROOT_ERRORS["split"])
    return _split(field, sigma, _trace_polynomials(numpy_field, frob, beta))


def _split(field: BinaryField, sigma: Poly, traces: Iterator[Poly]) -> list[int]:
    """Split the pending factors of ``σ`` by successive trace polynomials (numpy path)."""
    degree = len(sigma) - 1
    roots: list[int] = []
    pending: list[Poly] = [sigma]
    for trace_poly in traces:
        still: list[Poly] = []
        for h in pending:
            part = (
                poly_gcd(field, h, poly_mod(field, trace_poly, h) if len(h) - 1 < degree else trace_poly)
                if trace_poly
                else h
            )
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


# -- PinSketch recovery ---------------------------------------------------------------------------------

#: Evaluate the locator at the sample's own elements first when ``|B| ≤ m·L / this`` (see
#: :func:`recover_set`; the same rule as the compiled kernel).
SAMPLE_EVAL_DIVISOR = 4


def decode_set(field: BinaryField, syndromes: np.ndarray, sample: np.ndarray, *, beta: int | None = None) -> np.ndarray:
    """:func:`recover_set` from the enrolled set's own power sums (the sample's are added here;
    one call into the compiled kernels)."""
    if isinstance(field, _NativeField):
        if beta is None:
            beta = random_multiplier(field)
        return np.frombuffer(field._core.recover(_words(syndromes), sample, beta, True), dtype=_set_dtype(field))
    return recover_set(field, syndromes ^ odd_power_sums(field, sample, len(syndromes)), sample, beta=beta)


def decode_payload(
    field: BinaryField, payload: bytes, width: int, sample: np.ndarray, *, beta: int | None = None
) -> np.ndarray:
    """:func:`decode_set` with the syndromes given as :func:`pack_words` (a PinSketch payload,
    read by the compiled kernels directly)."""
    if isinstance(field, _NativeField):
        if beta is None:
            beta = random_multiplier(field)
        return np.frombuffer(field._core.recover_payload(payload, width, _words(sample), beta), dtype=_set_dtype(field))
    return decode_set(field, unpack_words(payload, width), sample, beta=beta)


def recover_set(
    field: BinaryField, difference_sums: np.ndarray, sample: np.ndarray, *, beta: int | None = None
) -> np.ndarray:
    """``A = B Δ D`` where D is the unique set of ≤ t elements with the given odd power sums.

    ``difference_sums`` are the t odd power sums of ``D = A Δ B`` (the helper's syndromes XOR the
    sample's), ``sample`` is B as a sorted int64 array of distinct non-zero elements. Raises
    :class:`DecodeError` (message: ``"too far"``) when no set of at most t elements has these
    power sums. Steps: Berlekamp–Massey gives the locator (length ≤ t, no trailing zero);
    ``σ(z) = z^L Λ(1/z)`` is evaluated at B's elements when B is small (its roots there are
    ``B \\ A``) and deflated; the trace algorithm finds the rest; the roots' own power sums must
    equal ``difference_sums``. Returns a sorted int64 array.
    """
    difference_sums = np.asarray(difference_sums, dtype=np.uint64)
    t = difference_sums.size
    if not difference_sums.any():
        return np.array(sample, copy=True)
    if beta is None:
        beta = random_multiplier(field)
    if isinstance(field, _NativeField):
        words = field._core.recover(_words(difference_sums), _words(sample), beta)
        return np.frombuffer(words, dtype=_set_dtype(field))
    locator, length = berlekamp_massey(field, expand_syndromes(field, difference_sums.tolist()))
    if length > t or len(locator) - 1 != length:
        raise DecodeError("too far")
    # σ(z) = z^L Λ(1/z) = Π (z − X_j): monic, its roots are the elements of A Δ B.
    sigma = locator[::-1]
    in_sample: list[int] = []
    if length >= 3 and sample.size and sample.size <= field.m * length // SAMPLE_EVAL_DIVISOR:
        in_sample = [int(x) for x in sample[poly_eval_many(field, sigma, sample.astype(np.uint64)) == 0]]
        for root in in_sample:
            sigma = poly_deflate(field, sigma, root)
    try:
        roots = in_sample + find_roots(field, sigma, beta=beta)
    except DecodeError:
        raise DecodeError("too far") from None
    if len(set(roots)) != length:
        raise DecodeError("too far")
    difference = np.array(sorted(roots), dtype=np.uint64)
    if not np.array_equal(odd_power_sums(field, difference, t), difference_sums):
        raise DecodeError("too far")
    return np.setxor1d(sample, difference.astype(sample.dtype), assume_unique=True)
