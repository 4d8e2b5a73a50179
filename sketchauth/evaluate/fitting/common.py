"""Small pieces every pipeline kind's fitting shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Calibration, Decider, calibrate
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import refit_transform
from sketchauth.features.base import Pipeline
from sketchauth.features.transform import FeatureTransform

__all__ = ["calibrate_with", "calibration_of", "fold_transform", "with_calibration"]

P = TypeVar("P", bound=Pipeline)


def fold_transform(transform: FeatureTransform, refit: bool) -> Callable[[LabelledVectors], FeatureTransform] | None:
    """Per-fold model of a pipeline whose only learned part is the transform: refitted, or none."""
    if not refit:
        return None

    def fit(data: LabelledVectors) -> FeatureTransform:
        return refit_transform(transform, data)

    return fit


def with_calibration(pipeline: P, calibration: Calibration) -> P:
    """``pipeline`` with the record of how its setting was chosen."""
    pipeline.calibration = calibration
    return pipeline


def calibration_of(pipeline: Pipeline) -> Calibration:
    """The :class:`Calibration` a fitted pipeline carries (``ParameterError`` for one built otherwise)."""
    record = pipeline.calibration
    if not isinstance(record, Calibration):
        raise ParameterError(f"the {pipeline.kind} pipeline was not calibrated here (no calibration record)")
    return record


def calibrate_with(decider: Decider, background: LabelledVectors, options: CalibrationOptions) -> Calibration:
    """:func:`~sketchauth.evaluate.fitting.calibration.calibrate` with ``options``' target and folds."""
    return calibrate(
        decider,
        background,
        target_fmr=options.target_fmr,
        enrol_samples=options.enrol_samples,
        folds=options.folds,
        confidence=options.confidence,
    )
