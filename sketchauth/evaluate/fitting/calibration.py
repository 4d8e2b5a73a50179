"""Calibration that holds on new people: a decider's setting for a target FMR, chosen on the background.

A setting measured on the people it is chosen on is optimistic: the FMR of a threshold picked so
that at most ``⌊target·I⌋`` of ``I`` background impostor trials pass is, on *new* people, often a
few times the target — or far below it — because the learned parts of the matcher (the
transform, a tolerance path) fit those people, and a few dozen people make a noisy count. This
module chooses the setting by **identity-disjoint k-fold cross-validation** over *all* background
people and a **conservative bound** on the FMR:

1. The background identities are split into ``k`` folds (a seeded permutation of the labels).
   For fold ``f`` the decider's model (e.g. a refitted transform, a tolerance path) is fitted on
   the other ``k − 1`` folds only; the people of fold ``f`` are enrolled and probed with the
   evaluation protocol (:func:`sketchauth.evaluate.trials.projected_trials`: the first
   ``enrol_samples`` samples enrol, the rest probe). Genuine trials pair a fold-``f`` template with
   its owner's probes, impostor trials with every other fold-``f`` person's probes: every scored
   trial is of people the model never saw. A decider without a fitted model (``fit=None``) has
   nothing to cross-validate: then all background people form one pool and every impostor pair
   of distinct people is scored.
2. Counts are pooled over folds, per grid point: ``K`` false matches among ``I`` impostor trials.
3. Trials of one person are correlated (a "wolf" or a "lamb" matches many others), so the counts
   are deflated by their two-way design effect (:func:`design_effect`, clustered by the enrolled
   person and by the probe's person) into effective counts ``K/deff`` of ``I/deff`` trials. The
   one-sided Clopper–Pearson upper bound ``p⁺(K, I)`` at ``confidence`` on those — the ``p`` at which
   ``P[Bin(I, p) ≤ K] = 1 − confidence`` — bounds the FMR a new population meets. Admissible
   points have ``p⁺ ≤ target``; among them the one with the fewest false non-matches is chosen
   (ties: the earliest in the grid). Since ``P[Bin(I, p) ≤ K]`` decreases in ``p``,
   ``p⁺ ≤ target ⟺ P[Bin(I, target) ≤ K] ≤ 1 − confidence``: admissibility is a cap on ``K``.
4. The chosen point is reported with its pooled FMR and FNMR and their two-sided
   Clopper–Pearson intervals (the *predicted* rates on new people).

The binomial tail is summed exactly term by term in log space (``P[Bin(n, p) ≤ k] =
I_{1−p}(n − k, k + 1)``, the regularised incomplete beta function) and the bounds are found by
bisection on ``p`` to machine precision; no scipy is needed (the tests cross-check against
``scipy.stats.beta``). Trials of one person are correlated, so the interval is narrower than the
true uncertainty when few people are counted; cross-validation still removes the bias of fitting
and choosing on the same people, which was the larger error (see ``benchmarks/bench_calibration.py``).

Plugging in a family: a :class:`Decider` is a parameter ``grid``, a vectorised accept rule over
(template, probe) pairs and, optionally, a per-fold ``fit`` and a ``features`` map from raw trials
to what the rule compares. For example, cosine similarity over unit vectors with thresholds::

    >>> import numpy as np
    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> background = EmbeddingPopulation(informative=12, useless=0, noise_scale=0.5, seed=2).draw(60, 4, seed=1)
    >>> def unit(model, trials):
    ...     t, p = trials.templates, trials.probes
    ...     return t / np.linalg.norm(t, axis=-1, keepdims=True), p / np.linalg.norm(p, axis=-1, keepdims=True)
    >>> cosine = Decider(
    ...     grid=np.linspace(1.0, -1.0, 201),
    ...     accept=lambda model, t, p, grid: np.sum(t * p, axis=-1)[None, :] >= np.asarray(grid)[:, None],
    ...     features=unit,
    ... )
    >>> choice = calibrate(cosine, background, target_fmr=0.01, enrol_samples=1)
    >>> choice.fmr_upper <= 0.01 and choice.fmr_interval[0] <= choice.fmr <= choice.fmr_interval[1]
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.rates import binomial_cdf, clopper_pearson_interval, clopper_pearson_upper
from sketchauth.evaluate.trials import ProjectedTrials, projected_trials

__all__ = [
    "Calibration",
    "Counts",
    "Decider",
    "binomial_cdf",
    "calibrate",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "design_effect",
    "identity_folds",
    "max_false_matches",
]

#: Cells (pairs × feature width) scored at once: bounds the memory of the impostor sweep.
_CHUNK_CELLS = 4_000_000


# -- exact binomial tails and Clopper–Pearson bounds ---------------------------------------------
def _check_counts(k: int, n: int) -> tuple[int, int]:
    if isinstance(k, bool) or isinstance(n, bool):
        raise ParameterError("counts must be integers, not booleans")
    k, n = int(k), int(n)
    if n < 1 or not 0 <= k <= n:
        raise ParameterError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    return k, n


def _check_confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1.0:
        raise ParameterError(f"confidence must be in [0.5, 1), got {confidence!r}")
    return float(confidence)


def _log_terms(k: int, n: int, p: float) -> np.ndarray:
    """``log C(n, i) + i log p + (n − i) log(1 − p)`` for ``i = 0 … k`` (``0 < p < 1``)."""
    i = np.arange(k + 1, dtype=np.float64)
    # log C(n, i) = Σ_{j ≤ i} log((n − j + 1)/j), one cumulative sum.
    log_choose = np.concatenate([[0.0], np.cumsum(np.log(n - i[1:] + 1.0) - np.log(i[1:]))])
    return log_choose + i * math.log(p) + (n - i) * math.log1p(-p)


def max_false_matches(n: int, target: float, confidence: float = 0.95) -> int:
    """The largest ``K`` with ``clopper_pearson_upper(K, n) ≤ target``; −1 when even ``K = 0`` exceeds it.

    ``p⁺(K, n) ≤ target ⟺ P[Bin(n, target) ≤ K] ≤ 1 − confidence``, and the left side grows with
    ``K``: one cumulative sum of the binomial terms at ``p = target`` gives the cap.

    >>> max_false_matches(59, 0.05), max_false_matches(58, 0.05)  # 0.95^59 < 0.05 < 0.95^58
    (0, -1)
    """
    _, n = _check_counts(0, n)
    if not 0.0 < target < 1.0:
        raise ParameterError(f"target must be in (0, 1), got {target!r}")
    alpha = 1.0 - _check_confidence(confidence)
    # Enough terms to pass alpha: the mean plus a wide margin (the tail beyond is negligible).
    span = min(n, int(n * target + 12.0 * math.sqrt(n * target + 1.0) + 20.0))
    logs = _log_terms(span, n, target)
    cdf = np.cumsum(np.exp(logs))
    return int(np.searchsorted(cdf, alpha, side="right")) - 1


# -- identity-disjoint folds ----------------------------------------------------------------------
def identity_folds(identities: Any, folds: int, seed: int = 0) -> np.ndarray:
    """Fold index (``0 … folds − 1``) of every row: a seeded permutation of the labels, dealt round-robin.

    All rows of one identity share a fold; fold sizes (in identities) differ by at most one.

    >>> identity_folds(["a", "a", "b", "c", "c", "d"], 2, seed=0).tolist()
    [1, 1, 0, 0, 0, 1]
    """
    labels, inverse = np.unique(np.asarray(identities), return_inverse=True)
    if isinstance(folds, bool) or not isinstance(folds, int) or not 2 <= folds <= labels.size:
        raise ParameterError(f"folds must be an integer in [2, {labels.size}] (the identities), got {folds!r}")
    order = np.random.default_rng(seed).permutation(labels.size)
    fold_of_label = np.empty(labels.size, dtype=np.int64)
    fold_of_label[order] = np.arange(labels.size) % folds
    return fold_of_label[inverse]


# -- the pluggable decider ------------------------------------------------------------------------
Features = Callable[[Any, ProjectedTrials], tuple[np.ndarray, np.ndarray]]


def _raw_features(model: Any, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
    return trials.templates, trials.probes


@dataclass(frozen=True, slots=True)
class Decider:
    """A family's decision rule over a parameter grid, for :func:`calibrate`.

    * ``grid`` — the candidate settings (any objects; by convention strictest first: ties in
      FNMR go to the earliest point);
    * ``accept(model, templates, probes, grid) → bool array (len(grid), pairs)`` — vectorised over
      row-aligned (template, probe) pairs and over the grid; or instead
    * ``score(model, templates, probes) → (pairs,)`` for a family that accepts iff
      ``score ≤ setting`` (``score < setting`` with ``strict=True``) with a numeric ascending
      ``grid``: counted by sorting, so grids of thousands of thresholds cost nothing;
    * ``fit(training people) → model`` — the learned part, refitted per fold without the fold's
      people (``None``: no learned part; the model passed on is ``None``);
    * ``features(model, trials) → (templates, probes)`` — from the protocol's raw enrolment captures
      and probes (:class:`~sketchauth.evaluate.trials.ProjectedTrials` of the raw vectors) to what
      the rule compares; default: the mean of the enrolment captures and the raw probes.
    """

    grid: Sequence[Any] | np.ndarray
    accept: Callable[[Any, np.ndarray, np.ndarray, Any], np.ndarray] | None = None
    score: Callable[[Any, np.ndarray, np.ndarray], np.ndarray] | None = None
    strict: bool = False
    fit: Callable[[LabelledVectors], Any] | None = None
    features: Features = field(default=_raw_features)
    #: Among admissible points with the fewest false non-matches: ``"strictest"`` (the earliest) or
    #: ``"loosest"`` (the last: the FMR budget used, for a rule whose FNMR is flat over a range of
    #: settings because another check — a code's decoding — refuses those genuine trials anyway).
    ties: str = "strictest"
    #: Optional, with ``score``: ``pair_score(model, templates, probes, t_idx, p_idx)`` is ``score`` on
    #: the pairs ``(templates[t_idx], probes[p_idx])`` without gathering them — impostor pairs are
    #: every template against every probe, so the gathered rows are most of the cost of a cheap score.
    pair_score: Callable[[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if (self.accept is None) == (self.score is None):
            raise ParameterError("a Decider needs exactly one of accept or score")
        if len(self.grid) == 0:
            raise ParameterError("a Decider needs a non-empty grid")
        if self.ties not in ("strictest", "loosest"):
            raise ParameterError(f"ties must be 'strictest' or 'loosest', got {self.ties!r}")
        if self.score is not None:
            values = np.asarray(self.grid, dtype=np.float64)
            if values.ndim != 1 or np.any(np.diff(values) < 0):
                raise ParameterError("a score Decider's grid must be numbers in ascending order")

    def first_accepting(self, model: Any, templates: np.ndarray, probes: np.ndarray) -> np.ndarray | None:
        """A score decider's first accepting grid index per row-aligned pair (``len(grid)``: none); ``None``
        for an ``accept`` decider. The pair is accepted at every grid point from that index on."""
        if self.score is None:
            return None
        return self._first(self.score(model, templates, probes))

    def first_accepting_pairs(
        self, model: Any, templates: np.ndarray, probes: np.ndarray, t_idx: np.ndarray, p_idx: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`first_accepting` on the pairs ``(templates[t_idx], probes[p_idx])`` (``pair_score`` if any)."""
        if self.pair_score is None:
            return self.first_accepting(model, templates[t_idx], probes[p_idx])
        return self._first(self.pair_score(model, templates, probes, t_idx, p_idx))

    def _first(self, scores: Any) -> np.ndarray:
        grid = np.asarray(self.grid, dtype=np.float64)
        return np.searchsorted(grid, np.asarray(scores, dtype=np.float64), side="right" if self.strict else "left")

    def accepted(
        self, model: Any, templates: np.ndarray, probes: np.ndarray, clusters: tuple[np.ndarray, ...], size: int
    ) -> tuple[np.ndarray, ...]:
        """Accepted pairs per cluster and grid point, one ``size × len(grid)`` array per labelling in ``clusters``.

        ``clusters`` label every row-aligned pair (e.g. by its template's and its probe's person).
        """
        grid_size = len(self.grid)
        first = self.first_accepting(model, templates, probes)
        if first is not None:
            out = []
            for labels in clusters:
                hist = np.zeros((size, grid_size + 1), dtype=np.int64)
                np.add.at(hist, (labels, first), 1)
                out.append(np.cumsum(hist[:, :grid_size], axis=1))
            return tuple(out)
        assert self.accept is not None  # __post_init__: exactly one of the two
        decided = np.asarray(self.accept(model, templates, probes, self.grid), dtype=bool)
        if decided.shape != (grid_size, templates.shape[0]):
            raise ParameterError(f"accept must return a (grid, pairs) array, got shape {decided.shape}")
        return tuple(
            np.stack([np.bincount(labels, weights=row, minlength=size) for row in decided], axis=1).astype(np.int64)
            for labels in clusters
        )


