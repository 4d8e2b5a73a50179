"""ROC and EPC of a report's unprotected baselines (:mod:`sketchauth.evaluate.curves`), as JSON.

* **ROC**: ``(FMR, 1 − FNMR)`` at the baseline's DET thresholds, thinned to at most
  :data:`MAX_CURVE_POINTS` points (always keeping both ends);
* **EPC**: the evaluation has no development/evaluation split of its own, so the identities are
  split in two seeded halves (:func:`~sketchauth.evaluate.curves.identity_halves`): the threshold
  minimising ``α·FMR + (1 − α)·FNMR`` is chosen on the first half's trials and its HTER measured
  on the second's; impostor trials across the halves are in neither. The JSON says so
  (``split``) with the trial counts of both halves.

The ROC needs only the baseline's DET arrays; the EPC needs the per-trial baseline scores and
their identities (``epc`` is ``None`` without them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.curves import epc, identity_halves
from sketchauth.evaluate.error_rates import ErrorRateResult

__all__ = ["MAX_CURVE_POINTS", "baseline_curves"]

#: Points of a curve kept in the JSON (the curve is thinned evenly, not binned).
MAX_CURVE_POINTS = 400

SPLIT_STATEMENT = (
    "no development/evaluation split in the data: identities split in two seeded halves; thresholds chosen on the "
    "first half's trials, HTER measured on the second's (impostor trials across the halves are in neither)"
)


def _thin(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, MAX_CURVE_POINTS)).astype(int))


def _trial_scores(baseline: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The baseline's per-trial (genuine, impostor) distances in the plan's trial order, when kept.

    ``scores`` where a run keeps them only for small populations (streamed evaluations), else the
    ``genuine_scores``/``impostor_scores`` arrays.
    """
    kept = getattr(baseline, "scores", None)
    if kept is None and hasattr(baseline, "genuine_scores"):
        kept = (baseline.genuine_scores, baseline.impostor_scores)
    if kept is None:
        return None
    return np.asarray(kept[0], dtype=float), np.asarray(kept[1], dtype=float)


def _epc(er: ErrorRateResult, baseline: Any, seed: int) -> dict[str, Any] | None:
    """The EPC of one baseline over the identity halves; ``None`` without per-trial scores and
    identities, or when a half lacks genuine or impostor trials (tiny populations)."""
    kept = _trial_scores(baseline)
    if kept is None or er.trial_labels is None:
        return None
    claimed, real, _rows = er.trial_labels
    dev, ev = identity_halves(claimed.astype(str), real.astype(str), seed=seed)
    scores = np.concatenate(kept)
    genuine = np.arange(scores.size) < kept[0].size
    try:
        alphas, hter, thresholds = epc(
            scores[dev & genuine], scores[dev & ~genuine], scores[ev & genuine], scores[ev & ~genuine]
        )
    except ParameterError:
        return None
    return {
        "alpha": alphas.tolist(),
        "hter": hter.tolist(),
        "threshold": thresholds.tolist(),
        "split": SPLIT_STATEMENT,
        "seed": seed,
        "development_trials": {"genuine": int((dev & genuine).sum()), "impostor": int((dev & ~genuine).sum())},
        "evaluation_trials": {"genuine": int((ev & genuine).sum()), "impostor": int((ev & ~genuine).sum())},
    }


def baseline_curves(er: ErrorRateResult, *, seed: int = 0) -> list[dict[str, Any]]:
    """Per unprotected baseline: its ROC points and its EPC over the identity halves (module docstring)."""
    out = []
    for b in er.baselines:
        keep = _thin(b.fmr.size)
        roc = {"fmr": b.fmr[keep].tolist(), "tpr": (1.0 - b.fnmr[keep]).tolist()}
        out.append({"metric": b.metric, "roc": roc, "epc": _epc(er, b, seed)})
    return out
