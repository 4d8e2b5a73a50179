"""Feature preparation: from real feature vectors (embeddings) to secure sketches.

* :mod:`.transform` — :class:`FeatureTransform`, fitted once on a background population and
  frozen: standardisation, within-class whitening, Fisher-ratio selection, equal-probability
  quantisers, Gray-coded binarisation; JSON (de)serialisation of population statistics only.
* :mod:`.pipeline` — pipelines chaining a transform with a sketch (interval, asymmetric
  interval, code-offset, thermometer codes → PinSketch), usable for enrol/verify, with
  tolerance selection on held-out data.
* :mod:`.evaluation` — error rates of every pipeline next to the unprotected reference.

Names are imported lazily so that ``import sketchauth.features`` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "AsymmetricIntervalPipeline",
    "CodeOffsetPipeline",
    "FeatureTransform",
    "IntervalPipeline",
    "Pipeline",
    "ThermometerPipeline",
    "TolerancePath",
    "choose_error_tolerance",
    "evaluate_pipelines",
    "load_pipeline",
    "load_pipelines",
    "tolerance_path",
]

_WHERE = {
    "FeatureTransform": "transform",
    "Pipeline": "pipeline",
    "IntervalPipeline": "pipeline",
    "AsymmetricIntervalPipeline": "pipeline",
    "CodeOffsetPipeline": "pipeline",
    "ThermometerPipeline": "pipeline",
    "TolerancePath": "pipeline",
    "tolerance_path": "pipeline",
    "choose_error_tolerance": "pipeline",
    "load_pipeline": "pipeline",
    "load_pipelines": "pipeline",
    "evaluate_pipelines": "evaluation",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
