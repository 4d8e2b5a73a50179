"""The asymmetric-interval pipeline: per-person tolerances from several captures (Fang's thesis §6.2, s2).

The ``scale`` is chosen on a background by :mod:`sketchauth.evaluate.fitting.asymmetric`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.features.base import Pipeline, _one_sample
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch, Spread
from sketchauth.sketches.params import check_int
from sketchauth.templates import enrol_interval

__all__ = ["AsymmetricIntervalPipeline"]


class AsymmetricIntervalPipeline(Pipeline):
    """Several enrolment samples → template and hidden per-dimension tolerances (Fang's thesis §6.2, s2).

    ``scale``/``margin``/``spread`` are those of :func:`sketchauth.templates.enrol_interval`,
    applied to the levels of the enrolment samples; ``q`` caps the tolerance.
    """

    kind = "asymmetric-interval"

    def __init__(
        self,
        transform: FeatureTransform,
        dims: Any,
        *,
        q: int,
        scale: float = 3.0,
        margin: int = DEFAULTS.asymmetric_margin,
        spread: Spread = "std",
        scheme: str = "s2",
    ) -> None:
        super().__init__(transform, dims)
        self._sketch = AsymmetricIntervalSketch(n=transform.levels, q=q, scheme=scheme, features=int(self.dims.size))
        if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale >= 0):
            raise ParameterError(f"scale must be a finite non-negative number, got {scale!r}")
        if spread not in ("range", "std"):
            raise ParameterError(f"spread must be 'range' or 'std', got {spread!r}")
        self.scale = float(scale)
        self.margin = check_int("margin", margin, 0, q)
        self.spread: Spread = spread

    @property
    def sketch(self) -> AsymmetricIntervalSketch:
        return self._sketch

    def secret_from_samples(self, samples: Any) -> tuple[np.ndarray, np.ndarray]:
        levels = self.capture_levels(samples)
        return enrol_interval(
            levels, n=self.transform.levels, q=self._sketch.q, spread=self.spread, scale=self.scale, margin=self.margin
        )

    def sample_transform(self, sample: Any) -> np.ndarray:
        y = self.transform.project(_one_sample(sample, self.transform.features))
        return np.asarray(self.transform.quantise(y)[self.dims])

    def capture_levels(self, samples: Any) -> np.ndarray:
        """Every enrolment capture's levels on ``dims`` (``m × k``): the input of :meth:`secret_from_samples`.

        A party that derives ``(b, v)`` itself from the captures (:func:`~sketchauth.templates.enrol_interval`
        with this pipeline's ``spread``, ``scale`` and ``margin``) needs exactly these.
        """
        return self._levels(self._enrolment_matrix(samples))

    @property
    def secret_bits(self) -> float:
        # The template's levels; the tolerances add identity-dependent bits we do not credit.
        return float(self.dims.size * self.transform.level_bits)

    def _settings(self) -> dict[str, Any]:
        return {"scale": self.scale, "margin": self.margin, "spread": self.spread}

    @classmethod
    def _from_config(
        cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]
    ) -> AsymmetricIntervalPipeline:
        params, settings = raw["params"], raw.get("settings", {})
        pipeline = cls(
            transform,
            dims,
            q=params["q"],
            scale=settings.get("scale", 3.0),
            margin=settings.get("margin", 1),
            spread=settings.get("spread", "std"),
            scheme=params["scheme"],
        )
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its transform (levels) or dims")
        return pipeline