@dataclass(frozen=True, slots=True)
class Counts:
    """Accepted trials per person and grid point, and trials per person (pooled over folds).

    ``impostor_by_template``/``impostor_by_probe`` (``people × grid``) count false matches by the
    enrolled person and by the probe's person; ``genuine`` counts accepted genuine trials by person.
    """

    impostor_by_template: np.ndarray
    impostor_by_probe: np.ndarray
    genuine: np.ndarray
    impostor_trials_by_template: np.ndarray
    impostor_trials_by_probe: np.ndarray
    genuine_trials_by_person: np.ndarray

    @classmethod
    def empty(cls, people: int, grid: int) -> Counts:
        def z2() -> np.ndarray:
            return np.zeros((people, grid), dtype=np.int64)

        def z1() -> np.ndarray:
            return np.zeros(people, dtype=np.int64)

        return cls(z2(), z2(), z2(), z1(), z1(), z1())

    @property
    def false_matches(self) -> np.ndarray:
        return np.asarray(self.impostor_by_template.sum(axis=0))

    @property
    def impostor_trials(self) -> int:
        return int(self.impostor_trials_by_template.sum())

    @property
    def genuine_trials(self) -> int:
        return int(self.genuine_trials_by_person.sum())

    @property
    def false_non_matches(self) -> np.ndarray:
        return np.asarray(self.genuine_trials - self.genuine.sum(axis=0))

    def fmr_effective(self) -> tuple[np.ndarray, np.ndarray]:
        """Per grid point the effective false matches and trials ``(K/deff, N/deff)`` (see :func:`design_effect`)."""
        deff = design_effect(
            (self.impostor_by_template, self.impostor_by_probe),
            (self.impostor_trials_by_template, self.impostor_trials_by_probe),
        )
        return _effective(self.false_matches, self.impostor_trials, deff)

    def fnmr_effective(self) -> tuple[np.ndarray, np.ndarray]:
        """Per grid point effective false non-matches and genuine trials (clustered by person)."""
        rejected = self.genuine_trials_by_person[:, None] - self.genuine
        deff = design_effect((rejected,), (self.genuine_trials_by_person,))
        return _effective(self.false_non_matches, self.genuine_trials, deff)


