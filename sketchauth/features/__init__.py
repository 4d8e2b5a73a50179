"""Feature preparation: from real feature vectors (embeddings) to secure sketches.

* :mod:`.transform` — :class:`FeatureTransform`, fitted once on a background population and
  frozen: standardisation, within-class whitening, Fisher-ratio selection, equal-probability
  quantisers, Gray-coded binarisation; JSON (de)serialisation of population statistics only.
* :mod:`.base` — the :class:`Pipeline` interface chaining a transform with a sketch; one module
  per pipeline: :mod:`.interval` (with its tolerance path), :mod:`.asymmetric`,
  :mod:`.code_offset`, :mod:`.thermometer` (thermometer codes → PinSketch);
  :mod:`.pipeline` re-exports them all;
* :mod:`.calibration` — the setting for a target FMR, chosen by identity-disjoint
  cross-validation on the background with a Clopper–Pearson bound (any decider plugs in);
* :mod:`.calibrated` — each pipeline kind calibrated on the background, and its prediction
  checked on held-out people; :mod:`.defaults` — the one set of defaults (library and CLI);
* :mod:`.loading` — pipeline configurations read back from JSON (one file or a directory);
* :mod:`.evaluation` — error rates of every pipeline next to the unprotected reference.

Names are imported lazily so that ``import sketchauth.features`` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULTS",
    "AngularPipeline",
    "AsymmetricIntervalPipeline",
    "Calibration",
    "CodeOffsetPipeline",
    "Decider",
    "FeatureTransform",
    "IntervalPipeline",
    "Pipeline",
    "ThermometerPipeline",
    "TolerancePath",
    "calibrate",
    "calibrated_pipeline",
    "choose_error_tolerance",
    "evaluate_pipelines",
    "heldout_check",
    "load_pipeline",
    "load_pipelines",
    "tolerance_path",
]

_WHERE = {
    "FeatureTransform": "transform",
    "AngularPipeline": "angular",
    "Pipeline": "base",
    "IntervalPipeline": "interval",
    "AsymmetricIntervalPipeline": "asymmetric",
    "CodeOffsetPipeline": "code_offset",
    "ThermometerPipeline": "thermometer",
    "TolerancePath": "interval",
    "tolerance_path": "interval",
    "choose_error_tolerance": "code_offset",
    "load_pipeline": "loading",
    "load_pipelines": "loading",
    "evaluate_pipelines": "evaluation",
    "Calibration": "calibration",
    "Decider": "calibration",
    "calibrate": "calibration",
    "calibrated_pipeline": "calibrated",
    "heldout_check": "calibrated",
    "DEFAULTS": "defaults",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
