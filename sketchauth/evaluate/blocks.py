"""Streaming evaluation: the comparison plan walked in tiles, each decided and reduced at once.

The plan of :class:`~sketchauth.evaluate.protocol.Protocol` compares every enrolled identity with
every probe (genuine iff the probe is its own). Nothing of size "number of pairs" is ever held:
the identities are cut into *bands* (the unit of work sent to a worker process or a Dask
worker), each band into *tiles* of ``identities × probe positions`` (:data:`TILE_CELLS` cells of
features at most), and every tile is decided under every setting of the sweep by the settings'
prepared deciders (:class:`~sketchauth.evaluate.deciders.PreparedDecider`) and reduced at once
into a :class:`~sketchauth.evaluate.tally.Tally` (exact counts per setting and identity, the
pairs kept for the real-decode check, the baselines' score histograms). Memory is bounded by a
tile and by the population's templates and probes, not by the number of pairs.

:func:`run` merges the bands' tallies serially, across ``jobs`` worker processes (forked: each
inherits the prepared :class:`Job` once) or on a Dask cluster
(:mod:`sketchauth.evaluate.distributed`); the merge is exact and associative, so all three give
identical integers. With impostors subsampled (``max_impostors_per_identity``) a band decides
its explicit pair list instead of tiles.

Example::

    >>> from sketchauth.evaluate.data import VectorModel, synthetic_vectors
    >>> from sketchauth.evaluate.trials import enrol_population, plan_trials
    >>> from sketchauth.evaluate.deciders import decide_interval, prepare_decider
    >>> from sketchauth.sketches.interval import IntervalSketch
    >>> from sketchauth.templates import enrol_rounded_mean
    >>> data = synthetic_vectors(12, 3, 8, seed=1, model=VectorModel(noise=1.0))
    >>> plan = plan_trials(data)
    >>> sketch = IntervalSketch(n=256, v=4, features=8)
    >>> enrolled = enrol_population(sketch, enrol_rounded_mean, data, plan)
    >>> probes = data.samples[plan.probe_index]
    >>> job = Job.create(plan, [prepare_decider(decide_interval, sketch, enrolled, probes)], seed=0, check=100)
    >>> t = run(job); (t.genuine_trials, t.impostor_trials) == (plan.genuine_count, plan.impostor_count)
    True
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sketchauth.evaluate.deciders import PreparedDecider, _popcount  # the bitmap count of PinSketch's decider
from sketchauth.evaluate.protocol import TrialPlan
from sketchauth.evaluate.tally import Candidates, ScoreHistogram, Tally

__all__ = ["TILE_CELLS", "Job", "Scorer", "check_ids", "run", "run_band"]

#: Largest tile, in pair × feature cells (an intermediate array of about this many small ints).
TILE_CELLS = 1 << 20
#: Identities per band (the unit of work), at most; at least four bands per worker when there are enough.
BAND_IDENTITIES = 64


class Scorer:
    """An unprotected baseline's distances on tiles and pair lists (lower is more similar).

    ``templates`` (``J × k``) and ``probes`` (``P × k``, positions) as float arrays; ``metric`` one
    of ``euclidean``, ``chebyshev``, ``hamming``, ``cosine`` (``1 − cos``) or ``set-difference``
    (bitmaps as uint64 words).
    ``upper`` bounds every score (the grid of a :class:`~sketchauth.evaluate.tally.ScoreHistogram`).
    """

    def __init__(self, metric: str, templates: np.ndarray, probes: np.ndarray, upper: float) -> None:
        self.metric, self.templates, self.probes, self.upper = metric, templates, probes, float(upper)

    def _distance(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        if self.metric == "set-difference":
            return _popcount(x ^ t).astype(np.float64)
        diff = x - t
        if self.metric == "euclidean":
            return cast("np.ndarray", np.sqrt(np.einsum("...j,...j->...", diff, diff)))
        if self.metric == "chebyshev":
            return cast("np.ndarray", np.abs(diff).max(axis=-1))
        if self.metric == "cosine":
            dots = np.einsum("...j,...j->...", x, t)
            norms = np.sqrt(np.einsum("...j,...j->...", x, x) * np.einsum("...j,...j->...", t, t))
            return cast("np.ndarray", 1.0 - dots / np.where(norms > 0, norms, 1.0))
        return cast("np.ndarray", np.count_nonzero(diff, axis=-1).astype(np.float64))

    def tile(self, e0: int, e1: int, p0: int, p1: int) -> np.ndarray:
        return self._distance(self.probes[None, p0:p1], self.templates[e0:e1, None])

    def pairs(self, e: np.ndarray, p: np.ndarray) -> np.ndarray:
        return self._distance(self.probes[p], self.templates[e])


@dataclass(frozen=True)
class Job:
    """Everything a worker needs: the plan's shape, one prepared decider per setting, the scorers,
    and the random pairs fixed for the real-decode check (:func:`check_ids`)."""

    identities: int
    positions: int
    #: First and last-plus-one probe position of each identity (its probes are contiguous).
    start: np.ndarray
    stop: np.ndarray
    deciders: tuple[PreparedDecider, ...]
    scorers: tuple[Scorer, ...]
    #: Sorted pair ids whose decisions are always kept (the seeded random part of the check).
    picked: np.ndarray
    k: int
    seed: int
    #: Subsampled impostors: ``(2, T)`` (identity, probe position) sorted by identity, or ``None``.
    drawn: np.ndarray | None = None
    features: int = 1

    @classmethod
    def create(
        cls,
        plan: TrialPlan,
        deciders: Sequence[PreparedDecider],
        *,
        seed: int,
        check: int,
        scorers: Sequence[Scorer] = (),
        features: int = 1,
    ) -> Job:
        """The job of ``plan``: ``check`` comparisons per setting re-decided later (0: none)."""
        sizes = np.array([r.size for r in plan.probe_rows], dtype=np.int64)
        stop = np.cumsum(sizes)
        drawn = None
        if plan.drawn is not None:
            position = np.empty(plan.samples, dtype=np.int64)
            position[plan.probe_index] = np.arange(plan.probe_index.size)
            drawn = np.vstack([plan.drawn[0], position[plan.drawn[1]]])
        job = cls(
            len(plan.labels),
            int(stop[-1]) if stop.size else 0,
            stop - sizes,
            stop,
            tuple(deciders),
            tuple(scorers),
            np.zeros(0, np.int64),
            max(1, int(check)),
            int(seed),
            drawn,
            max(1, int(features)),
        )
        chosen = [check_ids(job, int(check), s) for s in range(len(deciders))]
        picked = np.unique(np.concatenate(chosen)) if chosen else np.zeros(0, np.int64)
        return cls(**{**job.__dict__, "picked": picked.astype(np.int64)})

    @property
    def settings(self) -> int:
        return len(self.deciders)

    def all_ids(self) -> np.ndarray | None:
        """Every pair id when the impostors are subsampled (``None``: the full cross product)."""
        if self.drawn is None:
            return None
        spans = enumerate(zip(self.start, self.stop, strict=True))
        genuine = [np.arange(a, b) + i * self.positions for i, (a, b) in spans]
        return np.unique(np.concatenate([*genuine, self.drawn[0] * self.positions + self.drawn[1]]))

    def total(self) -> int:
        ids = self.all_ids()
        return self.identities * self.positions if ids is None else int(ids.size)

    def bands(self, jobs: int = 1) -> list[tuple[int, int]]:
        """Identity ranges of the work items: about :data:`BAND_IDENTITIES`, and 4 per worker at least."""
        size = max(1, min(BAND_IDENTITIES, -(-self.identities // (4 * max(1, jobs)))))
        return [(a, min(a + size, self.identities)) for a in range(0, self.identities, size)]


def check_ids(job: Job, count: int, setting: int) -> np.ndarray:
    """The seeded random pairs checked at ``setting``: every pair when there are at most ``count``."""
    ids = job.all_ids()
    total = job.total()
    if count <= 0:
        return np.zeros(0, np.int64)
    rng = np.random.default_rng([job.seed, 0x5EED, setting])
    if total <= count:
        return np.arange(total, dtype=np.int64) if ids is None else ids
    chosen = rng.choice(total, size=count, replace=False)
    return chosen.astype(np.int64) if ids is None else ids[chosen]


def _tile_sizes(job: Job) -> tuple[int, int]:
    probes = max(1, min(job.positions, 2048))
    identities = max(1, TILE_CELLS // (probes * job.features))
    return identities, probes


def _reduce(
    job: Job,
    tally: Tally,
    block: tuple[int, int, int, int] | np.ndarray,
    genuine: np.ndarray | None,
    decisions: list[tuple[np.ndarray, np.ndarray]],
    scores: list[np.ndarray],
    e0: int,
    e1: int,
) -> Tally:
    """Add one block to ``tally``: a tile ``(a, b, p0, p1)`` (2-D decisions, identity along axis 0)
    or a pair list (``block``: the pairs' ids, 1-D decisions). ``genuine``: which pairs are genuine
    (``None``: none of a tile's)."""
    span = e1 - e0
    if isinstance(block, tuple):
        a, b, p0, p1 = block

        def per_identity(mask: np.ndarray | None) -> np.ndarray:
            out = np.zeros(span, np.int64)
            if mask is not None:
                out[a - e0 : b - e0] = np.count_nonzero(mask, axis=1)
            return out

        everyone = np.zeros(span, np.int64)
        everyone[a - e0 : b - e0] = p1 - p0
    else:
        e = block // job.positions

        def per_identity(mask: np.ndarray | None) -> np.ndarray:
            if mask is None:
                return np.zeros(span, np.int64)
            return np.bincount(e[mask] - e0, minlength=span).astype(np.int64)

        everyone = np.bincount(e - e0, minlength=span).astype(np.int64)
    gen_trials = per_identity(genuine)
    trials = np.vstack([gen_trials, everyone - gen_trials])
    errors = np.zeros((job.settings, 2, span), np.int64)
    fnm, fm, bad, gen_bad = (np.zeros(job.settings, np.int64) for _ in range(4))
    for s, (accepted, malformed) in enumerate(decisions):
        gen_accepted = per_identity(None if genuine is None else accepted & genuine)
        errors[s, 0] = gen_trials - gen_accepted
        errors[s, 1] = per_identity(accepted) - gen_accepted
        fnm[s], fm[s] = errors[s, 0].sum(), errors[s, 1].sum()
        bad[s] = np.count_nonzero(malformed)
        gen_bad[s] = np.count_nonzero(malformed & genuine) if bad[s] and genuine is not None else 0
    part = Tally(
        job.settings,
        job.k,
        job.seed,
        fnm,
        fm,
        bad,
        gen_bad,
        int(trials[0].sum()),
        int(trials[1].sum()),
        e0,
        trials,
        errors,
        _candidates(job, block, decisions),
        tuple(
            (
                ScoreHistogram.of(x[genuine] if genuine is not None else x[:0], upper=scorer.upper),
                ScoreHistogram.of(x[~genuine] if genuine is not None else x.ravel(), upper=scorer.upper),
            )
            for scorer, x in zip(job.scorers, scores, strict=True)
        ),
    )
    return tally.merge(part)


def _candidates(
    job: Job, block: tuple[int, int, int, int] | np.ndarray, decisions: list[tuple[np.ndarray, np.ndarray]]
) -> Candidates:
    """The block's pairs kept for the check: accepted at any setting, or in the fixed random set."""
    accepted = np.stack([a.ravel() for a, _ in decisions])
    malformed = [m.ravel() for _, m in decisions]
    if isinstance(block, tuple):
        a, b, p0, p1 = block
        width = p1 - p0
        lo, hi = np.searchsorted(job.picked, [a * job.positions + p0, (b - 1) * job.positions + p1])
        chosen = job.picked[lo:hi]
        chosen = chosen[(chosen % job.positions >= p0) & (chosen % job.positions < p1)]
        picked = np.zeros(accepted.shape[1], dtype=bool)
        picked[(chosen // job.positions - a) * width + chosen % job.positions - p0] = True
        where = np.flatnonzero(accepted.any(axis=0) | picked)
        ids = (a + where // width) * job.positions + p0 + where % width
    else:
        picked = np.isin(block, job.picked)
        where = np.flatnonzero(accepted.any(axis=0) | picked)
        ids = block[where]
        order = np.argsort(ids, kind="stable")
        where, ids = where[order], ids[order]
    found = Candidates(
        ids.astype(np.int64),
        accepted[:, where],
        np.stack([m[where] for m in malformed]),
        picked[where],
    )
    return found


def run_band(job: Job, e0: int, e1: int) -> Tally:
    """The tally of identities ``e0:e1`` against every probe (or their drawn pairs)."""
    tally = Tally.empty(job.settings, k=job.k, seed=job.seed, uppers=tuple(s.upper for s in job.scorers))
    if job.drawn is not None:
        return _drawn_band(job, tally, e0, e1)
    te, tp = _tile_sizes(job)
    for a in range(e0, e1, te):
        b = min(a + te, e1)
        for p0 in range(0, job.positions, tp):
            p1 = min(p0 + tp, job.positions)
            genuine = None
            if job.start[a:b].min() < p1 and job.stop[a:b].max() > p0:
                pos = np.arange(p0, p1, dtype=np.int64)[None, :]
                genuine = (pos >= job.start[a:b, None]) & (pos < job.stop[a:b, None])
            decisions = [d.tile(a, b, p0, p1) for d in job.deciders]
            scores = [s.tile(a, b, p0, p1) for s in job.scorers]
            tally = _reduce(job, tally, (a, b, p0, p1), genuine, decisions, scores, e0, e1)
    return tally.pruned()


def _drawn_band(job: Job, tally: Tally, e0: int, e1: int) -> Tally:
    """A band of a subsampled plan: its genuine pairs and its drawn impostor pairs, as lists."""
    assert job.drawn is not None
    gen_e = np.concatenate([np.full(job.stop[i] - job.start[i], i) for i in range(e0, e1)]).astype(np.int64)
    gen_p = np.concatenate([np.arange(job.start[i], job.stop[i]) for i in range(e0, e1)]).astype(np.int64)
    lo, hi = np.searchsorted(job.drawn[0], [e0, e1])
    e = np.concatenate([gen_e, job.drawn[0, lo:hi]])
    p = np.concatenate([gen_p, job.drawn[1, lo:hi]])
    genuine = np.arange(e.size) < gen_e.size
    decisions = [d.pairs(e, p) for d in job.deciders]
    scores = [s.pairs(e, p) for s in job.scorers]
    return _reduce(job, tally, e * job.positions + p, genuine, decisions, scores, e0, e1).pruned()


# -- running the bands ----------------------------------------------------------------------------------
#: The job a forked worker process inherited (set by its initializer).
_WORKER: dict[str, Job] = {}


def _adopt(job: Job) -> None:
    _WORKER["job"] = job


def _band_in_worker(e0: int, e1: int) -> Tally:
    return run_band(_WORKER["job"], e0, e1)


def run(job: Job, *, jobs: int = 1, client: Any = None, progress: Callable[[int], None] | None = None) -> Tally:
    """The merged tally of every band: serially, on ``jobs`` forked processes, or on a Dask ``client``.

    ``progress(n)`` is called with the comparisons of each finished band (per setting).
    """
    tick = progress or (lambda n: None)
    total = Tally.empty(job.settings, k=job.k, seed=job.seed, uppers=tuple(s.upper for s in job.scorers))
    if client is not None:
        from sketchauth.evaluate.distributed import run_on_cluster  # optional dependency: dask

        return run_on_cluster(client, job, total, tick, run_band).pruned()
    bands = job.bands(jobs)
    if jobs <= 1 or len(bands) <= 1:
        for e0, e1 in bands:
            part = run_band(job, e0, e1)
            total = total.merge(part)
            tick(part.genuine_trials + part.impostor_trials)
        return total.pruned()
    # Forked workers inherit the prepared job (templates, probe levels, bitmaps) without pickling it.
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_adopt, initargs=(job,)) as pool:
        futures = [pool.submit(_band_in_worker, e0, e1) for e0, e1 in bands]
        for future in as_completed(futures):
            part = future.result()
            total = total.merge(part)
            tick(part.genuine_trials + part.impostor_trials)
    return total.pruned()
