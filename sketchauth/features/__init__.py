"""Feature preparation: from real feature vectors (embeddings) to secure sketches.

* :mod:`.transform` — :class:`FeatureTransform`, fitted once on a background population and
  frozen: standardisation, within-class whitening, Fisher-ratio selection, equal-probability
  quantisers, Gray-coded binarisation applied; JSON (de)serialisation of population statistics only.
* :mod:`.base` — the :class:`Pipeline` interface chaining a transform with a sketch; one module
  per pipeline: :mod:`.interval`, :mod:`.asymmetric`, :mod:`.code_offset`, :mod:`.thermometer`
  (thermometer codes → PinSketch), :mod:`.angular`; :mod:`.pipeline` re-exports them all;
* :mod:`.defaults` — the one set of defaults (library and CLI);
* :mod:`.loading` — pipeline configurations read back from JSON (one file or a directory).

This package is what a deployment loads and runs. Fitting a transform and calibrating a pipeline
on a background, and measuring pipelines (error rates, security figures), are evaluation:
:mod:`sketchauth.evaluate.fitting` and :mod:`sketchauth.evaluate.pipelines`, which import this
package and never the reverse.

Names are imported lazily so that ``import sketchauth.features`` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULTS",
    "AngularPipeline",
    "AsymmetricIntervalPipeline",
    "CodeOffsetPipeline",
    "FeatureTransform",
    "IntervalPipeline",
    "Pipeline",
    "ThermometerPipeline",
    "load_pipeline",
    "load_pipelines",
]

_WHERE = {
    "FeatureTransform": "transform",
    "AngularPipeline": "angular",
    "Pipeline": "base",
    "IntervalPipeline": "interval",
    "AsymmetricIntervalPipeline": "asymmetric",
    "CodeOffsetPipeline": "code_offset",
    "ThermometerPipeline": "thermometer",
    "load_pipeline": "loading",
    "load_pipelines": "loading",
    "DEFAULTS": "defaults",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
