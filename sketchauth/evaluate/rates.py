"""Error rates from comparison outcomes and scores: Wilson intervals, DET curves, EER (ISO/IEC 19795-1).

Vocabulary follows ISO/IEC 19795-1: a *genuine* trial compares a sample with its own person's
enrolment, an *impostor* trial with somebody else's (zero effort). FNMR is the share of genuine
trials rejected, FMR the share of impostor trials accepted.

* :func:`clopper_pearson_interval` — the exact (Clopper–Pearson) interval: ``lo`` solves
  ``P[Bin(n, p) ≥ k] = α/2`` and ``hi`` solves ``P[Bin(n, p) ≤ k] = α/2`` (Clopper and Pearson,
  Biometrika 26(4), 1934) — the ``α/2`` and ``1 − α/2`` quantiles of ``Beta(k, n − k + 1)`` and
  ``Beta(k + 1, n − k)``. Never below the nominal coverage (conservative); at ``k = 0`` the upper
  end is ``1 − (α/2)^(1/n)``. :func:`clopper_pearson_upper` is the one-sided upper bound and
  :func:`binomial_cdf` the exact tail both invert (log-space sums, no scipy);
  :func:`rate_interval` picks either method by name (``INTERVAL_METHODS``).
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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist
from typing import Any, cast

import numpy as np

from sketchauth.errors import ParameterError

__all__ = [
    "INTERVAL_METHODS",
    "EERInterval",
    "RatePoint",
    "binomial_cdf",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "det_from_counts",
    "det_from_scores",
    "eer",
    "eer_interval",
    "fmr_at_fnmr",
    "fmr_at_fnmr_on_counts",
    "fnmr_at_fmr",
    "fnmr_at_fmr_on_det",
    "identity_bootstrap",
    "identity_bootstraps",
    "rate_at_most",
    "rate_below",
    "rate_interval",
    "wilson_interval",
    "write_score_files",
]


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval ``(lo, hi)`` for ``k`` successes in ``n`` trials.

    ``z = 1.96`` gives the 95% interval. ``n`` must be positive: a rate over no trials is not
    a number, and we refuse to invent one.

    >>> [round(x, 4) for x in wilson_interval(0, 100)]
    [0.0, 0.037]
    """
    k, n = _counts(k, n)
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


# -- exact binomial tails and the Clopper–Pearson interval --------------------------------------------------
#: Interval methods for a rate ``k/n`` (:func:`rate_interval`): the Wilson score interval and the exact one.
INTERVAL_METHODS = ("wilson", "clopper-pearson")


def _counts(k: int, n: int) -> tuple[int, int]:
    if isinstance(k, bool) or isinstance(n, bool):
        raise ParameterError("k and n must be integers")
    k, n = int(k), int(n)
    if n <= 0:
        raise ParameterError(f"a rate needs at least one trial, got n={n}")
    if k < 0 or k > n:
        raise ParameterError(f"k must be in [0, n={n}], got {k}")
    return k, n


def _window(k: int) -> int:
    """Terms a tail sum keeps past its largest term.

    ``log P[Bin(n, p) = i]`` is concave with second difference ``≤ −1/(i + 2) − 1/(n − i)``, so
    ``m`` steps from the largest term of a tail at ``k`` fall by at least
    ``m(m − 1)/(2(min(k, n − k) + m + 2))`` nats: with ``k`` here the smaller of ``k`` and ``n − k``,
    past this window every term is below ``e^−60`` of the largest, out of double precision's reach.
    """
    return 260 + 11 * math.isqrt(k + 2)


#: Stirling's series of ``stirlerr(x) = log Γ(x + 1) − (x + ½)·log x + x − ½·log 2π`` (x > 15).
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)


