"""Error rates from comparison outcomes and scores: Wilson intervals, DET curves, EER (SPEC §6).

Vocabulary follows ISO/IEC 19795-1: a *genuine* trial compares a sample with its own person's
enrolment, an *impostor* trial with somebody else's (zero effort). FNMR is the share of genuine
trials rejected, FMR the share of impostor trials accepted.

* :func:`wilson_interval` — the Wilson score interval for a binomial proportion ``k/n``:
  ``(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``. Unlike the normal ("Wald")
  interval it stays inside ``[0, 1]`` and is not degenerate at ``k = 0`` — which matters, because
  a good scheme shows zero false matches and the honest statement is an upper bound
  (for ``k = 0`` the upper end is ``z²/(n + z²)``, about ``3.84/n``: the "rule of three" shape).
* :class:`RatePoint` — one operating point (tolerance setting) with both rates and intervals.
* :func:`det_from_scores` — every operating point of a score-based comparator, vectorised by
  sorting: with scores where *lower means more similar* (distances; ``higher_is_genuine=False``)
  a trial is accepted at threshold ``τ`` iff ``score ≤ τ``. The thresholds are ``−inf`` (accept
  nothing: ``FMR = 0, FNMR = 1``) followed by every distinct score in increasing order, so FMR
  rises and FNMR falls along the arrays. With ``higher_is_genuine=True`` (similarities) a trial is
  accepted iff ``score ≥ τ``; thresholds are then ``+inf`` followed by the distinct scores in
  decreasing order.
* :func:`eer` — the equal error rate where FMR and FNMR cross, interpolated linearly between
  the two operating points that bracket the crossing.
* :func:`fnmr_at_fmr` — the FNMR at the most permissive threshold whose FMR does not exceed a
  target (e.g. NIST SP 800-63B-4's 1 in 10,000), with its Wilson interval;
  :func:`fnmr_at_fmr_on_det` reads it off a curve already computed (several targets, one sort).

Example::

    >>> fmr, fnmr, thr = det_from_scores([0.1, 0.2, 0.6], [0.5, 0.7, 0.9])
    >>> [round(float(x), 3) for x in fmr], [round(float(x), 3) for x in fnmr]
    ([0.0, 0.0, 0.0, 0.333, 0.333, 0.667, 1.0], [1.0, 0.667, 0.333, 0.333, 0.0, 0.0, 0.0])
    >>> round(eer(fmr, fnmr), 3)
    0.333
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError

__all__ = [
    "wilson_interval",
    "RatePoint",
    "det_from_scores",
    "eer",
    "fnmr_at_fmr",
    "fnmr_at_fmr_on_det",
]


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval ``(lo, hi)`` for ``k`` successes in ``n`` trials.

    ``z = 1.96`` gives the 95% interval. ``n`` must be positive: a rate over no trials is not
    a number, and we refuse to invent one.

    >>> [round(x, 4) for x in wilson_interval(0, 100)]
    [0.0, 0.037]
    """
    if isinstance(k, bool) or isinstance(n, bool):
        raise ParameterError("k and n must be integers")
    k, n = int(k), int(n)
    if n <= 0:
        raise ParameterError(f"a rate needs at least one trial, got n={n}")
    if k < 0 or k > n:
        raise ParameterError(f"k must be in [0, n={n}], got {k}")
    if not (math.isfinite(z) and z > 0):
        raise ParameterError(f"z must be a positive finite number, got {z!r}")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    # Clip rounding noise: at k = 0 the lower end is exactly 0, at k = n the upper is exactly 1.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


