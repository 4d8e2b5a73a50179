"""Template and tolerances of an interval sketch from several captures (:func:`enrol_interval`).

The rule lives with the sketches because the asymmetric interval sketch's own
:meth:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch.template` is built on it;
:mod:`sketchauth.templates` re-exports it beside the other families' template rules.
"""

from __future__ import annotations

import math
from typing import Any, Literal, cast

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.params import check_int
from sketchauth.sketches.samples import Quantiser

__all__ = ["CEIL_SLACK", "DEFAULT_SCALE", "MAX_SAMPLES", "SPREADS", "enrol_interval", "non_negative"]

#: The spread measures :func:`enrol_interval` knows.
SPREADS = ("range", "std")
#: Default ``scale`` per spread: the range already bounds every enrolment sample; 3σ covers
#: about 99.7% of a normally distributed feature.
DEFAULT_SCALE = {"range": 1.0, "std": 3.0}
#: At most this many captures per enrolment (guards memory; real systems use 2 to 10).
MAX_SAMPLES = 1024
#: Absorbs float rounding in ``scale·s`` before the ceiling (so 2.0000000000000004 counts as 2).
CEIL_SLACK = 1e-9


def _sample_matrix(samples: Any, quantiser: Quantiser) -> np.ndarray:
    """The ``k × features`` samples as a quantised int64 matrix (``SampleError`` if malformed)."""
    try:
        arr = np.asarray(samples)
    except (TypeError, ValueError):
        raise SampleError("samples must be a k x features array of numbers") from None
    if arr.ndim != 2:
        raise SampleError(f"samples must be a k x features array, got shape {arr.shape}")
    k, features = arr.shape
    if k < 2:
        raise SampleError(f"enrolment needs at least 2 samples, got {k}")
    if k > MAX_SAMPLES:
        raise SampleError(f"at most {MAX_SAMPLES} samples per enrolment, got {k}")
    if features < 1:
        raise SampleError("samples have no features")
    return np.stack([quantiser.levels(row, features, name=f"sample {i}").view(np.ndarray) for i, row in enumerate(arr)])


def _spread(x: np.ndarray, spread: str) -> np.ndarray:
    if spread == "range":
        return cast("np.ndarray", (x.max(axis=0) - x.min(axis=0)).astype(np.float64))
    # Sample standard deviation (ddof = 1): unbiased variance from k ≥ 2 captures.
    return cast("np.ndarray", x.astype(np.float64).std(axis=0, ddof=1))


def enrol_interval(
    samples: Any,
    n: int,
    q: int,
    *,
    step: float | None = None,
    spread: Literal["range", "std"] = "range",
    scale: float | None = None,
    margin: int = 1,
    offset: float | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Template ``b`` and tolerances ``v`` from ``k ≥ 2`` captures of a feature vector.

    ``samples`` is a ``k × features`` array of integers, or of reals quantised with the public
    ``step`` and ``offset`` exactly as the sketches quantise samples
    (:class:`~sketchauth.sketches.samples.Quantiser`: ``⌊(x − offset)/step + 1/2⌋``; a negative
    ``offset`` takes signed features). With ``x_ij`` the level of feature ``j`` in capture ``i``:

    * ``b_j = ⌊(2·Σ_i x_ij + k) / (2k)⌋`` — the mean rounded half up, in exact integer arithmetic;
    * ``s_j`` = ``max_i x_ij − min_i x_ij`` (``spread="range"``) or the sample standard deviation
      with ``ddof = 1`` (``spread="std"``);
    * ``v_j = min(q, max(1, ⌈scale·s_j⌉ + margin))``; ``scale`` defaults to 1 for the range and 3
      for the standard deviation, ``margin`` to 1.

    With the defaults every enrolment capture is within the tolerance of the template whenever
    ``v_j`` is not clipped at ``q``: ``b_j`` lies between the smallest and the largest capture, so
    ``|x_ij − b_j| ≤ s_j < s_j + 1 = v_j``.

    Every capture's level must lie in ``[0, n)`` (``SampleError`` otherwise, naming the capture,
    the feature and, for real values, the range ``[offset − step/2, offset + (n − ½)·step)``).
    Returns two int64 vectors, a valid secret for ``AsymmetricIntervalSketch(n, q,
    features=features, step=step, offset=offset)``.
    """
    n = check_int("n", n, 2)
    q = check_int("q", q, 1, n)
    if spread not in SPREADS:
        raise ParameterError(f"spread must be one of {SPREADS}, got {spread!r}")
    scale = DEFAULT_SCALE[spread] if scale is None else non_negative("scale", scale)
    margin = check_int("margin", margin, 0, q)
    x = _sample_matrix(samples, Quantiser(n, step, offset))
    bad = np.flatnonzero(np.any((x < 0) | (x >= n), axis=0))
    if bad.size:
        raise SampleError(f"a capture of feature {int(bad[0])} is outside the levels [0, {n})")
    k = x.shape[0]
    b = (2 * x.sum(axis=0) + k) // (2 * k)
    widened = np.ceil(scale * _spread(x, spread) - CEIL_SLACK).astype(np.int64) + margin
    v = np.clip(widened, 1, q)
    return b.astype(np.int64), v.astype(np.int64)


def non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)