def design_effect(by_cluster: Sequence[np.ndarray], trials: Sequence[np.ndarray]) -> np.ndarray:
    """Variance inflation of a rate from trials clustered by person, per grid point (``≥ 1``).

    For each clustering ``c`` (e.g. by the enrolled person and by the probe's person) with counts
    ``K_i`` of ``n_i`` trials per cluster and ``p = K/N``, the cluster-robust variance of ``p`` is
    ``V_c = Σ_i (K_i − p n_i)² / N²``; two-way clustering adds them and subtracts the
    trial-level binomial variance ``V_0 = p(1 − p)/N`` (Cameron, Gelbach and Miller, 2011). The
    design effect is ``max(1, Σ V_c − (C − 1) V_0) / V_0``; 1 where ``p ∈ {0, 1}``.
    """
    n = float(trials[0].sum())
    k = by_cluster[0].sum(axis=0).astype(np.float64)
    p = k / n
    v0 = p * (1.0 - p) / n
    total = -(len(by_cluster) - 1) * v0
    for counts, n_i in zip(by_cluster, trials, strict=True):
        total = total + ((counts - p[None, :] * n_i[:, None].astype(np.float64)) ** 2).sum(axis=0) / n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(v0 > 0, total / np.where(v0 > 0, v0, 1.0), 1.0)
    return np.maximum(deff, 1.0)