@dataclass(frozen=True, slots=True)
class RatePoint:
    """One operating point: FNMR and FMR with 95% Wilson intervals and the trial counts.

    ``setting`` is whatever identifies the operating point (a tolerance ``v``, an error budget
    ``t``, a score threshold); it must be JSON-ready.
    """

    setting: Any
    fnmr: float
    fnmr_ci: tuple[float, float]
    fmr: float
    fmr_ci: tuple[float, float]
    genuine_trials: int
    impostor_trials: int

    @classmethod
    def from_counts(
        cls,
        setting: Any,
        false_non_matches: int,
        genuine_trials: int,
        false_matches: int,
        impostor_trials: int,
        *,
        z: float = 1.96,
    ) -> RatePoint:
        """Build a point from error counts (the intervals are Wilson intervals at ``z``)."""
        return cls(
            setting=setting,
            fnmr=int(false_non_matches) / _positive("genuine_trials", genuine_trials),
            fnmr_ci=wilson_interval(false_non_matches, genuine_trials, z),
            fmr=int(false_matches) / _positive("impostor_trials", impostor_trials),
            fmr_ci=wilson_interval(false_matches, impostor_trials, z),
            genuine_trials=int(genuine_trials),
            impostor_trials=int(impostor_trials),
        )

    @property
    def false_non_matches(self) -> int:
        return int(round(self.fnmr * self.genuine_trials))

    @property
    def false_matches(self) -> int:
        return int(round(self.fmr * self.impostor_trials))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with stable keys."""
        return {
            "setting": self.setting,
            "fnmr": self.fnmr,
            "fnmr_ci": list(self.fnmr_ci),
            "fmr": self.fmr,
            "fmr_ci": list(self.fmr_ci),
            "genuine_trials": self.genuine_trials,
            "impostor_trials": self.impostor_trials,
            "false_non_matches": self.false_non_matches,
            "false_matches": self.false_matches,
        }


def _positive(name: str, n: int) -> int:
    n = int(n)
    if n <= 0:
        raise ParameterError(f"{name} must be positive, got {n}")
    return n


def _scores(name: str, values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ParameterError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinite scores")
    return arr


def det_from_scores(
    genuine_scores: Any, impostor_scores: Any, *, higher_is_genuine: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fmr, fnmr, thresholds)`` at every distinct threshold, computed by sorting.

    Cost ``O((G + I) log(G + I))``: both score arrays are sorted once and each threshold's
    counts come from ``searchsorted``. See the module docstring for the threshold convention.
    """
    gen = _scores("genuine_scores", genuine_scores)
    imp = _scores("impostor_scores", impostor_scores)
    if higher_is_genuine:
        # Negate so that "accept iff score <= τ" covers both orientations with one code path.
        gen, imp = -gen, -imp
    gen.sort()
    imp.sort()
    distinct = np.unique(np.concatenate([gen, imp]))
    accepted_impostors = np.searchsorted(imp, distinct, side="right")
    accepted_genuine = np.searchsorted(gen, distinct, side="right")
    fmr = np.concatenate([[0.0], accepted_impostors / imp.size])
    fnmr = np.concatenate([[1.0], 1.0 - accepted_genuine / gen.size])
    thresholds = np.concatenate([[-np.inf], distinct])
    if higher_is_genuine:
        thresholds = -thresholds
    return fmr, fnmr, thresholds


def eer(fmr: Any, fnmr: Any) -> float:
    """The equal error rate: where the FMR and FNMR curves cross.

    ``fmr`` must be non-decreasing and ``fnmr`` non-increasing along the arrays (as
    :func:`det_from_scores` returns them, or tolerance sweeps ordered from strict to lenient).
    Between the last point with ``FNMR > FMR`` and the first with ``FNMR ≤ FMR`` both curves are
    interpolated linearly and the common value at the crossing is returned. If the curves never
    cross, the point where they come closest is used (the mean of the two rates there).
    """
    a = np.asarray(fmr, dtype=float).ravel()
    b = np.asarray(fnmr, dtype=float).ravel()
    if a.size == 0 or a.shape != b.shape:
        raise ParameterError(f"fmr and fnmr must be non-empty and equally long, got {a.size} and {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ParameterError("fmr and fnmr must be finite")
    if np.any(np.diff(a) < 0) or np.any(np.diff(b) > 0):
        raise ParameterError("fmr must be non-decreasing and fnmr non-increasing")
    gap = b - a
    crossed = np.flatnonzero(gap <= 0)
    if crossed.size == 0 or crossed[0] == 0:
        i = int(np.argmin(np.abs(gap)))
        return float((a[i] + b[i]) / 2.0)
    i = int(crossed[0])
    # gap falls from positive (at i−1) to non-positive (at i); find where it is 0.
    w = gap[i - 1] / (gap[i - 1] - gap[i])
    return float(a[i - 1] + w * (a[i] - a[i - 1]))


def fnmr_at_fmr(
    genuine_scores: Any,
    impostor_scores: Any,
    target: float,
    *,
    higher_is_genuine: bool = False,
) -> tuple[float, float, tuple[float, float]]:
    """``(fnmr, threshold, fnmr_ci)`` at the most permissive threshold with ``FMR ≤ target``.

    The threshold is in the scores' own orientation (``−inf``/``+inf`` when only rejecting
    everything meets the target). The interval is the 95% Wilson interval of the FNMR.
    """
    target = _target_fmr(target)
    det = det_from_scores(genuine_scores, impostor_scores, higher_is_genuine=higher_is_genuine)
    return fnmr_at_fmr_on_det(*det, target, genuine_trials=int(np.asarray(genuine_scores).size))


def fnmr_at_fmr_on_det(
    fmr: np.ndarray, fnmr: np.ndarray, thresholds: np.ndarray, target: float, *, genuine_trials: int
) -> tuple[float, float, tuple[float, float]]:
    """:func:`fnmr_at_fmr` on the arrays of :func:`det_from_scores` over ``genuine_trials`` genuine scores.

    For several targets on one curve: the scores are sorted once, not once per target.
    """
    target = _target_fmr(target)
    # FMR is non-decreasing along the arrays, so the last index meeting the target is the most
    # permissive one (index 0, reject-all, always meets it).
    i = int(np.searchsorted(fmr, target, side="right")) - 1
    rejected = int(round(fnmr[i] * genuine_trials))
    return float(fnmr[i]), float(thresholds[i]), wilson_interval(rejected, genuine_trials)


def _target_fmr(target: float) -> float:
    target = float(target)
    if not (0.0 <= target <= 1.0):
        raise ParameterError(f"target FMR must be in [0, 1], got {target!r}")
    return target
