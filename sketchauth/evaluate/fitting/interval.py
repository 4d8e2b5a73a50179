"""Fitting the interval pipeline (:class:`~sketchauth.features.interval.IntervalPipeline`) on a background.

The tolerance path. With ``p_j(v) = P(|Δℓ_j| < v)`` for genuine and ``q_j(v)`` for impostor
comparisons (measured per dimension on held-out identities) a box accepts a genuine sample with
probability ≈ ``Π p_j(v_j)`` and an impostor with ≈ ``Π q_j(v_j)`` (dimensions of the whitened
space are independent for Gaussian data). Starting from ``v = 1`` everywhere, each step widens the
one dimension with the largest gain ``Δ log p_j / Δ log q_j`` (genuine acceptance bought per unit of
impostor acceptance): a greedy walk along the Lagrangian frontier of ``max Σ log p_j`` s.t.
``Σ log q_j ≤ log FMR``. The boxes are nested, so each comparison has a *score*: the first step
whose box accepts it — that gives DET curves and the exact joint FMR of every step on held-out
data, from which the step for a target FMR is chosen. Dimensions whose tolerance covers all ``L``
levels check nothing and are dropped from the sketch (they would only leak).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Decider
from sketchauth.evaluate.fitting.common import calibrate_with, with_calibration
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.fitting.transform import refit_transform
from sketchauth.evaluate.trials import ProjectedTrials, pair_scores, projected_trials
from sketchauth.features.interval import IntervalPipeline
from sketchauth.features.transform import FeatureTransform

__all__ = [
    "KIND",
    "PATH_LOG_FMR_GRID",
    "TolerancePath",
    "abs_delta",
    "for_target_fmr",
    "from_path",
    "interval_decider",
    "tolerance_path",
]

#: The pipeline kind this module fits (its entry in :data:`sketchauth.evaluate.fitting.FITTERS`).
KIND = IntervalPipeline.kind


@dataclass(frozen=True, slots=True)
class TolerancePath:
    """Nested boxes of per-dimension tolerances (``steps × k``), strictest first.

    ``fmr``/``fnmr`` are the joint error rates of every step measured on the held-out
    comparisons it was built from (``genuine_trials``/``impostor_trials`` of them).
    """

    tolerances: np.ndarray
    fmr: np.ndarray
    fnmr: np.ndarray
    genuine_trials: int
    impostor_trials: int
    #: ``Σ_j log q_j(v_j)`` per step: the log of the impostor acceptance the per-dimension rates
    #: predict (independent dimensions). Strictly increasing along the path, never flat where no
    #: measured impostor is accepted yet: the calibration's stopping scale.
    log_model_fmr: np.ndarray | None = None

    def step_for_log_model_fmr(self, log_fmr: float) -> int:
        """The most permissive step whose :attr:`log_model_fmr` does not exceed ``log_fmr``."""
        if self.log_model_fmr is None:
            raise ParameterError("this tolerance path carries no model FMR (build it with tolerance_path)")
        ok = np.flatnonzero(self.log_model_fmr <= log_fmr)
        if ok.size == 0:
            raise ParameterError(f"no step of the tolerance path has a model FMR <= exp({log_fmr:g})")
        return int(ok[-1])

    def step_for_fmr(self, target_fmr: float) -> int:
        """The most permissive step whose measured FMR does not exceed ``target_fmr``."""
        ok = np.flatnonzero(self.fmr <= target_fmr)
        if ok.size == 0:
            raise ParameterError(f"no tolerance reaches FMR <= {target_fmr} on the held-out data")
        return int(ok[-1])

    def steps_needed(self, deltas: np.ndarray) -> np.ndarray:
        """For level differences ``|Δℓ|`` (``… × k``): the first step whose box accepts each."""
        k = self.tolerances.shape[1]
        levels = int(self.tolerances.max())
        need = np.empty((k, levels), dtype=np.int64)
        for j in range(k):
            # First step with tolerance > δ, for every δ in [0, L).
            need[j] = np.searchsorted(self.tolerances[:, j], np.arange(levels), side="right")
        return np.asarray(need[np.arange(k), np.minimum(deltas, levels - 1)].max(axis=-1))


def _level_trials(
    transform: FeatureTransform, data: LabelledVectors, enrol_samples: int
) -> tuple[ProjectedTrials, np.ndarray, np.ndarray]:
    trials = projected_trials(transform.project, data, enrol_samples)
    return trials, transform.quantise(trials.templates), transform.quantise(trials.probes)


def abs_delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.int16) - b.astype(np.int16))


def _acceptance_tables(
    templates: np.ndarray, probes: np.ndarray, owner: np.ndarray, levels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per dimension ``log P(|Δℓ| < v)`` for ``v = 1 … L``: genuine and impostor (``k × L``)."""
    k = templates.shape[1]
    genuine = np.zeros((k, levels))
    impostor = np.zeros((k, levels))
    offsets = np.arange(k) * levels
    gen = abs_delta(templates[owner], probes)
    genuine += np.bincount((gen + offsets).ravel(), minlength=k * levels).reshape(k, levels)
    chunk = max(1, 2_000_000 // max(1, probes.size))
    for start in range(0, templates.shape[0], chunk):
        rows = np.arange(start, min(start + chunk, templates.shape[0]))
        block = abs_delta(templates[rows][:, None], probes[None])[owner[None, :] != rows[:, None]]
        impostor += np.bincount((block + offsets).ravel(), minlength=k * levels).reshape(k, levels)
    # Half a pseudo-count keeps every logarithm finite without moving well-measured rates.
    p = (np.cumsum(genuine, axis=1) + 0.5) / (genuine.sum(axis=1, keepdims=True) + 1.0)
    q = (np.cumsum(impostor, axis=1) + 0.5) / (impostor.sum(axis=1, keepdims=True) + 1.0)
    return np.log(p), np.log(q)


def _greedy_path(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    k, levels = log_p.shape
    v = np.ones(k, dtype=np.int64)
    path = [v.copy()]
    rows = np.arange(k)
    while np.any(v < levels):
        open_ = v < levels
        nxt = np.minimum(v, levels - 1)  # index of P(|Δ| < v + 1)
        gain_p = log_p[rows, nxt] - log_p[rows, v - 1]
        cost_q = np.maximum(log_q[rows, nxt] - log_q[rows, v - 1], 1e-12)
        gain = np.where(open_, gain_p / cost_q, -np.inf)
        if gain.max() > 0:
            v[int(np.argmax(gain))] += 1
        else:
            # No measurable genuine gain left anywhere: widen where impostors gain least.
            v[int(np.argmin(np.where(open_, cost_q, np.inf)))] += 1
        path.append(v.copy())
    return np.array(path, dtype=np.int64)


def tolerance_path(transform: FeatureTransform, heldout: LabelledVectors, *, enrol_samples: int = 1) -> TolerancePath:
    """Build the greedy :class:`TolerancePath` on held-out background identities (see the module docstring)."""
    trials, t_levels, p_levels = _level_trials(transform, heldout, enrol_samples)
    log_p, log_q = _acceptance_tables(t_levels, p_levels, trials.owner, transform.levels)
    path = _greedy_path(log_p, log_q)
    draft = TolerancePath(path, np.zeros(len(path)), np.zeros(len(path)), 0, 0)
    genuine, impostor = pair_scores(t_levels, p_levels, trials.owner, lambda a, b: draft.steps_needed(abs_delta(a, b)))
    steps = np.arange(len(path))
    fmr = np.searchsorted(np.sort(impostor), steps, side="right") / impostor.size
    fnmr = 1.0 - np.searchsorted(np.sort(genuine), steps, side="right") / genuine.size
    log_model = log_q[np.arange(path.shape[1])[None, :], path - 1].sum(axis=1)
    return TolerancePath(path, fmr, fnmr, int(genuine.size), int(impostor.size), log_model)


def from_path(transform: FeatureTransform, path: TolerancePath, step: int) -> IntervalPipeline:
    """The pipeline of one step of a path (dimensions accepting every level are dropped)."""
    v = path.tolerances[step]
    dims = np.flatnonzero(v < transform.levels)
    if dims.size == 0:
        raise ParameterError("this step accepts every level of every dimension; it checks nothing")
    return IntervalPipeline(transform, dims, v[dims])


def for_target_fmr(
    transform: FeatureTransform, heldout: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> IntervalPipeline:
    """Tolerances for ``options.target_fmr``: a step of the tolerance path built on all of ``heldout``.

    The path itself is learned from the data, so it is cross-validated too: each fold builds
    its own path without the fold's people, and the calibrated setting is the *model FMR*
    ``x`` (log, on :data:`PATH_LOG_FMR_GRID`) at which to stop — the last step whose
    :attr:`TolerancePath.log_model_fmr` is ``≤ x``. The pipeline is that step of the path built
    on all of ``heldout``.

    ``options`` (:class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`): the target, the
    cross-validation and this kind's settings; the prediction is in
    :attr:`~sketchauth.features.base.Pipeline.calibration`.
    """
    decider = interval_decider(transform, enrol_samples=options.enrol_samples, refit=options.refit)
    choice = calibrate_with(decider, heldout, options)
    path = tolerance_path(transform, heldout, enrol_samples=options.enrol_samples)
    pipeline = from_path(transform, path, path.step_for_log_model_fmr(float(choice.point)))
    return with_calibration(pipeline, replace(choice, model=(transform, path)))


#: A fold's model in :func:`interval_decider`: its transform and its tolerance path.
_PathModel = tuple[FeatureTransform, TolerancePath]

#: Log model FMRs at which :meth:`IntervalPipeline.for_target_fmr` may stop (ascending, e^-1400 … 1):
#: every integer up to -100, then steps of 0.1 (the products of hundreds of per-dimension rates are tiny).
PATH_LOG_FMR_GRID = np.round(np.concatenate([np.arange(-1400.0, -100.0, 1.0), np.arange(-100.0, 0.05, 0.1)]), 1)


def interval_decider(transform: FeatureTransform, *, enrol_samples: int, refit: bool) -> Decider:
    """The stopping point of a tolerance path as a :class:`~sketchauth.evaluate.fitting.calibration.Decider`.

    Each fold's model is ``(transform, path)`` fitted on the other folds (the transform refitted
    when ``refit``); a trial's score is the log model FMR of the first step whose box accepts it,
    and the pipeline stopping at log model FMR ``x`` accepts exactly the trials scoring ``≤ x``
    (the boxes are nested and the model FMR increases along the path).
    """

    def fit(train: LabelledVectors) -> _PathModel:
        fold = refit_transform(transform, train) if refit else transform
        return fold, tolerance_path(fold, train, enrol_samples=enrol_samples)

    def features(
        model: tuple[FeatureTransform, TolerancePath], trials: ProjectedTrials
    ) -> tuple[np.ndarray, np.ndarray]:
        fold = model[0]
        return fold.quantise(fold.project(trials.templates)), fold.quantise(fold.project(trials.probes))

    def score(model: _PathModel, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        path = model[1]
        assert path.log_model_fmr is not None  # tolerance_path records it
        return np.asarray(path.log_model_fmr[path.steps_needed(abs_delta(templates, probes))])

    return Decider(grid=PATH_LOG_FMR_GRID, score=score, fit=fit, features=features)
