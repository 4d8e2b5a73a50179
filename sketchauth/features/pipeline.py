"""Pipelines: a fitted :class:`FeatureTransform` chained with a secure sketch.

A pipeline is what the CLI and the service enrol and verify with. It is *configuration*: the
frozen transform (population statistics only) plus a scheme and its parameters, stored once,
never per user. Per user only the sketch's helper data and the argon2id hash are stored
(:class:`sketchauth.enrolment.Enrolment`), exactly as for a bare sketch.

Design (decided here): a :class:`Pipeline` is *not* a :class:`SecureSketch` subclass — helper
records stay plain records of the underlying scheme (``load_sketch`` still works on them) — but
it is used like one: ``enrol(samples)`` turns raw enrolment vectors into the sketch's secret
(:meth:`Pipeline.secret_from_samples`) and enrols it; ``verify(record, sample)`` turns one raw
sample into the sketch's sample (:meth:`Pipeline.sample_transform`) and verifies it. Configuration
JSON (:meth:`Pipeline.to_json`, :func:`load_pipeline`) embeds the transform and its SHA-256
fingerprint, so a service registers a pipeline by name from one file.

Pipelines (``y`` are the transform's whitened features, ``ℓ`` their levels in ``[0, L)``):

* :class:`IntervalPipeline` — secret ``b = ℓ(mean of the enrolment samples' y)`` on a subset of
  dimensions; :class:`~sketchauth.sketches.interval.IntervalSketch` with ``n = L`` and a tolerance
  ``v_j`` per dimension: a sample is accepted iff ``|ℓ_j − b_j| < v_j`` for every kept ``j``.
  Tolerances come from a tolerance path measured on background data
  (:mod:`sketchauth.evaluate.fitting.interval`).
  Loss ``≤ Σ log2(2v_j − 1)`` of the ``Σ log2 L`` bits the levels carry under the background.
* :class:`AsymmetricIntervalPipeline` — several enrolment samples: per dimension the template
  and an *identity-dependent* tolerance from the spread of the person's levels
  (:func:`sketchauth.templates.enrol_interval`, ``v_j = clip(⌈scale·s_j⌉ + margin, 1, q)``),
  sketched by :class:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch` (``s2``: ``v`` hidden).
  Loss ``≤ k·(1 + 2 log2 q)``.
* :class:`CodeOffsetPipeline` — secret: Gray-coded ``bits``-bit levels of the top dimensions,
  packed into ``n`` bytes (every byte fully used, so the bytes are uniform under the background);
  :class:`~sketchauth.sketches.code_offset.CodeOffsetSketch` correcting ``t`` byte errors, with
  ``t`` calibrated for a target FMR (or FNMR) on background data (:mod:`sketchauth.evaluate.fitting.code_offset`).
  Loss ``≤ 16t`` of ``8n`` bits.
* :class:`ThermometerPipeline` — Fisher-weighted uniform levels written as thermometer codes,
  the secret being the set of their one-positions; :class:`~sketchauth.sketches.pinsketch.PinSketch`
  with budget ``t`` then accepts exactly an **L1 ball** in weighted level units, the closest of
  these acceptance regions to the unprotected matcher's ellipsoid. Loss ``≤ t·m``.

Modules (one job each): :mod:`.base` (the :class:`Pipeline` interface), :mod:`.interval`,
:mod:`.asymmetric`, :mod:`.code_offset`, :mod:`.thermometer`, :mod:`.angular` and :mod:`.loading`
(configuration JSON). This module re-exports their public names. Choosing a pipeline's settings on
a background (identity-disjoint cross-validation with a Clopper–Pearson bound on the FMR) is
evaluation-side work: :mod:`sketchauth.evaluate.fitting`, one module per kind.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> from sketchauth.evaluate.fitting import CalibrationOptions, fit_pipeline
    >>> from sketchauth.evaluate.fitting.transform import fit_transform
    >>> from sketchauth.enrolment import hasher
    >>> population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    >>> transform = fit_transform(population.draw(150, 4, seed=1), levels=16)
    >>> options = CalibrationOptions(target_fmr=0.01)
    >>> pipeline = fit_pipeline("interval", transform, population.draw(80, 4, seed=2), options)
    >>> person = population.draw(1, 3, seed=0).samples
    >>> record = pipeline.enrol(person[:1], password_hasher=hasher("test"))
    >>> pipeline.verify(record, person[1], password_hasher=hasher("test"))
    True
    >>> pipeline.verify(record, population.draw(1, 1, seed=100).samples[0], password_hasher=hasher("test"))
    False
"""

from __future__ import annotations

from sketchauth.features.angular import AngularPipeline
from sketchauth.features.asymmetric import AsymmetricIntervalPipeline
from sketchauth.features.base import PIPELINE_FORMAT, Pipeline
from sketchauth.features.code_offset import CodeOffsetPipeline
from sketchauth.features.interval import IntervalPipeline
from sketchauth.features.loading import MAX_PIPELINE_BYTES, load_pipeline, load_pipelines
from sketchauth.features.thermometer import MAX_THERMOMETER_BITS, THERMOMETER_RANGE, ThermometerPipeline, fisher_weights

__all__ = [
    "MAX_PIPELINE_BYTES",
    "MAX_THERMOMETER_BITS",
    "PIPELINE_FORMAT",
    "THERMOMETER_RANGE",
    "AngularPipeline",
    "AsymmetricIntervalPipeline",
    "CodeOffsetPipeline",
    "IntervalPipeline",
    "Pipeline",
    "ThermometerPipeline",
    "fisher_weights",
    "load_pipeline",
    "load_pipelines",
]
