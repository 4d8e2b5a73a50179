"""A realistic synthetic population of real-valued embeddings (feature preparation).

Real feature vectors — face or voice embeddings, hand-crafted features — are correlated,
unequally informative and noisy in a way that differs per feature. :class:`EmbeddingPopulation`
draws such a population from an explicit Gaussian model, so that feature preparation
(:mod:`sketchauth.features`) can be tested and benchmarked against a known truth:

* ``d = informative + useless`` features;
* **identity means** ``μ_i ~ N(c, Σ_b)``: the between-person covariance ``Σ_b`` lives on the
  informative features only and is a random rotation of a decaying spectrum,
  ``Σ_b = Q diag(λ) Qᵀ`` with ``λ_j ∝ between_decay^j`` (``Q`` Haar-random orthogonal), scaled so
  that ``tr Σ_b = informative · between_scale²``; the centre ``c`` is a random offset;
* **within-person noise** ``ε ~ N(0, Σ_w)`` with ``Σ_w = diag(s) R diag(s)``: ``R`` is a random
  correlation matrix with its own decaying spectrum (``within_decay``; correlated noise), and the
  per-feature scales ``s_j = noise_scale · exp(scale_spread · N(0, 1))`` make some features far
  noisier than others;
* the last ``useless`` features have no between-person variance at all: they carry only noise,
  so a good feature preparation must learn to ignore them.

A sample of person ``i`` is ``x = μ_i + ε``. Everything is drawn from seeded
:class:`numpy.random.Generator` s — this is simulation, nothing cryptographic is drawn here. The
model (covariances, centre) is fixed by the population's ``seed``; :meth:`EmbeddingPopulation.draw`
draws people from it with its own seed, so a *background* population and disjoint *enrolled
users* come from the same model, as they would in a deployment.

Example::

    >>> population = EmbeddingPopulation(informative=8, useless=2, seed=3)
    >>> data = population.draw(identities=5, samples_per_identity=4, seed=1)
    >>> data.samples.shape, data.identity_count
    ((20, 10), 5)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.sketches.params import check_int, check_positive_float

__all__ = ["EmbeddingModel", "EmbeddingPopulation"]


def _random_orthogonal(rng: np.random.Generator, size: int) -> np.ndarray:
    """A Haar-distributed orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(size, size)))
    return q * np.sign(np.diag(r))[None, :]


def _decaying_spectrum(size: int, decay: float, total: float) -> np.ndarray:
    spectrum = decay ** np.arange(size, dtype=float)
    return cast("np.ndarray", spectrum * (total / spectrum.sum()))


def _random_correlation(rng: np.random.Generator, size: int, decay: float) -> np.ndarray:
    """A correlation matrix (unit diagonal) with a decaying eigen-spectrum before normalisation."""
    q = _random_orthogonal(rng, size)
    cov = (q * _decaying_spectrum(size, decay, float(size))[None, :]) @ q.T
    d = np.sqrt(np.diag(cov))
    return cast("np.ndarray", cov / np.outer(d, d))


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """The drawn model: centre ``c``, between-person ``Σ_b`` and within-person ``Σ_w`` (``d × d``)."""

    centre: np.ndarray
    between: np.ndarray
    within: np.ndarray
    _between_root: np.ndarray = field(repr=False)
    _within_root: np.ndarray = field(repr=False)

    @classmethod
    def build(cls, centre: np.ndarray, between: np.ndarray, within: np.ndarray) -> EmbeddingModel:
        return cls(centre, between, within, _psd_root(between), _psd_root(within))

    @property
    def features(self) -> int:
        return int(self.centre.shape[0])

    def draw_means(self, rng: np.random.Generator, identities: int) -> np.ndarray:
        """``identities × d`` identity means ``μ_i ~ N(c, Σ_b)``."""
        return cast("np.ndarray", self.centre + rng.normal(size=(identities, self.features)) @ self._between_root.T)

    def draw_noise(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count × d`` within-person deviations ``ε ~ N(0, Σ_w)``."""
        return cast("np.ndarray", rng.normal(size=(count, self.features)) @ self._within_root.T)


def _psd_root(cov: np.ndarray) -> np.ndarray:
    """A matrix ``A`` with ``A Aᵀ = cov`` for a positive semi-definite ``cov``."""
    values, vectors = np.linalg.eigh(cov)
    return cast("np.ndarray", vectors * np.sqrt(np.clip(values, 0.0, None))[None, :])


@dataclass(frozen=True, slots=True)
class EmbeddingPopulation:
    """Parameters of the synthetic embedding model (see the module docstring for the model).

    The defaults give a population on which an unprotected matcher (whitened Euclidean distance
    to the enrolment mean) has an equal error rate of a few percent with one enrolment sample —
    the regime of a mid-quality face or speaker embedding.
    """

    informative: int = 48
    useless: int = 8
    between_scale: float = 1.0
    between_decay: float = 0.93
    noise_scale: float = 1.0
    scale_spread: float = 0.4
    within_decay: float = 0.97
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("informative", self.informative, 1)
        check_int("useless", self.useless, 0)
        for name in ("between_scale", "noise_scale"):
            check_positive_float(name, getattr(self, name))
        for name in ("between_decay", "within_decay"):
            value = check_positive_float(name, getattr(self, name))
            if value > 1.0:
                raise ParameterError(f"{name} must be in (0, 1], got {value!r}")
        if isinstance(self.scale_spread, bool) or not np.isfinite(self.scale_spread) or self.scale_spread < 0:
            raise ParameterError(f"scale_spread must be a finite non-negative number, got {self.scale_spread!r}")

    @property
    def features(self) -> int:
        return self.informative + self.useless

    def model(self) -> EmbeddingModel:
        """The covariances and centre fixed by ``seed`` (the same every call)."""
        rng = np.random.default_rng([self.seed, 0x5EED])
        d, k = self.features, self.informative
        between = np.zeros((d, d))
        q = _random_orthogonal(rng, k)
        spectrum = _decaying_spectrum(k, self.between_decay, k * self.between_scale**2)
        between[:k, :k] = (q * spectrum[None, :]) @ q.T
        scales = self.noise_scale * np.exp(self.scale_spread * rng.normal(size=d))
        within = _random_correlation(rng, d, self.within_decay) * np.outer(scales, scales)
        centre = rng.normal(0.0, 2.0, size=d)
        return EmbeddingModel.build(centre, between, within)

    def draw(self, identities: int, samples_per_identity: int, *, seed: int) -> LabelledVectors:
        """``identities × samples_per_identity`` samples, labelled ``0 … identities−1``.

        Rows are grouped by identity (all samples of identity 0 first). Different ``seed`` s give
        different people from the same model.
        """
        identities = check_int("identities", identities, 1)
        samples_per_identity = check_int("samples_per_identity", samples_per_identity, 1)
        model = self.model()
        rng = np.random.default_rng([self.seed, 0xD2A3, seed])
        means = model.draw_means(rng, identities)
        noise = model.draw_noise(rng, identities * samples_per_identity)
        samples = np.repeat(means, samples_per_identity, axis=0) + noise
        labels = np.repeat(np.arange(identities, dtype=np.int64), samples_per_identity)
        return LabelledVectors(labels, samples)