def _stirlerr(x: np.ndarray) -> np.ndarray:
    """``stirlerr`` of positive integers: the series above 15, ``lgamma`` at and below."""
    out = np.empty_like(x)
    big = x > 15
    inv = 1.0 / x[big]
    inv2 = inv * inv
    out[big] = inv * (
        _STIRLING[0] + inv2 * (_STIRLING[1] + inv2 * (_STIRLING[2] + inv2 * (_STIRLING[3] + inv2 * _STIRLING[4])))
    )
    small = x[~big]
    out[~big] = [math.lgamma(v + 1) - (v + 0.5) * math.log(v) + v - 0.5 * math.log(2 * math.pi) for v in small.tolist()]
    return out


def _bd0(x: np.ndarray, m: float) -> np.ndarray:
    """``x·log(x/m) + m − x`` without cancellation (the deviance term of Loader's algorithm)."""
    out = x * np.log(x / m) + m - x
    near = np.abs(x - m) < 0.1 * (x + m)
    v = (x[near] - m) / (x[near] + m)
    xs, v2 = x[near], v * v
    series, power = np.zeros_like(v), v.copy()
    for j in range(1, 20):
        power = power * v2
        series += power / (2 * j + 1)
    out[near] = (xs - m) * v + 2 * xs * series
    return cast("np.ndarray", out)


def _log_mass(n: int, p: float, start: int, stop: int) -> float:
    """``log Σ_{start ≤ i ≤ stop} P[Bin(n, p) = i]`` for ``0 < p < 1``, summed in log space.

    Each term by Loader's saddle-point form (C. Loader, "Fast and accurate computation of binomial
    probabilities", 2000), accurate to a few ulps for any ``n``::

        log P[i] = stirlerr(n) − stirlerr(i) − stirlerr(n − i) − bd0(i, np) − bd0(n − i, nq) + ½·log(n / (2π·i·(n − i)))

    with ``P[0] = q^n`` and ``P[n] = p^n``.
    """
    i = np.arange(start, stop + 1, dtype=float)
    logs = np.empty_like(i)
    inner = (i > 0) & (i < n)
    x = i[inner]
    nf, q = float(n), 1.0 - p
    logs[inner] = (
        _stirlerr(np.array([nf]))[0]
        - _stirlerr(x)
        - _stirlerr(nf - x)
        - _bd0(x, nf * p)
        - _bd0(nf - x, nf * q)
        + 0.5 * np.log(nf / (2 * math.pi * x * (nf - x)))
    )
    logs[i == 0] = nf * math.log1p(-p)
    logs[i == n] = nf * math.log(p)
    top = float(logs.max())
    return top + math.log(float(np.exp(logs - top).sum()))


