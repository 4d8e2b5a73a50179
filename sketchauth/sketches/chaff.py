"""Chaff-based 1-D point sketch: the reference family for key-guessing experiments (SPEC §4).

The secret is a set of ``points`` genuine points of ``Z_n = {0, …, n−1}`` pairwise more than
``min_distance = d`` apart (distance ``|x − y|`` on the line). Enc adds chaff: while some
position is more than ``d`` from every point already placed, one of those free positions is
chosen uniformly at random (:mod:`secrets`) and added. The sketch is the final set, a *maximal*
``d``-separated set; genuine points and chaff look alike. Dec(sample): each sample value goes
to its nearest sketch point, which is the genuine one whenever it is within ``⌊d/2⌋`` of it.

Maximal sets and their compact description: a ``d``-separated set ``p_1 < … < p_k`` is maximal
iff ``p_1 ≤ d``, ``p_k ≥ n − 1 − d`` and every gap ``p_{j+1} − p_j`` lies in ``[d+1, 2d+1]``
(a larger gap leaves ``p_j + d + 1`` free). So ``f(p)``, the number of maximal continuations
of a set whose last point is ``p``, obeys ``f(p) = 1`` for ``p ≥ n − 1 − d`` and
``f(p) = Σ_{g=d+1}^{2d+1} f(p + g)`` otherwise; the number of sketches is
``N = Σ_{p ≤ d} f(p)``. The payload is the sketch's lexicographic rank in ``[0, N)``, so
``|S| = log2 N`` exactly and its symbol is one element of ``Z_N``: a keyed pad added modulo
``N`` maps every sketch onto another valid sketch (format-preserving mixing).

Accounting: the randomness is the chaff set, recoverable as ``S \\ secret``. It is not uniform
(sets reached by fewer or more constrained choices are likelier), so ``H∞(R)`` is the minimum
over secrets of the exact min-entropy, computed by enumeration for ``n ≤ 16``; beyond that the
report uses the trivial ``H∞(R) ≥ 0`` and says so. ``L_R ≤ log2 N`` always (``extra``).

Example::

    >>> sk = ChaffPointSketch(universe=30, min_distance=3)
    >>> helper = sk.encode(12)                 # one point: a lone integer, or [12], {12}, ...
    >>> sk.decode(helper, 13).tolist()
    [12]
"""

from __future__ import annotations

import math
import secrets as _secrets
from array import array
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import EntropyReport, SecureSketch, SymbolSpace
from sketchauth.sketches.format import pack_uints, uint_width, unpack_uints
from sketchauth.sketches.params import ParameterSpec, check_int
from sketchauth.sketches.samples import as_element_set, as_integers

__all__ = ["ChaffPointSketch", "MAX_ENUMERATED_UNIVERSE"]

#: ``randomness_space`` and the exact ``H∞(R)`` enumerate chaff only up to this universe.
MAX_ENUMERATED_UNIVERSE = 16
#: The number of sketches must fit one 63-bit symbol.
MAX_SKETCHES = (1 << 63) - 1


