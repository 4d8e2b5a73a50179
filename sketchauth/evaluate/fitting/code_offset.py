"""Fitting the code-offset pipeline (:class:`~sketchauth.features.code_offset.CodeOffsetPipeline`):
the Reed–Solomon byte-error budget ``t`` for a target FMR (or FNMR), chosen on a background."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Decider
from sketchauth.evaluate.fitting.common import calibrate_with, fold_transform, with_calibration
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.trials import ProjectedTrials, pair_scores, projected_trials
from sketchauth.features.code_offset import CodeOffsetPipeline
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.transform import FeatureTransform

__all__ = [
    "KIND",
    "ToleranceChoice",
    "byte_error_scores",
    "choose_error_tolerance",
    "code_dims",
    "code_offset_decider",
    "for_target_fmr",
    "for_target_fnmr",
]

#: The pipeline kind this module fits (its entry in :data:`sketchauth.evaluate.fitting.FITTERS`).
KIND = CodeOffsetPipeline.kind


def code_dims(transform: FeatureTransform, bits: int, dimensions: int | None) -> np.ndarray:
    per_byte = 8 // math.gcd(8, bits)  # dimensions needed for a whole number of bytes
    count = transform.dimensions if dimensions is None else min(int(dimensions), transform.dimensions)
    count = min(count, 255 * 8 // bits)
    count -= count % per_byte
    if count * bits < 16:
        raise ParameterError(
            f"{transform.dimensions} dimensions × {bits} bits give fewer than 2 whole bytes; "
            "use more bits or dimensions"
        )
    return np.arange(count)


def for_target_fnmr(
    transform: FeatureTransform,
    heldout: LabelledVectors,
    *,
    bits: int = DEFAULTS.code_bits,
    target_fnmr: float = DEFAULTS.target_fnmr,
    enrol_samples: int = 1,
    dimensions: int | None = None,
) -> CodeOffsetPipeline:
    """The smallest ``t`` reaching ``target_fnmr`` on held-out data (:func:`choose_error_tolerance`)."""
    choice = choose_error_tolerance(
        transform, heldout, bits=bits, target_fnmr=target_fnmr, enrol_samples=enrol_samples, dimensions=dimensions
    )
    return CodeOffsetPipeline(transform, choice.dims, bits=bits, t=choice.t)


def for_target_fmr(
    transform: FeatureTransform, heldout: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> CodeOffsetPipeline:
    """The largest useful ``t`` (``1 ≤ t``, ``2t < n``) for ``options.target_fmr``, on
    ``options.code_bits`` Gray bits of at most ``options.dimensions`` dimensions.

    A comparison is accepted iff at most ``t`` bytes differ (Reed–Solomon corrects exactly
    that many). ``ParameterError`` if even ``t = 1`` is not admissible.

    ``options`` (:class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`): the target, the
    cross-validation and this kind's settings; the prediction is in
    :attr:`~sketchauth.features.base.Pipeline.calibration`.
    """
    bits = options.code_bits
    dims = code_dims(transform, bits, options.dimensions)
    t_max = (dims.size * bits // 8 - 1) // 2
    if t_max < 1:
        raise ParameterError(
            f"{dims.size} dimensions × {bits} bits give {dims.size * bits // 8} bytes: no byte-error "
            "tolerance 1 <= t with 2t < n; use more bits or dimensions"
        )
    decider = code_offset_decider(transform, dims, bits=bits, t_max=t_max, refit=options.refit)
    choice = calibrate_with(decider, heldout, options)
    return with_calibration(CodeOffsetPipeline(transform, dims, bits=bits, t=int(choice.point)), choice)


@dataclass(frozen=True, slots=True)
class ToleranceChoice:
    """The chosen byte-error tolerance ``t`` and its measured held-out rates."""

    t: int
    dims: np.ndarray
    fnmr: float
    fmr: float
    genuine_trials: int
    impostor_trials: int


def byte_error_scores(
    transform: FeatureTransform, trials: ProjectedTrials, bits: int, dims: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor byte-error counts of the binarised templates and probes."""
    t_bytes = transform.binarise_array(transform.quantise(trials.templates), bits, dims)
    p_bytes = transform.binarise_array(transform.quantise(trials.probes), bits, dims)
    return pair_scores(t_bytes, p_bytes, trials.owner, lambda a, b: np.count_nonzero(a != b, axis=-1))


def choose_error_tolerance(
    transform: FeatureTransform,
    heldout: LabelledVectors,
    *,
    bits: int = DEFAULTS.code_bits,
    target_fnmr: float = DEFAULTS.target_fnmr,
    enrol_samples: int = 1,
    dimensions: int | None = None,
) -> ToleranceChoice:
    """The smallest ``t`` (``2t < n``) whose FNMR on held-out data is at most ``target_fnmr``.

    A genuine comparison is accepted iff at most ``t`` bytes differ (the Reed–Solomon decoder's
    guarantee; beyond ``t`` it fails or lands on another codeword, which the hash check rejects).
    ``ParameterError`` if no admissible ``t`` reaches the target (the message gives the best FNMR).
    """
    if not (isinstance(target_fnmr, (int, float)) and 0.0 < target_fnmr < 1.0):
        raise ParameterError(f"target_fnmr must be in (0, 1), got {target_fnmr!r}")
    dims = code_dims(transform, bits, dimensions)
    trials = projected_trials(transform.project, heldout, enrol_samples)
    genuine, impostor = byte_error_scores(transform, trials, bits, dims)
    n = dims.size * bits // 8
    t_max = (n - 1) // 2
    if t_max < 1:
        raise ParameterError(
            f"{dims.size} dimensions × {bits} bits give {n} bytes; a code-offset sketch needs at least 3 bytes "
            "to correct one byte error: use more bits per dimension or keep more dimensions"
        )
    # Integer counts, compared exactly: rejected/G ≤ target ⇔ rejected ≤ ⌊target·G⌋ (as a Fraction,
    # so 5 of 100 rejected meets target 0.05 — a float 1 − accepted/G would give 0.05000000000000004).
    rejected = genuine.size - np.searchsorted(np.sort(genuine), np.arange(t_max + 1), side="right")
    fnmr = rejected / genuine.size
    ok = np.flatnonzero(rejected[1:] <= int(Fraction(str(target_fnmr)) * genuine.size))
    if ok.size == 0:
        raise ParameterError(
            f"no t <= {t_max} reaches FNMR {target_fnmr} with {dims.size} dimensions × {bits} bits "
            f"(best {fnmr[t_max]:.3f} at t={t_max}); use fewer bits or dimensions"
        )
    t = int(ok[0]) + 1
    fmr = float(np.count_nonzero(impostor <= t)) / impostor.size
    return ToleranceChoice(t, dims, float(fnmr[t]), fmr, int(genuine.size), int(impostor.size))


def code_offset_decider(
    transform: FeatureTransform, dims: np.ndarray, *, bits: int, t_max: int, refit: bool
) -> Decider:
    """The Reed–Solomon budget as a :class:`~sketchauth.evaluate.fitting.calibration.Decider`: accept iff at
    most ``t`` bytes differ, ``t = 1 … t_max``. With ``refit`` each fold refits the transform
    (same ``bits``, as many of its leading dimensions as ``dims`` holds)."""

    def features(model: FeatureTransform | None, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        fold = transform if model is None else model
        use = dims if model is None else code_dims(fold, bits, dims.size)
        t_bytes = fold.binarise_array(fold.quantise(fold.project(trials.templates)), bits, use)
        p_bytes = fold.binarise_array(fold.quantise(fold.project(trials.probes)), bits, use)
        return t_bytes, p_bytes

    def score(model: Any, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        return np.asarray(np.count_nonzero(templates != probes, axis=-1))

    return Decider(grid=np.arange(1, t_max + 1), score=score, fit=fold_transform(transform, refit), features=features)