def _mode(n: int, p: float) -> int:
    return min(n, math.floor((n + 1) * p))


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P[Bin(n, p) ≤ k]``, exact to double precision for any ``n`` (no scipy).

    The smaller tail is summed in log space over the terms that matter (:func:`_window`): the
    ones just below ``k`` when the mode is at or above ``k``, else ``1 −`` the ones just above.

    >>> binomial_cdf(0, 10, 0.5) == 0.5 ** 10
    True
    >>> round(binomial_cdf(3, 10, 0.3), 6)
    0.649611
    """
    k, n = _counts(k, n)
    p = _probability(p)
    if k == n or p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    w = _window(min(k, n - k))
    if _mode(n, p) >= k:
        return min(1.0, math.exp(_log_mass(n, p, max(0, k - w), k)))
    return max(0.0, 1.0 - math.exp(_log_mass(n, p, k + 1, min(n, k + 1 + w))))


def _binomial_sf(k: int, n: int, p: float) -> float:
    """``P[Bin(n, p) ≥ k]`` for ``1 ≤ k ≤ n``: the mirror of :func:`binomial_cdf` (summed
    directly, so a tiny upper tail keeps its relative precision)."""
    if p == 0.0 or p == 1.0:
        return p
    w = _window(min(k, n - k))
    if _mode(n, p) <= k:
        return min(1.0, math.exp(_log_mass(n, p, k, min(n, k + w))))
    return max(0.0, 1.0 - math.exp(_log_mass(n, p, max(0, k - 1 - w), k - 1)))


def _probability(p: float) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ParameterError(f"p must be in [0, 1], got {p!r}")
    return p


def _confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def _solve(falls: Any, level: float, lo: float, hi: float) -> float:
    """The ``p ∈ [lo, hi]`` where the decreasing ``falls(p)`` crosses ``level``, to a few ulps.

    Illinois false position (a bracketing secant: superlinear, never leaves the bracket), with a
    bisection step whenever an update fails to halve the bracket twice running.
    """
    f_lo, f_hi = falls(lo) - level, falls(hi) - level
    return _refine(falls, level, lo, hi, f_lo, f_hi)


def _solve_near(falls: Any, level: float, lo: float, hi: float, near: tuple[float, float]) -> float:
    """:func:`_solve` starting from the narrower bracket ``near`` when it brackets the crossing
    (a normal approximation: a few evaluations instead of dozens on long tails)."""
    a, b = max(lo, near[0]), min(hi, near[1])
    if lo < a < b < hi:
        f_a, f_b = falls(a) - level, falls(b) - level
        if f_a > 0 >= f_b:
            return _refine(falls, level, a, b, f_a, f_b)
    return _solve(falls, level, lo, hi)


def _refine(falls: Any, level: float, lo: float, hi: float, f_lo: float, f_hi: float) -> float:
    """Illinois iterations on a bracket ``[lo, hi]`` with ``f_lo > 0 ≥ f_hi`` (see :func:`_solve`)."""
    side, slow = 0, 0
    for _ in range(400):
        width = hi - lo
        if width <= 4 * math.ulp(hi):
            break
        mid = hi - f_hi * width / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (lo + hi)
        if slow >= 2 or not lo < mid < hi:
            mid, slow = 0.5 * (lo + hi), 0
        f_mid = falls(mid) - level
        if f_mid == 0.0:
            return mid
        if f_mid > 0:
            lo, f_lo = mid, f_mid
            f_hi = f_hi / 2 if side == -1 else f_hi
            side = -1
        else:
            hi, f_hi = mid, f_mid
            f_lo = f_lo / 2 if side == 1 else f_lo
            side = 1
        slow = slow + 1 if hi - lo > width / 2 else 0
    return 0.5 * (lo + hi)


def clopper_pearson_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided exact upper bound on a rate: the ``p`` with ``P[Bin(n, p) ≤ k] = 1 − confidence``.

    The ``confidence`` quantile of ``Beta(k + 1, n − k)``; 1 when ``k = n``. With no error in
    ``n`` trials it is ``1 − (1 − confidence)^(1/n)``, about ``3/n`` at 95% ("rule of three"):

    >>> abs(clopper_pearson_upper(0, 3000) - (1 - 0.05 ** (1 / 3000))) < 1e-15
    True
    """
    k, n = _counts(k, n)
    alpha = 1.0 - _confidence(confidence)
    if k == n:
        return 1.0
    z = NormalDist().inv_cdf(1.0 - alpha)
    near = (wilson_interval(k, n, z)[1], wilson_interval(k, n, z + 0.5)[1])
    return _solve_near(lambda p: binomial_cdf(k, n, p), alpha, k / n, 1.0, near)


