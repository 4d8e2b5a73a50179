"""The unprotected reference: the same templates and probes compared by a plain distance, no sketch.

The protected evaluation (:mod:`.error_rates`) reports these next to its operating points, so the
cost of protection — the operating points a scheme can reach versus those plain matching can —
is visible. Templates are formed from the same enrolment rows as the protected run (the
:class:`~sketchauth.evaluate.protocol.TrialPlan`): the (real) mean vector for
``euclidean``/``chebyshev``, the mean of the unit vectors for ``cosine`` (``1 − cos``), the
per-position mode for ``hamming`` and the majority set for
``set-difference`` (``|A Δ B|``). Scores are distances: lower is more similar.

At scale the scores are never all held: :func:`scorer` gives the streaming evaluation
(:mod:`.blocks`) a :class:`~sketchauth.evaluate.blocks.Scorer` that scores tiles, reduced into
score histograms (:class:`~sketchauth.evaluate.tally.ScoreHistogram`: exact value counts, or a
fixed grid of 65,536 bins beyond 2^18 distinct values), from which :meth:`BaselineResult.from_histograms`
reads the DET curve, the EER and the rates at the NIST targets. The per-trial scores (score files)
are kept only for runs of at most :data:`SCORE_FILE_LIMIT` comparisons.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.blocks import Scorer
from sketchauth.evaluate.deciders import MAX_BITMAP_UNIVERSE, _bitmaps  # the bitmaps of PinSketch's decider
from sketchauth.evaluate.protocol import TrialPlan
from sketchauth.evaluate.rates import det_from_counts, eer_interval, fmr_at_fnmr_on_counts, fnmr_at_fmr_on_det
from sketchauth.evaluate.tally import ScoreHistogram
from sketchauth.evaluate.trials import Data, samples_of
from sketchauth.templates import enrol_byte_mode, enrol_majority_set

__all__ = ["METRICS", "SCORE_FILE_LIMIT", "TARGET_FMR", "TARGET_FNMR", "BaselineResult", "baseline_scores", "scorer"]

#: Target FMR of NIST SP 800-63B-4 (1 in 10,000), reported for the unprotected comparator.
TARGET_FMR = 1e-4
#: Target FNMR of NIST SP 800-63B-4 (5%): the FMR reachable at it is reported too.
TARGET_FNMR = 0.05
#: The distances :func:`baseline_scores` knows.
METRICS = ("euclidean", "chebyshev", "hamming", "set-difference", "cosine")
#: Pairs per chunk of the vector distances (≈ 16 MiB per float64 array at 128 features).
_CHUNK = 16_384
#: Largest number of comparisons whose per-trial baseline scores are kept (for the score files).
SCORE_FILE_LIMIT = 2_000_000


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


def _templates(metric: str, data: Data, trials: TrialPlan) -> tuple[Any, Any]:
    """(templates, samples) of a metric: float matrices, or the majority sets and the sets."""
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
        return templates, x
    if metric == "set-difference":
        return [enrol_majority_set(None, [samples[r] for r in rows]) for rows in trials.enrol_rows], samples
    raise ParameterError(f"unknown comparison metric {metric!r}; known: {', '.join(METRICS)}")


def baseline_scores(metric: str, data: Data, trials: TrialPlan, pairs: np.ndarray) -> np.ndarray:
    """Distances (lower = more similar) between unprotected templates and probes of ``pairs``.

    ``pairs`` is a ``(2, T)`` array of (enrolled identity index, probe row), as in ``trials``.
    """
    templates, x = _templates(metric, data, trials)
    if metric != "set-difference":
        return _vector_scores(metric, x, templates, pairs)
    return np.array(
        [np.setxor1d(templates[e], x[q]).size for e, q in zip(pairs[0].tolist(), pairs[1].tolist(), strict=False)],
        dtype=float,
    )


def scorer(metric: str, data: Data, trials: TrialPlan) -> Scorer | None:
    """The streaming scorer of ``metric`` over the plan's probe positions, or ``None`` when the
    sets do not fit bitmaps (then :func:`baseline_scores` on pair lists is the only way)."""
    templates, x = _templates(metric, data, trials)
    rows = trials.probe_index
    if metric != "set-difference":
        probes = x[rows]
        lo = min(float(probes.min(initial=0.0)), float(templates.min(initial=0.0)))
        hi = max(float(probes.max(initial=0.0)), float(templates.max(initial=0.0)))
        span = hi - lo
        k = x.shape[1]
        upper = {"euclidean": span * np.sqrt(k), "chebyshev": span, "hamming": float(k), "cosine": 2.0}[metric]
        return Scorer(metric, templates, probes, max(upper, 1.0) * (1 + 1e-9))

    chosen = [x[r] for r in rows.tolist()]
    top = max((int(np.max(s, initial=0)) for s in [*templates, *chosen]), default=0) + 1
    if top > MAX_BITMAP_UNIVERSE:
        return None
    a, b = _bitmaps(templates, max(top, 2)), _bitmaps(chosen, max(top, 2))
    if a is None or b is None:
        return None
    upper = max((len(s) for s in templates), default=0) + max((len(s) for s in chosen), default=0)
    return Scorer(metric, a, b, float(max(upper, 1)))


@dataclass(frozen=True)
class BaselineResult:
    """Unprotected matching of the same templates and probes by a plain distance."""

    metric: str
    genuine: ScoreHistogram
    impostor: ScoreHistogram
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
    #: The per-trial (genuine, impostor) scores, in plan order, for the score files (small runs only).
    scores: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_scores(cls, metric: str, genuine: np.ndarray, impostor: np.ndarray) -> BaselineResult:
        """From every trial's score (kept: the score files are written from them)."""
        upper = float(max(genuine.max(initial=0.0), impostor.max(initial=0.0), 1.0))
        result = cls.from_histograms(
            metric, ScoreHistogram.of(genuine, upper=upper), ScoreHistogram.of(impostor, upper=upper)
        )
        return dataclasses.replace(result, scores=(genuine, impostor))

    @classmethod
    def from_histograms(cls, metric: str, genuine: ScoreHistogram, impostor: ScoreHistogram) -> BaselineResult:
        """From the score histograms of a streaming run: the DET at every distinct score (or grid edge)."""
        thresholds, rejected, accepted, g, i = det_from_counts(
            genuine.values, genuine.counts, impostor.values, impostor.counts
        )
        fmr, fnmr = accepted / i, rejected / g
        at, _, ci = fnmr_at_fmr_on_det(fmr, fnmr, thresholds, TARGET_FMR, genuine_trials=g)
        span = eer_interval(fmr, fnmr)
        f_at, _, f_ci = fmr_at_fnmr_on_counts(thresholds, rejected, accepted, g, i, TARGET_FNMR)
        return cls(
            metric,
            genuine,
            impostor,
            fmr,
            fnmr,
            thresholds,
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
            "genuine_mean": self.genuine.mean,
            "impostor_mean": self.impostor.mean,
            "score_histogram": "exact" if not (self.genuine.grid or self.impostor.grid) else "grid of 65536 bins",
        }
