"""The fitted, frozen feature transform: from raw feature vectors to quantised whitened features.

A :class:`FeatureTransform` is fitted once on a *background population* (identities × samples,
none of them enrolled users) and then frozen. It holds population statistics only — means,
scales, a projection, quantiser edges — never anything about an enrolled person, so it is
stored once beside the scheme configuration, not per user. Steps, in order:

1. **Standardisation** ``z = (x − m) / s`` with the background mean ``m`` and standard deviation
   ``s`` of every feature (a constant feature is refused: it carries nothing and cannot be
   scaled).
2. **Within-class whitening** (LDA-style). ``S_w`` is the pooled within-identity covariance of
   ``z`` (``N − J`` degrees of freedom for ``N`` samples of ``J`` identities), shrunk towards a
   scaled identity, ``Ŝ_w = (1 − α) S_w + α (tr S_w / d) I``, with the Ledoit–Wolf (2004) choice of
   ``α`` unless one is given — this is how a degenerate or badly conditioned covariance (more
   features than degrees of freedom, collinear features) is *regularised* rather than refused.
   ``W = V Λ^(−1/2)`` from ``Ŝ_w = V Λ Vᵀ`` makes the within-identity noise white.
3. **Fisher-ratio selection.** In the whitened space the covariance of the identity means,
   corrected for the noise left in a mean of ``n_i`` samples (``− mean(1/n_i) · I``), is
   diagonalised: ``U diag(λ) Uᵀ``. ``λ_j`` is the Fisher ratio (between- over within-identity
   variance) of direction ``j``; the transform keeps the directions with ``λ_j ≥
   min_fisher_ratio`` (at most ``dimensions`` of them, at most ``J − 1``), in decreasing order.
   The projection is ``y = z · W U_k``: within-identity covariance ``I``, identity-mean
   covariance ``diag(λ_1 … λ_k)``.
4. **Equal-probability quantisers.** Per kept dimension, the ``L − 1`` edges are the background
   quantiles at ``j/L``, so a background sample falls in each of the ``L`` levels with
   probability ``1/L``: level ``= #{edges < y}``. A random impostor's level is then uniform,
   whatever the enrolled level, and each level carries ``log2 L`` bits of the background.
5. **Gray-coded binarisation.** ``L = 2^B`` levels; with ``b ≤ B`` bits the coarse level is
   ``level >> (B − b)`` (equal-probability edges of ``2^b`` levels are a subset of those of
   ``2^B``), written as its Gray code ``g ⊕ (g >> 1)`` most significant bit first, so that
   neighbouring levels differ in one bit. Bits of consecutive dimensions are packed into bytes.

This module *applies* a fitted transform (``project``, ``quantise``, ``binarise``) and reads and
writes it (``to_json``/``from_dict``, with every field checked: a transform file is configuration
a deployment loads). Fitting it on a background — the estimates of steps 1–4, the small-population
warning, the refusals of degenerate data — is evaluation-side work:
:func:`sketchauth.evaluate.fitting.transform.fit_transform`.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> from sketchauth.evaluate.fitting.transform import fit_transform
    >>> background = EmbeddingPopulation(informative=6, useless=2, seed=1).draw(60, 4, seed=1)
    >>> transform = fit_transform(background, levels=8)
    >>> transform.quantise(transform.project(background.samples[:2])).shape
    (2, 7)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.params import check_int

__all__ = ["PROJECTIONS", "TRANSFORM_FORMAT", "FeatureTransform", "gray_code"]

#: Bounds checked when parsing a transform from JSON (untrusted configuration).
MAX_FEATURES = 8192
MAX_LEVELS = 256
#: Projections a transform may be fitted with: Fisher LDA, within-class whitening only, or centring.
PROJECTIONS = ("lda", "whiten", "centre")
TRANSFORM_FORMAT = "sketchauth-feature-transform/v1"


def gray_code(values: np.ndarray) -> np.ndarray:
    """The reflected binary Gray code ``g ⊕ (g >> 1)`` of non-negative integers."""
    values = np.asarray(values, dtype=np.int64)
    return np.asarray(values ^ (values >> 1))


@dataclass(frozen=True, slots=True, eq=False)
class FeatureTransform:
    """A fitted transform (see the module docstring). Build with
    :func:`~sketchauth.evaluate.fitting.transform.fit_transform` (on a background) or :meth:`from_dict`.

    Arrays: ``mean``/``scale`` (``d``), ``projection`` (``d × k``: standardised features to
    whitened, selected dimensions), ``fisher_ratios`` (``k``, decreasing), ``edges``
    (``k × (L − 1)``, increasing per row). ``training`` records counts and the shrinkage used.
    """

    mean: np.ndarray
    scale: np.ndarray
    projection: np.ndarray
    fisher_ratios: np.ndarray
    edges: np.ndarray
    training: Mapping[str, Any]

    # -- settings recorded at fitting -----------------------------------------------------------
    @property
    def projection_kind(self) -> str:
        """``"lda"``, ``"whiten"`` or ``"centre"`` (how it was fitted: :data:`PROJECTIONS`)."""
        return str(self.training.get("projection", "lda"))

    @property
    def normalises(self) -> bool:
        """True when samples are divided by their Euclidean norm before standardisation."""
        return self.training.get("normalise") is True

    # -- shape ----------------------------------------------------------------------------------
    @property
    def features(self) -> int:
        """``d``, the length of the raw feature vectors this transform accepts."""
        return int(self.mean.shape[0])

    @property
    def dimensions(self) -> int:
        """``k``, the number of whitened dimensions kept."""
        return int(self.projection.shape[1])

    @property
    def levels(self) -> int:
        """``L``, the number of quantiser levels per dimension."""
        return int(self.edges.shape[1]) + 1

    @property
    def level_bits(self) -> int:
        """``B = log2 L``."""
        return self.levels.bit_length() - 1

    # -- applying -------------------------------------------------------------------------------
    def project(self, samples: Any) -> np.ndarray:
        """Whitened, selected features ``y`` of one sample (``d``) or many (``N × d``)."""
        x = self._check_samples(samples)
        if self.normalises:
            x = unit_rows(x)
        # Finite but huge inputs (a caller's bug, or hostile ones) overflow to inf/NaN here,
        # which would quantise to arbitrary levels: refuse them instead.
        with np.errstate(over="ignore", invalid="ignore"):
            y = ((x - self.mean) / self.scale) @ self.projection
        if not np.all(np.isfinite(y)):
            raise SampleError("sample values are too large: the whitened features overflow")
        return np.asarray(y)

    def quantise(self, projected: Any) -> np.ndarray:
        """Equal-probability levels in ``[0, L)`` of projected features (``k`` or ``N × k``)."""
        y = np.asarray(projected, dtype=np.float64)
        if y.shape[-1:] != (self.dimensions,):
            raise SampleError(f"projected features must have {self.dimensions} columns, got shape {y.shape}")
        out = np.empty(y.shape, dtype=np.int64)
        # One searchsorted per dimension (k calls, each vectorised over all samples).
        for j in range(self.dimensions):
            out[..., j] = np.searchsorted(self.edges[j], y[..., j], side="left")
        return out

    def binarise(self, levels: Any, bits: int, dims: Any | None = None) -> bytes | list[bytes]:
        """Gray-coded ``bits``-bit codes of the levels of ``dims`` (default all), packed to bytes.

        ``len(dims) · bits`` must be a multiple of 8 (so every byte is fully used: padding bits
        would be constant, and in a code-offset sketch constant bits leak the codeword).
        Returns ``bytes`` for one vector of levels, a list of ``bytes`` for a matrix.
        """
        bits = _check_bits(bits, self.level_bits)
        lv = np.asarray(levels, dtype=np.int64)
        chosen = np.arange(self.dimensions) if dims is None else np.asarray(dims, dtype=np.int64)
        if lv.shape[-1:] != (self.dimensions,):
            raise SampleError(f"levels must have {self.dimensions} columns, got shape {lv.shape}")
        if (chosen.size * bits) % 8:
            raise ParameterError(f"{chosen.size} dimensions × {bits} bits is not a whole number of bytes")
        packed = self._gray_bits(lv[..., chosen], bits)
        if lv.ndim == 1:
            return packed.tobytes()
        return [row.tobytes() for row in packed]

    def binarise_array(self, levels: np.ndarray, bits: int, dims: np.ndarray) -> np.ndarray:
        """As :meth:`binarise` but returns the packed ``uint8`` array (``… × bytes``)."""
        bits = _check_bits(bits, self.level_bits)
        return self._gray_bits(np.asarray(levels, dtype=np.int64)[..., dims], bits)

    def _gray_bits(self, levels: np.ndarray, bits: int) -> np.ndarray:
        coarse = levels >> (self.level_bits - bits)
        code = gray_code(coarse)
        shifts = np.arange(bits - 1, -1, -1, dtype=np.int64)
        unpacked = ((code[..., :, None] >> shifts) & 1).astype(np.uint8)
        flat = unpacked.reshape(*unpacked.shape[:-2], unpacked.shape[-2] * bits)
        return np.packbits(flat, axis=-1)

    def _check_samples(self, samples: Any) -> np.ndarray:
        try:
            x = np.asarray(samples, dtype=np.float64)
        except (TypeError, ValueError):
            raise SampleError("samples must be numbers") from None
        if x.ndim not in (1, 2) or x.shape[-1] != self.features:
            raise SampleError(f"samples must have {self.features} features, got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise SampleError("samples contain NaN or infinite values")
        return x

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (floats round-trip exactly through :mod:`json`)."""
        return {
            "format": TRANSFORM_FORMAT,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "projection": self.projection.tolist(),
            "fisher_ratios": self.fisher_ratios.tolist(),
            "edges": self.edges.tolist(),
            "training": dict(self.training),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical JSON: names this exact transform in pipeline configurations."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> FeatureTransform:
        """Parse and validate a transform (``ParameterError`` for anything malformed)."""
        if not isinstance(raw, Mapping) or raw.get("format") != TRANSFORM_FORMAT:
            raise ParameterError(f"not a feature transform (expected format {TRANSFORM_FORMAT!r})")
        mean = _array(raw, "mean", 1)
        d = mean.shape[0]
        if not 1 <= d <= MAX_FEATURES:
            raise ParameterError(f"transform has {d} features; at most {MAX_FEATURES} are supported")
        scale = _array(raw, "scale", 1)
        projection = _array(raw, "projection", 2)
        ratios = _array(raw, "fisher_ratios", 1)
        edges = _array(raw, "edges", 2)
        k = projection.shape[1] if projection.size else 0
        if scale.shape != (d,) or np.any(scale <= 0):
            raise ParameterError("transform scale must be d positive numbers")
        if projection.shape[0] != d or k < 1 or ratios.shape != (k,):
            raise ParameterError("transform projection / fisher_ratios have inconsistent shapes")
        if edges.shape[0] != k or edges.shape[1] < 1:
            raise ParameterError("transform edges must have one row per kept dimension")
        check_levels(edges.shape[1] + 1)
        if np.any(np.diff(edges, axis=1) <= 0):
            raise ParameterError("transform quantiser edges must be strictly increasing")
        training = raw.get("training", {})
        if not isinstance(training, Mapping):
            raise ParameterError("transform training must be an object")
        if training.get("projection", "lda") not in PROJECTIONS or not isinstance(
            training.get("normalise", False), bool
        ):
            raise ParameterError(f"transform training: projection must be one of {PROJECTIONS}, normalise a boolean")
        return cls(mean, scale, projection, ratios, edges, dict(training))

    @classmethod
    def from_json(cls, text: str | bytes) -> FeatureTransform:
        try:
            raw = json.loads(text)
        except (ValueError, TypeError):
            raise ParameterError("transform is not valid JSON") from None
        return cls.from_dict(raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureTransform) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"FeatureTransform(features={self.features}, dimensions={self.dimensions}, levels={self.levels})"


# -- checks shared with the fitting (sketchauth.evaluate.fitting.transform) ------------------------
def check_levels(levels: Any) -> int:
    """``levels`` as an int if it is a power of two in ``[2, MAX_LEVELS]`` (``ParameterError`` otherwise)."""
    levels = check_int("levels", levels, 2, MAX_LEVELS)
    if levels & (levels - 1):
        raise ParameterError(f"levels must be a power of two in [2, {MAX_LEVELS}], got {levels}")
    return int(levels)


def _check_bits(bits: Any, level_bits: int) -> int:
    return check_int("bits", bits, 1, level_bits)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their Euclidean norm (``SampleError`` for an all-zero row).

    A row whose norm overflows (coordinates near ``10^308``) or underflows (near ``10^−160``) is
    divided by its largest coordinate first: its direction is well defined, and a bare ``x / ‖x‖``
    would make it the zero vector or refuse it.
    """
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
    odd = (norms == 0) | ~np.isfinite(norms)
    if np.any(odd):
        peak = np.max(np.abs(x), axis=-1, keepdims=True)
        rescale = odd & (peak > 0)
        x = np.where(rescale, x / np.where(rescale, peak, 1.0), x)
        norms = np.where(rescale, np.linalg.norm(x, axis=-1, keepdims=True), norms)
    if np.any(norms == 0):
        raise SampleError("a sample is the zero vector; it has no direction to normalise")
    return np.asarray(x / norms)


def _array(raw: Mapping[str, Any], key: str, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(raw[key], dtype=np.float64)
    except KeyError:
        raise ParameterError(f"transform lacks {key!r}") from None
    except (TypeError, ValueError):
        raise ParameterError(f"transform {key!r} must be an array of numbers") from None
    if arr.ndim != ndim or not np.all(np.isfinite(arr)):
        raise ParameterError(f"transform {key!r} must be a finite {ndim}-D array")
    return arr
