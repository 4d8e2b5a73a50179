"""The thermometer pipeline: Fisher-weighted uniform levels as thermometer codes → PinSketch (an L1 region)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.features.base import Pipeline, _one_sample
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.params import check_positive_float
from sketchauth.sketches.pinsketch import PinSketch

__all__ = ["MAX_THERMOMETER_BITS", "THERMOMETER_RANGE", "ThermometerPipeline", "fisher_weights"]


#: Range of each dimension's uniform quantiser, in standard deviations of the background.
THERMOMETER_RANGE = 3.5
#: Largest thermometer universe (bits over all dimensions); keeps PinSketch's field at m ≤ 16.
MAX_THERMOMETER_BITS = 2**16 - 1


def fisher_weights(fisher_ratios: np.ndarray, enrol_samples: int) -> np.ndarray:
    """Per-dimension weights ``√w_j`` with ``w_j = λ_j / (s²(s² + λ_j))``, ``s² = 1 + 1/m``.

    For Gaussian data the log-likelihood ratio of "same person" is, up to constants,
    ``−Σ w_j Δ_j²`` (genuine differences have variance ``s²``, impostor ones ``s² + λ_j``);
    ``√w_j`` scales the whitened axes so that distances weigh each dimension by its evidence.
    """
    s2 = 1.0 + 1.0 / enrol_samples
    lam = np.clip(np.asarray(fisher_ratios, dtype=np.float64), 1e-9, None)
    return np.sqrt(lam / (s2 * (s2 + lam)))


class ThermometerPipeline(Pipeline):
    """Uniformly quantised, Fisher-weighted features as thermometer codes → :class:`PinSketch`.

    Dimension ``j`` is quantised with a uniform step ``δ_j = resolution / √w_j`` (whitened units,
    :func:`fisher_weights`) over ``±THERMOMETER_RANGE`` background standard deviations into
    ``c_j`` levels; level ``ℓ`` is written as the thermometer code ``1^ℓ 0^(c_j − 1 − ℓ)``, and the
    secret is the *set* of positions of the ones over all dimensions (universe ``1 … Σ(c_j − 1)``,
    PinSketch's non-zero elements of GF(2^m)). The symmetric difference of two such sets is
    ``Σ_j |ℓ_j − ℓ'_j|``: PinSketch with error budget ``t`` accepts exactly the **L1 ball** of
    radius ``t`` in weighted level units — a far better match for the unprotected matcher's
    ellipsoid than the box of an interval sketch. Equal-probability levels are *not* used here
    on purpose: an L1 metric needs level differences proportional to distances.
    Loss ``≤ t·m`` (PinSketch's report; often above the secret's bits — the bound then says
    nothing is guaranteed to remain, which at FMR 1% is close to the truth anyway).
    """

    kind = "thermometer"

    def __init__(self, transform: FeatureTransform, dims: Any, *, steps: Any, t: int) -> None:
        super().__init__(transform, dims)
        step = np.asarray(steps, dtype=np.float64)
        if step.shape != (self.dims.size,) or not np.all(np.isfinite(step)) or np.any(step <= 0):
            raise ParameterError(f"steps must be {self.dims.size} positive finite numbers")
        self.steps = step
        spread = np.sqrt(1.0 + np.clip(transform.fisher_ratios[self.dims], 0.0, None))
        self.low = -THERMOMETER_RANGE * spread
        self.counts = np.ceil(2.0 * THERMOMETER_RANGE * spread / step).astype(np.int64) + 1
        self.offsets = np.concatenate([[0], np.cumsum(self.counts - 1)[:-1]])
        universe = int(np.sum(self.counts - 1))
        if universe > MAX_THERMOMETER_BITS:
            raise ParameterError(
                f"thermometer codes of {universe} bits exceed {MAX_THERMOMETER_BITS}; use a coarser resolution"
            )
        m = max(8, universe.bit_length())
        self._sketch = PinSketch(m=m, t=t)

    @classmethod
    def with_resolution(
        cls, transform: FeatureTransform, *, enrol_samples: int, resolution: float, t: int
    ) -> ThermometerPipeline:
        resolution = check_positive_float("resolution", resolution)
        dims = np.arange(transform.dimensions)
        steps = resolution / fisher_weights(transform.fisher_ratios, enrol_samples)
        return cls(transform, dims, steps=steps, t=t)

    def levels(self, y: np.ndarray) -> np.ndarray:
        """Uniform levels in ``[0, c_j)`` of whitened features restricted to ``dims``."""
        return np.asarray(np.clip(np.floor((y - self.low) / self.steps), 0, self.counts - 1), dtype=np.int64)

    def _set(self, y: np.ndarray) -> np.ndarray:
        levels = self.levels(y)
        # Positions offset_j + 1 … offset_j + ℓ_j: the ones of each thermometer code.
        runs = [np.arange(o + 1, o + 1 + ell) for o, ell in zip(self.offsets.tolist(), levels.tolist(), strict=False)]
        return np.concatenate(runs).astype(np.int64)

    @property
    def sketch(self) -> PinSketch:
        return self._sketch

    def secret_from_samples(self, samples: Any) -> np.ndarray:
        return self._set(self._enrolment_matrix(samples).mean(axis=0))

    def sample_transform(self, sample: Any) -> np.ndarray:
        return self._set(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(np.log2(self.counts).sum())

    def _settings(self) -> dict[str, Any]:
        return {"steps": self.steps.tolist()}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> ThermometerPipeline:
        pipeline = cls(transform, dims, steps=raw["settings"]["steps"], t=raw["params"]["t"])
        if pipeline.sketch.params() != dict(raw["params"]):
            raise ParameterError("pipeline parameters do not match its dims and steps")
        return pipeline
