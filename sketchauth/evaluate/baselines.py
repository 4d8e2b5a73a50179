"""The unprotected reference: the same templates and probes compared by a plain distance, no sketch.

The protected evaluation (:mod:`.error_rates`) reports these next to its operating points, so the
cost of protection — the operating points a scheme can reach versus those plain matching can —
is visible. Templates are formed from the same enrolment rows as the protected run (the
:class:`~sketchauth.evaluate.protocol.TrialPlan`): the (real) mean vector for
``euclidean``/``chebyshev``, the mean of the unit vectors for ``cosine`` (``1 − cos``), the
per-position mode for ``hamming`` and the majority set for
``set-difference`` (``|A Δ B|``). Scores are distances: lower is more similar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.protocol import TrialPlan
from sketchauth.evaluate.rates import det_from_scores, eer_interval, fmr_at_fnmr, fnmr_at_fmr_on_det
from sketchauth.evaluate.trials import Data, samples_of
from sketchauth.templates import enrol_byte_mode, enrol_majority_set

__all__ = ["METRICS", "TARGET_FMR", "TARGET_FNMR", "BaselineResult", "baseline_scores"]

#: Target FMR of NIST SP 800-63B-4 (1 in 10,000), reported for the unprotected comparator.
TARGET_FMR = 1e-4
#: Target FNMR of NIST SP 800-63B-4 (5%): the FMR reachable at it is reported too.
TARGET_FNMR = 0.05
#: The distances :func:`baseline_scores` knows.
METRICS = ("euclidean", "chebyshev", "hamming", "set-difference", "cosine")
#: Pairs per chunk of the vector distances (≈ 16 MiB per float64 array at 128 features).
_CHUNK = 16_384


def _vector_scores(metric: str, x: np.ndarray, templates: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.empty(pairs.shape[1])
    for start in range(0, pairs.shape[1], _CHUNK):
        diff = x[pairs[1, start : start + _CHUNK]] - templates[pairs[0, start : start + _CHUNK]]
        if metric == "euclidean":
            out[start : start + diff.shape[0]] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        elif metric == "cosine":  # 1 − cos: a distance, lower is more similar
            probe = x[pairs[1, start : start + _CHUNK]]
            template = templates[pairs[0, start : start + _CHUNK]]
            dots = np.einsum("ij,ij->i", probe, template)
            norms = np.linalg.norm(probe, axis=1) * np.linalg.norm(template, axis=1)
            out[start : start + diff.shape[0]] = 1.0 - dots / np.where(norms > 0, norms, 1.0)
        elif metric == "chebyshev":
            out[start : start + diff.shape[0]] = np.abs(diff).max(axis=1)
        else:
            out[start : start + diff.shape[0]] = np.count_nonzero(diff, axis=1)
    return out


def baseline_scores(metric: str, data: Data, trials: TrialPlan, pairs: np.ndarray) -> np.ndarray:
    """Distances (lower = more similar) between unprotected templates and probes of ``pairs``.

    ``pairs`` is a ``(2, T)`` array of (enrolled identity index, probe row), as in ``trials``.
    """
    samples = samples_of(data)
    if metric in ("euclidean", "chebyshev", "hamming", "cosine"):
        x = np.asarray(samples, dtype=float)
        if metric == "hamming":
            templates = np.stack(
                [np.frombuffer(enrol_byte_mode(None, x[r]), dtype=np.uint8) for r in trials.enrol_rows]
            ).astype(float)
        elif metric == "cosine":  # the mean of the captures' directions, as the angular sketch enrols
            unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.finfo(float).tiny)
            templates = np.stack([unit[r].mean(axis=0) for r in trials.enrol_rows])
        else:
            templates = np.stack([x[r].mean(axis=0) for r in trials.enrol_rows])
        return _vector_scores(metric, x, templates, pairs)
    if metric == "set-difference":
        sets = [enrol_majority_set(None, [samples[r] for r in rows]) for rows in trials.enrol_rows]
        return np.array(
            [np.setxor1d(sets[e], samples[q]).size for e, q in zip(pairs[0].tolist(), pairs[1].tolist(), strict=False)],
            dtype=float,
        )
    raise ParameterError(f"unknown comparison metric {metric!r}; known: {', '.join(METRICS)}")


@dataclass(frozen=True)
class BaselineResult:
    """Unprotected matching of the same templates and probes by a plain distance."""

    metric: str
    genuine_scores: np.ndarray
    impostor_scores: np.ndarray
    fmr: np.ndarray
    fnmr: np.ndarray
    thresholds: np.ndarray
    eer: float
    fnmr_at_target: float
    fnmr_at_target_ci: tuple[float, float]
    target_fmr: float = TARGET_FMR
    #: FVC low/high around the crossing, beside the interpolated ``eer``.
    eer_range: tuple[float, float] = (math.nan, math.nan)
    #: FMR at the strictest threshold with FNMR ≤ ``target_fnmr`` (integer counts), with its Wilson interval.
    fmr_at_target_fnmr: float = math.nan
    fmr_at_target_fnmr_ci: tuple[float, float] = (math.nan, math.nan)
    target_fnmr: float = TARGET_FNMR

    @classmethod
    def from_scores(cls, metric: str, genuine: np.ndarray, impostor: np.ndarray) -> BaselineResult:
        fmr, fnmr, thr = det_from_scores(genuine, impostor)
        at, _, ci = fnmr_at_fmr_on_det(fmr, fnmr, thr, TARGET_FMR, genuine_trials=genuine.size)
        span = eer_interval(fmr, fnmr)
        f_at, _, f_ci = fmr_at_fnmr(genuine, impostor, TARGET_FNMR)
        return cls(
            metric,
            genuine,
            impostor,
            fmr,
            fnmr,
            thr,
            span.interpolated,
            at,
            ci,
            eer_range=(span.low, span.high),
            fmr_at_target_fnmr=f_at,
            fmr_at_target_fnmr_ci=f_ci,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "eer": self.eer,
            "target_fmr": self.target_fmr,
            "fnmr_at_target_fmr": self.fnmr_at_target,
            "fnmr_at_target_fmr_ci": list(self.fnmr_at_target_ci),
            "eer_fvc_low_high": list(self.eer_range),
            "target_fnmr": self.target_fnmr,
            "fmr_at_target_fnmr": self.fmr_at_target_fnmr,
            "fmr_at_target_fnmr_ci": list(self.fmr_at_target_fnmr_ci),
            "genuine_mean": float(self.genuine_scores.mean()),
            "impostor_mean": float(self.impostor_scores.mean()),
        }
