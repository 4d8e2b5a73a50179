"""Fitting the asymmetric-interval pipeline (:class:`~sketchauth.features.asymmetric.AsymmetricIntervalPipeline`):
the ``scale`` of :func:`~sketchauth.templates.enrol_interval` for a target FMR, chosen on a background."""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Decider
from sketchauth.evaluate.fitting.common import calibrate_with, fold_transform, with_calibration
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.trials import ProjectedTrials, pair_scores
from sketchauth.features.asymmetric import AsymmetricIntervalPipeline
from sketchauth.features.transform import FeatureTransform
from sketchauth.templates import CEIL_SLACK

__all__ = ["KIND", "SCALE_GRID", "asymmetric_decider", "asymmetric_scale_scores", "for_target_fmr", "level_statistics"]

#: The pipeline kind this module fits (its entry in :data:`sketchauth.evaluate.fitting.FITTERS`).
KIND = AsymmetricIntervalPipeline.kind


def for_target_fmr(
    transform: FeatureTransform, heldout: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> AsymmetricIntervalPipeline:
    """The largest ``scale`` on :data:`SCALE_GRID` admissible for ``options.target_fmr`` (s2, spread
    ``std``; ``options.margin``, ``options.q``; ``options.enrol_samples`` at least 2).

    Each comparison has the smallest scale accepting it (:func:`asymmetric_scale_scores`); the
    pipeline at scale ``c`` accepts the trials scoring strictly below ``c``.

    ``options`` (:class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`): the target, the
    cross-validation and this kind's settings; the prediction is in
    :attr:`~sketchauth.features.base.Pipeline.calibration`.
    """
    if options.enrol_samples < 2:
        raise ParameterError("the asymmetric-interval pipeline enrols from at least 2 samples (enrol_samples)")
    q, margin = (transform.levels if options.q is None else options.q), options.margin
    decider = asymmetric_decider(transform, q=q, margin=margin, refit=options.refit)
    choice = calibrate_with(decider, heldout, options)
    pipeline = AsymmetricIntervalPipeline(
        transform, np.arange(transform.dimensions), q=q, scale=float(choice.point), margin=margin
    )
    return with_calibration(pipeline, choice)


def asymmetric_scale_scores(
    transform: FeatureTransform, trials: ProjectedTrials, *, q: int, margin: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per trial the smallest ``scale`` at which the s2 pipeline (spread ``std``) accepts it.

    Template ``b`` = rounded mean of the enrolment levels, ``s`` = their standard deviation
    (``ddof = 1``), ``v_j(c) = min(q, max(1, ⌈c·s_j − ε⌉ + margin))`` with ``ε`` the slack of
    :func:`~sketchauth.templates.enrol_interval`. The s2 decoder accepts ``−v ≤ Δ < v`` (``Δ = d' − b``;
    the left end ``b − v`` belongs to the secret interval), i.e. ``v > w`` with ``w = Δ`` for
    ``Δ ≥ 0`` and ``w = −Δ − 1`` for ``Δ < 0``; as ``⌈x⌉ > k ⇔ x > k`` for an integer ``k``, a trial
    is accepted at scale ``c`` iff every ``w_j < q`` and either ``w_j < max(1, margin)`` (always
    within ``v``) or ``c > (w_j − margin + ε)/s_j`` (never when ``s_j = 0``). Scores are clipped to
    ``[0, 10^9]``.

    *Equal thresholds are equal floats.* ``s_j² = (m·Σx² − (Σx)²)/(m(m − 1))`` is formed from exact
    integers (one correctly rounded division, then one correctly rounded square root), so two
    trials whose thresholds are equal reals get the same float. A floating standard deviation
    could split them by one ulp: a setting on one twin then "rejects" the other, which every real
    pipeline at that setting accepts (the cross-check's disagreements on real face embeddings).
    """
    packed, probes = _templates_and_probes(transform, trials)
    return pair_scores(packed, probes, trials.owner, lambda t, p: _scale_score(t, p, q=q, margin=margin))


def _templates_and_probes(transform: FeatureTransform, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
    """``(b, s²)`` packed per enrolled identity (``J × 2 × k``) and the probes' levels, from projected trials."""
    return level_statistics(transform.quantise(trials.enrolment)), transform.quantise(trials.probes)


def level_statistics(levels: Any) -> np.ndarray:
    """``(b, s²)`` of each identity's enrolment levels (``J × m × k`` integers → ``J × 2 × k`` floats).

    ``b`` is :func:`~sketchauth.templates.enrol_interval`'s rounded mean and ``s²`` the variance
    (``ddof = 1``) as ``(m·Σx² − (Σx)²)/(m(m − 1))`` from exact integers: equal variances are equal
    floats, whatever the levels (:func:`asymmetric_scale_scores`).

    >>> level_statistics([[[0], [0], [1]], [[3], [4], [4]]])[:, 1, 0].tolist() == [1 / 3, 1 / 3]
    True
    """
    x = np.asarray(levels, dtype=np.int64)
    m = x.shape[1]
    if m < 2:
        raise ParameterError("the asymmetric-interval scores need at least 2 enrolment samples")
    total = x.sum(axis=1)
    b = (2 * total + m) // (2 * m)
    variance = (m * np.square(x).sum(axis=1) - total * total) / float(m * (m - 1))
    return np.stack([b.astype(np.float64), variance], axis=1)


def _scale_score(template: np.ndarray, probe: np.ndarray, *, q: int, margin: int) -> np.ndarray:
    bj, sj = template[..., 0, :], np.sqrt(template[..., 1, :])
    signed = probe - bj
    w = np.where(signed < 0, -signed - 1, signed)
    slack = CEIL_SLACK  # enrol_interval's: v = ⌈c·s − ε⌉ + margin
    # v ≥ max(1, margin) whatever the scale: such a w is accepted at every scale (s or no s).
    need = np.where(sj > 0, (w - margin + slack) / np.where(sj > 0, sj, 1.0), np.inf)
    need = np.where(w < max(1, margin), -np.inf, need)
    need = np.where(w >= q, np.inf, need)
    return np.asarray(np.max(need, axis=-1).clip(0.0, 1e9))


#: Scales :meth:`AsymmetricIntervalPipeline.for_target_fmr` chooses from (ascending).
SCALE_GRID = np.round(np.concatenate([np.arange(0.0, 10.0, 0.02), np.arange(10.0, 100.0, 0.5)]), 2)


def asymmetric_decider(transform: FeatureTransform, *, q: int, margin: int, refit: bool) -> Decider:
    """The scale of :func:`~sketchauth.templates.enrol_interval` as a
    :class:`~sketchauth.evaluate.fitting.calibration.Decider` (accept iff the trial's
    :func:`asymmetric_scale_scores` score ``< scale``), over :data:`SCALE_GRID`."""

    def features(model: FeatureTransform | None, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        fold = transform if model is None else model
        shape = trials.enrolment.shape
        enrolment = fold.project(trials.enrolment.reshape(-1, shape[-1])).reshape(shape[0], shape[1], -1)
        return _templates_and_probes(fold, ProjectedTrials(enrolment, fold.project(trials.probes), trials.owner))

    return Decider(
        grid=SCALE_GRID,
        score=lambda model, t, p: _scale_score(t, p, q=q, margin=margin),
        strict=True,
        fit=fold_transform(transform, refit),
        features=features,
    )