def clopper_pearson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided exact (Clopper–Pearson) interval ``(lo, hi)`` at ``confidence``.

    ``hi`` is :func:`clopper_pearson_upper` at ``1 − α/2`` and ``lo`` solves
    ``P[Bin(n, p) ≥ k] = α/2`` (0 when ``k = 0``): each tail holds at most ``α/2``.

    >>> [round(x, 4) for x in clopper_pearson_interval(5, 100)]
    [0.0164, 0.1128]
    """
    k, n = _counts(k, n)
    half = (1.0 - _confidence(confidence)) / 2.0
    hi = clopper_pearson_upper(k, n, 1.0 - half)
    # P[Bin(n, p) ≥ k] rises with p: solve on its negation, which falls.
    z = NormalDist().inv_cdf(1.0 - half)
    near = (wilson_interval(k, n, z + 0.5)[0], wilson_interval(k, n, z)[0])
    lo = 0.0 if k == 0 else _solve_near(lambda p: -_binomial_sf(k, n, p), -half, 0.0, k / n, near)
    return lo, hi


def rate_interval(k: int, n: int, method: str = "wilson") -> tuple[float, float]:
    """The 95% interval of ``k/n`` by ``method`` (``INTERVAL_METHODS``): Wilson or Clopper–Pearson.

    >>> [round(x, 4) for x in rate_interval(3, 100)], [round(x, 4) for x in rate_interval(3, 100, "clopper-pearson")]
    ([0.0103, 0.0845], [0.0062, 0.0852])
    """
    if method == "wilson":
        return wilson_interval(k, n)
    if method == "clopper-pearson":
        return clopper_pearson_interval(k, n)
    raise ParameterError(f"interval method must be one of {', '.join(INTERVAL_METHODS)}, got {method!r}")


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
    #: The integer counts the rates come from (rates are ``count / trials``; compare counts, see :func:`rate_at_most`).
    false_non_matches: int
    false_matches: int

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
            false_non_matches=int(false_non_matches),
            false_matches=int(false_matches),
        )

    def with_interval(self, method: str) -> RatePoint:
        """The same counts with both 95% intervals by ``method`` (:func:`rate_interval`).

        >>> RatePoint.from_counts(2, 0, 50, 0, 1000).with_interval("clopper-pearson").fmr_ci[1] > 0.0036
        True
        """
        return replace(
            self,
            fnmr_ci=rate_interval(self.false_non_matches, self.genuine_trials, method),
            fmr_ci=rate_interval(self.false_matches, self.impostor_trials, method),
        )

    def meets(self, target_fmr: float, target_fnmr: float, *, strict_fnmr: bool = True) -> bool:
        """``FMR ≤ target_fmr`` and ``FNMR < target_fnmr`` (``≤`` unless ``strict_fnmr``), on the integer counts."""
        fnmr_ok = (
            rate_below(self.false_non_matches, self.genuine_trials, target_fnmr)
            if strict_fnmr
            else rate_at_most(self.false_non_matches, self.genuine_trials, target_fnmr)
        )
        return rate_at_most(self.false_matches, self.impostor_trials, target_fmr) and fnmr_ok

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
    # A copy: callers sort it in place, and the caller's array (trial order) must not move.
    arr = np.array(values, dtype=float).ravel()
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
    thresholds, rejected, accepted, g, i = _sorted_counts(genuine_scores, impostor_scores, higher_is_genuine)
    # From the integer count of rejections: 1 − accepted/n would give 0.43500000000000005.
    return accepted / i, rejected / g, thresholds


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
    rejected = round(fnmr[i] * genuine_trials)
    return float(fnmr[i]), float(thresholds[i]), wilson_interval(rejected, genuine_trials)


def _target_fmr(target: float) -> float:
    target = float(target)
    if not (0.0 <= target <= 1.0):
        raise ParameterError(f"target FMR must be in [0, 1], got {target!r}")
    return target


# -- exact comparisons of rates ------------------------------------------------------------------------
def _exact(target: float) -> Fraction:
    """A target rate as the decimal it was written as (``1e-4`` is exactly 1/10000, not its binary float)."""
    if isinstance(target, Fraction):
        return target
    return Fraction(repr(float(target)))


def rate_at_most(count: int, trials: int, target: float) -> bool:
    """``count / trials ≤ target`` by integer cross-multiplication (no float rounding).

    >>> rate_at_most(5, 100, 0.05), 1 - 95 / 100 <= 0.05
    (True, False)
    """
    t = _exact(target)
    return int(count) * t.denominator <= t.numerator * int(_positive("trials", trials))


def rate_below(count: int, trials: int, target: float) -> bool:
    """``count / trials < target`` by integer cross-multiplication."""
    t = _exact(target)
    return int(count) * t.denominator < t.numerator * int(_positive("trials", trials))


def _sorted_counts(
    genuine_scores: Any, impostor_scores: Any, higher_is_genuine: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Thresholds (−inf, then distinct scores) and the integer counts (rejected genuine, accepted impostor)."""
    gen = _scores("genuine_scores", genuine_scores)
    imp = _scores("impostor_scores", impostor_scores)
    if higher_is_genuine:
        # Negate so that "accept iff score <= τ" covers both orientations with one code path.
        gen, imp = -gen, -imp
    gv, gc = np.unique(gen, return_counts=True)
    iv, ic = np.unique(imp, return_counts=True)
    thresholds, rejected, accepted, g, i = det_from_counts(gv, gc, iv, ic)
    if higher_is_genuine:
        thresholds = -thresholds
    return thresholds, rejected, accepted, g, i


