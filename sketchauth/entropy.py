"""Min-entropy, leakage and the sketch bound, computed exactly (Boreale–Paolini; Dodis–Ostrovsky–Reyzin–Smith §3.1).

Everything is in bits. Inputs are numpy arrays (anything ``np.asarray`` accepts); outputs are
Python floats. Nothing here samples: small mechanisms are evaluated by building the joint
distribution or channel matrix explicitly.

Vocabulary (Dodis–Reyzin–Smith; the channel view follows the quantitative-information-flow
literature):

* ``H∞(A) = −log max_a Pr[A=a]``;
* ``H̃∞(A|B) = −log Σ_b max_a Pr[A=a, B=b]`` (the attacker's best one-shot guess after seeing B);
* leakage ``L = H∞(A) − H̃∞(A|B)``, at most the number of bits of B;
* a secure sketch with recoverable randomness R loses at most ``|S| − H∞(R)``.

Example::

    >>> import numpy as np
    >>> joint = np.array([[0.25, 0.25], [0.5, 0.0]])   # rows: secrets, columns: observations
    >>> round(entropy_loss(joint), 6)
    0.584963
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sketchauth.errors import ParameterError

if TYPE_CHECKING:
    from sketchauth.sketches.base import SecureSketch

__all__ = [
    "a_security_rate",
    "average_case_level",
    "avg_min_entropy",
    "channel_leakage",
    "chernoff_information",
    "entropy_loss",
    "exact_joint",
    "exact_sketch_loss",
    "min_entropy",
    "repeated_observation_rate",
    "sketch_loss_bound",
    "worst_case_level",
]

#: Probabilities must sum to one within this tolerance.
SUM_TOLERANCE = 1e-9
#: Largest number of (secret, randomness) encodings :func:`exact_sketch_loss` will enumerate.
MAX_ENUMERATION = 5_000_000


def _finite_nonnegative(name: str, x: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != ndim:
        raise ParameterError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ParameterError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinite entries")
    if np.any(arr < 0):
        raise ParameterError(f"{name} contains negative entries")
    return arr


def _distribution(name: str, x: Any, ndim: int) -> np.ndarray:
    arr = _finite_nonnegative(name, x, ndim)
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ParameterError(f"{name} must sum to 1, sums to {total!r}")
    return arr


def _channel(W: Any) -> np.ndarray:
    arr = _finite_nonnegative("channel W", W, 2)
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
    if bad.size:
        raise ParameterError(f"channel W must be row-stochastic; row {int(bad[0])} sums to {float(sums[bad[0]])!r}")
    return arr


def min_entropy(p: Any) -> float:
    """``H∞(A) = −log2 max_a p(a)`` of a probability vector."""
    arr = _distribution("p", p, 1)
    return float(-math.log2(arr.max()))


def avg_min_entropy(joint: Any) -> float:
    """``H̃∞(A|B) = −log2 Σ_b max_a Pr[A=a, B=b]``; rows are values of A, columns of B."""
    arr = _distribution("joint", joint, 2)
    return float(-math.log2(arr.max(axis=0).sum()))


def entropy_loss(joint: Any) -> float:
    """``H∞(A) − H̃∞(A|B)`` for a joint distribution (rows: secrets, columns: observations)."""
    arr = _distribution("joint", joint, 2)
    # log(P_succ / max_a p(a)) is the same quantity, computed without cancellation.
    return float(max(0.0, math.log2(arr.max(axis=0).sum() / arr.sum(axis=1).max())))


def channel_leakage(W: Any, prior: Any) -> float:
    """Min-entropy leakage ``log2(P_succ / max_x p(x))`` of channel ``W`` under ``prior``.

    ``P_succ = Σ_y max_x W[x, y]·p(x)`` is the attacker's one-guess success after one observation.
    """
    W = _channel(W)
    p = _distribution("prior", prior, 1)
    if p.shape[0] != W.shape[0]:
        raise ParameterError(f"prior has {p.shape[0]} entries but W has {W.shape[0]} rows")
    succ = (W * p[:, None]).max(axis=0).sum()
    return float(max(0.0, math.log2(succ / p.max())))


def worst_case_level(W: Any) -> float:
    """``ε = log2 max_y (max_x W[x,y] / min_x W[x,y])``; ``inf`` if a column mixes 0 and non-0.

    Columns that are zero in every row are never observed and are ignored.
    """
    W = _channel(W)
    col_max = W.max(axis=0)
    col_min = W.min(axis=0)
    seen = col_max > 0
    if np.any(col_min[seen] == 0):
        return math.inf
    return float(np.log2(col_max[seen] / col_min[seen]).max())


def average_case_level(W: Any) -> float:
    """A-security level ``log2(l/2 + 1)`` with ``l = max_{x,x'} ‖W_x − W_x'‖₁``."""
    W = _channel(W)
    # Pairwise L1 distances by broadcasting; channels evaluated exactly are small.
    l1 = np.abs(W[:, None, :] - W[None, :, :]).sum(axis=2).max()
    return float(math.log2(l1 / 2.0 + 1.0))


def _log_affinity(p: np.ndarray, q: np.ndarray, lam: float) -> float:
    both = (p > 0) & (q > 0)
    return math.log2(float(np.sum(p[both] ** lam * q[both] ** (1.0 - lam))))


def chernoff_information(p: Any, q: Any) -> float:
    """``C(p,q) = −inf_{0<λ<1} log2 Σ_y p(y)^λ q(y)^(1−λ)`` in bits (``inf`` for disjoint supports).

    The objective is convex in λ, so a ternary search converges to the minimum; the endpoint
    limits (which differ from 0 when the supports differ) are included.
    """
    p = _distribution("p", p, 1)
    q = _distribution("q", q, 1)
    if p.shape != q.shape:
        raise ParameterError(f"p and q differ in length: {p.shape[0]} vs {q.shape[0]}")
    both = (p > 0) & (q > 0)
    if not np.any(both):
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(200):
        a = lo + (hi - lo) / 3.0
        b = hi - (hi - lo) / 3.0
        if _log_affinity(p, q, a) <= _log_affinity(p, q, b):
            hi = b
        else:
            lo = a
    candidates = (
        _log_affinity(p, q, (lo + hi) / 2.0),
        math.log2(float(q[both].sum())),  # limit λ → 0
        math.log2(float(p[both].sum())),  # limit λ → 1
    )
    return float(max(0.0, -min(candidates)))


def _pairwise_chernoff(W: Any) -> list[float]:
    """``C(W_x, W_x')`` for every pair of rows ``x < x'`` of a channel (at least two rows)."""
    W = _channel(W)
    if W.shape[0] < 2:
        raise ParameterError("W needs at least two rows (secrets)")
    return [chernoff_information(W[i], W[j]) for i in range(W.shape[0]) for j in range(i + 1, W.shape[0])]


def repeated_observation_rate(W: Any) -> float:
    """Error exponent ``min_{x≠x'} C(W_x, W_x')`` of guessing a secret from repeated observations.

    After ``n`` independent observations of the same secret (re-enrolments) the best guess errs
    with probability about ``2^(−n·C)`` (Boreale–Paolini, eq. (7)–(8), and ``ρ_R`` of their eq. (11):
    the *closest* pair of secrets is the last to be told apart). See :func:`a_security_rate` for the
    max form.
    """
    return min(_pairwise_chernoff(W))


def a_security_rate(W: Any) -> float:
    """Rate ``max_{x≠x'} C(W_x, W_x')`` at which repeated observations exhaust A-security.

    Boreale–Paolini, Theorem 8 (rate of A-security). After ``n`` independent observations of
    one secret the average-case level is ``log2(l_n/2 + 1)`` with
    ``l_n = max_{x,x'} ‖W_x^{⊗n} − W_x'^{⊗n}‖₁``; ``l_n`` tends to 2 (the level to its ceiling of
    1 bit: *some* pair of secrets is told apart for sure) and ``2 − l_n = 2·Σ_y min(W_x^{⊗n},
    W_x'^{⊗n})`` decays as ``2^(−n·C(W_x, W_x'))`` for each pair, so the level is governed by the
    pair that separates *fastest*: the **max** over pairs of the Chernoff information. Their
    eq. (7)–(8) (:func:`repeated_observation_rate`) is the **min**: guessing *the* secret errs until
    the closest pair is told apart (their Theorem 7 takes the min over ``x ∈ Q``, ``x' ∉ Q`` only).
    The two coincide for two secrets; in general
    ``repeated_observation_rate(W) ≤ a_security_rate(W)``.

    >>> W = [[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]]
    >>> round(a_security_rate(W), 6), round(repeated_observation_rate(W), 6)
    (0.736966, 0.162126)
    """
    return max(_pairwise_chernoff(W))


def sketch_loss_bound(sketch_bits: float, randomness_bits: float) -> float:
    """The secure-sketch bound ``|S| − H∞(R)`` (never below 0).

    ``sketch_bits`` is the log of the number of values the sketch can take (its compact
    description), ``randomness_bits`` the min-entropy of the encoder's recoverable randomness.
    """
    for name, value in (("sketch_bits", sketch_bits), ("randomness_bits", randomness_bits)):
        if not math.isfinite(value) or value < 0:
            raise ParameterError(f"{name} must be a finite non-negative number, got {value!r}")
    return max(0.0, float(sketch_bits) - float(randomness_bits))


def exact_joint(
    sketch: SecureSketch[Any, Any], secrets: Sequence[Any], prior: Any | None = None
) -> tuple[np.ndarray, list[bytes]]:
    """Exact joint distribution of (secret, helper data) for a small sketch.

    Enumerates every secret and every value of the encoder's randomness
    (``sketch.randomness_space(secret)``, which yields ``(randomness, probability)`` pairs) and
    returns the joint matrix (rows: ``secrets`` in order, columns: distinct helpers) with the list
    of helpers labelling the columns. ``prior`` defaults to uniform.
    """
    if len(secrets) == 0:
        raise ParameterError("secrets is empty")
    p = np.full(len(secrets), 1.0 / len(secrets)) if prior is None else _distribution("prior", prior, 1)
    if p.shape[0] != len(secrets):
        raise ParameterError(f"prior has {p.shape[0]} entries for {len(secrets)} secrets")
    columns: dict[bytes, int] = {}
    cells: dict[tuple[int, int], float] = {}
    count = 0
    for row, secret in enumerate(secrets):
        for randomness, prob in sketch.randomness_space(secret):
            count += 1
            if count > MAX_ENUMERATION:
                raise ParameterError(f"more than {MAX_ENUMERATION} encodings to enumerate: use smaller parameters")
            helper = sketch.encode_with(secret, randomness)
            col = columns.setdefault(helper, len(columns))
            cells[row, col] = cells.get((row, col), 0.0) + p[row] * prob
    joint = np.zeros((len(secrets), len(columns)))
    for (row, col), value in cells.items():
        joint[row, col] = value
    return joint, list(columns)


def exact_sketch_loss(sketch: SecureSketch[Any, Any], secrets: Sequence[Hashable], prior: Any | None = None) -> float:
    """Exact ``H∞(d) − H̃∞(d|S)`` of ``sketch`` over the listed ``secrets`` (uniform by default).

    Only feasible for tiny parameters; the result never exceeds ``sketch.report().loss_bound_bits``
    (that is what the tests check on exhaustive small cases).
    """
    joint, _ = exact_joint(sketch, secrets, prior)
    return entropy_loss(joint)
