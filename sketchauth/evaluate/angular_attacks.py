"""Attacks on the angular (IronMask) sketch's helper data, measured on real embeddings.

Each function is one attacker of the security figures the sketch reports
(:class:`~sketchauth.sketches.angular.AngularSketch`; Kim et al., CVPR 2021, §5):

* :func:`population_attack` — (c) an attacker holding the database *and* the pepper pushes real
  embeddings of other people through a helper with the exact decision rule; success per try is
  about the FMR, so the work is about ``log2(1/FMR)`` argon2id evaluations whatever the code.
* :func:`prior_guided_rank` — (a) the attacker without a matching sample ranks the codewords by
  their likelihood under a Gaussian model of templates fitted on background people
  (``N(μ, Σ)``): a candidate ``c`` stands for the template ``Rᵀc``, whose separable log-likelihood
  is ``Σ_{i ∈ supp c} (s_i w_i − d_i)`` with ``w = R Σ⁻¹ μ /√α`` and ``d_i = (R Σ⁻¹ Rᵀ)_ii /(2α)``;
  the rank of the true codeword in that order (counted exactly, up to a discretisation of the
  scores, by dynamic programming over the coordinates) is the guessing work. A concentrated
  template distribution (a large ``μ``, an anisotropic ``Σ``) lowers it below ``log2 |C_α|``.
* :func:`mean_direction_statistic` — is ``R`` Haar-like from outside? For a Haar ``R`` and any fixed
  public direction ``v``, ``Rv`` is uniform on the sphere; real helpers map the templates' mean
  direction to something correlated with the codeword. The statistic is the largest ``|(Rv)_i|``;
  its distribution over many helpers is compared with the Haar null (two-sample KS distance).
* :func:`linkage_score` — (d) two helpers ``R_1, R_2`` of one person: ``M = R_2 R_1ᵀ`` maps
  ``c_1`` close to ``c_2`` (``M c_1 = R_2 t_1 ≈ R_2 t_2 = c_2``), so ``M`` hides an ``α × α``
  block of entries ``≈ ±cos(t_1, t_2)/α`` among entries of size ``1/√n``. A truncated power
  iteration from every column (keep the ``α`` largest coordinates with their signs, apply ``Mᵀ``,
  again, apply ``M``) finds the pair ``(ĉ_1, ĉ_2)`` maximising ``⟨ĉ_2, M ĉ_1⟩``; that maximum is
  the linkage score (high: mated). With the records sealed by a pepper the attacker sees only
  ciphertexts: :func:`sealed_linkage_score` is the best generic comparison of two of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.deciders import angular_scores
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.sketches.angular import SCALE_BITS, AngularSketch, probe_matrix

__all__ = [
    "linkage_pair",
    "linkage_score",
    "mean_direction_statistic",
    "population_attack",
    "prior_guided_rank",
    "sealed_linkage_score",
]

#: Score bins of the rank-counting dynamic programme (the discretisation of :func:`prior_guided_rank`).
RANK_BINS = 4096
#: Truncated power iterations of :func:`linkage_score`.
LINKAGE_ITERATIONS = 3


def population_attack(
    sketch: AngularSketch, helpers: Sequence[bytes], codewords: Sequence[Any], background: np.ndarray
) -> dict[str, Any]:
    """Every background embedding through every helper with the exact decision rule.

    Returns tries, successes, the per-try success rate with its 95% Wilson interval, how many
    helpers fell at least once, and the work ``log2(1/rate)`` in argon2id evaluations (from the
    interval's upper end when nothing succeeded: a lower bound on the work then).
    """
    probes, refused = probe_matrix(background, sketch.dimension)
    probes = probes[~refused]
    if probes.shape[0] == 0:
        raise ParameterError("the background has no usable embedding")
    successes, fallen = 0, 0
    for helper, codeword in zip(helpers, codewords, strict=True):
        hits = int(np.count_nonzero(angular_scores(sketch, sketch.matrix(helper), codeword, probes) > 0))
        successes += hits
        fallen += int(hits > 0)
    tries = probes.shape[0] * len(helpers)
    low, high = wilson_interval(successes, tries)
    rate = successes / tries
    return {
        "background_embeddings": int(probes.shape[0]),
        "helpers": len(helpers),
        "tries": tries,
        "successes": successes,
        "success_per_try": rate,
        "success_per_try_ci95": [low, high],
        "helpers_fallen": fallen,
        "argon2_evaluations_log2": math.log2(1.0 / (rate if successes else high)),
        "work_is_lower_bound": successes == 0,
    }


def _log_count_above(gains: np.ndarray, alpha: int, threshold: float) -> float:
    """``log2`` of the number of ``α``-subsets with signs whose total gain exceeds ``threshold``.

    ``gains`` is ``(n, 2)``: the gain of each coordinate with sign + and −. Dynamic programme over
    the coordinates on :data:`RANK_BINS` bins of the total (counts kept as float64 scaled by 2^-k).
    """
    lo = float(np.sort(gains.min(axis=1))[:alpha].sum())
    hi = float(np.sort(gains.max(axis=1))[-alpha:].sum())
    width = max(hi - lo, 1e-12) / RANK_BINS
    table = np.zeros((alpha + 1, RANK_BINS + alpha + 2))
    table[0, 0] = 1.0
    base = lo / alpha  # each chosen coordinate's gain is shifted by lo/alpha so every bin index is >= 0
    shifted = np.rint((gains - base) / width).astype(np.int64).clip(0, RANK_BINS + 1)
    scale = 0
    for plus, minus in shifted.tolist():
        new = table.copy()
        for k in range(alpha, 0, -1):
            new[k, plus:] += table[k - 1, : table.shape[1] - plus]
            new[k, minus:] += table[k - 1, : table.shape[1] - minus]
        table = new
        top = table.max()
        if top > 1e250:  # keep counts representable; remember the scale
            table /= 2.0**500
            scale += 500
    cut = int(np.floor((threshold - lo) / width))
    above = float(table[alpha, cut + 1 :].sum()) + 0.5 * float(table[alpha, min(max(cut, 0), table.shape[1] - 1)])
    return math.log2(above) + scale if above > 0 else 0.0


def prior_guided_rank(
    sketch: AngularSketch, helper: bytes, codeword: Any, centre: np.ndarray, precision: np.ndarray
) -> float:
    """``log2`` of the true codeword's rank among all codewords ordered by their templates'
    separable Gaussian log-likelihood (module docstring): the guessing work of that attacker.

    ``centre`` and ``precision`` (``Σ⁻¹``) model the templates *as the sketch sees them* (after
    any normalisation), fitted on background people.
    """
    r = sketch.matrix(helper) / float(1 << SCALE_BITS)
    alpha = sketch.alpha
    w = r @ (precision @ centre) / math.sqrt(alpha)
    d = np.einsum("ij,jk,ik->i", r, precision, r) / (2.0 * alpha)
    gains = np.stack([w - d, -w - d], axis=1)
    c = np.asarray(codeword, dtype=np.int64)
    support = np.flatnonzero(c)
    true = float(np.where(c[support] > 0, gains[support, 0], gains[support, 1]).sum())
    return _log_count_above(gains, alpha, true)


def mean_direction_statistic(matrices: Sequence[np.ndarray], direction: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """KS distance between ``max_i |(R v)_i|`` over real helpers and over Haar matrices (module docstring)."""
    v = np.asarray(direction, dtype=np.float64)
    v = v / np.linalg.norm(v)
    real = np.array([np.abs(m @ v).max() / np.linalg.norm(m @ v) for m in matrices])
    rng = np.random.default_rng(seed)
    null = np.abs(rng.normal(size=(max(2000, 4 * len(real)), v.size)))
    null = null.max(axis=1) / np.linalg.norm(null, axis=1)  # Rv uniform on the sphere
    grid = np.sort(np.concatenate([real, null]))
    ks = float(
        np.max(
            np.abs(
                np.searchsorted(np.sort(real), grid, side="right") / real.size
                - np.searchsorted(np.sort(null), grid, side="right") / null.size
            )
        )
    )
    return {
        "helpers": int(real.size),
        "ks_distance": ks,
        "ks_critical_0.01": 1.63 * math.sqrt((real.size + null.size) / (real.size * null.size)),
        "median_real": float(np.median(real)),
        "median_haar": float(np.median(null)),
    }


def _sparsify(columns: np.ndarray, alpha: int) -> np.ndarray:
    """Each column's ``α`` largest-magnitude entries, as signs ``±1/√α``; zeros elsewhere."""
    top = np.argpartition(-np.abs(columns), alpha - 1, axis=0)[:alpha]
    out = np.zeros_like(columns)
    cols = np.arange(columns.shape[1])[None, :]
    out[top, cols] = np.sign(columns[top, cols]) / math.sqrt(alpha)
    return out


def linkage_pair(sketch: AngularSketch, helper_a: bytes, helper_b: bytes) -> tuple[float, np.ndarray, np.ndarray]:
    """``(score, ĉ_1, ĉ_2)``: the best ``⟨ĉ_2, R_2 R_1ᵀ ĉ_1⟩`` over truncated power iterations from
    every column (module docstring) and the signed supports (``int8``) that reach it."""
    scale = float(1 << SCALE_BITS)
    m = (sketch.matrix(helper_b) / scale) @ (sketch.matrix(helper_a) / scale).T
    c1 = np.eye(sketch.dimension)
    u = m  # start from every column of M
    for _ in range(LINKAGE_ITERATIONS):
        c1 = _sparsify(m.T @ _sparsify(u, sketch.alpha), sketch.alpha)
        u = m @ c1
    c2 = _sparsify(u, sketch.alpha)
    scores = np.einsum("ij,ij->j", c2, u)
    best = int(np.argmax(scores))
    return float(scores[best]), np.sign(c1[:, best]).astype(np.int8), np.sign(c2[:, best]).astype(np.int8)


def linkage_score(sketch: AngularSketch, helper_a: bytes, helper_b: bytes) -> float:
    """``max ⟨ĉ_2, R_2 R_1ᵀ ĉ_1⟩`` (:func:`linkage_pair`): high for two helpers of one person."""
    return linkage_pair(sketch, helper_a, helper_b)[0]


def sealed_linkage_score(sealed_a: bytes, sealed_b: bytes) -> float:
    """Share of equal bytes of two sealed records (all an attacker without the pepper can compare)."""
    size = min(len(sealed_a), len(sealed_b))
    a = np.frombuffer(sealed_a[:size], dtype=np.uint8)
    b = np.frombuffer(sealed_b[:size], dtype=np.uint8)
    return float(np.mean(a == b))
