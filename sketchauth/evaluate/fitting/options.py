"""The one set of options every pipeline kind is calibrated with (a value, passed once)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from sketchauth.errors import ParameterError
from sketchauth.features.defaults import DEFAULTS

__all__ = ["DEFAULT_OPTIONS", "CalibrationOptions"]


@dataclass(frozen=True, slots=True)
class CalibrationOptions:
    """How a pipeline kind is calibrated on a background (defaults: :data:`~sketchauth.features.defaults.DEFAULTS`).

    Shared by every kind: ``target_fmr`` (the one-sided Clopper–Pearson bound at ``confidence`` on
    the FMR must not exceed it), ``enrol_samples`` (captures per enrolment), ``folds``
    (identity-disjoint cross-validation), ``refit`` (each fold refits the transform without its
    people: set it when the background includes the people the transform was fitted on). Each
    kind reads its own settings and ignores the others': ``resolution`` (thermometer),
    ``code_bits`` and ``dimensions`` (code-offset), ``margin`` and ``q`` (asymmetric-interval),
    ``security_bits``, ``code``, ``list_size``, ``crc``, ``match_threshold``,
    ``measure_decode_failures`` and ``calibrate_captures`` (angular).
    """

    target_fmr: float = DEFAULTS.target_fmr
    enrol_samples: int = DEFAULTS.enrol_samples
    folds: int = DEFAULTS.folds
    confidence: float = DEFAULTS.confidence
    refit: bool = False
    #: Thermometer step in Fisher-weighted whitened units.
    resolution: float = DEFAULTS.thermometer_resolution
    #: Gray-coded bits per dimension of the code-offset pipeline, and at most this many dimensions.
    code_bits: int = DEFAULTS.code_bits
    dimensions: int | None = None
    #: ``margin`` of :func:`~sketchauth.templates.enrol_interval` and the tolerance cap ``q`` (``None``: ``L``).
    margin: int = DEFAULTS.asymmetric_margin
    q: int | None = None
    #: The angular pipeline's code: its codebook bits, ``"polar"`` or ``"sparse"``, list size, matched bits.
    security_bits: float = DEFAULTS.angular_security_bits
    code: str = DEFAULTS.angular_code
    list_size: int = DEFAULTS.angular_list_size
    crc: int = DEFAULTS.angular_crc
    match_threshold: bool = DEFAULTS.angular_match_threshold
    #: Whether the angular fit measures its decode failures (real encode → decode of background genuine
    #: trials): a curve over code sizes measures them for the size it keeps only.
    measure_decode_failures: bool = True
    #: Whether the angular fit also calibrates ``min_cos`` for attempts of 2 to
    #: :data:`~sketchauth.features.angular.MAX_VERIFY_CAPTURES` captures (on the background's own
    #: attempts of that many): a curve over code sizes calibrates them for the size it keeps only.
    calibrate_captures: bool = True

    def __post_init__(self) -> None:
        target = self.target_fmr
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
            raise ParameterError(f"target_fmr must be in (0, 1), got {target!r}")
        if isinstance(self.enrol_samples, bool) or not isinstance(self.enrol_samples, int) or self.enrol_samples < 1:
            raise ParameterError(f"enrol_samples must be a positive integer, got {self.enrol_samples!r}")
        flags = (self.refit, self.match_threshold, self.measure_decode_failures, self.calibrate_captures)
        if not all(isinstance(flag, bool) for flag in flags):
            raise ParameterError(
                "refit, match_threshold, measure_decode_failures and calibrate_captures must be True or False"
            )
        if not (isinstance(self.resolution, (int, float)) and math.isfinite(self.resolution)):
            raise ParameterError(f"resolution must be a finite number, got {self.resolution!r}")

    def but(self, **changes: Any) -> CalibrationOptions:
        """These options with ``changes`` (field names only: a misspelt option is an error, not ignored)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ParameterError(
                f"unknown calibration option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for summaries and benchmark records)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: The defaults, as options.
DEFAULT_OPTIONS = CalibrationOptions()
