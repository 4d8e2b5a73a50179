"""Pipelines calibrated on the background by kind, and their predictions checked on other people.

:func:`calibrated_pipeline` builds one pipeline kind with its ``for_target_fmr`` (identity-disjoint
cross-validation with a Clopper–Pearson bound, :mod:`sketchauth.evaluate.fitting.calibration`) from the one
set of defaults (:data:`sketchauth.features.defaults.DEFAULTS`) — what ``sketchauth features fit``
writes. :func:`heldout_check` measures each calibrated pipeline's chosen setting on people
outside the background: the realised FMR against the target and the predicted interval. That is
the figure that says whether a target is met; rates read off a DET curve at thresholds chosen on
the evaluated people themselves are optimistic.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> from sketchauth.evaluate.fitting.transform import fit_transform
    >>> population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    >>> background = population.draw(120, 4, seed=1)
    >>> transform = fit_transform(background, levels=16)
    >>> rows = heldout_check(transform, background, population.draw(40, 4, seed=3), kinds=["thermometer"], refit=True)
    >>> rows[0]["pipeline"], rows[0]["realised"]["impostor_trials"]
    ('thermometer', 4680)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sketchauth.errors import ParameterError, SketchAuthError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting import angular, asymmetric, code_offset, interval, thermometer
from sketchauth.evaluate.fitting.common import calibration_of
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.base import Pipeline
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.transform import FeatureTransform

__all__ = ["CALIBRATED_KINDS", "calibrated_pipeline", "heldout_check", "heldout_table"]

#: Pipeline kinds :func:`calibrated_pipeline` builds (asymmetric-interval needs ``enrol_samples ≥ 2``).
CALIBRATED_KINDS = ("interval", "thermometer", "code-offset", "asymmetric-interval", "angular")


def calibrated_pipeline(
    kind: str,
    transform: FeatureTransform,
    background: LabelledVectors,
    *,
    target_fmr: float = DEFAULTS.target_fmr,
    enrol_samples: int = DEFAULTS.enrol_samples,
    refit: bool = False,
    folds: int = DEFAULTS.folds,
    confidence: float = DEFAULTS.confidence,
    resolution: float = DEFAULTS.thermometer_resolution,
    code_bits: int = DEFAULTS.code_bits,
    margin: int = DEFAULTS.asymmetric_margin,
    security_bits: float = DEFAULTS.angular_security_bits,
    code: str = DEFAULTS.angular_code,
    list_size: int = DEFAULTS.angular_list_size,
) -> Pipeline:
    """One pipeline kind calibrated on ``background`` for ``target_fmr`` (``refit``: see ``for_target_fmr``)."""
    common: dict[str, Any] = {
        "target_fmr": target_fmr,
        "enrol_samples": enrol_samples,
        "refit": refit,
        "folds": folds,
        "confidence": confidence,
    }
    if kind == "interval":
        return interval.for_target_fmr(transform, background, **common)
    if kind == "thermometer":
        return thermometer.for_target_fmr(transform, background, resolution=resolution, **common)
    if kind == "code-offset":
        return code_offset.for_target_fmr(transform, background, bits=code_bits, **common)
    if kind == "asymmetric-interval":
        return asymmetric.for_target_fmr(transform, background, margin=margin, **common)
    if kind == "angular":
        return angular.for_target_fmr(
            transform, background, security_bits=security_bits, code=code, list_size=list_size, **common
        )
    raise ParameterError(f"unknown pipeline kind {kind!r}; known: {', '.join(CALIBRATED_KINDS)}")


def heldout_check(
    transform: FeatureTransform,
    background: LabelledVectors,
    people: LabelledVectors,
    *,
    kinds: Sequence[str] = ("interval", "thermometer", "code-offset"),
    **options: Any,
) -> list[dict[str, Any]]:
    """Per kind: calibrated on ``background`` (:func:`calibrated_pipeline` with ``options``), measured on ``people``.

    A kind the background cannot calibrate is reported with ``unavailable`` and the reason.
    """
    enrol_samples = int(options.get("enrol_samples", DEFAULTS.enrol_samples))
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        try:
            pipeline = calibrated_pipeline(kind, transform, background, **options)
        except SketchAuthError as exc:
            rows.append({"pipeline": kind, "unavailable": str(exc)})
            continue
        calibration = calibration_of(pipeline)
        rows.append(
            {
                "pipeline": kind,
                "params": pipeline.sketch.params(),
                "predicted": calibration.to_dict(),
                "realised": calibration.realised(people, enrol_samples=enrol_samples),
            }
        )
        if isinstance(pipeline, AngularPipeline):
            # The calibration's rule is the cosine; real decoding refuses some of those genuine trials too.
            rows[-1]["realised"]["decode_failures"] = angular.decode_failures(
                pipeline, people, enrol_samples=enrol_samples
            )
    return rows


def heldout_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`heldout_check` as a Markdown table (realised against predicted)."""
    lines = [
        "| pipeline | target FMR | predicted FMR [interval] | realised FMR [interval] | realised / target "
        "| in predicted interval | predicted FNMR | realised FNMR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "unavailable" in row:
            lines.append(f"| {row['pipeline']}: unavailable — {row['unavailable']} |" + " — |" * 7)
            continue
        p, r = row["predicted"], row["realised"]
        lines.append(
            f"| {row['pipeline']} | {p['target_fmr']:g} | {p['predicted_fmr']:.2e} "
            f"[{p['predicted_fmr_interval'][0]:.2e}, {p['predicted_fmr_interval'][1]:.2e}] | {r['fmr']:.2e} "
            f"[{r['fmr_interval'][0]:.2e}, {r['fmr_interval'][1]:.2e}] | {r['fmr_over_target']:.2f} | "
            f"{'yes' if r['fmr_within_predicted_interval'] else 'no'} | {p['predicted_fnmr']:.4f} | {r['fnmr']:.4f} |"
        )
    return "\n".join(lines) + "\n"
