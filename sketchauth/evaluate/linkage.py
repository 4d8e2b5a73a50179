"""Linkage of asymmetric interval sketches: are two sketches from one person? (Fang's thesis §6.2)

A person's tolerances ``v`` are stable across enrolments, so the s1 sketch, which stores ``v`` in
clear, links two enrolments of one person; s2 hides ``v`` among random gaps. This module measures
that by simulation, with the adversaries of Fang's thesis §6.2:

* **s1**: compare the published tolerances. Score = number of features with ``|v − v'| < τ``.
* **s2**: count *similar intervals* — ``(c0, c1)`` and ``(c0', c1')`` are similar iff
  ``|(c1 − c0) − (c1' − c0')| < 2τ`` and ``|(c0 + c1)/2 − (c0' + c1')/2| < τ`` — over every pair of
  intervals of the two partitions (summed over features).

* **s3** (s2 with odd decoy gaps, :mod:`sketchauth.sketches.asymmetric`): the same similar-interval
  count. s3's odd intervals have half-integer centres, so its batches hold doubled centres and
  lengths (:class:`PartitionBatch` ``doubled``) and the same test is made on twice the quantities;
  at ``τ = 1`` an odd interval is then similar to an even one whose length differs by one and
  whose centre by ½, exactly as the definition reads.

Further adversaries for s2 and s3 (``adversary=``, :data:`ADVERSARIES`):

* ``parity``: per feature, the parity shared by most lower ends of the even-length intervals
  (:func:`parity_bits`; for s2 this is exactly the parity of ``b − v``); score = number of
  features whose bits agree (:func:`parity_linkage_score`). Measured with identical
  re-enrolments at 8 features, n = 1000, q = 5: s2 0.998, s3 0.514;
* ``similar-even-intervals``: the similar-interval count restricted to even-length intervals (the
  possible secret ones); the same as ``similar-intervals`` for s2, stronger against s3.

Every adversary declares "mated" when the score reaches a threshold; the result reports the
threshold with the best accuracy ``(#mated ≥ t + #non-mated < t) / (2·pairs)``.

**Population model** (simulation only: a seeded :class:`numpy.random.Generator`, never used for
real sketches). Per person and feature: ``b`` uniform in ``[0, n)``, ``v`` uniform in ``[1, q]``.
How the second enrolment moves ``(b, v)`` is a :class:`ReenrolmentNoise`, separate from the
adversary's similarity ``τ``:

* ``tied`` (the default, and the only model before the two were separated): the noise is bounded
  by ``τ`` itself — ``v' = clip(v + e_v, 1, q)`` with ``e_v`` uniform on ``{−(τ−1), …, τ−1}`` and
  ``b' = clip(b + e_b, 0, n − 1)`` with ``e_b`` uniform on ``{−m, …, m}``, ``m = min(τ, v) − 1``;
  at ``τ = 1`` it is ``identical``;
* ``identical``: ``b' = b``, ``v' = v`` (the same template enrolled twice);
* ``steps``: ``Δb`` and ``Δv`` independent and uniform on given sets, e.g. ``±1`` on ``b``
  (:meth:`ReenrolmentNoise.b_plus_minus`) or on ``v`` (:meth:`ReenrolmentNoise.v_plus_minus`);
* ``within-tolerance``: ``b'`` uniform on ``{b − (v−1), …, b + (v−1)}`` (any value the first
  sketch accepts), ``v' = v`` — Fang's "noisy second enrolment" as this project reads it;
* ``empirical``: ``(Δb, Δv)`` drawn jointly from movements measured on real data (two
  enrolments of the same identities from disjoint captures, :meth:`ReenrolmentNoise.from_enrolments`).

Moved values are clipped to ``[0, n)`` and ``[1, q]``. A mated pair is (first enrolment, second
enrolment) of one person; a non-mated pair is the first enrolment of person ``i`` and the second
enrolment of person ``i + 1`` of the same chunk (cyclically): another, independently drawn person.
Every sketch is one encoding with its own fresh randomness; a sketch may serve in one mated and
one non-mated pair.

Why the model matters: every s2 gap is even, so every boundary has the parity of ``b − v``. Any
re-enrolment that keeps ``b − v`` (``identical``, or ``b`` and ``v`` moving together) keeps that
bit in every feature, and the similar-interval adversary links one feature with accuracy ≥ 0.75
at ``τ = 1`` (the genuine interval recurs exactly, plus the parity); a move of ``b`` alone
breaks it (measured by ``sketchauth reproduce``). s3 removes the parity; what remains is the
exact recurrence of the secret interval, which adds up over features (``benchmarks/bench_linkage.py``).

**Vectorised s2 encoder.** :func:`s2_partitions_from_draws` builds the partitions of many
``(b, v)`` at once from a matrix of iid draws in ``[1, q]``; each row consumes its draws left side
first (from ``b − v`` outwards) and then right side, exactly as
:class:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch` does, so the partition has the
same distribution as the real encoder's (the tests check this exactly on small cases, and check
scores computed from real helpers against the vectorised path). :func:`s2_similar_interval_counts`
counts similar intervals of many partition pairs through an occupancy grid, no per-pair loop.

Example::

    >>> result = linkage_experiment(LinkageSetup("s1", n=1000, q=16, tau=2), pairs=2000, seed=1)
    >>> round(result.accuracy, 2) > 0.85
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.sketches.asymmetric import expected_draw_columns, gap_draw_split, gap_of_codes, s2_draw_split
from sketchauth.sketches.params import check_int

__all__ = [
    "ADVERSARIES",
    "CHUNK_CELLS",
    "DEFAULT_CHUNK_ROWS",
    "GRID_CELLS",
    "LINKAGE_SCHEMES",
    "NOISE_KINDS",
    "LinkageResult",
    "LinkageSetup",
    "PartitionBatch",
    "ReenrolmentNoise",
    "best_threshold",
    "check_linkage_arguments",
    "histogram_plot",
    "linkage_experiment",
    "parity_bits",
    "parity_linkage_score",
    "partition_parity_bits",
    "s1_linkage_score",
    "s2_partitions_from_draws",
    "s2_similar_interval_counts",
    "s2_similar_intervals",
    "s3_partitions_from_draws",
    "similar_even_intervals",
    "simulate_enrolments",
    "simulate_s2_partitions",
]

#: Rows (pairs × features) simulated per chunk: bounds memory to a few hundred MB at n = 1000.
DEFAULT_CHUNK_ROWS = 50_000
#: Cells (rows × draws) of one chunk's partition matrices: a few hundred MB in all.
CHUNK_CELLS = 5_000_000
#: Upper bound on the number of pairs of one experiment.
MAX_PAIRS = 10**8
#: Schemes the linkage adversaries of this module attack.
LINKAGE_SCHEMES = ("s1", "s2", "s3")
#: Adversaries per scheme (the first is the default): module doc.
ADVERSARIES: dict[str, tuple[str, ...]] = {
    "s1": ("tolerances",),
    "s2": ("similar-intervals", "parity", "similar-even-intervals"),
    "s3": ("similar-intervals", "parity", "similar-even-intervals"),
}
#: Re-enrolment noise models (:class:`ReenrolmentNoise`).
NOISE_KINDS = ("tied", "identical", "steps", "within-tolerance", "empirical")
#: Largest number of measured movements an empirical noise model keeps.
MAX_EMPIRICAL_ROWS = 10**7


# -- adversaries' scores ---------------------------------------------------------------------------
def s1_linkage_score(v_a: Any, v_b: Any, tau: int) -> np.ndarray:
    """s1 adversary: number of features whose published tolerances differ by less than ``τ``.

    ``v_a`` and ``v_b`` are arrays of shape ``(..., features)``; the score has shape ``(...)``.
    """
    v_a, v_b = np.asarray(v_a, dtype=np.int64), np.asarray(v_b, dtype=np.int64)
    return cast("np.ndarray", (np.abs(v_a - v_b) < tau).sum(axis=-1))


def _as_partitions(points: Any) -> list[np.ndarray]:
    if isinstance(points, np.ndarray) and points.ndim == 1:
        return [points.astype(np.int64)]
    return [np.asarray(p, dtype=np.int64) for p in points]


def s2_similar_intervals(points_a: Any, points_b: Any, tau: int, *, even_only: bool = False) -> int:
    """s2 adversary's score for two sketches: the number of similar interval pairs (reference).

    ``points_a``/``points_b``: one partition (the points ``g_1 < … < g_k``) or a sequence of
    them, one per feature, e.g. ``AsymmetricIntervalSketch.partition(helper)``. Intervals
    ``(c0, c1)`` and ``(c0', c1')`` are similar iff ``|(c1−c0) − (c1'−c0')| < 2τ`` and
    ``|(c0+c1)/2 − (c0'+c1')/2| < τ``. ``even_only``: only intervals of even length in both
    partitions (the possible secret ones: the ``similar-even-intervals`` adversary). Plain
    broadcasting per feature: the readable reference for :func:`s2_similar_interval_counts`, and
    the form the attacks on real helpers use.
    """
    parts_a, parts_b = _as_partitions(points_a), _as_partitions(points_b)
    if len(parts_a) != len(parts_b):
        raise ParameterError(f"{len(parts_a)} features against {len(parts_b)}")
    total = 0
    for pa, pb in zip(parts_a, parts_b, strict=False):
        width_a, width_b = np.diff(pa), np.diff(pb)
        # Compare doubled centres (c0 + c1) so everything stays an integer.
        mid_a, mid_b = pa[:-1] + pa[1:], pb[:-1] + pb[1:]
        if even_only:
            keep_a, keep_b = width_a % 2 == 0, width_b % 2 == 0
            width_a, mid_a, width_b, mid_b = width_a[keep_a], mid_a[keep_a], width_b[keep_b], mid_b[keep_b]
        close_width = np.abs(width_a[:, None] - width_b[None, :]) < 2 * tau
        close_centre = np.abs(mid_a[:, None] - mid_b[None, :]) < 2 * tau
        total += int(np.count_nonzero(close_width & close_centre))
    return total


@dataclass(frozen=True, slots=True, eq=False)
class PartitionBatch:
    """Many s2 partitions (one per row), as their intervals.

    ``centres[i, j]`` and ``halves[i, j]`` (half-width: ``v`` or a drawn ``r``) for
    ``j < counts[i]``: column 0 is the secret interval, column ``t + 1`` the interval of draw ``t``;
    later columns are padding. Centres are integers (all s2 gaps are even). The columns are not in
    the order of the line; :meth:`points` sorts one row.

    ``doubled`` (s3, whose odd gaps have half-integer centres): the two arrays hold *twice* the
    centre, ``c0 + c1``, and *twice* the half-width, the length ``c1 − c0``; every comparison is
    then made on the doubled values.
    """

    centres: np.ndarray
    halves: np.ndarray
    counts: np.ndarray
    doubled: bool = False

    @property
    def rows(self) -> int:
        return int(self.counts.shape[0])

    def points(self, row: int) -> np.ndarray:
        """The points ``g_1 < … < g_k`` of one row (what the helper data publishes)."""
        c = self.centres[row, : self.counts[row]].astype(np.int64)
        h = self.halves[row, : self.counts[row]].astype(np.int64)
        order = np.argsort(c)
        c, h = c[order], h[order]
        if self.doubled:
            return np.concatenate(([(c[0] - h[0]) // 2], (c + h) // 2))
        return np.concatenate(([c[0] - h[0]], c + h))

    def valid(self) -> np.ndarray:
        """Mask of the real (non-padding) entries."""
        return np.arange(self.centres.shape[1])[None, :] < self.counts[:, None]


#: Cells of the occupancy grid of :func:`s2_similar_interval_counts` per block of rows (bytes ×
#: cell width): bounds its memory whatever ``n`` is.
GRID_CELLS = 1 << 26


def s2_similar_interval_counts(
    a: PartitionBatch, b: PartitionBatch, tau: int, *, even_only: bool = False
) -> np.ndarray:
    """Similar-interval counts of row ``i`` of ``a`` against row ``i`` of ``b``, all rows at once.

    Works on s2 and s3 batches alike (s3's are ``doubled``). ``even_only``: count only intervals
    of even length in both partitions — the ones that can be the secret ``(b − v, b + v)``; the
    same count for s2, whose intervals are all even.

    The intervals of ``b`` are written into an occupancy grid indexed by (row, centre) holding
    their half-widths (centres of one partition are distinct, so nothing collides); each interval
    of ``a`` then reads the ``2τ − 1`` cells of its row at centres ``c − (τ−1) … c + (τ−1)`` and
    counts those whose half-width differs from its own by less than ``τ`` (``|w − w'| < 2τ``).
    Cost ``O(intervals·τ)`` with no per-pair loop; rows are processed in blocks of at most
    :data:`GRID_CELLS` cells.
    """
    if a.rows != b.rows:
        raise ParameterError(f"batches differ in rows: {a.rows} vs {b.rows}")
    if a.doubled != b.doubled:
        raise ParameterError("cannot compare a doubled (s3) batch with a plain (s2) one")
    valid_a, valid_b = a.valid(), b.valid()
    if a.rows == 0:
        return np.zeros(0, dtype=np.int64)
    if even_only:
        # Only possible secret intervals: even length (2·half for a plain batch, always even).
        valid_a = valid_a & ((a.halves % 2 == 0) if a.doubled else True)
        valid_b = valid_b & ((b.halves % 2 == 0) if b.doubled else True)
        if not (valid_a.any() and valid_b.any()):
            return np.zeros(a.rows, dtype=np.int64)
    # Doubled values: |2c − 2c'| < 2τ and |w − w'| < 2τ, the same test on twice the quantities.
    tol = 2 * tau if a.doubled else tau
    low = int(min(a.centres[valid_a].min(), b.centres[valid_b].min()))
    high = int(max(a.centres[valid_a].max(), b.centres[valid_b].max()))
    width = high - low + 2 * tol - 1
    block = max(1, GRID_CELLS // width)
    top = int(max(a.halves[valid_a].max(), b.halves[valid_b].max()))
    cell = np.uint8 if top < 256 else np.uint32
    counts = np.empty(a.rows, dtype=np.int64)
    for first in range(0, a.rows, block):
        rows = slice(first, min(first + block, a.rows))
        first_rows = (a.centres[rows], a.halves[rows], valid_a[rows])
        second_rows = (b.centres[rows], b.halves[rows], valid_b[rows])
        counts[rows] = _grid_counts(first_rows, second_rows, _Grid(low - (tol - 1), width, tol, cell))
    return counts


@dataclass(frozen=True, slots=True)
class _Grid:
    """One row of cells per pair, ``width`` wide from ``origin``; ``tau`` the similarity; ``cell`` the dtype."""

    origin: int
    width: int
    tau: int
    cell: type


#: ``(centres, halves, valid)`` of one batch's rows.
_Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def _grid_counts(first: _Rows, second: _Rows, g: _Grid) -> np.ndarray:
    """Per row, the similar interval pairs: ``second``'s intervals on a grid, ``first``'s looked up."""
    (centres_a, halves_a, valid_a), (centres_b, halves_b, valid_b) = first, second
    origin, width, tau, cell = g.origin, g.width, g.tau, g.cell
    rows = centres_a.shape[0]
    base = np.arange(rows, dtype=np.int64)[:, None] * width - origin
    grid = np.zeros(rows * width, dtype=cell)  # 0 = no interval centred here (halves are >= 1)
    grid[(centres_b + base)[valid_b]] = halves_b[valid_b]
    where = (centres_a + base)[valid_a]
    own = halves_a[valid_a].astype(np.int32)
    similar = np.zeros(where.shape[0], dtype=np.int32)
    for delta in range(-(tau - 1), tau):
        other = grid[where + delta].astype(np.int32)
        similar += (other > 0) & (np.abs(other - own) < tau)
    row_of = np.broadcast_to(np.arange(rows)[:, None], valid_a.shape)[valid_a]
    return np.bincount(row_of, weights=similar, minlength=rows).astype(np.int64)


# -- vectorised s2 encoder (simulation) -----------------------------------------------------------
def s2_partitions_from_draws(
    b: np.ndarray, v: np.ndarray, n: int, draws: np.ndarray
) -> tuple[PartitionBatch, np.ndarray]:
    """s2 partitions of rows ``(b[i], v[i])`` built from ``draws[i, :]`` (iid in ``[1, q]``).

    Row ``i`` uses its draws in order: first those inserted left of ``b − v`` (while the lowest
    point is ``> 0``: draw ``t`` is used iff ``2·Σ_{s<t} r_s < b − v``), then those inserted right
    of ``b + v`` (while the highest is ``< n``) — the order of
    :meth:`AsymmetricIntervalSketch.draw_randomness`, through the same
    :func:`~sketchauth.sketches.asymmetric.s2_draw_split`. Returns the batch and a boolean ``short``
    per row: ``True`` where the row ran out of draws (that row's output is unusable and must be
    rebuilt from *more* draws with the same prefix).
    """
    rows, width = draws.shape
    draws = draws.astype(np.int32)
    b, v = b.astype(np.int32), v.astype(np.int32)
    left, used, short, before = s2_draw_split(b, v, n, draws)
    t = np.arange(width, dtype=np.int32)[None, :]
    at_left = np.take_along_axis(before, left[:, None], axis=1)
    from_right = 2 * (before[:, :width] - at_left)
    need_left = (b - v)[:, None]
    centres = np.empty((rows, width + 1), dtype=np.int32)
    centres[:, 0] = b
    # Left draw t spans [b−v−2·before[t+1], b−v−2·before[t]]; right draw t starts at b+v+from_right.
    centres[:, 1:] = np.where(
        t < left[:, None],
        need_left - 2 * before[:, :width] - draws,
        (b + v)[:, None] + from_right + draws,
    )
    halves = np.empty((rows, width + 1), dtype=np.int32)
    halves[:, 0] = v
    halves[:, 1:] = draws
    return PartitionBatch(centres=centres, halves=halves, counts=(used + 1).astype(np.int64)), short


def s3_partitions_from_draws(
    b: np.ndarray, v: np.ndarray, n: int, q: int, draws: np.ndarray
) -> tuple[PartitionBatch, np.ndarray]:
    """s3 partitions of rows ``(b[i], v[i])`` from ``draws[i, :]`` (iid in ``[1, q + 1]``), doubled.

    Draw ``r`` is the gap ``2r`` (``r ≤ q``) or the odd length ``o`` (``r = q + 1``), consumed in
    the encoder's order (:func:`~sketchauth.sketches.asymmetric.gap_draw_split`). The batch holds
    twice each centre and each interval's length (:class:`PartitionBatch` ``doubled``).
    """
    rows, width = draws.shape
    b, v = b.astype(np.int64), v.astype(np.int64)
    gaps = gap_of_codes(draws.astype(np.int64) - 1, q)
    left, used, short, before = gap_draw_split(b, v, n, gaps)
    t = np.arange(width)[None, :]
    at_left = np.take_along_axis(before, left[:, None], axis=1)
    from_right = before[:, :width] - at_left
    centres = np.empty((rows, width + 1), dtype=np.int64)
    centres[:, 0] = 2 * b
    # Left gap t spans [b−v−before[t+1], b−v−before[t]]; right gap t starts at b+v+from_right[t].
    centres[:, 1:] = np.where(
        t < left[:, None],
        2 * (b - v)[:, None] - 2 * before[:, :width] - gaps,
        2 * (b + v)[:, None] + 2 * from_right + gaps,
    )
    halves = np.empty((rows, width + 1), dtype=np.int64)
    halves[:, 0] = 2 * v
    halves[:, 1:] = gaps
    batch = PartitionBatch(centres=centres, halves=halves, counts=(used + 1).astype(np.int64), doubled=True)
    return batch, short


def simulate_s2_partitions(
    rng: np.random.Generator, b: np.ndarray, v: np.ndarray, n: int, q: int, scheme: str = "s2"
) -> PartitionBatch:
    """Fresh s2 (or s3) partitions of the rows ``(b[i], v[i])``, distributed as the real encoder's.

    Rows that run out of draws (rare) get further draws appended to the ones they already used,
    so no row's draws are ever re-sampled (that would bias the lengths).
    """
    top = q + 1 if scheme == "s3" else q

    def build(bb: np.ndarray, vv: np.ndarray, dd: np.ndarray) -> tuple[PartitionBatch, np.ndarray]:
        if scheme == "s3":
            return s3_partitions_from_draws(bb, vv, n, q, dd)
        return s2_partitions_from_draws(bb, vv, n, dd)

    draws = rng.integers(1, top + 1, size=(b.shape[0], expected_draw_columns(n, q)), dtype=np.int32)
    batch, short = build(b, v, draws)
    while np.any(short):
        rows = np.flatnonzero(short)
        more = rng.integers(1, top + 1, size=(rows.size, draws.shape[1]), dtype=np.int32)
        extended = np.concatenate((draws[rows], more), axis=1)
        fixed, still_short = build(b[rows], v[rows], extended)
        batch = _merge_rows(batch, rows, fixed)
        draws = _pad_columns(draws, extended.shape[1])
        draws[rows] = extended
        short = np.zeros_like(short)
        short[rows] = still_short
    return batch


def _pad_columns(x: np.ndarray, width: int) -> np.ndarray:
    if x.shape[1] >= width:
        return x
    pad = np.zeros((x.shape[0], width - x.shape[1]), dtype=x.dtype)
    return np.concatenate((x, pad), axis=1)


def _merge_rows(batch: PartitionBatch, rows: np.ndarray, fixed: PartitionBatch) -> PartitionBatch:
    width = max(batch.centres.shape[1], fixed.centres.shape[1])
    centres = _pad_columns(batch.centres, width)
    halves = _pad_columns(batch.halves, width)
    centres[rows] = _pad_columns(fixed.centres, width)
    halves[rows] = _pad_columns(fixed.halves, width)
    counts = batch.counts.copy()
    counts[rows] = fixed.counts
    return PartitionBatch(centres=centres, halves=halves, counts=counts, doubled=batch.doubled)


# -- the parity adversary ----------------------------------------------------------------------------
def parity_bits(batch: PartitionBatch) -> np.ndarray:
    """Per row, the parity shared by most lower ends of its even-length intervals (ties: even).

    The even-length intervals are the ones that can be the secret ``(b − v, b + v)``. Every s2
    boundary has the parity of ``b − v``, so for s2 this is that bit exactly; for s3 the decoys'
    boundaries take both parities (module doc).
    """
    valid = batch.valid()
    if batch.doubled:
        lower = (batch.centres - batch.halves) // 2
        valid = valid & (batch.halves % 2 == 0)
    else:
        lower = batch.centres - batch.halves
    odd = ((lower % 2 == 1) & valid).sum(axis=1)
    even = ((lower % 2 == 0) & valid).sum(axis=1)
    return cast("np.ndarray", (odd > even).astype(np.int64))


def similar_even_intervals(parts_a: Sequence[np.ndarray], parts_b: Sequence[np.ndarray], tau: int) -> int:
    """The ``similar-even-intervals`` score of two real partitions: :func:`s2_similar_intervals` with ``even_only``."""
    return s2_similar_intervals(parts_a, parts_b, tau, even_only=True)


def partition_parity_bits(parts: Sequence[np.ndarray]) -> np.ndarray:
    """:func:`parity_bits` of one real helper: per feature (one partition's points each), the
    parity shared by most lower ends of its even-length intervals (ties: even).

    >>> partition_parity_bits([np.array([1, 3, 5, 6])]).tolist()  # (1, 3), (3, 5) even: lower ends odd
    [1]
    """
    bits = []
    for p in parts:
        points = np.asarray(p, dtype=np.int64)
        lower = points[:-1][(points[1:] - points[:-1]) % 2 == 0]
        odd = int(np.count_nonzero(lower % 2 == 1))
        bits.append(int(odd > lower.size - odd))
    return np.array(bits, dtype=np.int64)


def parity_linkage_score(bits_a: Any, bits_b: Any) -> np.ndarray:
    """Parity adversary: the number of features whose parity bits (:func:`parity_bits`) agree.

    ``bits_a``/``bits_b`` have shape ``(..., features)``; the score has shape ``(...)``.
    """
    a, b = np.asarray(bits_a, dtype=np.int64), np.asarray(bits_b, dtype=np.int64)
    return cast("np.ndarray", (a == b).sum(axis=-1))


# -- population ------------------------------------------------------------------------------------
def _int_steps(name: str, steps: Sequence[int]) -> tuple[int, ...]:
    values = tuple(steps)
    if not values:
        raise ParameterError(f"{name} needs at least one step")
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise ParameterError(f"{name} must be integers, got {x!r}")
    return tuple(int(x) for x in values)


@dataclass(frozen=True, slots=True)
class ReenrolmentNoise:
    """How ``(b, v)`` moves between two enrolments of one person (module doc: the models).

    Build one with the named constructors; ``linkage_experiment(..., noise=...)`` applies it.
    Simulation only: it draws from the experiment's seeded generator.

    >>> ReenrolmentNoise.b_plus_minus().label
    'steps: b+{-1,1}, v+{0}'
    """

    kind: str = "tied"
    b_steps: tuple[int, ...] = (0,)
    v_steps: tuple[int, ...] = (0,)
    #: ``empirical``: the measured ``(Δb, Δv)`` rows.
    deltas: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in NOISE_KINDS:
            raise ParameterError(f"noise kind must be one of {', '.join(NOISE_KINDS)}, got {self.kind!r}")
        if self.kind == "empirical" and not self.deltas:
            raise ParameterError("an empirical noise model needs at least one measured (db, dv) row")

    @classmethod
    def tied(cls) -> ReenrolmentNoise:
        """The noise bounded by the adversary's ``τ`` (the historical default)."""
        return cls("tied")

    @classmethod
    def identical(cls) -> ReenrolmentNoise:
        """The same ``(b, v)`` enrolled twice."""
        return cls("identical")

    @classmethod
    def steps(cls, b: Sequence[int] = (0,), v: Sequence[int] = (0,)) -> ReenrolmentNoise:
        """``Δb`` uniform on ``b`` and, independently, ``Δv`` uniform on ``v``."""
        return cls("steps", _int_steps("b steps", b), _int_steps("v steps", v))

    @classmethod
    def b_plus_minus(cls, k: int = 1) -> ReenrolmentNoise:
        """``b`` moves by ``−k`` or ``+k`` (equally likely); ``v`` stays."""
        k = check_int("k", k, 1)
        return cls.steps(b=(-k, k))

    @classmethod
    def v_plus_minus(cls, k: int = 1) -> ReenrolmentNoise:
        """``v`` moves by ``−k`` or ``+k`` (equally likely, then clipped to ``[1, q]``); ``b`` stays."""
        k = check_int("k", k, 1)
        return cls.steps(v=(-k, k))

    @classmethod
    def within_tolerance(cls) -> ReenrolmentNoise:
        """``b'`` uniform among the values the first sketch accepts, ``|b' − b| < v``; ``v' = v``."""
        return cls("within-tolerance")

    @classmethod
    def empirical(cls, delta_b: Any, delta_v: Any) -> ReenrolmentNoise:
        """``(Δb, Δv)`` drawn jointly and uniformly from measured movements (equal-length arrays)."""
        db = np.asarray(delta_b).ravel()
        dv = np.asarray(delta_v).ravel()
        if db.shape != dv.shape or db.size == 0:
            raise ParameterError("delta_b and delta_v must be non-empty and of equal length")
        if db.size > MAX_EMPIRICAL_ROWS:
            raise ParameterError(f"at most {MAX_EMPIRICAL_ROWS} measured movements, got {db.size}")
        if not (np.issubdtype(db.dtype, np.integer) and np.issubdtype(dv.dtype, np.integer)):
            raise ParameterError("measured movements must be integer arrays (quantised templates)")
        return cls("empirical", deltas=tuple(zip(db.tolist(), dv.tolist(), strict=False)))

    @classmethod
    def from_enrolments(cls, first: tuple[Any, Any], second: tuple[Any, Any]) -> ReenrolmentNoise:
        """The empirical model of real re-enrolments: ``first = (b, v)`` and ``second = (b', v')``.

        Arrays of one identity's features (or of many identities, row for row), e.g. the
        templates :func:`sketchauth.templates.enrol_interval` derives from two disjoint sets of
        captures of the same people.
        """
        b1, v1 = (np.asarray(x) for x in first)
        b2, v2 = (np.asarray(x) for x in second)
        if not (b1.shape == v1.shape == b2.shape == v2.shape):
            raise ParameterError("the two enrolments must have the same shape")
        return cls.empirical(b2 - b1, v2 - v1)

    @property
    def label(self) -> str:
        """A short human-readable name of the model."""
        if self.kind == "steps":
            return f"steps: b+{_braced(self.b_steps)}, v+{_braced(self.v_steps)}"
        if self.kind == "empirical":
            return f"empirical: {len(self.deltas)} measured movements"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (an empirical model reports its size, not its rows)."""
        out: dict[str, Any] = {"kind": self.kind, "label": self.label}
        if self.kind == "steps":
            out.update(b_steps=list(self.b_steps), v_steps=list(self.v_steps))
        if self.kind == "empirical":
            out["measured_movements"] = len(self.deltas)
        return out

    def move(
        self, rng: np.random.Generator, b: np.ndarray, v: np.ndarray, n: int, q: int, tau: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The second enrolment ``(b', v')`` of the first enrolments ``(b, v)`` (clipped)."""
        shape = b.shape
        if self.kind == "tied":
            v2 = np.clip(v + rng.integers(-(tau - 1), tau, size=shape, dtype=np.int64), 1, q)
            reach = np.minimum(tau, v) - 1
            shift = np.floor(rng.random(shape) * (2 * reach + 1)).astype(np.int64) - reach
            return np.clip(b + shift, 0, n - 1), v2
        if self.kind == "identical":
            return b.copy(), v.copy()
        if self.kind == "within-tolerance":
            shift = np.floor(rng.random(shape) * (2 * v - 1)).astype(np.int64) - (v - 1)
            return np.clip(b + shift, 0, n - 1), v.copy()
        if self.kind == "steps":
            db = np.asarray(self.b_steps, dtype=np.int64)[rng.integers(0, len(self.b_steps), size=shape)]
            dv = np.asarray(self.v_steps, dtype=np.int64)[rng.integers(0, len(self.v_steps), size=shape)]
        else:
            rows = np.asarray(self.deltas, dtype=np.int64)[rng.integers(0, len(self.deltas), size=shape)]
            db, dv = rows[..., 0], rows[..., 1]
        return np.clip(b + db, 0, n - 1), np.clip(v + dv, 1, q)


def simulate_enrolments(
    rng: np.random.Generator,
    people: int,
    n: int,
    q: int,
    tau: int,
    features: int = 1,
    noise: ReenrolmentNoise | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(b, v, b', v')`` of ``people`` simulated persons enrolled twice (see the module doc).

    ``noise`` (default :meth:`ReenrolmentNoise.tied`) says how the second enrolment moves.
    """
    shape = (people, features)
    b = rng.integers(0, n, size=shape, dtype=np.int64)
    v = rng.integers(1, q + 1, size=shape, dtype=np.int64)
    b2, v2 = (noise or ReenrolmentNoise.tied()).move(rng, b, v, n, q, tau)
    return b, v, b2, v2


# -- the experiment --------------------------------------------------------------------------------
def best_threshold(mated: np.ndarray, nonmated: np.ndarray) -> tuple[int, float]:
    """The threshold ``t`` maximising ``(#mated ≥ t + #non-mated < t) / (#mated + #non-mated)``.

    Scores are non-negative integers; ties go to the smallest ``t``. Returns ``(t, accuracy)``.
    """
    top = int(max(mated.max(initial=0), nonmated.max(initial=0))) + 2
    mated_at_least = np.cumsum(np.bincount(mated, minlength=top)[::-1])[::-1]
    nonmated_below = np.concatenate(([0], np.cumsum(np.bincount(nonmated, minlength=top))[:-1]))
    correct = mated_at_least + nonmated_below
    t = int(np.argmax(correct))
    return t, float(correct[t]) / float(mated.size + nonmated.size)


@dataclass(frozen=True, slots=True, eq=False)
class LinkageResult:
    """Outcome of :func:`linkage_experiment`.

    ``threshold``: declare "mated" iff score ≥ threshold; ``accuracy`` its accuracy over the
    ``pairs`` mated and ``pairs`` non-mated comparisons; ``mated_scores``/``nonmated_scores`` the
    raw scores (int64), from which :meth:`histograms` and the unlinkability measures are built.
    """

    scheme: str
    n: int
    q: int
    tau: int
    pairs: int
    seed: int
    features: int
    accuracy: float
    threshold: int
    mated_scores: np.ndarray
    nonmated_scores: np.ndarray
    seconds: float
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    notes: tuple[str, ...] = field(default=())
    noise: ReenrolmentNoise = field(default_factory=ReenrolmentNoise.tied)
    adversary: str = ""

    def histograms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, mated counts, non-mated counts)`` on the common integer bins ``0 … max``."""
        top = int(max(self.mated_scores.max(initial=0), self.nonmated_scores.max(initial=0))) + 1
        return (
            np.arange(top),
            np.bincount(self.mated_scores, minlength=top),
            np.bincount(self.nonmated_scores, minlength=top),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: parameters, accuracy, threshold and the two score histograms."""
        scores, mated, nonmated = self.histograms()
        return {
            "scheme": self.scheme,
            "n": self.n,
            "q": self.q,
            "tau": self.tau,
            "pairs": self.pairs,
            "seed": self.seed,
            "features": self.features,
            "accuracy": self.accuracy,
            "threshold": self.threshold,
            "mated_mean_score": float(self.mated_scores.mean()),
            "nonmated_mean_score": float(self.nonmated_scores.mean()),
            "histogram": {
                "scores": scores.tolist(),
                "mated": mated.tolist(),
                "nonmated": nonmated.tolist(),
            },
            "seconds": round(self.seconds, 3),
            "chunk_rows": self.chunk_rows,
            "noise": self.noise.to_dict(),
            "adversary": self.adversary or ADVERSARIES[self.scheme][0],
            "notes": list(self.notes),
        }


def check_linkage_arguments(scheme: str, n: int, q: int, tau: int, pairs: int, seed: int, features: int = 1) -> None:
    """Raise ``ParameterError`` unless the arguments of :func:`linkage_experiment` are valid."""
    if scheme not in LINKAGE_SCHEMES:
        raise ParameterError(f"scheme must be one of {', '.join(LINKAGE_SCHEMES)}, got {scheme!r}")
    check_int("n", n, 2, 2**31)
    check_int("q", q, 2 if scheme == "s3" else 1, n)
    check_int("tau", tau, 1, 2**31)
    check_int("pairs", pairs, 2, MAX_PAIRS)
    check_int("seed", seed, 0)
    check_int("features", features, 1, 4096)


def _chunk_scores(rng: np.random.Generator, setup: LinkageSetup, people: int) -> tuple[np.ndarray, np.ndarray]:
    """Mated and non-mated scores of ``people`` pairs each (``setup``'s noise and adversary resolved)."""
    scheme, n, q, tau, features, adversary = setup.scheme, setup.n, setup.q, setup.tau, setup.features, setup.adversary
    noise = setup.noise or ReenrolmentNoise.tied()
    b, v, b2, v2 = simulate_enrolments(rng, people, n, q, tau, features, noise)
    if scheme == "s1":
        return s1_linkage_score(v, v2, tau), s1_linkage_score(v, _next_person(v2, 1), tau)
    first = simulate_s2_partitions(rng, b.ravel(), v.ravel(), n, q, scheme)
    second = simulate_s2_partitions(rng, b2.ravel(), v2.ravel(), n, q, scheme)
    if adversary == "parity":
        bits_a = parity_bits(first).reshape(people, features)
        bits_b = parity_bits(second).reshape(people, features)
        return parity_linkage_score(bits_a, bits_b), parity_linkage_score(bits_a, _next_person(bits_b, 1))
    # Non-mated partner of person i: the second enrolment of person i + 1 (cyclically), an
    # independently drawn person with its own encoding. Reusing encodings across pairs saves a
    # third simulation; every pair is still two independent encodings.
    other = PartitionBatch(
        centres=_next_person(second.centres, features),
        halves=_next_person(second.halves, features),
        counts=_next_person(second.counts, features),
        doubled=second.doubled,
    )
    even = adversary == "similar-even-intervals"
    mated = s2_similar_interval_counts(first, second, tau, even_only=even).reshape(people, features).sum(axis=1)
    nonmated = s2_similar_interval_counts(first, other, tau, even_only=even).reshape(people, features).sum(axis=1)
    return mated, nonmated


def _next_person(x: np.ndarray, rows_per_person: int) -> np.ndarray:
    """Rows of person ``i + 1`` (cyclically) in place of person ``i``'s."""
    return np.roll(x, -rows_per_person, axis=0)


@dataclass(frozen=True, slots=True)
class LinkageSetup:
    """The attacked configuration of a linkage experiment: what is simulated and who links it.

    ``scheme`` is ``"s1"``, ``"s2"`` or ``"s3"``; ``n``, ``q`` as in
    :class:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch`; ``tau`` the adversary's
    similarity parameter; ``features`` per person; ``noise`` how the second enrolment moves
    ``(b, v)`` (default :meth:`ReenrolmentNoise.tied`); ``adversary`` one of
    :data:`ADVERSARIES` for the scheme (default: the first, the published one).
    """

    scheme: str
    n: int
    q: int
    tau: int
    features: int = 1
    noise: ReenrolmentNoise | None = None
    adversary: str | None = None


def linkage_experiment(
    setup: LinkageSetup,
    pairs: int,
    seed: int,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Callable[[int], None] | None = None,
) -> LinkageResult:
    """Simulate ``pairs`` mated and ``pairs`` non-mated sketch pairs and link them (Fang's thesis §6.2).

    ``setup`` says what is simulated (:class:`LinkageSetup`; the default noise is bounded by
    ``tau`` too, the behaviour before the two were separated; module doc). Work proceeds in
    chunks of at most ``chunk_rows`` rows (pairs × features; for s2 also at most
    :data:`CHUNK_CELLS` partition cells); ``progress(k)`` is called after each chunk with the
    number of pairs it completed. The result is a pure function of the arguments.
    """
    scheme, n, q, tau, features = setup.scheme, setup.n, setup.q, setup.tau, setup.features
    check_linkage_arguments(scheme, n, q, tau, pairs, seed, features)
    adversary = _check_adversary(scheme, setup.adversary)
    check_int("chunk_rows", chunk_rows, 1)
    noise = setup.noise or ReenrolmentNoise.tied()
    if not isinstance(noise, ReenrolmentNoise):
        raise ParameterError("noise must be a ReenrolmentNoise")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    rows = chunk_rows
    if scheme in ("s2", "s3"):
        # Keep each partition matrix near CHUNK_CELLS cells whatever n/q is (memory bound).
        rows = min(rows, max(1, CHUNK_CELLS // expected_draw_columns(n, q)))
    per_chunk = max(2, rows // features)
    mated_parts: list[np.ndarray] = []
    nonmated_parts: list[np.ndarray] = []
    done = 0
    while done < pairs:
        # Non-mated partners come from the same chunk, so a chunk holds at least two people.
        people = min(per_chunk, pairs - done)
        if pairs - done - people == 1:
            people += 1
        mated, nonmated = _chunk_scores(rng, replace(setup, noise=noise, adversary=adversary), people)
        mated_parts.append(mated)
        nonmated_parts.append(nonmated)
        done += people
        if progress is not None:
            progress(people)
    mated_scores = np.concatenate(mated_parts).astype(np.int64)
    nonmated_scores = np.concatenate(nonmated_parts).astype(np.int64)
    threshold, accuracy = best_threshold(mated_scores, nonmated_scores)
    return LinkageResult(
        scheme=scheme,
        n=n,
        q=q,
        tau=tau,
        pairs=pairs,
        seed=seed,
        features=features,
        accuracy=accuracy,
        threshold=threshold,
        mated_scores=mated_scores,
        nonmated_scores=nonmated_scores,
        seconds=time.perf_counter() - started,
        chunk_rows=chunk_rows,
        notes=(_ADVERSARY[adversary], "declare mated iff score >= threshold", f"re-enrolment noise: {noise.label}"),
        noise=noise,
        adversary=adversary,
    )


def _check_adversary(scheme: str, adversary: str | None) -> str:
    allowed = ADVERSARIES[scheme]
    if adversary is None:
        return allowed[0]
    if adversary not in allowed:
        raise ParameterError(f"adversary for {scheme} must be one of {', '.join(allowed)}, got {adversary!r}")
    return adversary


_ADVERSARY = {
    "tolerances": "s1 adversary: score = number of features with |v - v'| < tau (v is published)",
    "similar-intervals": (
        "similar-interval adversary: score = number of similar interval pairs (|dw| < 2 tau and |dc| < tau)"
    ),
    "similar-even-intervals": "similar-interval adversary on even-length intervals only (the possible secret ones)",
    "parity": "parity adversary: score = number of features whose majority parity of even-interval lower ends agree",
}


def histogram_plot(result: LinkageResult, path: str) -> None:
    """Write a PNG of the mated and non-mated score histograms (needs the ``plots`` extra)."""
    try:
        import matplotlib  # optional dependency (the 'plots' extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional dependency
    except ImportError:
        raise ParameterError("plotting needs matplotlib: pip install 'sketchauth[plots]'") from None
    scores, mated, nonmated = result.histograms()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(scores - 0.2, mated / max(result.pairs, 1), width=0.4, label="mated")
    ax.bar(scores + 0.2, nonmated / max(result.pairs, 1), width=0.4, label="non-mated")
    ax.axvline(result.threshold - 0.5, color="black", linestyle="--", label=f"threshold {result.threshold}")
    ax.set_xlabel("linkage score")
    ax.set_ylabel("share of pairs")
    ax.set_title(f"{result.scheme}: n={result.n}, q={result.q}, tau={result.tau}, accuracy={result.accuracy:.4f}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _braced(values: Iterable[Any]) -> str:
    """``{1,2,3}``: a step model's values, as its label shows them."""
    return "{" + ",".join(str(x) for x in values) + "}"
