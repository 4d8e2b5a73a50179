"""Fitting the thermometer pipeline (:class:`~sketchauth.features.thermometer.ThermometerPipeline`):
the PinSketch budget ``t`` for a target FMR, calibrated on a background."""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Decider
from sketchauth.evaluate.fitting.common import calibrate_with, with_calibration
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.fitting.transform import refit_transform
from sketchauth.evaluate.trials import ProjectedTrials, pair_scores, projected_trials
from sketchauth.features.thermometer import ThermometerPipeline
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.pinsketch import MAX_T

__all__ = ["KIND", "for_target_fmr", "level_distances", "thermometer_decider", "trial_distances"]

#: The pipeline kind this module fits (its entry in :data:`sketchauth.evaluate.fitting.FITTERS`).
KIND = ThermometerPipeline.kind


def for_target_fmr(
    transform: FeatureTransform, heldout: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> ThermometerPipeline:
    """All kept dimensions, steps from :func:`~sketchauth.features.thermometer.fisher_weights` at
    ``options.resolution``, the budget ``t`` for ``options.target_fmr``.

    ``options`` (:class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`): the target, the
    cross-validation and this kind's settings; the prediction is in
    :attr:`~sketchauth.features.base.Pipeline.calibration`.
    """
    m, resolution = options.enrol_samples, options.resolution
    draft = ThermometerPipeline.with_resolution(transform, enrol_samples=m, resolution=resolution, t=1)
    decider = thermometer_decider(draft, enrol_samples=m, resolution=resolution, refit=options.refit)
    choice = calibrate_with(decider, heldout, options)
    return with_calibration(ThermometerPipeline(transform, draft.dims, steps=draft.steps, t=int(choice.point)), choice)


def level_distances(
    pipeline: ThermometerPipeline, data: LabelledVectors, *, enrol_samples: int
) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor L1 distances in levels (= set differences) on labelled data."""
    return trial_distances(pipeline, projected_trials(pipeline.transform.project, data, enrol_samples))


def trial_distances(pipeline: ThermometerPipeline, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`level_distances` of already projected trials (templates and probes)."""
    t_levels = pipeline.levels(trials.templates[:, pipeline.dims])
    p_levels = pipeline.levels(trials.probes[:, pipeline.dims])
    return pair_scores(t_levels, p_levels, trials.owner, lambda a, b: np.abs(a - b).sum(axis=-1))


def thermometer_decider(draft: ThermometerPipeline, *, enrol_samples: int, resolution: float, refit: bool) -> Decider:
    """The PinSketch budget as a :class:`~sketchauth.evaluate.fitting.calibration.Decider`: accept iff the L1
    level distance ``≤ t`` for every ``t`` PinSketch accepts over ``draft``'s universe.

    With ``refit`` each fold's model is the pipeline at the same resolution on a refitted transform.
    """

    def fit(train: LabelledVectors) -> ThermometerPipeline:
        return ThermometerPipeline.with_resolution(
            refit_transform(draft.transform, train), enrol_samples=enrol_samples, resolution=resolution, t=1
        )

    def features(model: ThermometerPipeline | None, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        model = draft if model is None else model
        project = model.transform.project
        return model.levels(project(trials.templates)[:, model.dims]), model.levels(
            project(trials.probes)[:, model.dims]
        )

    def score(model: Any, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(templates - probes).sum(axis=-1))

    # Every budget PinSketch takes over this universe (t ≤ MAX_T, t < 2^(m−1)).
    grid = np.arange(1, min(MAX_T, (1 << (draft.sketch.m - 1)) - 1) + 1)
    return Decider(grid=grid, score=score, fit=fit if refit else None, features=features)
