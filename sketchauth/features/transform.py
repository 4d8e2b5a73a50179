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

Small populations: fewer than :data:`MIN_IDENTITIES` identities (but at least 2) are accepted with
a :class:`SmallPopulationWarning` saying what such an estimate is worth (at most ``J − 1``
directions; rough Fisher ratios and quantiles; optimistic closed-set rates), and the transform's
``training`` block records ``small_population``. Real research sets are often this small (a
9-speaker voice set, a 10-subject gesture set).

Errors: :class:`ParameterError` for bad settings, a single identity or a quantiser asked for more
levels than the data can place;
:class:`SampleError` for malformed data, an identity with a single sample (it says nothing about
within-identity noise; drop it or add samples), NaN/inf or a constant feature.

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> background = EmbeddingPopulation(informative=6, useless=2, seed=1).draw(60, 4, seed=1)
    >>> transform = FeatureTransform.fit(background, levels=8)
    >>> transform.quantise(transform.project(background.samples[:2])).shape
    (2, 7)
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.sketches.params import check_int, check_positive_float

__all__ = [
    "MIN_IDENTITIES",
    "PROJECTIONS",
    "TRANSFORM_FORMAT",
    "FeatureTransform",
    "SmallPopulationWarning",
    "gray_code",
    "ledoit_wolf_shrinkage",
]

#: Fewer identities than this cannot estimate between-identity structure or quantiles sensibly.
MIN_IDENTITIES = 10
#: Bounds checked when parsing a transform from JSON (untrusted configuration).
MAX_FEATURES = 8192
MAX_LEVELS = 256
#: Projections :meth:`FeatureTransform.fit` offers: Fisher LDA, or within-class whitening only.
PROJECTIONS = ("lda", "whiten", "centre")
TRANSFORM_FORMAT = "sketchauth-feature-transform/v1"


def gray_code(values: np.ndarray) -> np.ndarray:
    """The reflected binary Gray code ``g ⊕ (g >> 1)`` of non-negative integers."""
    values = np.asarray(values, dtype=np.int64)
    return values ^ (values >> 1)


def ledoit_wolf_shrinkage(centred: np.ndarray) -> float:
    """The Ledoit–Wolf (2004) shrinkage intensity for the covariance of ``centred`` rows.

    With ``S = XᵀX/n``, ``μ = tr S / p`` and the normalised Frobenius norm ``‖A‖² = tr(AAᵀ)/p``:
    ``d² = ‖S − μI‖²``, ``b̄² = (1/n²) Σ_k ‖x_k x_kᵀ − S‖² = (Σ_k ‖x_k‖⁴ − n‖S‖²_F) / (p n²)``,
    ``α = min(b̄², d²) / d²`` (``0`` when ``S`` is already a multiple of ``I``).
    """
    n, p = centred.shape
    s = centred.T @ centred / n
    mu = float(np.trace(s)) / p
    d2 = float(np.sum((s - mu * np.eye(p)) ** 2)) / p
    if d2 <= 0.0:
        return 0.0
    norms = np.einsum("ij,ij->i", centred, centred)
    b2 = (float(np.sum(norms**2)) - n * float(np.sum(s * s))) / (p * n * n)
    return float(min(max(b2, 0.0), d2) / d2)


def _as_data(data: LabelledVectors | tuple[Any, Any]) -> LabelledVectors:
    if isinstance(data, LabelledVectors):
        return data
    try:
        samples, identities = data
    except (TypeError, ValueError):
        raise SampleError("data must be LabelledVectors or a (samples, identities) pair") from None
    return LabelledVectors(np.asarray(identities), np.asarray(samples))


