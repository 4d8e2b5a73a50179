"""The code-offset pipeline: Gray-coded binarised features → Reed–Solomon code-offset sketch (Dodis et al.).

The byte-error tolerance ``t`` is chosen on a background by :mod:`sketchauth.evaluate.fitting.code_offset`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.features.base import Pipeline, _one_sample
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.params import check_int

__all__ = ["CodeOffsetPipeline"]


class CodeOffsetPipeline(Pipeline):
    """Gray-coded binarised features → :class:`CodeOffsetSketch` correcting ``t`` byte errors."""

    kind = "code-offset"

    def __init__(self, transform: FeatureTransform, dims: Any, *, bits: int, t: int) -> None:
        super().__init__(transform, dims)
        self.bits = check_int("bits", bits, 1, transform.level_bits)
        if (self.dims.size * self.bits) % 8:
            raise ParameterError(f"{self.dims.size} dims × {self.bits} bits is not a whole number of bytes")
        self._sketch = CodeOffsetSketch(n=self.dims.size * self.bits // 8, t=t)

    @property
    def sketch(self) -> CodeOffsetSketch:
        return self._sketch

    def _bytes(self, y: np.ndarray) -> bytes:
        full = np.zeros(self.transform.dimensions)
        full[self.dims] = y
        return self.transform.binarise_array(self.transform.quantise(full), self.bits, self.dims).tobytes()

    def secret_from_samples(self, samples: Any) -> bytes:
        return self._bytes(self._enrolment_matrix(samples).mean(axis=0))

    def sample_transform(self, sample: Any) -> bytes:
        return self._bytes(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(8 * self._sketch.n)

    def _settings(self) -> dict[str, Any]:
        return {"bits": self.bits}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> CodeOffsetPipeline:
        pipeline = cls(transform, dims, bits=raw.get("settings", {}).get("bits", 0), t=raw["params"]["t"])
        if pipeline.sketch.params() != dict(raw["params"]):
            raise ParameterError("pipeline parameters do not match its dims and bits")
        return pipeline
