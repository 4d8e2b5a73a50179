"""The evaluation target of a feature pipeline: what ``sketchauth evaluate report --pipeline`` evaluates.

The evaluation report (:mod:`sketchauth.evaluate.report`) consumes an
:class:`~sketchauth.evaluate.report.EvaluationTarget`; this module builds one for a pipeline
configuration (written by ``sketchauth features fit --pipelines DIR``; it embeds the fitted
transform; the command itself is in :mod:`sketchauth.cli.evaluate`). The report then runs the
real scheme — encode, decode, compare — on raw feature vectors: ``enrol`` applies the transform to the enrolment samples
(:meth:`~sketchauth.features.pipeline.Pipeline.secret_from_samples`), ``probe`` to each probe
(:meth:`~sketchauth.features.pipeline.Pipeline.sample_transform`).

Swept setting per pipeline kind (the dimensions and the secret stay fixed along the sweep):

* ``thermometer`` / ``code-offset`` — the error budget ``t`` of PinSketch / Reed–Solomon;
* ``interval`` — ``offset``: every per-dimension tolerance becomes ``clip(v_j + offset, 1, L)``;
* ``asymmetric-interval`` — ``margin`` of :func:`sketchauth.templates.enrol_interval`.

The report's operating point is the configured setting (:func:`configured_setting`) unless
``--operating-setting`` names another: the configuration was calibrated on background people, so
its rates on the report's people are a held-out measurement, not a setting chosen on them.

Unless ``--source-entropy`` is given, the declared source min-entropy is the secret's bits under
the background (levels uniform and independent: an optimistic figure, stated as declared).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.deciders import decide_exact
from sketchauth.evaluate.report import EvaluationTarget
from sketchauth.features.pipeline import (
    AsymmetricIntervalPipeline,
    CodeOffsetPipeline,
    IntervalPipeline,
    Pipeline,
    ThermometerPipeline,
)
from sketchauth.sketches.base import SecureSketch

__all__ = ["configured_setting", "default_pipeline_sweep", "pipeline_target"]


def _variant(pipeline: Pipeline, setting: Any) -> Pipeline:
    """The pipeline with its swept setting replaced (same transform and dimensions)."""
    value = int(setting)
    if isinstance(pipeline, ThermometerPipeline):
        return ThermometerPipeline(pipeline.transform, pipeline.dims, steps=pipeline.steps, t=value)
    if isinstance(pipeline, CodeOffsetPipeline):
        return CodeOffsetPipeline(pipeline.transform, pipeline.dims, bits=pipeline.bits, t=value)
    if isinstance(pipeline, IntervalPipeline):
        v = np.clip(pipeline.tolerances + value, 1, pipeline.transform.levels)
        return IntervalPipeline(pipeline.transform, pipeline.dims, v)
    if isinstance(pipeline, AsymmetricIntervalPipeline):
        return AsymmetricIntervalPipeline(
            pipeline.transform,
            pipeline.dims,
            q=pipeline.sketch.params()["q"],
            scale=pipeline.scale,
            margin=value,
            spread=pipeline.spread,
            scheme=pipeline.sketch.params()["scheme"],
        )
    raise ParameterError(f"no report sweep for pipeline kind {pipeline.kind!r}")


def configured_setting(pipeline: Pipeline) -> int:
    """The sweep value of the pipeline as configured (calibrated on the background, not on the report's people).

    ``t`` for thermometer / code-offset, offset ``0`` for interval, ``margin`` for asymmetric-interval.
    """
    if isinstance(pipeline, (ThermometerPipeline, CodeOffsetPipeline)):
        return int(pipeline.sketch.params()["t"])
    if isinstance(pipeline, IntervalPipeline):
        return 0
    if isinstance(pipeline, AsymmetricIntervalPipeline):
        return pipeline.margin
    raise ParameterError(f"no report sweep for pipeline kind {pipeline.kind!r}")


def default_pipeline_sweep(pipeline: Pipeline) -> list[int]:
    """Settings around the configured one (which is always included)."""
    if isinstance(pipeline, (ThermometerPipeline, CodeOffsetPipeline)):
        t = pipeline.sketch.params()["t"]
        top = t * 2 if isinstance(pipeline, ThermometerPipeline) else (pipeline.sketch.params()["n"] - 1) // 2
        return sorted({max(1, round(t * f)) for f in (0.5, 0.75, 1.0, 1.25, 1.5)} | {min(top, t)})
    if isinstance(pipeline, IntervalPipeline):
        return [-2, -1, 0, 1, 2]
    if isinstance(pipeline, AsymmetricIntervalPipeline):
        return sorted({0, 1, 2, pipeline.margin, pipeline.margin + 2})
    raise ParameterError(f"no report sweep for pipeline kind {pipeline.kind!r}")


def pipeline_target(pipeline: Pipeline) -> EvaluationTarget:
    """An :class:`EvaluationTarget` whose sketches, enrolment and probes go through ``pipeline``."""
    variants: dict[Any, Pipeline] = {}

    def at(setting: Any) -> Pipeline:
        if setting not in variants:
            variants[setting] = _variant(pipeline, setting)
        return variants[setting]

    def enrol(sketch: SecureSketch[Any, Any], samples: Any, setting: Any) -> Any:
        return at(0 if setting is None else setting).secret_from_samples(samples)

    sweep = {"interval": "offset", "asymmetric-interval": "margin"}.get(pipeline.kind, "t")
    return EvaluationTarget(
        name=f"pipeline:{pipeline.kind}",
        params={
            "scheme": pipeline.sketch.scheme_name,
            "dims": int(pipeline.dims.size),
            "transform": pipeline.transform.fingerprint[:16],
        },
        sweep=sweep,
        factory=lambda setting: at(setting).sketch,
        enrol=enrol,
        decide=decide_exact,
        probe=pipeline.sample_transform,
        baseline_metrics=(),
        data_kind="vectors",
        min_enrol_samples=2 if isinstance(pipeline, AsymmetricIntervalPipeline) else 1,
        # An interval pipeline's sweep moves only the sketch's tolerances (same transform, same
        # levels): the secret does not depend on the setting, so each person is enrolled once.
        enrol_once=isinstance(pipeline, IntervalPipeline),
    )