def _group_index(identities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inverse index of each sample's identity, sample count per identity)."""
    _, inverse, counts = np.unique(identities, return_inverse=True, return_counts=True)
    return inverse.ravel(), counts


@dataclass(frozen=True, slots=True, eq=False)
class FeatureTransform:
    """A fitted transform (see the module docstring). Build with :meth:`fit` or :meth:`from_dict`.

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

    # -- fitting --------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        data: LabelledVectors | tuple[Any, Any],
        *,
        levels: int = 32,
        dimensions: int | None = None,
        min_fisher_ratio: float = 0.05,
        shrinkage: float | None = None,
        projection: str = "lda",
        normalise: bool = False,
    ) -> FeatureTransform:
        """Fit on a background population (``LabelledVectors`` or ``(samples, identities)``).

        ``levels`` (a power of two, 2 … 256) is ``L``; ``dimensions`` caps the kept directions;
        ``shrinkage`` fixes ``α ∈ [0, 1]`` (``None``: Ledoit–Wolf).

        ``projection``: ``"lda"`` (steps 2–3 of the module docstring: at most ``J − 1`` directions
        for ``J`` background identities) or ``"whiten"`` — within-class whitening only, no
        Fisher rotation: every whitened axis of the raw embedding is kept (up to ``d``, ordered by
        its own Fisher ratio, the diagonal of the identity-mean covariance), however few people
        the background holds — or ``"centre"``: the background mean subtracted and nothing else (no
        scaling, no whitening, every axis kept in its own order; for the angular pipeline, whose
        sketch compares directions about the population's centre: see
        :class:`~sketchauth.features.angular.AngularPipeline`). ``normalise=True`` divides every
        sample by its Euclidean norm first (embeddings compared by cosine); the transform applies
        it to every later sample too.

        With ``"centre"`` every axis is kept: ``dimensions`` is refused (``ParameterError``), and
        ``min_fisher_ratio`` selects nothing (it is checked and recorded in ``training``, so that a
        refit keeps it, but no axis is dropped for a low ratio).
        """
        if projection not in PROJECTIONS:
            raise ParameterError(f"projection must be one of {', '.join(PROJECTIONS)}, got {projection!r}")
        if not isinstance(normalise, bool):
            raise ParameterError(f"normalise must be True or False, got {normalise!r}")
        data = _as_data(data)
        levels = _check_levels(levels)
        dimensions = None if dimensions is None else check_int("dimensions", dimensions)
        if projection == "centre" and dimensions is not None:
            raise ParameterError(
                f"projection 'centre' keeps every axis, so it takes no dimensions (got {dimensions}); "
                "drop dimensions (--dimensions)"
            )
        min_fisher_ratio = check_positive_float("min_fisher_ratio", min_fisher_ratio)
        if shrinkage is not None and not (isinstance(shrinkage, (int, float)) and 0.0 <= shrinkage <= 1.0):
            raise ParameterError(f"shrinkage must be in [0, 1] or None, got {shrinkage!r}")
        x = np.asarray(data.samples, dtype=np.float64)
        inverse, counts = _group_index(data.identities)
        _check_population(x, counts)
        if normalise:
            x = _unit_rows(x)
        if projection == "centre":
            # Angles about the background mean: no per-feature scaling, no whitening, every axis kept
            # (a constant axis — a ReLU unit that never fires — is harmless here: it adds nothing to any angle).
            mean, scale = x.mean(axis=0), np.ones(x.shape[1])
        else:
            mean, scale = _standardisation(x)
        z = (x - mean) / scale
        if projection == "centre":
            whitening, alpha = np.eye(z.shape[1]), 0.0
        else:
            whitening, alpha = _within_whitening(z, inverse, counts, shrinkage)
        if projection == "centre":
            ratios, directions = _centre_ratios(z, inverse, counts)
            keep = np.arange(z.shape[1])
        elif projection == "lda":
            ratios, directions = _fisher_directions(z, inverse, counts, whitening)
            cap = counts.size
        else:
            ratios, directions = _axis_ratios(z, inverse, counts, whitening)
            cap = z.shape[1] + 1
        if projection != "centre":
            keep = _select(ratios, min_fisher_ratio, dimensions, cap)
        matrix = whitening @ directions[:, keep]
        edges = _quantiser_edges(z @ matrix, levels, tied_ok=projection == "centre")
        training: dict[str, Any] = {
            "identities": int(counts.size),
            "samples": int(x.shape[0]),
            "features": int(x.shape[1]),
            "shrinkage": alpha,
            "min_fisher_ratio": float(min_fisher_ratio),
            "small_population": bool(counts.size < MIN_IDENTITIES),
        }
        if projection != "lda" or normalise:
            # Recorded only when not the defaults, so earlier transforms keep their fingerprints.
            training.update({"projection": projection, "normalise": normalise})
        return cls(mean, scale, matrix, ratios[keep], edges, training)

    def refit(self, data: LabelledVectors | tuple[Any, Any]) -> FeatureTransform:
        """A transform fitted on ``data`` with this one's settings (levels, projection, normalisation,
        minimum Fisher ratio, at most this many dimensions; shrinkage re-estimated by Ledoit–Wolf).

        Cross-validation refits the transform without a fold's people (:mod:`sketchauth.features.calibration`).
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallPopulationWarning)
            return FeatureTransform.fit(
                data,
                levels=self.levels,
                dimensions=None if self.projection_kind == "centre" else self.dimensions,
                min_fisher_ratio=float(self.training.get("min_fisher_ratio", 0.05)),
                projection=self.projection_kind,
                normalise=self.normalises,
            )

    @property
    def projection_kind(self) -> str:
        """``"lda"`` or ``"whiten"`` (see :meth:`fit`)."""
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
            x = _unit_rows(x)
        # Finite but huge inputs (a caller's bug, or hostile ones) overflow to inf/NaN here,
        # which would quantise to arbitrary levels: refuse them instead.
        with np.errstate(over="ignore", invalid="ignore"):
            y = ((x - self.mean) / self.scale) @ self.projection
        if not np.all(np.isfinite(y)):
            raise SampleError("sample values are too large: the whitened features overflow")
        return y

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
        _check_levels(edges.shape[1] + 1)
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


