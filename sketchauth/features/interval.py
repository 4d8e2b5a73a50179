"""The interval pipeline: quantised whitened features → :class:`~sketchauth.sketches.interval.IntervalSketch`.

A per-dimension tolerance ``v_j``: a sample is accepted iff ``|ℓ_j − b_j| < v_j`` for every kept
dimension ``j`` (``ℓ`` the sample's levels, ``b`` the enrolled ones). The tolerances are chosen on a
background by :mod:`sketchauth.evaluate.fitting.interval` (a greedy tolerance path, cross-validated).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.features.base import Pipeline, _one_sample
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.interval import IntervalSketch

__all__ = ["IntervalPipeline"]


class IntervalPipeline(Pipeline):
    """Quantised whitened features → :class:`IntervalSketch` with per-dimension tolerances."""

    kind = "interval"

    def __init__(self, transform: FeatureTransform, dims: Any, tolerances: Any) -> None:
        super().__init__(transform, dims)
        self._sketch = IntervalSketch(n=transform.levels, v=[int(v) for v in np.asarray(tolerances).ravel()])
        if self._sketch.features != self.dims.size:
            raise ParameterError(f"{self.dims.size} dims but {self._sketch.features} tolerances")

    @property
    def sketch(self) -> IntervalSketch:
        return self._sketch

    @property
    def tolerances(self) -> np.ndarray:
        return self._sketch.v.copy()

    def secret_from_samples(self, samples: Any) -> np.ndarray:
        y = self._enrolment_matrix(samples).mean(axis=0)
        return self._levels(y)

    def sample_transform(self, sample: Any) -> np.ndarray:
        return self._levels(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(self.dims.size * self.transform.level_bits)

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> IntervalPipeline:
        params = raw["params"]
        v = params["v"]
        tolerances = [v] * dims.size if isinstance(v, int) else v
        pipeline = cls(transform, dims, tolerances)
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its transform (levels) or dims")
        return pipeline
