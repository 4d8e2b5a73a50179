"""The one list of pipeline kinds fitting knows: each kind's module, found by the kind's name."""

from __future__ import annotations

from collections.abc import Callable

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting import angular, asymmetric, code_offset, interval, thermometer
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.features.base import Pipeline
from sketchauth.features.transform import FeatureTransform

__all__ = ["CALIBRATED_KINDS", "FITTERS", "MAX_USABLE_FNMR", "Fitter", "fit_pipeline", "parse_kinds", "unusable_reason"]

#: A kind's calibration: ``(transform, background, options) → pipeline`` (its module's ``for_target_fmr``).
Fitter = Callable[[FeatureTransform, LabelledVectors, CalibrationOptions], Pipeline]

#: Every kind, in the order ``sketchauth features fit`` builds them. Adding a kind: one module with
#: ``KIND`` and ``for_target_fmr``, and one entry here.
FITTERS: dict[str, Fitter] = {
    module.KIND: module.for_target_fmr for module in (interval, thermometer, code_offset, asymmetric, angular)
}
#: The kinds' names (asymmetric-interval needs ``enrol_samples ≥ 2``).
CALIBRATED_KINDS = tuple(FITTERS)


def fit_pipeline(
    kind: str, transform: FeatureTransform, background: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> Pipeline:
    """One pipeline kind calibrated on ``background`` with ``options`` (``ParameterError`` for an unknown kind)."""
    fitter = FITTERS.get(kind)
    if fitter is None:
        raise ParameterError(f"unknown pipeline kind {kind!r}; known: {', '.join(FITTERS)}")
    return fitter(transform, background, options)


def parse_kinds(text: str) -> tuple[str, ...]:
    """Kinds from a comma list (``"angular"``, ``"interval,thermometer"``), each known, each once.

    >>> parse_kinds("angular, interval")
    ('angular', 'interval')
    """
    kinds = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [kind for kind in kinds if kind not in FITTERS]
    if not kinds or unknown:
        raise ParameterError(f"pipeline kinds must be a comma list of {', '.join(FITTERS)}; got {text!r}")
    if len(set(kinds)) != len(kinds):
        raise ParameterError(f"a pipeline kind is listed twice in {text!r}")
    return kinds


#: A pipeline predicted to reject more than this share of genuine attempts at its target FMR is not
#: offered silently: ``sketchauth features fit`` says so, writes it only with ``--keep-unusable`` and
#: then marks it (:attr:`~sketchauth.features.base.Pipeline.unusable`), which a service refuses to serve.
MAX_USABLE_FNMR = 0.5


def unusable_reason(pipeline: Pipeline) -> str | None:
    """Why a calibrated pipeline should not be served (predicted FNMR above :data:`MAX_USABLE_FNMR`), or ``None``."""
    calibration = pipeline.calibration
    if calibration is None or calibration.fnmr <= MAX_USABLE_FNMR:
        return None
    return (
        f"predicted FNMR {calibration.fnmr:.2f} at its target FMR {calibration.target_fmr:g} is above "
        f"{MAX_USABLE_FNMR}: it would reject most genuine attempts"
    )
