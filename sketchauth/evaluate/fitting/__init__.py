"""Fitting on a background: the feature transform, and each pipeline kind calibrated for a target FMR.

What a deployment loads and runs — :class:`~sketchauth.features.transform.FeatureTransform` applied,
the pipelines' enrol/verify, their JSON — is the core (:mod:`sketchauth.features`). Choosing their
settings on labelled background people is evaluation, and lives here, importing the core:

* :mod:`.transform` — :func:`~.transform.fit_transform` (standardisation, whitening, Fisher selection,
  quantiser edges estimated on a background) and :func:`~.transform.refit_transform`;
* :mod:`.calibration` — a decider's setting for a target FMR by identity-disjoint cross-validation
  with a Clopper–Pearson bound (any decider plugs in);
* one module per pipeline kind: :mod:`.interval`, :mod:`.asymmetric`, :mod:`.code_offset`,
  :mod:`.thermometer`, :mod:`.angular` — each a ``for_target_fmr`` and the kind's decider;
* :mod:`.calibrated` — a kind by name, calibrated from the one set of defaults, and its prediction
  checked on held-out people.
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

__all__ = ["angular", "asymmetric", "calibrated", "calibration", "code_offset", "interval", "thermometer", "transform"]
