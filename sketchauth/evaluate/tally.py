"""The mergeable result of an evaluation's blocks: exact integer counts, score histograms, check samples.

A streaming evaluation (:mod:`sketchauth.evaluate.blocks`) decides its comparisons tile by tile
and reduces each tile at once into a :class:`Tally`; tallies combine with :meth:`Tally.merge`,
which is associative and commutative and exact (integers, sorted arrays), so the same result
comes out of one process, a pool of worker processes or a Dask cluster, whatever the order in
which blocks finish. A tally holds, per setting of the sweep:

* the counts of the rates: false non-matches, false matches, malformed probes (and those among
  the genuine trials), and the genuine / impostor trial counts;
* the same counts **per enrolled identity** (genuine and impostor trials and errors), what the
  identity bootstrap of ISO/IEC 19795-1 resamples (:func:`sketchauth.evaluate.rates.identity_bootstrap`);
* the comparisons to **re-decide by real decode** (:class:`Candidates`): bottom-``k`` samples by a
  keyed hash of the pair (Cohen and Kaplan's bottom-k sketches, mergeable by keeping the ``k``
  smallest keys of the union) among the *boundary* trials (accepted at one setting, rejected at
  another) and among the accepted trials of each setting, plus a seeded random set of pairs fixed
  before the run; which pairs are checked therefore does not depend on how the work was split;
* per unprotected baseline metric, the genuine and impostor **score histograms**
  (:class:`ScoreHistogram`): exact value counts, or counts on a fixed grid beyond
  :data:`MAX_DISTINCT` distinct values — what the DET curve, the EER and the score figures need.

Pair ids are ``identity · P + position`` (``P`` probe positions, identity by identity).

Example::

    >>> a = ScoreHistogram.of(np.array([1.0, 2.0, 2.0]), upper=4.0)
    >>> b = ScoreHistogram.of(np.array([2.0, 3.0]), upper=4.0)
    >>> m = a.merge(b); m.values.tolist(), m.counts.tolist()
    ([1.0, 2.0, 3.0], [1, 3, 1])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["GRID_BINS", "MAX_DISTINCT", "Candidates", "ScoreHistogram", "Tally", "pair_keys"]

#: Distinct score values kept exactly; beyond, a histogram counts on a grid of :data:`GRID_BINS` bins.
MAX_DISTINCT = 1 << 18
#: Bins of the fixed grid ``[0, upper]`` (right-closed): the DET is read exactly at its edges.
GRID_BINS = 1 << 16

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def pair_keys(ids: np.ndarray, seed: int, setting: int) -> np.ndarray:
    """A keyed 64-bit hash (SplitMix64 finaliser) of pair ids: the order of a bottom-k sample.

    >>> k = pair_keys(np.arange(4), 1, 0); bool((k == pair_keys(np.arange(4), 1, 0)).all()), len(set(k.tolist()))
    (True, 4)
    """
    salt = (int(seed) * 0x9E3779B97F4A7C15 + int(setting) * 0xBF58476D1CE4E5B9 + 1) & 0xFFFFFFFFFFFFFFFF
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) ^ np.uint64(salt)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) & _MASK


@dataclass(frozen=True)
class Candidates:
    """Pairs whose fast decisions are kept for the real-decode check: ids and decisions per setting."""

    ids: np.ndarray  # int64, sorted, unique
    accepted: np.ndarray  # bool (settings, n)
    malformed: np.ndarray  # bool (settings, n)
    picked: np.ndarray  # bool (n): in the random set fixed before the run

    @classmethod
    def empty(cls, settings: int) -> Candidates:
        return cls(
            np.zeros(0, np.int64), np.zeros((settings, 0), bool), np.zeros((settings, 0), bool), np.zeros(0, bool)
        )

    @property
    def boundary(self) -> np.ndarray:
        """Accepted at some setting and rejected at another."""
        return np.asarray(self.accepted.any(axis=0) & ~self.accepted.all(axis=0))

    def merge(self, other: Candidates, *, k: int, seed: int) -> Candidates:
        """The union (blocks are disjoint: no pair is in both), pruned once it outgrows a few times
        what pruning keeps. Pruning late or early keeps the same pairs (the ``k`` smallest keys of
        a union are among the ``k`` smallest of its parts), so this only trades memory for work.
        """
        both = Candidates(
            np.concatenate([self.ids, other.ids]),
            np.concatenate([self.accepted, other.accepted], axis=1),
            np.concatenate([self.malformed, other.malformed], axis=1),
            np.concatenate([self.picked, other.picked]),
        )
        if both.ids.size <= 8 * k * both.accepted.shape[0] + int(both.picked.sum()):
            return both
        return both.pruned(k=k, seed=seed)

    def pruned(self, *, k: int, seed: int) -> Candidates:
        """Keep the random set and, per setting, the ``k`` smallest keys among boundary and accepted
        pairs; sorted by id (the canonical form: equal whatever the order the blocks merged in).

        The keys are a bijection of the ids (:func:`pair_keys`), so there are no ties.
        """
        keep = self.picked.copy()
        boundary = self.boundary
        for s in range(self.accepted.shape[0]):
            for pool in (boundary, self.accepted[s]):
                where = np.flatnonzero(pool)
                if where.size > k:
                    where = where[np.argpartition(pair_keys(self.ids[where], seed, s), k - 1)[:k]]
                keep[where] = True
        where = np.flatnonzero(keep)
        where = where[np.argsort(self.ids[where], kind="stable")]
        return Candidates(self.ids[where], self.accepted[:, where], self.malformed[:, where], self.picked[where])


@dataclass(frozen=True)
class ScoreHistogram:
    """Counts of scores: exact (sorted distinct ``values``) or on the grid ``[0, upper]`` (``grid``).

    In grid mode ``values`` are the bins' right edges and a score ``x`` falls in the first bin whose
    edge is ``≥ x``, so "accepted at threshold = edge" counts are exact. ``sums`` are per-block
    partial sums (the mean is their :func:`math.fsum`, independent of the merge order).
    """

    values: np.ndarray
    counts: np.ndarray
    upper: float
    grid: bool = False
    sums: tuple[float, ...] = ()

    @classmethod
    def of(cls, scores: np.ndarray, *, upper: float) -> ScoreHistogram:
        values, counts = np.unique(scores, return_counts=True)
        out = cls(values.astype(np.float64), counts.astype(np.int64), float(upper), False, (float(scores.sum()),))
        return out._gridded() if values.size > MAX_DISTINCT else out

    @classmethod
    def empty(cls, upper: float) -> ScoreHistogram:
        return cls(np.zeros(0), np.zeros(0, np.int64), float(upper))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def mean(self) -> float:
        return math.fsum(self.sums) / self.total if self.total else math.nan

    def edges(self) -> np.ndarray:
        return np.linspace(0.0, self.upper, GRID_BINS + 1)[1:]

    def _gridded(self) -> ScoreHistogram:
        if self.grid:
            return self
        edges = self.edges()
        where = np.minimum(np.searchsorted(edges, self.values, side="left"), GRID_BINS - 1)
        counts = np.bincount(where, weights=self.counts, minlength=GRID_BINS).astype(np.int64)
        return ScoreHistogram(edges, counts, self.upper, True, self.sums)

    def merge(self, other: ScoreHistogram) -> ScoreHistogram:
        sums = tuple(sorted(self.sums + other.sums))
        if self.grid or other.grid:
            a, b = self._gridded(), other._gridded()
            return ScoreHistogram(a.values, a.counts + b.counts, self.upper, True, sums)
        values, inverse = np.unique(np.concatenate([self.values, other.values]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([self.counts, other.counts]), minlength=values.size)
        out = ScoreHistogram(values, counts.astype(np.int64), self.upper, False, sums)
        return out._gridded() if values.size > MAX_DISTINCT else out


def _add_span(a: tuple[int, np.ndarray], b: tuple[int, np.ndarray]) -> tuple[int, np.ndarray]:
    """Sum two per-identity arrays that start at identities ``a[0]`` and ``b[0]`` (last axis)."""
    (sa, xa), (sb, xb) = a, b
    if xa.shape[-1] == 0:
        return b
    if xb.shape[-1] == 0:
        return a
    lo, hi = min(sa, sb), max(sa + xa.shape[-1], sb + xb.shape[-1])
    out = np.zeros((*xa.shape[:-1], hi - lo), dtype=np.int64)
    out[..., sa - lo : sa - lo + xa.shape[-1]] += xa
    out[..., sb - lo : sb - lo + xb.shape[-1]] += xb
    return lo, out


@dataclass(frozen=True)
class Tally:
    """Exact counts of a set of blocks, per setting (module docstring); :meth:`merge` combines two."""

    settings: int
    k: int
    seed: int
    false_non_matches: np.ndarray  # int64 (settings,)
    false_matches: np.ndarray
    malformed: np.ndarray
    genuine_malformed: np.ndarray
    genuine_trials: int = 0
    impostor_trials: int = 0
    #: Per identity, from identity ``first``: trials (2, span) and errors (settings, 2, span); row 0 genuine.
    first: int = 0
    trials: np.ndarray = field(default_factory=lambda: np.zeros((2, 0), np.int64))
    errors: np.ndarray | None = None
    candidates: Candidates | None = None
    #: Per baseline metric: (genuine, impostor) score histograms.
    scores: tuple[tuple[ScoreHistogram, ScoreHistogram], ...] = ()

    @classmethod
    def empty(cls, settings: int, *, k: int, seed: int, uppers: tuple[float, ...] = ()) -> Tally:
        zero = np.zeros(settings, np.int64)
        return cls(
            settings,
            k,
            seed,
            zero,
            zero,
            zero,
            zero,
            errors=np.zeros((settings, 2, 0), np.int64),
            candidates=Candidates.empty(settings),
            scores=tuple((ScoreHistogram.empty(u), ScoreHistogram.empty(u)) for u in uppers),
        )

    def merge(self, other: Tally) -> Tally:
        """The tally of both sets of blocks (associative, commutative, exact)."""
        assert self.errors is not None and other.errors is not None
        assert self.candidates is not None and other.candidates is not None
        first, trials = _add_span((self.first, self.trials), (other.first, other.trials))
        _, errors = _add_span((self.first, self.errors), (other.first, other.errors))
        return replace(
            self,
            false_non_matches=self.false_non_matches + other.false_non_matches,
            false_matches=self.false_matches + other.false_matches,
            malformed=self.malformed + other.malformed,
            genuine_malformed=self.genuine_malformed + other.genuine_malformed,
            genuine_trials=self.genuine_trials + other.genuine_trials,
            impostor_trials=self.impostor_trials + other.impostor_trials,
            first=first,
            trials=trials,
            errors=errors,
            candidates=self.candidates.merge(other.candidates, k=self.k, seed=self.seed),
            scores=tuple(
                (g.merge(og), i.merge(oi)) for (g, i), (og, oi) in zip(self.scores, other.scores, strict=True)
            ),
        )

    def pruned(self) -> Tally:
        """The same tally with its check candidates pruned to their canonical bottom-k form."""
        assert self.candidates is not None
        return replace(self, candidates=self.candidates.pruned(k=self.k, seed=self.seed))

    def per_identity(self, identities: int) -> tuple[np.ndarray, np.ndarray]:
        """``(trials (2, J), errors (settings, 2, J))`` over all ``identities`` (row 0 genuine, 1 impostor)."""
        assert self.errors is not None
        trials = np.zeros((2, identities), np.int64)
        errors = np.zeros((self.settings, 2, identities), np.int64)
        span = self.trials.shape[-1]
        trials[:, self.first : self.first + span] = self.trials
        errors[..., self.first : self.first + span] = self.errors
        return trials, errors
