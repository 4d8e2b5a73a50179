"""Fitting a :class:`~sketchauth.features.transform.FeatureTransform` on a background population.

The steps and what they estimate are those of :mod:`sketchauth.features.transform` (standardisation,
within-class whitening with Ledoit–Wolf shrinkage, Fisher-ratio selection, equal-probability
quantisers); this module estimates them from labelled background data. The core only applies and
stores the result: a deployment loads a transform, it never fits one.

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
    >>> transform = fit_transform(background, levels=8)
    >>> transform.quantise(transform.project(background.samples[:2])).shape
    (2, 7)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.features.transform import PROJECTIONS, FeatureTransform, check_levels, unit_rows
from sketchauth.sketches.params import check_int, check_positive_float

__all__ = ["MIN_IDENTITIES", "SmallPopulationWarning", "fit_transform", "ledoit_wolf_shrinkage", "refit_transform"]

#: Fewer identities than this cannot estimate between-identity structure or quantiles sensibly.
MIN_IDENTITIES = 10


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


def fit_transform(
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
    levels = check_levels(levels)
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
        x = unit_rows(x)
    if projection == "centre":
        # Angles about the background mean: no per-feature scaling, no whitening, every axis kept
        # (a constant axis — a ReLU unit that never fires — is harmless here: it adds nothing to any angle).
        mean, scale = x.mean(axis=0), np.ones(x.shape[1])
    else:
        mean, scale = _standardisation(x)
    z = (x - mean) / scale
    matrix, ratios, alpha = _directions(z, (inverse, counts), projection, shrinkage, min_fisher_ratio, dimensions)
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
    return FeatureTransform(mean, scale, matrix, ratios, edges, training)


def _directions(
    z: np.ndarray,
    groups: tuple[np.ndarray, np.ndarray],
    projection: str,
    shrinkage: float | None,
    min_fisher_ratio: float,
    dimensions: int | None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Steps 2–3 on standardised ``z``: the projection matrix, the kept Fisher ratios and the shrinkage used."""
    inverse, counts = groups
    if projection == "centre":
        # Every axis kept, unrotated, unwhitened: the sketch compares directions about the centre.
        ratios, directions = _centre_ratios(z, inverse, counts)
        return directions, ratios, 0.0
    whitening, alpha = _within_whitening(z, inverse, counts, shrinkage)
    if projection == "lda":
        ratios, directions = _fisher_directions(z, inverse, counts, whitening)
        cap = counts.size
    else:
        ratios, directions = _axis_ratios(z, inverse, counts, whitening)
        cap = z.shape[1] + 1
    keep = _select(ratios, min_fisher_ratio, dimensions, cap)
    return whitening @ directions[:, keep], ratios[keep], alpha


def refit_transform(transform: FeatureTransform, data: LabelledVectors | tuple[Any, Any]) -> FeatureTransform:
    """A transform fitted on ``data`` with this one's settings (levels, projection, normalisation,
    minimum Fisher ratio, at most this many dimensions; shrinkage re-estimated by Ledoit–Wolf).

    Cross-validation refits the transform without a fold's people (:mod:`sketchauth.evaluate.fitting.calibration`).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallPopulationWarning)
        return fit_transform(
            data,
            levels=transform.levels,
            dimensions=None if transform.projection_kind == "centre" else transform.dimensions,
            min_fisher_ratio=float(transform.training.get("min_fisher_ratio", 0.05)),
            projection=transform.projection_kind,
            normalise=transform.normalises,
        )


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