# -- fitting steps ---------------------------------------------------------------------------------
def _check_levels(levels: Any) -> int:
    levels = check_int("levels", levels, 2, MAX_LEVELS)
    if levels & (levels - 1):
        raise ParameterError(f"levels must be a power of two in [2, {MAX_LEVELS}], got {levels}")
    return levels


def _check_bits(bits: Any, level_bits: int) -> int:
    return check_int("bits", bits, 1, level_bits)


class SmallPopulationWarning(UserWarning):
    """The background population is small: the transform works, but its estimates are rough."""


def _check_population(x: np.ndarray, counts: np.ndarray) -> None:
    if counts.size < 2:
        raise ParameterError(
            f"a background population needs at least 2 identities (between-identity structure), got {counts.size}"
        )
    if counts.size < MIN_IDENTITIES:
        warnings.warn(
            f"background population of {counts.size} identities (fewer than {MIN_IDENTITIES}): at most "
            f"{counts.size - 1} discriminant directions can be found, and their Fisher ratios and the quantiser "
            f"edges are estimated from {x.shape[0]} samples of only {counts.size} people — rough estimates that "
            "describe these people more than the population. Error rates measured on the same people (closed set) "
            "are optimistic; for population-level figures fit on 10+ identities (ideally hundreds) and evaluate "
            "on people outside them",
            SmallPopulationWarning,
            stacklevel=3,
        )
    single = int(np.sum(counts < 2))
    if single:
        raise SampleError(
            f"{single} identit{'y has' if single == 1 else 'ies have'} a single sample; every background "
            "identity needs at least 2 samples to measure within-identity noise"
        )


def _standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    flat = np.flatnonzero(~(scale > 1e-12 * np.maximum(1.0, np.abs(mean))))
    if flat.size:
        raise SampleError(f"feature {int(flat[0])} is constant over the background population; remove it")
    return mean, scale


def _within_whitening(
    z: np.ndarray, inverse: np.ndarray, counts: np.ndarray, shrinkage: float | None
) -> tuple[np.ndarray, float]:
    """``W`` with ``Wᵀ Ŝ_w W = I`` and the shrinkage ``α`` used (see the module docstring)."""
    sums = np.zeros((counts.size, z.shape[1]))
    np.add.at(sums, inverse, z)
    centred = z - (sums / counts[:, None])[inverse]
    dof = z.shape[0] - counts.size
    s_w = centred.T @ centred / dof
    alpha = ledoit_wolf_shrinkage(centred) if shrinkage is None else float(shrinkage)
    target = float(np.trace(s_w)) / s_w.shape[0]
    if target <= 0.0:
        raise SampleError("the background samples show no within-identity variation at all")
    s_hat = (1.0 - alpha) * s_w + alpha * target * np.eye(s_w.shape[0])
    values, vectors = np.linalg.eigh(s_hat)
    # Refuse rather than divide by ~0: without shrinkage a rank-deficient S_w has zero eigenvalues.
    if values[0] <= 1e-10 * values[-1]:
        raise ParameterError(
            f"the within-identity covariance is singular ({dof} degrees of freedom for {z.shape[1]} features); "
            "fit with shrinkage=None (Ledoit-Wolf) or a positive shrinkage, or add background samples"
        )
    return vectors / np.sqrt(values)[None, :], alpha


