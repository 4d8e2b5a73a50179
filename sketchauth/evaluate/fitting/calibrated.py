"""Calibrated pipelines' predictions checked on other people.

:func:`~sketchauth.evaluate.fitting.registry.fit_pipeline` builds one pipeline kind with its
``for_target_fmr`` (identity-disjoint cross-validation with a Clopper–Pearson bound,
:mod:`sketchauth.evaluate.fitting.calibration`) — what ``sketchauth features fit`` writes.
:func:`heldout_check` measures each calibrated pipeline's chosen setting on people
outside the background: the realised FMR against the target and the predicted interval. That is
the figure that says whether a target is met; rates read off a DET curve at thresholds chosen on
the evaluated people themselves are optimistic.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> from sketchauth.evaluate.fitting.options import CalibrationOptions
    >>> from sketchauth.evaluate.fitting.transform import fit_transform
    >>> population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    >>> background = population.draw(120, 4, seed=1)
    >>> transform = fit_transform(background, levels=16)
    >>> people, options = population.draw(40, 4, seed=3), CalibrationOptions(refit=True)
    >>> rows = heldout_check(transform, background, people, kinds=["thermometer"], options=options)
    >>> rows[0]["pipeline"], rows[0]["realised"]["impostor_trials"]
    ('thermometer', 4680)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sketchauth.errors import SketchAuthError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting import angular
from sketchauth.evaluate.fitting.common import calibration_of
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.fitting.registry import fit_pipeline
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.transform import FeatureTransform

__all__ = ["heldout_check", "heldout_table"]


def heldout_check(
    transform: FeatureTransform,
    background: LabelledVectors,
    people: LabelledVectors,
    *,
    kinds: Sequence[str] = ("interval", "thermometer", "code-offset"),
    options: CalibrationOptions = DEFAULT_OPTIONS,
) -> list[dict[str, Any]]:
    """Per kind: calibrated on ``background`` (:func:`~sketchauth.evaluate.fitting.registry.fit_pipeline`
    with ``options``), measured on ``people``.

    A kind the background cannot calibrate is reported with ``unavailable`` and the reason.
    """
    enrol_samples = options.enrol_samples
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        try:
            pipeline = fit_pipeline(kind, transform, background, options)
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
