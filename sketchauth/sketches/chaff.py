"""Chaff-based 1-D point sketch: the reference family for key-guessing experiments (Fang's thesis, ch. 7).

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
over secrets of the exact min-entropy. ``L_R ≤ log2 N`` always (``extra``).

Exact chaff distribution, by segments. After the secret is placed, the free positions form
runs ("segments") separated by blocked ones, and a point placed in one run blocks nothing in
another. The fill picks uniformly among *all* free positions, but conditioned on landing in a
given run the pick is uniform within it, so the final chaff of each run is that of a fill of
the run alone, independently of the others: ``Pr[chaff | secret] = Π_runs P_L(chaff ∩ run)``,
where ``P_L`` depends only on the run's length ``L``. And ``P_L`` obeys
``P_L(C) = (1/L)·Σ_{x ∈ C} P_{max(0, x−d)}(C ∩ left of x) · P_{max(0, L−x−d−1)}(C ∩ right of x)``
(the first pick ``x`` splits the run in two). So the distributions of every run length
``0 … L`` are built once, as exact :class:`~fractions.Fraction` tables, by that recursion
(:func:`segment_distributions`; kept as integers ``L!·P_L``); ``randomness_space`` multiplies the
tables of a secret's runs,
and the exact ``H∞(R)`` is ``min`` over secrets of ``Σ_runs −log2 max P_L``: a max-product over
secret positions, no enumeration of secrets × chaff sets. Universe 24 with ``d = 3`` (605
sketches) takes a few hundredths of a second. The tables are built while the runs hold at most
:data:`MAX_ENUMERATED_SETS` maximal sets in all (about universe 27–40 for ``d`` from 1 to 6); beyond
that the report falls back to the trivial ``H∞(R) ≥ 0`` and says so. The per-order fill of the
old enumeration (every chosen set as a state) is kept as the brute-force reference
(:func:`fill_by_orders`, universe ≤ 16) that the tests check the tables against exhaustively.

Example::

    >>> sk = ChaffPointSketch(universe=30, min_distance=3)
    >>> helper = sk.encode(12)                 # one point: a lone integer, or [12], {12}, ...
    >>> sk.decode(helper, 13).tolist()
    [12]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.format import pack_uints, uint_width, unpack_uints
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import as_element_set, as_integers
from sketchauth.sketches.types import ElementSet

# secrets loads hmac, hashlib and OpenSSL: on first use (sketchauth._lazy).
_secrets = LazyModule("secrets")
_fractions = LazyModule("fractions")  # exact probabilities, for evaluation only (with decimal: ~1.5 ms)

if TYPE_CHECKING:
    from array import array
    from fractions import Fraction

__all__ = [
    "MAX_ENUMERATED_CHAFF",
    "MAX_ENUMERATED_SETS",
    "MAX_ENUMERATED_UNIVERSE",
    "ChaffPointSketch",
    "fill_by_orders",
    "segment_distributions",
    "segment_set_counts",
]

#: The brute-force reference :func:`fill_by_orders` follows the fill only up to this universe.
MAX_ENUMERATED_UNIVERSE = 16
#: Exact chaff tables are built only while the runs ``0 … L`` hold at most this many maximal sets
#: in all (a tenth of a second or so at this size; universe 24 with ``d = 3`` needs 2637).
MAX_ENUMERATED_SETS = 1 << 13
#: ``randomness_space`` lists at most this many chaff sets for one secret.
MAX_ENUMERATED_CHAFF = 1 << 20
#: The number of sketches must fit one 63-bit symbol.
MAX_SKETCHES = (1 << 63) - 1


# -- exact chaff distributions of free runs (segments) --------------------------------------------
Chaff = tuple[int, ...]


def segment_set_counts(length: int, min_distance: int, limit: int | None = None) -> list[int] | None:
    """``c(L)`` for ``L = 0 … length``: the maximal ``d``-separated sets of ``L`` free positions.

    A set of a run ``[0, L)`` is maximal iff its first point is ``≤ d``, its last ``≥ L − 1 − d``
    and every gap lies in ``[d + 1, 2d + 1]`` (the module doc), so with ``g(j)`` the number of
    maximal continuations of a point followed by ``j`` positions — ``g(j) = 1`` for ``j ≤ d``,
    else ``Σ_{gap=d+1}^{min(2d+1, j)} g(j − gap)`` — ``c(L) = Σ_{p=0}^{min(d, L−1)} g(L−1−p)`` and
    ``c(0) = 1`` (the empty set). ``c(n)`` is the number of sketches of universe ``n``.
    Returns ``None`` as soon as the running total exceeds ``limit`` (every ``c(L) ≥ 1``, so this
    costs at most ``limit`` steps however long the run is).

    >>> segment_set_counts(6, 1)
    [1, 1, 2, 2, 3, 4, 5]
    """
    d = min_distance
    g: list[int] = []
    counts = [1]
    total = 1
    for length_now in range(1, length + 1):
        j = length_now - 1
        g.append(1 if j <= d else sum(g[j - gap] for gap in range(d + 1, min(2 * d + 1, j) + 1)))
        c = sum(g[length_now - 1 - p] for p in range(min(d, length_now - 1) + 1))
        counts.append(c)
        total += c
        if limit is not None and total > limit:
            return None
    return counts


@lru_cache(maxsize=16)
def _segment_weights(length: int, min_distance: int) -> tuple[dict[Chaff, int], ...]:
    """``W_L(C) = L!·P_L(C)`` for every ``L ≤ length``: integers, so the tables need no Fractions.

    From the recursion of :func:`segment_distributions`, ``W_L(C) = Σ_{x ∈ C} (L−1)!/(a!·b!)·
    W_a(C_left)·W_b(C_right)``, and ``(L−1)!/(a!·b!)`` is an integer because ``a + b ≤ L − 1``
    (a multinomial coefficient times a factorial). Integer arithmetic is several times faster
    than :class:`~fractions.Fraction` (no gcd per operation).
    """
    if segment_set_counts(length, min_distance, MAX_ENUMERATED_SETS) is None:
        raise ParameterError(
            f"runs of up to {length} free positions hold more than {MAX_ENUMERATED_SETS} maximal "
            "chaff sets: exact chaff distributions need a smaller universe or a larger min_distance"
        )
    d = min_distance
    factorial = [math.factorial(i) for i in range(length + 1)]
    tables: list[dict[Chaff, int]] = [{(): 1}]
    for run in range(1, length + 1):
        weights: dict[Chaff, int] = {}
        for x in range(run):
            a, b = max(0, x - d), max(0, run - x - d - 1)
            ways = factorial[run - 1] // (factorial[a] * factorial[b])
            start = x + d + 1
            for left_set, left_w in tables[a].items():
                head, scaled = (*left_set, x), left_w * ways
                for right_set, right_w in tables[b].items():
                    chaff = head + tuple(start + y for y in right_set)
                    weights[chaff] = weights.get(chaff, 0) + scaled * right_w
        tables.append(weights)
    return tuple(tables)


def segment_distributions(length: int, min_distance: int) -> tuple[dict[Chaff, Fraction], ...]:
    """``P_L`` for every run length ``L = 0 … length``: final chaff set → exact probability.

    ``P_L(C)`` is the probability that the random sequential fill of ``L`` free positions
    (``0 … L−1``; a point at ``x`` blocks ``[x−d, x+d]``) ends with the set ``C``:
    ``P_0(∅) = 1`` and ``P_L(C) = (1/L)·Σ_{x ∈ C} P_a(C ∩ [0, a))·P_b(C ∩ [x+d+1, L) shifted)``
    with ``a = max(0, x−d)``, ``b = max(0, L−x−d−1)``: the first point picked is any of the
    ``L`` positions, and the two runs it leaves fill independently (module doc). Every maximal
    set of the run appears, with positive probability; the table of ``L`` has ``c(L)`` entries
    (:func:`segment_set_counts`). Computed as integers ``L!·P_L`` and returned as Fractions.
    Refuses (``ParameterError``) runs holding more than :data:`MAX_ENUMERATED_SETS` sets in all.

    >>> segment_distributions(3, 1)[3]
    {(0, 2): Fraction(2, 3), (1,): Fraction(1, 3)}
    """
    return tuple(
        {chaff: _fractions.Fraction(w, math.factorial(run)) for chaff, w in table.items()}
        for run, table in enumerate(_segment_weights(length, min_distance))
    )


def fill_by_orders(universe: int, min_distance: int, secret: Iterable[int]) -> dict[Chaff, Fraction]:
    """Brute-force reference: the chaff distribution by following the fill step by step.

    The state is the set chosen so far (a bitmask, memoised); from it every free position is
    picked with probability ``1/#free``. Exponential in the universe, so limited to
    :data:`MAX_ENUMERATED_UNIVERSE`; the tests check :func:`segment_distributions` (through
    :meth:`ChaffPointSketch.exact_randomness_space`) against it on every small case.
    """
    n = check_int("universe", universe, 2, MAX_ENUMERATED_UNIVERSE)
    d = check_int("min_distance", min_distance, 1, n - 1)
    points = [int(x) for x in secret]
    memo: dict[int, dict[int, Fraction]] = {}

    def block(x: int) -> int:
        lo = max(0, x - d)
        return ((1 << (min(n - 1, x + d) - lo + 1)) - 1) << lo

    def finals(chosen: int, free: int) -> dict[int, Fraction]:
        if chosen in memo:
            return memo[chosen]
        if free == 0:
            memo[chosen] = {chosen: _fractions.Fraction(1)}
            return memo[chosen]
        options = [x for x in range(n) if free >> x & 1]
        out: dict[int, Fraction] = {}
        for x in options:
            for final, p in finals(chosen | 1 << x, free & ~block(x)).items():
                out[final] = out.get(final, 0) + p / len(options)
        memo[chosen] = out
        return out

    start = sum(1 << x for x in points)
    free = (1 << n) - 1
    for x in points:
        free &= ~block(x)
    return {tuple(x for x in range(n) if (final & ~start) >> x & 1): p for final, p in finals(start, free).items()}


#: Largest universe of positions.
MAX_UNIVERSE = 1 << 20

#: The parameters and their limits.
PARAMETERS = ParameterSpec.of(
    Parameter("universe", "int", "positions [0, universe)", low=2, high=MAX_UNIVERSE),
    Parameter(
        "min_distance",
        "int",
        "every two points (genuine or chaff) are more than min_distance apart; tolerance min_distance // 2",
        low=1,
        high=MAX_UNIVERSE - 1,
    ),
    Parameter(
        "points",
        "int",
        "genuine points: (points - 1)(min_distance + 1) < universe",
        low=1,
        high=MAX_UNIVERSE,
        required=False,
        default=1,
    ),
)


class ChaffPointSketch(SecureSketch[ElementSet | SupportsIndex, ElementSet | SupportsIndex]):
    """Genuine points hidden among random chaff in ``[0, universe)``; ``points`` genuine ones."""

    # Not (yet) covered by the service or the error-rate evaluation: no sweep, no attacks.
    descriptor = SchemeDescriptor(
        name="chaff-point",
        sample_kind="set",
        summary="genuine points of [0, universe) hidden among random chaff, all more than min_distance apart: "
        "each sample value goes to its nearest point, the genuine one when within min_distance // 2",
        parameters=PARAMETERS,
        example=({"universe": 64, "min_distance": 4, "points": 2}, [[10, 40]], [11, 39]),
    )

    def __init__(self, universe: int, min_distance: int, points: int = 1) -> None:
        self.universe = check_int("universe", universe, 2, MAX_UNIVERSE)
        self.min_distance = check_int("min_distance", min_distance, 1, self.universe - 1)
        self.points = check_int("points", points, 1, self.universe)
        if (self.points - 1) * (self.min_distance + 1) >= self.universe:
            raise ParameterError(
                f"{self.points} points cannot be more than {self.min_distance} apart in {self.universe}"
            )
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
    def _continuations(self) -> array[int]:
        """``f[p]``, the number of maximal continuations of a set whose last point is ``p``.

        Signed 64-bit slots (8 bytes a position) whose indexing yields exact Python ints, which
        is what rank/unrank add and compare.
        """
        from array import array  # start-up: loaded at first use; the module costs about 0.3 ms at import

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

    # -- secrets ------------------------------------------------------------------------------------
    def check_secret(self, secret: Any) -> np.ndarray:
        """The genuine points, sorted: one integer (``points = 1``) or any collection of them."""
        s = as_element_set(secret, 0, self.universe, max_size=self.points, name="secret", allow_scalar=True)
        if s.shape[0] != self.points:
            raise SampleError(
                f"secret must have {self.points} points (the sketch's points parameter), got {s.shape[0]}"
            )
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
                yield from extend([*prefix, p])

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
        chaff: list[int] = []
        d = self.min_distance
        while True:
            candidates = np.flatnonzero(free)
            if candidates.size == 0:
                return tuple(sorted(chaff))
            x = int(candidates[_secrets.randbelow(candidates.size)])
            chaff.append(x)
            free[max(0, x - d) : x + d + 1] = False

    def _runs(self, secret: Iterable[int]) -> list[tuple[int, int]]:
        """``(first position, length)`` of the free runs around the (sorted) secret points."""
        d, n = self.min_distance, self.universe
        runs, start = [], 0
        for x in secret:
            runs.append((start, max(0, int(x) - d - start)))
            start = int(x) + d + 1
        runs.append((start, max(0, n - start)))
        return [(first, length) for first, length in runs if length > 0]

    def exact_randomness_space(self, secret: Any) -> list[tuple[Chaff, Fraction]]:
        """Every chaff set the fill can produce for ``secret``, with its exact probability.

        The product of the secret's free runs' tables (:func:`segment_distributions`), listed in
        the order of the sets' bitmasks. ``ParameterError`` beyond :data:`MAX_ENUMERATED_CHAFF`
        sets or :data:`MAX_ENUMERATED_SETS` table entries.
        """
        secret = self.check_secret(secret)
        runs = self._runs(secret.tolist())
        longest = max((length for _, length in runs), default=0)
        counts = segment_set_counts(longest, self.min_distance, MAX_ENUMERATED_SETS)
        if counts is not None and math.prod(counts[length] for _, length in runs) > MAX_ENUMERATED_CHAFF:
            counts = None
        if counts is None:
            raise ParameterError(
                f"too many chaff sets to enumerate for universe {self.universe} and min_distance "
                f"{self.min_distance}: use a smaller universe or a larger min_distance"
            )
        tables = _segment_weights(longest, self.min_distance)
        space: list[tuple[Chaff, int]] = [((), 1)]
        for first, length in runs:
            space = [
                (chaff + tuple(first + y for y in part), w * v)
                for chaff, w in space
                for part, v in tables[length].items()
            ]
        scale = math.prod(math.factorial(length) for _, length in runs)
        return [
            (chaff, _fractions.Fraction(w, scale))
            for chaff, w in sorted(space, key=lambda item: sum(1 << x for x in item[0]))
        ]

    def randomness_space(self, secret: Any) -> list[tuple[Chaff, float]]:
        """Every chaff set the fill can produce for ``secret``, with its probability (as a float).

        :meth:`exact_randomness_space` with the probabilities rounded to floats, for
        :func:`sketchauth.entropy.exact_joint` and the guessing simulation.
        """
        return [(chaff, float(p)) for chaff, p in self.exact_randomness_space(secret)]

    def sketch_distribution(self) -> dict[int, Fraction]:
        """Exact probability of every possible sketch (by rank) for a uniformly random secret.

        ``Pr[S = s] = (1/#secrets)·Σ_{secret ⊆ s} Pr[chaff = s \\ secret | secret]`` over
        :meth:`secret_space`; ranks that no secret produces are absent (probability 0). The
        distribution a key-guessing attacker exploits (:func:`sketchauth.evaluate.guessing`).
        """
        secrets_list = list(self.secret_space())
        if len(secrets_list) > MAX_ENUMERATED_CHAFF:
            raise ParameterError(f"{len(secrets_list)} secrets are too many to enumerate")
        share = _fractions.Fraction(1, len(secrets_list))
        out: dict[int, Fraction] = {}
        for secret in secrets_list:
            for chaff, p in self.exact_randomness_space(secret):
                rank = self.rank(sorted(chaff + tuple(int(x) for x in secret)))
                out[rank] = out.get(rank, 0) + p * share
        return out

    # -- ranking ------------------------------------------------------------------------------------
    def rank(self, points: Iterable[int]) -> int:
        """Lexicographic rank of a maximal set among all ``sketch_count`` of them."""
        pts = [int(x) for x in points]
        self._check_maximal(pts)
        f, d = self._continuations, self.min_distance
        r = sum(f[q] for q in range(0, pts[0]))
        for prev, cur in itertools.pairwise(pts):
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
        """``(H∞(R), log2 of the largest support)`` over every secret, or ``None`` (too large).

        With ``M_L = max P_L`` and ``c(L)`` the size of the table of a run of length ``L``, a
        secret's chaff has min-entropy ``−Σ_runs log2 M_L`` and support ``Π_runs c(L)``; the
        worst secret is found by a max-product over secret positions (:meth:`_best_secret`),
        never by listing secrets × chaff sets.
        """
        n, d = self.universe, self.min_distance
        if segment_set_counts(n, d, MAX_ENUMERATED_SETS) is None:
            return None
        tables = _segment_weights(n, d)
        peak = [_fractions.Fraction(max(t.values()), math.factorial(run)) for run, t in enumerate(tables)]
        size = [_fractions.Fraction(len(t)) for t in tables]
        top = self._best_secret(peak)
        widest = self._best_secret(size)
        return -_log2_fraction(top), _log2_fraction(widest)

    def _best_secret(self, weight: list[Fraction]) -> Fraction:
        """``max`` over secrets of ``Π_runs weight[run length]`` (max-product over positions).

        ``best[x]`` is the largest product over the runs left of the latest point ``x``; the next
        point ``y ≥ x + d + 1`` adds the run of length ``max(0, y − x − 2d − 1)``; the last point
        closes with the run of length ``max(0, n − x − d − 1)``.
        """
        n, d = self.universe, self.min_distance
        best = {x: weight[max(0, x - d)] for x in range(n)}
        for _ in range(self.points - 1):
            best = {
                y: max(best[x] * weight[max(0, y - x - 2 * d - 1)] for x in best if x + d < y)
                for y in range(n)
                if any(x + d < y for x in best)
            }
        return max(best[x] * weight[max(0, n - x - d - 1)] for x in best)

    def report(self) -> EntropyReport:
        exact, support = self._exact_randomness or (None, None)
        sketch_bits = math.log2(self.sketch_count)
        notes = [f"{self.sketch_count} maximal sets: |S| = log2 N exactly; the payload is the rank"]
        if exact is None:
            notes.append(
                f"H(R) >= 0 is the trivial bound (the exact chaff tables would exceed {MAX_ENUMERATED_SETS} sets)"
            )
        else:
            notes.append("H(R) = min over secrets of the exact min-entropy of the chaff set (run tables)")
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


def _log2_fraction(x: Fraction) -> float:
    """``log2`` of a positive fraction without overflowing floats (numerator and denominator apart)."""
    return math.log2(x.numerator) - math.log2(x.denominator)