def _effective(k: np.ndarray, n: int, deff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Effective counts: ``N_eff = ⌊N/deff⌋`` (at least 1) and ``K_eff = round(K/deff)`` (at most ``N_eff``)."""
    n_eff = np.maximum(1, np.floor(n / deff)).astype(np.int64)
    k_eff = np.minimum(np.rint(k / deff).astype(np.int64), n_eff)
    return k_eff, n_eff


@dataclass(frozen=True, slots=True)
class Calibration:
    """The chosen setting and what it predicts for new people (rates pooled over the folds).

    ``false_matches``/``false_non_matches`` hold the pooled counts at every grid point (the
    per-person counts behind the design effect are not kept). The ``fmr_*``/``fnmr_*`` fields are
    those of the chosen point ``grid[index]``: the observed rate, the two-sided Clopper–Pearson
    interval at ``confidence`` on the *effective* counts (trials of one person are correlated:
    :func:`design_effect`) and, for the FMR, the one-sided upper bound that admitted it
    (``≤ target_fmr``).
    """

    index: int
    point: Any
    target_fmr: float
    confidence: float
    folds: int
    identities: int
    #: Pooled false matches and false non-matches at every grid point.
    false_matches: np.ndarray = field(repr=False)
    false_non_matches: np.ndarray = field(repr=False)
    impostor_trials: int
    genuine_trials: int
    #: Effective (design-effect) impostor trials and false matches at the chosen point.
    effective_impostor_trials: int
    effective_false_matches: int
    fmr: float
    fmr_upper: float
    fmr_interval: tuple[float, float]
    fnmr: float
    fnmr_interval: tuple[float, float]
    #: The decider calibrated and the model of the final configuration (for :meth:`realised`).
    decider: Decider | None = field(default=None, repr=False, compare=False)
    model: Any = field(default=None, repr=False, compare=False)

    def realised(self, people: LabelledVectors, *, enrol_samples: int) -> dict[str, Any]:
        """The chosen point measured on other people (e.g. held out from the background).

        Returns the realised FMR and FNMR with their intervals (effective counts, as for the
        prediction), their ratio to the target, and whether the realised FMR lies in the
        predicted interval (``fmr_within_predicted_interval``) and in the *prediction interval for
        this population* — the calibration's and this population's variances added
        (``fmr_within_prediction_interval``).
        """
        if self.decider is None:
            raise ParameterError("this calibration carries no decider to measure with")
        counts = _measure(self.decider, [(self.model, projected_trials(_identity, people, enrol_samples))], None)
        i = self.index
        k, n = int(counts.false_matches[i]), counts.impostor_trials
        fnm, g = int(counts.false_non_matches[i]), counts.genuine_trials
        k_eff, n_eff = (int(x[i]) for x in counts.fmr_effective())
        fnm_eff, g_eff = (int(x[i]) for x in counts.fnmr_effective())
        cal_n = self.effective_impostor_trials
        fmr = k / n
        # Prediction interval for this population: effective trials of both measurements combined.
        p = self.fmr
        both = 1.0 / (1.0 / cal_n + 1.0 / n_eff)
        n_pred = max(1, math.floor(both))
        prediction = clopper_pearson_interval(min(n_pred, round(p * n_pred)), n_pred, self.confidence)
        return {
            "fmr": fmr,
            "fmr_interval": list(clopper_pearson_interval(k_eff, n_eff, self.confidence)),
            "fmr_over_target": fmr / self.target_fmr,
            "fmr_within_predicted_interval": self.fmr_interval[0] <= fmr <= self.fmr_interval[1],
            "fmr_prediction_interval": list(prediction),
            "fmr_within_prediction_interval": prediction[0] <= fmr <= prediction[1],
            "fnmr": fnm / g,
            "fnmr_interval": list(clopper_pearson_interval(fnm_eff, g_eff, self.confidence)),
            "genuine_trials": g,
            "impostor_trials": n,
            "calibration_effective_impostor_trials": cal_n,
            "calibration_effective_false_matches": self.effective_false_matches,
        }

    def method(self) -> str:
        """How the trials were scored: k-fold or leave-one-person-out cross-validation, or all pairs."""
        if self.folds <= 1:
            return "all background impostor pairs (nothing fitted to cross-validate)"
        if self.folds == self.identities:
            return "leave-one-person-out cross-validation (too few people for 2 per fold)"
        return f"{self.folds}-fold identity-disjoint cross-validation"

    def bound_note(self) -> str | None:
        """For a small background (fewer than 10 people): how wide the bounds then are, in words."""
        if self.identities >= 10:
            return None
        return (
            f"only {self.identities} background people ({self.method()}): the FMR is bounded only to <= "
            f"{self.fmr_upper:.2g} at {self.confidence:.0%} from {self.effective_impostor_trials} effective impostor "
            f"trials (interval [{self.fmr_interval[0]:.2g}, {self.fmr_interval[1]:.2g}]), the FNMR to "
            f"[{self.fnmr_interval[0]:.2g}, {self.fnmr_interval[1]:.2g}]; a larger background narrows both"
        )

    def to_dict(self) -> dict[str, Any]:
        point = self.point.item() if isinstance(self.point, np.generic) else self.point
        note = self.bound_note()
        return {
            **({"small_background": note} if note is not None else {}),
            "method": self.method(),
            "point": point,
            "target_fmr": self.target_fmr,
            "confidence": self.confidence,
            "folds": self.folds,
            "identities": self.identities,
            "impostor_trials": self.impostor_trials,
            "genuine_trials": self.genuine_trials,
            "false_matches": int(self.false_matches[self.index]),
            "false_non_matches": int(self.false_non_matches[self.index]),
            "effective_impostor_trials": self.effective_impostor_trials,
            "effective_false_matches": self.effective_false_matches,
            "predicted_fmr": self.fmr,
            "predicted_fmr_upper": self.fmr_upper,
            "predicted_fmr_interval": list(self.fmr_interval),
            "predicted_fnmr": self.fnmr,
            "predicted_fnmr_interval": list(self.fnmr_interval),
        }

    def summary(self) -> str:
        """One line: the predicted FMR and FNMR with their intervals, and how they were measured."""
        how = self.method()
        return (
            f"predicted FMR {self.fmr:.2e} [{self.fmr_interval[0]:.2e}, {self.fmr_interval[1]:.2e}] "
            f"(one-sided {self.confidence:.0%} bound {self.fmr_upper:.2e} <= target {self.target_fmr:g}), "
            f"FNMR {self.fnmr:.4f} [{self.fnmr_interval[0]:.4f}, {self.fnmr_interval[1]:.4f}]; "
            f"{how} over {self.identities} background identities, "
            f"{self.genuine_trials} genuine / {self.impostor_trials} impostor trials"
        )


def _pairs(
    templates: np.ndarray, probes: np.ndarray, owner: np.ndarray | None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Impostor pairs (template row, probe row) in chunks: every template against every probe it does not own.

    ``owner`` (probe → template row) excludes the genuine pairs; ``None``: the probes are of other
    people (templates and probes from two different folds).
    """
    width = max(1, int(np.prod(templates.shape[1:])) + int(np.prod(probes.shape[1:])))
    rows_per_chunk = max(1, _CHUNK_CELLS // max(1, width * probes.shape[0]))
    for start in range(0, templates.shape[0], rows_per_chunk):
        rows = np.arange(start, min(start + rows_per_chunk, templates.shape[0]))
        if owner is None:
            t_idx, p_idx = np.divmod(np.arange(rows.size * probes.shape[0]), probes.shape[0])
        else:
            t_idx, p_idx = np.nonzero(owner[None, :] != rows[:, None])
        if t_idx.size:
            yield rows[t_idx], p_idx


def _measure(
    decider: Decider,
    pools: Sequence[tuple[Any, ProjectedTrials]],
    cross: Callable[[int, int], Any] | None,
) -> Counts:
    """Counts over pools of people, each scored by its model; ``cross(f, g)`` is the model for pairs across pools.

    People are numbered pool by pool. Genuine and impostor pairs inside pool ``f`` are scored with
    its model; with ``cross``, impostor pairs between pools ``f < g`` (both directions) with ``cross(f, g)``.
    """
    offsets = np.cumsum([0] + [trials.identities for _, trials in pools])
    people, grid = int(offsets[-1]), len(decider.grid)
    counts = Counts.empty(people, grid)
    # Score deciders: per person a histogram of each impostor pair's first accepting grid index,
    # summed into accepted counts once at the end (not a people × grid array per chunk of pairs).
    first_by_template = np.zeros((people, grid + 1), dtype=np.int64)
    first_by_probe = np.zeros((people, grid + 1), dtype=np.int64)

    def add(model: Any, tf: np.ndarray, pg: np.ndarray, t_off: int, owner_p: np.ndarray, p_off: int, own: bool) -> None:
        for t_idx, p_idx in _pairs(tf, pg, owner_p if own else None):
            t_ids, p_ids = t_idx + t_off, owner_p[p_idx] + p_off
            first = decider.first_accepting_pairs(model, tf, pg, t_idx, p_idx)
            if first is not None:
                np.add.at(first_by_template, (t_ids, first), 1)
                np.add.at(first_by_probe, (p_ids, first), 1)
            else:
                by_t, by_p = decider.accepted(model, tf[t_idx], pg[p_idx], (t_ids, p_ids), people)
                counts.impostor_by_template[...] += by_t
                counts.impostor_by_probe[...] += by_p
            counts.impostor_trials_by_template[...] += np.bincount(t_ids, minlength=people)
            counts.impostor_trials_by_probe[...] += np.bincount(p_ids, minlength=people)

    for f, (model, trials) in enumerate(pools):
        templates, probes = decider.features(model, trials)
        ids = trials.owner + offsets[f]
        (accepted,) = decider.accepted(model, templates[trials.owner], probes, (ids,), people)
        counts.genuine[...] += accepted
        counts.genuine_trials_by_person[...] += np.bincount(ids, minlength=people)
        add(model, templates, probes, int(offsets[f]), trials.owner, int(offsets[f]), True)
    if cross is not None:
        for f in range(len(pools)):
            for g in range(f + 1, len(pools)):
                model = cross(f, g)
                tf, pf = decider.features(model, pools[f][1])
                tg, pg = decider.features(model, pools[g][1])
                add(model, tf, pg, int(offsets[f]), pools[g][1].owner, int(offsets[g]), False)
                add(model, tg, pf, int(offsets[g]), pools[f][1].owner, int(offsets[f]), False)
    if decider.score is not None:
        counts.impostor_by_template[...] += np.cumsum(first_by_template[:, :grid], axis=1)
        counts.impostor_by_probe[...] += np.cumsum(first_by_probe[:, :grid], axis=1)
    return counts


def _subset(data: LabelledVectors, mask: np.ndarray) -> LabelledVectors:
    split = None if data.split is None else data.split[mask]
    return LabelledVectors(data.identities[mask], data.samples[mask], split, data.split_column)


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def calibrate(
    decider: Decider,
    background: LabelledVectors,
    *,
    target_fmr: float,
    enrol_samples: int = 1,
    folds: int = 5,
    confidence: float = 0.95,
    seed: int = 0,
) -> Calibration:
    """Choose ``decider``'s setting for ``target_fmr`` on ``background`` (see the module docstring).

    ``ParameterError`` when no grid point is admissible; the message says how many impostor
    trials a zero-false-match point would need (``⌈ln(1 − confidence)/ln(1 − target)⌉``).
    """
    if isinstance(target_fmr, bool) or not isinstance(target_fmr, (int, float, Fraction)) or not 0 < target_fmr < 1:
        raise ParameterError(f"target_fmr must be in (0, 1), got {target_fmr!r}")
    target = float(target_fmr)
    confidence = _check_confidence(confidence)
    fit = decider.fit
    people = int(np.unique(background.identities).size)
    if fit is None:
        if people < 2:
            raise ParameterError(
                f"calibration needs impostor trials, so at least 2 background people; got {people}: add another person"
            )
        counts = _measure(decider, [(None, projected_trials(_identity, background, enrol_samples))], None)
        used_folds = 1
    else:
        if isinstance(folds, bool) or not isinstance(folds, int) or folds < 3:
            raise ParameterError(f"cross-validation needs at least 3 folds (pairs train on the rest), got {folds!r}")
        if people < MIN_CROSS_VALIDATED_PEOPLE:
            raise ParameterError(
                f"cross-validated calibration needs at least {MIN_CROSS_VALIDATED_PEOPLE} background people (every "
                "pair of held-out people is scored by a model refitted on the others, which needs 2); got "
                f"{people}: add {MIN_CROSS_VALIDATED_PEOPLE - people} more, or calibrate on later samples of the same "
                "people (closed set, optimistic: 'sketchauth features fit --calibration-split samples')"
            )
        used_folds = fold_count(people, folds)
        fold = identity_folds(background.identities, used_folds, seed)
        pools = [
            (fit(_subset(background, fold != f)), _fold_trials(_subset(background, fold == f), enrol_samples))
            for f in range(used_folds)
        ]
        counts = _measure(decider, pools, lambda f, g: fit(_subset(background, (fold != f) & (fold != g))))
    return _choose(decider, counts, target, confidence, used_folds, people)


#: Fewest background people a cross-validated calibration takes: each pair of held-out people is
#: scored by a model fitted on the rest, and a transform needs 2 people to be fitted.
MIN_CROSS_VALIDATED_PEOPLE = 4


def fold_count(people: int, folds: int) -> int:
    """``folds``, or one fold per person (leave-one-person-out) when some fold would hold fewer than 2 people.

    A small deployment has few people (6–9): with 5 folds some would hold one person, whose
    impostor trials all come from pairs across folds — exactly leave-one-person-out, which is what
    it then is, stated as such (:attr:`Calibration.folds` equals the people).

    >>> fold_count(20, 5), fold_count(9, 5), fold_count(6, 5)
    (5, 9, 6)
    """
    return folds if people >= 2 * folds else people


def _fold_trials(data: LabelledVectors, enrol_samples: int) -> ProjectedTrials:
    """The protocol's trials of one fold's people; a fold of one person enrols and probes that person only."""
    if np.unique(data.identities).size >= 2:
        return projected_trials(_identity, data, enrol_samples)
    rows = np.arange(data.identities.size)
    if data.split is not None:
        enrol, probe = Protocol(enrol_samples, split_column=data.split_column).roles(data.split)
        mine, probes = rows[enrol][:enrol_samples], rows[probe]
    else:
        mine, probes = rows[:enrol_samples], rows[enrol_samples:]
    if mine.size < enrol_samples or probes.size == 0:
        raise ParameterError(
            f"identity {data.identities[0]} has {rows.size} samples: calibration needs {enrol_samples} to enrol and "
            "at least 1 probe per person; lower enrol_samples or drop that identity"
        )
    samples = np.asarray(data.samples)
    return ProjectedTrials(samples[mine][None], samples[probes], np.zeros(probes.size, dtype=np.int64))


def trials_needed(false_matches: int, trials: int, target: float, confidence: float = 0.95) -> int | None:
    """Fewest impostor trials at which the same false-match *rate* keeps the one-sided bound ``≤ target``.

    ``None`` when the rate itself is at or above the target (more trials cannot help). With no
    false match this is ``⌈ln(1 − confidence) / ln(1 − target)⌉``.

    >>> trials_needed(0, 210, 0.01), trials_needed(3, 1000, 0.01), trials_needed(20, 1000, 0.01)
    (299, 628, None)
    """
    rate = false_matches / trials
    if rate >= target:
        return None

    def admissible(n: int) -> bool:
        return max_false_matches(n, target, confidence) >= round(rate * n)

    low, high = 1, max(trials, 2)
    while not admissible(high):
        low, high = high, 2 * high
        if high > 10**12:
            return None
    while low < high:
        middle = (low + high) // 2
        if admissible(middle):
            high = middle
        else:
            low = middle + 1
    return high


def people_needed(trials: int, probes_per_person: float) -> int:
    """Fewest people whose all-pairs impostor trials ``J (J − 1) p`` reach ``trials`` (``p`` probes per person).

    >>> people_needed(299, 1.0), people_needed(299, 4.0)
    (18, 10)
    """
    people = 2
    while people * (people - 1) * probes_per_person < trials:
        people += 1
    return people


def _refusal(counts: Counts, target: float, confidence: float, identities: int) -> str:
    """Why no setting is admissible, and what would make one: how many impostor trials, how many people."""
    k_eff, n_eff = counts.fmr_effective()
    strictest = int(np.argmin(counts.false_matches))
    k, n = int(counts.false_matches[strictest]), counts.impostor_trials
    head = (
        f"no setting keeps the {confidence:.0%} upper bound on the FMR <= {target:g}: the strictest has {k} false "
        f"matches in {n} impostor trials of {identities} background people"
    )
    need = trials_needed(int(k_eff[strictest]), int(n_eff[strictest]), target, confidence)
    probes = counts.genuine_trials / max(1, identities)
    if need is None:
        clean = trials_needed(0, 1, target, confidence) or 0
        return (
            f"{head}, a rate of {k / n:.3g}, at or above the target: more people would not help it. A stricter "
            f"setting (a stricter grid, a larger code) with no false match would need {clean} impostor trials: about "
            f"{people_needed(clean, probes)} background people with {probes:.3g} probes each; or a looser target"
        )
    deff = n / max(1, int(n_eff[strictest]))  # trials of one person are correlated: raw trials per effective one
    raw = math.ceil(need * deff)
    people = people_needed(raw, probes)
    return (
        f"{head}; a setting like it needs about {raw} impostor trials ({need} effective) to be admitted: about "
        f"{people} background people with {probes:.3g} probes each (now {identities}), or more probes per person, "
        "a looser target or a stricter setting"
    )


def _choose(
    decider: Decider, counts: Counts, target: float, confidence: float, folds: int, identities: int
) -> Calibration:
    """The admissible point with the fewest false non-matches (ties: the earliest)."""
    k_eff, n_eff = counts.fmr_effective()
    caps = {int(n): max_false_matches(int(n), target, confidence) for n in np.unique(n_eff)}
    admissible = np.flatnonzero(k_eff <= np.array([caps[int(n)] for n in n_eff]))
    if admissible.size == 0:
        raise ParameterError(_refusal(counts, target, confidence, identities))
    fnm = counts.false_non_matches
    best = admissible[fnm[admissible] == fnm[admissible].min()]
    index = int(best[-1] if decider.ties == "loosest" else best[0])
    fnm_eff, g_eff = (int(x[index]) for x in counts.fnmr_effective())
    k, n = int(k_eff[index]), int(n_eff[index])
    return Calibration(
        index=index,
        point=decider.grid[index],
        target_fmr=target,
        confidence=confidence,
        folds=folds,
        identities=identities,
        false_matches=counts.false_matches,
        false_non_matches=fnm,
        impostor_trials=counts.impostor_trials,
        genuine_trials=counts.genuine_trials,
        effective_impostor_trials=n,
        effective_false_matches=k,
        fmr=int(counts.false_matches[index]) / counts.impostor_trials,
        fmr_upper=clopper_pearson_upper(k, n, confidence),
        fmr_interval=clopper_pearson_interval(k, n, confidence),
        fnmr=int(fnm[index]) / counts.genuine_trials,
        fnmr_interval=clopper_pearson_interval(fnm_eff, g_eff, confidence),
        decider=decider,
    )