def _fisher_directions(
    z: np.ndarray, inverse: np.ndarray, counts: np.ndarray, whitening: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher ratios (decreasing) and their directions in the whitened space."""
    y = z @ whitening
    sums = np.zeros((counts.size, y.shape[1]))
    np.add.at(sums, inverse, y)
    means = sums / counts[:, None]
    between = np.cov(means, rowvar=False, ddof=1)
    # A mean of n_i whitened samples still holds noise of variance 1/n_i in every direction.
    between -= float(np.mean(1.0 / counts)) * np.eye(between.shape[0])
    values, vectors = np.linalg.eigh(between)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


def _axis_ratios(
    z: np.ndarray, inverse: np.ndarray, counts: np.ndarray, whitening: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per whitened axis its own Fisher ratio (no rotation), axes ordered by decreasing ratio.

    The ratio of axis ``j`` is the ``j``-th diagonal entry of the noise-corrected identity-mean
    covariance of :func:`_fisher_directions`; the "directions" returned are columns of ``I``.
    """
    y = z @ whitening
    sums = np.zeros((counts.size, y.shape[1]))
    np.add.at(sums, inverse, y)
    means = sums / counts[:, None]
    ratios = means.var(axis=0, ddof=1) - float(np.mean(1.0 / counts))
    order = np.argsort(ratios, kind="stable")[::-1]
    return ratios[order], np.eye(y.shape[1])[:, order]


def _centre_ratios(z: np.ndarray, inverse: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per raw axis (in place, unrotated) the between- over within-identity variance, less the noise
    left in an identity mean (``− mean(1/n_i)``): the ``centre`` projection's Fisher ratios."""
    sums = np.zeros((counts.size, z.shape[1]))
    np.add.at(sums, inverse, z)
    means = sums / counts[:, None]
    within = ((z - means[inverse]) ** 2).sum(axis=0) / max(z.shape[0] - counts.size, 1)
    within = np.maximum(within, 1e-12 * max(float(within.max()), 1e-300))
    ratios = means.var(axis=0, ddof=1) / within - float(np.mean(1.0 / counts))
    return ratios, np.eye(z.shape[1])


def _unit_rows(x: np.ndarray) -> np.ndarray:
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
    return x / norms


def _select(ratios: np.ndarray, min_ratio: float, dimensions: int | None, identities: int) -> np.ndarray:
    keep = np.flatnonzero(ratios >= min_ratio)[: identities - 1]
    if dimensions is not None:
        keep = keep[:dimensions]
    if keep.size == 0:
        raise ParameterError(
            f"no direction has a Fisher ratio >= {min_ratio} (largest {float(ratios[0]):.3g}): "
            "the background identities are not separable; lower min_fisher_ratio or check the data"
        )
    return keep


def _quantiser_edges(y: np.ndarray, levels: int, *, tied_ok: bool = False) -> np.ndarray:
    """Per dimension the background quantiles at ``j/L``. ``tied_ok``: repeated values (a raw axis
    that is often exactly 0) get edges pulled apart by ``10^−9`` steps instead of being refused —
    for the ``centre`` projection, whose pipelines compare angles and never quantise."""
    if y.shape[0] < 2 * levels:
        raise ParameterError(
            f"{y.shape[0]} background samples cannot place {levels} equal-probability levels "
            f"(need at least {2 * levels}); use fewer levels"
        )
    edges = np.quantile(y, np.arange(1, levels) / levels, axis=0).T
    if tied_ok:
        step = 1e-9 * max(1.0, float(np.abs(edges).max()))
        edges = edges + step * np.arange(levels - 1)[None, :]
    if np.any(np.diff(edges, axis=1) <= 0):
        raise SampleError("a projected dimension has repeated values; its quantiser edges are not distinct")
    return np.ascontiguousarray(edges)


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