def det_from_counts(
    genuine_values: Any, genuine_counts: Any, impostor_values: Any, impostor_counts: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """``(thresholds, rejected genuine, accepted impostor, G, I)`` of score histograms (lower = genuine).

    ``*_values`` are sorted distinct scores (or a histogram's right bin edges) and ``*_counts``
    how many trials have each; a trial is accepted at ``τ`` iff its score ``≤ τ``. The thresholds
    are ``−inf`` (accept nothing) then every value of either histogram, as :func:`det_from_scores`
    has them: the same integers from histograms merged over blocks as from the scores themselves.

    >>> thr, rej, acc, g, i = det_from_counts([0.1, 0.2], [1, 1], [0.2, 0.5], [2, 1])
    >>> thr.tolist(), rej.tolist(), acc.tolist(), g, i
    ([-inf, 0.1, 0.2, 0.5], [2, 1, 0, 0], [0, 0, 2, 3], 2, 3)
    """
    gv, iv = np.asarray(genuine_values, dtype=float), np.asarray(impostor_values, dtype=float)
    gc, ic = np.asarray(genuine_counts, dtype=np.int64), np.asarray(impostor_counts, dtype=np.int64)
    g, i = _positive("genuine trials", int(gc.sum())), _positive("impostor trials", int(ic.sum()))
    distinct = np.union1d(gv[gc > 0], iv[ic > 0])
    gen_below = np.concatenate([[0], np.cumsum(gc)])[np.searchsorted(gv, distinct, side="right")]
    imp_below = np.concatenate([[0], np.cumsum(ic)])[np.searchsorted(iv, distinct, side="right")]
    rejected = np.concatenate([[g], g - gen_below])
    accepted = np.concatenate([[0], imp_below])
    return np.concatenate([[-np.inf], distinct]), rejected.astype(np.int64), accepted.astype(np.int64), g, i


def fmr_at_fnmr(
    genuine_scores: Any, impostor_scores: Any, target: float, *, higher_is_genuine: bool = False
) -> tuple[float, float, tuple[float, float]]:
    """``(fmr, threshold, fmr_ci)`` at the strictest threshold with ``FNMR ≤ target`` (integer counts).

    The mirror of :func:`fnmr_at_fmr`: e.g. the FMR a system reaches when at most 5% of genuine
    users may be rejected. The interval is the 95% Wilson interval of the FMR.

    >>> fmr_at_fnmr([1, 2, 3, 4], [2.5, 5, 6, 7], 0.25)[:2]
    (0.25, 3.0)
    """
    return fmr_at_fnmr_on_counts(*_sorted_counts(genuine_scores, impostor_scores, higher_is_genuine), target)


def fmr_at_fnmr_on_counts(
    thresholds: np.ndarray, rejected: np.ndarray, accepted: np.ndarray, g: int, i: int, target: float
) -> tuple[float, float, tuple[float, float]]:
    """:func:`fmr_at_fnmr` on the counts of :func:`det_from_counts` (score histograms)."""
    target = _target_rate("FNMR", target)
    # Rejections fall along the arrays: the first index meeting the target is the strictest.
    t = _exact(target)
    ok = np.flatnonzero(rejected * t.denominator <= t.numerator * g)
    k = int(ok[0])
    return int(accepted[k]) / i, float(thresholds[k]), wilson_interval(int(accepted[k]), i)


def _target_rate(name: str, target: float) -> float:
    target = float(target)
    if not (0.0 <= target <= 1.0):
        raise ParameterError(f"target {name} must be in [0, 1], got {target!r}")
    return target


@dataclass(frozen=True, slots=True)
class EERInterval:
    """The EER as FVC reports it: ``[low, high]`` around the crossing, with the interpolated value.

    Maio, Maltoni, Cappelli, Wayman, Jain, "FVC2000: Fingerprint Verification Competition"
    (IEEE PAMI 24(3), 2002): with ``t1`` the strictest threshold where ``FNMR ≤ FMR`` and ``t2`` the
    most lenient where ``FNMR ≥ FMR``, ``[low, high] = [FNMR(t1), FMR(t1)]`` if
    ``FNMR(t1) + FMR(t1) ≤ FMR(t2) + FNMR(t2)``, else ``[FMR(t2), FNMR(t2)]``; FVC's EER is the
    midpoint. ``interpolated`` is :func:`eer` (linear between the bracketing points).
    """

    low: float
    high: float
    interpolated: float

    @property
    def midpoint(self) -> float:
        return (self.low + self.high) / 2.0

    def to_dict(self) -> dict[str, float]:
        return {"low": self.low, "high": self.high, "midpoint": self.midpoint, "interpolated": self.interpolated}


def eer_interval(fmr: Any, fnmr: Any) -> EERInterval:
    """:class:`EERInterval` of a DET curve ordered as :func:`det_from_scores` returns it.

    >>> fmr, fnmr, _ = det_from_scores([0.1, 0.2, 0.6], [0.5, 0.7, 0.9])
    >>> e = eer_interval(fmr, fnmr); (round(e.low, 3), round(e.high, 3))
    (0.333, 0.333)
    """
    a = np.asarray(fmr, dtype=float).ravel()
    b = np.asarray(fnmr, dtype=float).ravel()
    value = eer(a, b)
    i1 = int(np.flatnonzero(b <= a)[0]) if np.any(b <= a) else a.size - 1
    i2 = int(np.flatnonzero(b >= a)[-1]) if np.any(b >= a) else 0
    if b[i1] + a[i1] <= a[i2] + b[i2]:
        low, high = b[i1], a[i1]
    else:
        low, high = a[i2], b[i2]
    return EERInterval(float(min(low, high)), float(max(low, high)), value)


def identity_bootstrap(
    errors: Any, trials: Any, *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of a rate over *people*, not comparisons (ISO/IEC 19795-1).

    ``errors[j]`` and ``trials[j]`` are identity j's error and trial counts. Comparisons of one
    person are correlated, so Wilson intervals (independent trials) are too narrow; here whole
    identities are drawn with replacement (seeded) and the pooled rate ``Σ w_j e_j / Σ w_j n_j``
    recomputed for each of ``resamples`` draws. Identities without trials are ignored.

    >>> identity_bootstrap([0, 0, 5, 0], [10, 10, 10, 10], seed=1)[0] >= 0.0
    True
    """
    return identity_bootstraps([errors], trials, resamples=resamples, seed=seed, level=level)[0]


def identity_bootstraps(
    errors: Sequence[Any] | np.ndarray, trials: Any, *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> list[tuple[float, float]]:
    """:func:`identity_bootstrap` of several error counts over the same trials (e.g. one per setting).

    The resampled identities are drawn once and shared: with the same ``seed`` each interval is
    exactly the one :func:`identity_bootstrap` gives alone (the same draws, the same arithmetic),
    at the cost of one draw instead of one per row.

    >>> identity_bootstraps([[0, 0, 5, 0], [1, 0, 5, 0]], [10, 10, 10, 10], seed=1)[0] == identity_bootstrap(
    ...     [0, 0, 5, 0], [10, 10, 10, 10], seed=1)
    True
    """
    n = np.asarray(trials, dtype=np.int64).ravel()
    rows = [np.asarray(e, dtype=np.int64).ravel() for e in errors]
    if any(e.shape != n.shape for e in rows):
        raise ParameterError("errors and trials must have one count per identity")
    keep = n > 0
    n = n[keep]
    if n.size == 0:
        raise ParameterError("no identity has trials")
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n.size, np.full(n.size, 1.0 / n.size), size=int(resamples))
    pooled = np.maximum(weights @ n, 1)
    alpha = (1.0 - level) / 2.0
    out = []
    for e in rows:
        lo, hi = np.quantile((weights @ e[keep]) / pooled, [alpha, 1.0 - alpha])
        out.append((float(lo), float(hi)))
    return out


# -- score files other tools read ------------------------------------------------------------------------
def write_score_files(
    directory: Any,
    name: str,
    genuine: Any,
    impostor: Any,
    *,
    genuine_labels: Any,
    impostor_labels: Any,
    higher_is_genuine: bool = False,
) -> list[str]:
    """Scores as bob.measure, bob.bio.base and pyeer read them; returns the file names written.

    * ``<name>.2col`` — **bob.measure**'s generic two-column format, ``label score`` per trial with
      label ``1`` for a genuine trial and ``-1`` for an impostor one (``bob.measure.load.split``
      takes ``1`` as positive and anything else as negative): what ``bob measure metrics``,
      ``roc``, ``det``, ``epc``, ``hist`` and ``evaluate`` read;
    * ``<name>.4col`` — **bob.bio.base**'s four-column format: ``claimed_id real_id test_label
      score`` per trial (genuine iff ``claimed_id == real_id``), read by
      ``bob.bio.base.score.load.split`` and the ``bob bio metrics|roc|det|epc`` commands;
    * ``<name>.5col`` — bob.bio.base's five-column format: ``claimed_id model_label real_id
      test_label score`` (same readers, format detected from the column count);
    * ``<name>_genuine.txt``, ``<name>_impostor.txt`` — **pyeer**: one score per line, one file per
      class (``geteerinf -g <genuine> -i <impostor>``, ``pyeer.eer_info.get_eer_stats``).

    All these tools take *higher* scores as more genuine, so distances are negated
    (``higher_is_genuine=False``, the default here). Labels are ``(claimed_id, real_id,
    test_label)`` triples per trial, whitespace-free strings (spaces become ``_``).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    sign = 1.0 if higher_is_genuine else -1.0
    gen = sign * _scores("genuine", genuine)
    imp = sign * _scores("impostor", impostor)

    def clean(x: Any) -> str:
        return "_".join(str(x).split()) or "_"

    rows2, rows4, rows5 = [], [], []
    for label, scores, given in ((1, gen, genuine_labels), (-1, imp, impostor_labels)):
        labels = list(given)
        if len(labels) != scores.size:
            raise ParameterError(f"{len(labels)} labels for {scores.size} scores")
        for score, (claimed, real, test) in zip(scores.tolist(), labels, strict=False):
            c, r, t = clean(claimed), clean(real), clean(test)
            rows2.append(f"{label} {score!r}\n")
            rows4.append(f"{c} {r} {t} {score!r}\n")
            rows5.append(f"{c} {c} {r} {t} {score!r}\n")
    names = [f"{name}.2col", f"{name}.4col", f"{name}.5col", f"{name}_genuine.txt", f"{name}_impostor.txt"]
    (out / names[0]).write_text("".join(rows2))
    (out / names[1]).write_text("".join(rows4))
    (out / names[2]).write_text("".join(rows5))
    (out / names[3]).write_text("".join(f"{x!r}\n" for x in gen.tolist()))
    (out / names[4]).write_text("".join(f"{x!r}\n" for x in imp.tolist()))
    return names