class ChaffPointSketch(SecureSketch):
    """Genuine points hidden among random chaff in ``[0, universe)``; ``points`` genuine ones."""

    scheme_name = "chaff-point"
    parameters = ParameterSpec(required=("universe", "min_distance"), optional=("points",))

    def __init__(self, universe: int, min_distance: int, points: int = 1) -> None:
        self.universe = check_int("universe", universe, 2, 1 << 20)
        self.min_distance = check_int("min_distance", min_distance, 1, self.universe - 1)
        self.points = check_int("points", points, 1, self.universe)
        if (self.points - 1) * (self.min_distance + 1) >= self.universe:
            raise ParameterError(f"{self.points} points cannot be more than {self.min_distance} apart in {self.universe}")
        self.tolerance = self.min_distance // 2
        # The table is 8 bytes a position: counted here for N, then dropped and rebuilt on first
        # rank/unrank, so merely loading parameters (64 chaff components in one crafted mixed
        # helper) does not keep 8 MiB per component alive.
        first_points = self._count_table()[: min(self.min_distance, self.universe - 1) + 1]
        if float(first_points.sum(dtype=np.float64)) < 2.0**62:
            self.sketch_count = int(first_points.astype(np.uint64).sum())  # exact: below 2^64
        else:
            self.sketch_count = sum(int(v) for v in first_points)
        if self.sketch_count > MAX_SKETCHES:
            raise ParameterError(f"{self.sketch_count} possible sketches do not fit a 63-bit symbol")
        self._width = uint_width(self.sketch_count - 1)

    @cached_property
    def _continuations(self) -> array:
        """``f[p]``, the number of maximal continuations of a set whose last point is ``p``.

        Signed 64-bit slots (8 bytes a position) whose indexing yields exact Python ints, which
        is what rank/unrank add and compare.
        """
        out = array("q")
        out.frombytes(self._count_table().tobytes())
        return out

    def _count_table(self) -> np.ndarray:
        """``f[p]`` for every position, one block of ``d + 1`` positions per numpy pass.

        ``f[p] = Σ_{g=d+1}^{2d+1} f[p + g]`` reads only positions after ``p + d``, so a block of
        ``d + 1`` consecutive positions depends only on positions after it: one cumulative sum
        fills it. Per-position Python loops cost seconds at universe 2^20 (times 64 components
        in a crafted mixed helper); small d overflows 63 bits after a few blocks, large d has
        few blocks, so there are never many. Every position lies on some maximal set, so
        ``f[p] ≤ N``: a count above ``MAX_SKETCHES`` refuses the parameters at once instead of
        growing huge integers. Returned as an int64 array (every count is below 2^63).
        """
        n, d = self.universe, self.min_distance
        f = np.zeros(n, dtype=np.int64)
        hi = max(0, n - 1 - d)  # positions >= n - 1 - d end a maximal set: f = 1
        f[hi:] = 1
        while hi > 0:
            lo = max(0, hi - (d + 1))
            base = lo + d + 1
            region = f[base : min(n, hi + 2 * d + 1)]
            p = np.arange(lo, hi)
            first, last = p + d + 1 - base, np.minimum(p + 2 * d + 2, n) - base
            # Window sums as differences of a wrapping uint64 cumulative sum: exact whenever the
            # true sum is below 2^64, which the float estimate (error < 2^52 here) guarantees.
            approx = np.concatenate(([0.0], np.cumsum(region.astype(np.float64))))
            if np.any(approx[last] - approx[first] > 2.0**62):
                self._fill_exactly(f, lo, hi)
            else:
                wrapped = np.concatenate((np.zeros(1, np.uint64), np.cumsum(region.astype(np.uint64))))
                f[lo:hi] = (wrapped[last] - wrapped[first]).astype(np.int64)
            hi = lo
        return f

    def _fill_exactly(self, f: np.ndarray, lo: int, hi: int) -> None:
        """Fill ``f[lo:hi]`` with Python integers, refusing any count above ``MAX_SKETCHES``."""
        n, d = self.universe, self.min_distance
        window = sum(int(v) for v in f[hi + d + 1 : min(n, hi + 2 * d + 2)])  # the window of p = hi
        for p in range(hi - 1, lo - 1, -1):
            if p + d + 1 < n:
                window += int(f[p + d + 1])
            if p + 2 * d + 2 < n:
                window -= int(f[p + 2 * d + 2])
            if window > MAX_SKETCHES:
                raise ParameterError(f"more than {MAX_SKETCHES} possible sketches do not fit a 63-bit symbol")
            f[p] = window

    # -- parameters -------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {"universe": self.universe, "min_distance": self.min_distance, "points": self.points}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ChaffPointSketch:
        params = cls.parameters.check(cls.scheme_name, params)
        return cls(params["universe"], params["min_distance"], params.get("points", 1))

    # -- secrets ------------------------------------------------------------------------------------
    def check_secret(self, secret: Any) -> np.ndarray:
        """The genuine points, sorted: one integer (``points = 1``) or any collection of them."""
        s = as_element_set(secret, 0, self.universe, max_size=self.points, name="secret", allow_scalar=True)
        if s.shape[0] != self.points:
            raise SampleError(f"secret must have {self.points} points (the sketch's points parameter), got {s.shape[0]}")
        if s.size > 1 and np.any(np.diff(s) <= self.min_distance):
            raise SampleError(f"secret points must be more than {self.min_distance} apart")
        return s

    def secret_bytes(self, secret: Any) -> bytes:
        return pack_uints(self.check_secret(secret), uint_width(self.universe - 1))

    def secret_space(self) -> Iterator[np.ndarray]:
        """Every valid secret, in lexicographic order (for exact evaluation of tiny sketches)."""
        n, d = self.universe, self.min_distance

        def extend(prefix: list[int]) -> Iterator[list[int]]:
            if len(prefix) == self.points:
                yield prefix
                return
            start = prefix[-1] + d + 1 if prefix else 0
            for p in range(start, n):
                yield from extend(prefix + [p])

        for s in extend([]):
            yield np.array(s, dtype=np.int64)

    # -- randomness ---------------------------------------------------------------------------------
    def _free_after(self, chosen: Iterable[int]) -> np.ndarray:
        free = np.ones(self.universe, dtype=bool)
        d = self.min_distance
        for x in chosen:
            free[max(0, x - d) : x + d + 1] = False
        return free

    def draw_randomness(self, secret: Any) -> tuple[int, ...]:
        free = self._free_after(int(x) for x in secret)
        chaff = []
        d = self.min_distance
        while True:
            candidates = np.flatnonzero(free)
            if candidates.size == 0:
                return tuple(sorted(chaff))
            x = int(candidates[_secrets.randbelow(candidates.size)])
            chaff.append(x)
            free[max(0, x - d) : x + d + 1] = False

    def randomness_space(self, secret: Any) -> list[tuple[tuple[int, ...], float]]:
        """Every chaff set the fill can produce for ``secret``, with its exact probability."""
        if self.universe > MAX_ENUMERATED_UNIVERSE:
            raise ParameterError(f"chaff enumeration is limited to universe <= {MAX_ENUMERATED_UNIVERSE}")
        secret = self.check_secret(secret)
        d, n = self.min_distance, self.universe
        memo: dict[int, dict[int, float]] = {}

        def finals(chosen: int, free: int) -> dict[int, float]:
            # Distribution of the final chosen-set (bitmask) from a state; memoised on the set.
            if chosen in memo:
                return memo[chosen]
            if free == 0:
                memo[chosen] = {chosen: 1.0}
                return memo[chosen]
            options = [x for x in range(n) if free >> x & 1]
            out: dict[int, float] = {}
            for x in options:
                block = ((1 << (2 * d + 1)) - 1) << max(0, x - d) if x >= d else (1 << (x + d + 1)) - 1
                for final, p in finals(chosen | 1 << x, free & ~block).items():
                    out[final] = out.get(final, 0.0) + p / len(options)
            memo[chosen] = out
            return out

        start = sum(1 << int(x) for x in secret)
        free = sum(1 << int(i) for i in np.flatnonzero(self._free_after(int(x) for x in secret)))
        result = []
        for final, p in sorted(finals(start, free).items()):
            chaff = tuple(x for x in range(n) if (final & ~start) >> x & 1)
            result.append((chaff, p))
        return result

    # -- ranking ------------------------------------------------------------------------------------
    def rank(self, points: Iterable[int]) -> int:
        """Lexicographic rank of a maximal set among all ``sketch_count`` of them."""
        pts = [int(x) for x in points]
        self._check_maximal(pts)
        f, d = self._continuations, self.min_distance
        r = sum(f[q] for q in range(0, pts[0]))
        for prev, cur in zip(pts, pts[1:]):
            r += sum(f[prev + g] for g in range(d + 1, cur - prev))
        return r

    def unrank(self, r: int) -> list[int]:
        """The maximal set of rank ``r`` (inverse of :meth:`rank`)."""
        if not 0 <= r < self.sketch_count:
            raise SketchFormatError("chaff sketch rank out of range")
        f, d, n = self._continuations, self.min_distance, self.universe
        p = 0
        while r >= f[p]:
            r -= f[p]
            p += 1
        pts = [p]
        while p < n - 1 - d:
            g = d + 1
            while r >= f[p + g]:
                r -= f[p + g]
                g += 1
            p += g
            pts.append(p)
        return pts

    def _check_maximal(self, pts: list[int]) -> None:
        n, d = self.universe, self.min_distance
        gaps = np.diff(pts)
        if (
            not pts
            or pts[0] < 0
            or pts[0] > d
            or pts[-1] >= n
            or pts[-1] < n - 1 - d
            or np.any(gaps <= d)
            or np.any(gaps > 2 * d + 1)
        ):
            raise ParameterError("not a maximal set of points more than min_distance apart")

    # -- encode / decode ----------------------------------------------------------------------------
    def _encode_payload(self, secret: np.ndarray, randomness: Any) -> bytes:
        try:
            chaff = [int(x) for x in randomness]
        except (TypeError, ValueError):
            raise ParameterError("randomness must be the chaff points") from None
        points = sorted(set(chaff) | {int(x) for x in secret})
        if len(points) != len(chaff) + self.points:
            raise ParameterError("chaff overlaps the secret")
        return pack_uints([self.rank(points)], self._width)

    def _rank_of(self, payload: bytes) -> int:
        return int(unpack_uints(payload, self._width, 1)[0])

    def _check_payload(self, payload: bytes) -> None:
        if self._rank_of(payload) >= self.sketch_count:
            raise SketchFormatError("chaff sketch rank out of range")

    def sketch_points(self, helper: bytes) -> np.ndarray:
        """Every point of the sketch (genuine and chaff alike), sorted."""
        return np.array(self.unrank(self._rank_of(self.payload(helper))), dtype=np.int64)

    def _sample_values(self, sample: Any) -> np.ndarray:
        """One value per genuine point, in any order: a lone integer when ``points = 1``."""
        values = as_integers(sample, "sample", max_size=self.points, allow_scalar=True)
        if values.shape[0] != self.points:
            raise SampleError(f"sample must have {self.points} values, one per genuine point, got {values.shape[0]}")
        return values

    def _decode_payload(self, payload: bytes, sample: Any) -> np.ndarray:
        x = self._sample_values(sample)
        pts = np.array(self.unrank(self._rank_of(payload)), dtype=np.int64)
        nearest = pts[np.abs(x[:, None] - pts[None, :]).argmin(axis=1)]
        out = np.sort(nearest)
        if out.size > 1 and np.any(out[1:] == out[:-1]):
            raise DecodeError("two sample values fall to the same sketch point")
        return out

    # -- accounting -----------------------------------------------------------------------------------
    @cached_property
    def _exact_randomness(self) -> tuple[float, float] | None:
        """``(H∞(R), log2 of the largest support)`` over every secret, from one enumeration each."""
        if self.universe > MAX_ENUMERATED_UNIVERSE:
            return None
        spaces = [self.randomness_space(s) for s in self.secret_space()]
        min_entropy = min(-math.log2(max(p for _, p in space)) for space in spaces)
        return min_entropy, max(math.log2(len(space)) for space in spaces)

    def report(self) -> EntropyReport:
        exact, support = self._exact_randomness or (None, None)
        sketch_bits = math.log2(self.sketch_count)
        notes = [f"{self.sketch_count} maximal sets: |S| = log2 N exactly; the payload is the rank"]
        if exact is None:
            notes.append("H(R) >= 0 is the trivial bound (chaff not enumerated beyond universe 16)")
        else:
            notes.append("H(R) = min over secrets of the exact min-entropy of the chaff set")
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=sketch_bits,
            randomness_bits=exact or 0.0,
            notes=notes,
            extra={
                "sketch_count": self.sketch_count,
                "tolerance": self.tolerance,
                "randomness_support_bits": support if support is not None else sketch_bits,
            },
        )

    # -- symbols (for mixing) -------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        moduli = np.array([self.sketch_count], dtype=np.uint64)
        return np.array([self._rank_of(payload)], dtype=np.uint64), SymbolSpace("mod", moduli=moduli)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return pack_uints(symbols, self._width)
