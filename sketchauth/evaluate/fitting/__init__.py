"""Fitting on a background: the feature transform, and each pipeline kind calibrated for a target FMR.

What a deployment loads and runs — :class:`~sketchauth.features.transform.FeatureTransform` applied,
the pipelines' enrol/verify, their JSON — is the core (:mod:`sketchauth.features`). Choosing their
settings on labelled background people is evaluation, and lives here, importing the core:

* :mod:`.transform` — :func:`~sketchauth.evaluate.fitting.transform.fit_transform` (standardisation,
  whitening, Fisher selection, quantiser edges estimated on a background) and
  :func:`~sketchauth.evaluate.fitting.transform.refit_transform`;
* :mod:`.calibration` — a decider's setting for a target FMR by identity-disjoint cross-validation
  with a Clopper–Pearson bound (any decider plugs in);
* :mod:`.options` — :class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`, the one set
  of options every kind is calibrated with;
* one module per pipeline kind: :mod:`.interval`, :mod:`.asymmetric`, :mod:`.code_offset`,
  :mod:`.thermometer`, :mod:`.angular` — each a ``KIND``, a ``for_target_fmr(transform,
  background, options)`` and the kind's decider; :mod:`.registry` lists them
  (:data:`~sketchauth.evaluate.fitting.registry.FITTERS`, :func:`~sketchauth.evaluate.fitting.registry.fit_pipeline`);
* :mod:`.calibrated` — calibrated kinds' predictions checked on held-out people.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    >>> transform = transform.fit_transform(population.draw(150, 4, seed=1), levels=16)
    >>> options = CalibrationOptions(target_fmr=0.01)
    >>> pipeline = fit_pipeline("interval", transform, population.draw(80, 4, seed=2), options)
    >>> pipeline.kind, pipeline.calibration.target_fmr
    ('interval', 0.01)
"""

from sketchauth.evaluate.fitting import (
    angular,
    asymmetric,
    calibrated,
    calibration,
    code_offset,
    interval,
    thermometer,
    transform,
)
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.fitting.registry import (
    CALIBRATED_KINDS,
    FITTERS,
    MAX_USABLE_FNMR,
    fit_pipeline,
    parse_kinds,
    unusable_reason,
)

__all__ = [
    "CALIBRATED_KINDS",
    "DEFAULT_OPTIONS",
    "FITTERS",
    "MAX_USABLE_FNMR",
    "CalibrationOptions",
    "angular",
    "asymmetric",
    "calibrated",
    "calibration",
    "code_offset",
    "fit_pipeline",
    "interval",
    "parse_kinds",
    "thermometer",
    "transform",
    "unusable_reason",
]
