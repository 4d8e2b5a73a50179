"""Repeated enrolments of one biometric: the attacker who combines k sketches (Boreale–Paolini).

For several sketches of one secret this module gives the Chernoff rate (Boreale–Paolini) on small
instances (:func:`sketchauth.evaluate.leakage.exact_leakage`) and, for real schemes, a
*simulation* of the attacker who combines ``k`` sketches. This module is that simulation.

**The simulation.** One simulated person per trial: a true template drawn from a seeded numpy
generator, then ``K`` enrolments, each from a fresh noisy capture (same generator), each sketched
with the scheme's *real* :meth:`~sketchauth.sketches.base.SecureSketch.encode` (so randomised
sketches use their own ``os.urandom`` randomness; only the biometric and its noise are seeded).
For every ``k = 1..K`` the attacker holds the first ``k`` helpers and we report:

* ``mean_log2_candidates`` — mean over features of ``log2 |C_j|``, ``C_j`` the values of feature
  ``j`` consistent with all ``k`` helpers (features with an empty set are excluded and counted in
  ``empty_fraction``: noise can make the helpers contradict each other);
* ``pinned_fraction`` — share of features with ``|C_j| = 1``;
* ``recovered_fraction`` — share of features with ``C_j = {true value}`` (Wilson 95% interval over
  trials × features);
* ``guess_success`` — the attacker's chance of guessing the whole template by picking one
  candidate per feature uniformly, ``P = Π_j [b_j ∈ C_j] / |C_j|`` averaged over trials, with the
  Wilson interval of one seeded simulated guess per trial (``guess_bits = −log2 P``).

**The attacks**, by family:

* *interval* (Fang's thesis, ch. 6) with per-enrolment tolerances ``v_i`` (a deployment that re-tunes ``v``):
  helper ``i`` says ``b ≡ r_i (mod M_i = 2v_i − 1)``. The candidates are the ``c ∈ [0, n)`` whose
  circular residue distance to every ``r_i`` is at most ``slack`` (0: the exact Chinese remainder
  theorem; a positive slack tolerates capture noise). With exact residues, ``|C|`` is the number
  of ``c < n`` in one class modulo ``lcm(M_1..M_k)``: ``⌈n/L⌉`` or ``⌊n/L⌋``. With *identical*
  tolerances the helpers of noise-free captures are identical and nothing is gained.
* *asymmetric s1* (Fang's thesis §6.2): the same CRT with the tolerances the helpers publish in clear
  (each enrolment derives its own ``v_i``: the true tolerance plus rounded Gaussian jitter,
  clipped to ``[1, q]``). The target is the template ``b``.
* *asymmetric s2* and *s3*: intersect the partitions: the candidate ``(b, v)`` of a feature are
  the even-length intervals of the first partition (centre in ``[0, n)``) that have a *similar*
  interval (Fang, ch. 6.2: ``τ``; ``τ = 1`` means equal) in every other partition. The target is
  ``(b, v)``. s3's odd decoys are never candidates, and hiding the parity does not help against
  this attacker: the secret interval recurs in every enrolment whatever the decoys are.
* *code-offset* and *PinSketch* (Dodis–Ostrovsky–Reyzin–Smith §5 and §6.3): linear, so ``S_1 ⊕ S_i`` is a sketch of the
  capture difference and decodes against the zero sample (empty set) to ``w_1 ⊕ w_i``
  (``A_1 Δ A_i``) when it is within ``t`` (:func:`sketchauth.evaluate.unlinkability.difference_decoding`).
  That reveals *where the captures differ*, which is independent of the template: no template
  symbol is learnt (every coordinate of an MDS code takes every value on the coset, so
  ``recovered_fraction`` is exactly 0 — reported with its Wilson interval), and the template stays
  hidden in the coset of ``S_1``: ``guess_success = 256^(−k_code)`` exactly for a uniform
  code-offset template, and at most ``2^(t·m) / C(2^m − 1, s)`` (the sketch bound) for a
  uniform PinSketch set of size ``s``, whatever ``k``. What *is* learnt is reported as
  ``difference_learnt_fraction`` over the pairs ``(1, i)``. Knowing one capture would of course
  reveal the others; that is not this attacker. For these two families ``mean_log2_candidates``
  and ``guess_bits`` are counted on the *whole template* (the coset), not per feature.

Example::

    >>> r = repeated_enrolment_attack("interval", 2, 10, 0, n=70, features=4, tolerances=[3, 4], noise=0.0)
    >>> [round(s.mean_log2_candidates, 3) for s in r.per_k]
    [3.807, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.evaluate.unlinkability import AttackedScheme, LinearSketch, difference_decoding
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.params import check_int
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import descriptors, scheme_descriptor

__all__ = ["ATTACKS", "RepeatedEnrolmentResult", "RepeatedEnrolmentStats", "repeated_enrolment_attack"]

#: Largest trials × features × n candidate grid the lattice attacks build (memory bound).
MAX_GRID = 1 << 24
#: Largest number of enrolments per simulated person.
MAX_ENROLMENTS = 64
#: Largest number of simulated persons.
MAX_TRIALS = 100_000


@dataclass(frozen=True)
class RepeatedEnrolmentStats:
    """What the attacker holding the first ``k`` helpers achieves (definitions: module docstring)."""

    k: int
    mean_log2_candidates: float
    empty_fraction: float
    pinned_fraction: float
    recovered_fraction: float
    recovered_ci: tuple[float, float]
    guess_success: float
    guess_success_ci: tuple[float, float]
    guess_bits: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "mean_log2_candidates": self.mean_log2_candidates,
            "empty_fraction": self.empty_fraction,
            "pinned_fraction": self.pinned_fraction,
            "recovered_fraction": self.recovered_fraction,
            "recovered_ci": list(self.recovered_ci),
            "guess_success": self.guess_success,
            "guess_success_ci": list(self.guess_success_ci),
            "guess_bits": self.guess_bits,
            **dict(self.extra),
        }


@dataclass(frozen=True)
class RepeatedEnrolmentResult(AttackedScheme):
    """The simulation's set-up and one :class:`RepeatedEnrolmentStats` per ``k = 1..K``."""

    trials: int
    seed: int
    options: dict[str, Any]
    per_k: tuple[RepeatedEnrolmentStats, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._head(),
            "trials": self.trials,
            "seed": self.seed,
            "options": dict(self.options),
            "per_k": [s.to_dict() for s in self.per_k],
        }


#: What one family's simulation returns: the sketch parameters, the stats per k, the options used.
_Outcome = tuple[dict[str, Any], tuple[RepeatedEnrolmentStats, ...], dict[str, Any]]


# -- shared measures ---------------------------------------------------------------------------------
def _stats(
    k: int, count: np.ndarray, contains: np.ndarray, draws: np.ndarray, extra: dict[str, Any] | None = None
) -> RepeatedEnrolmentStats:
    """Measures from per (trial, feature) candidate counts and whether the truth is among them."""
    trials, features = count.shape
    nonempty = count > 0
    logs = np.log2(np.where(nonempty, count, 1).astype(float))
    mean_log2 = float(logs[nonempty].mean()) if nonempty.any() else math.nan
    recovered = (count == 1) & contains
    # log2 of P(trial) = Σ_j −log2|C_j| when the truth survives in every feature, else P = 0.
    log2_p = np.where(contains.all(axis=1), -logs.sum(axis=1), -np.inf)
    p = np.exp2(log2_p)
    guess = float(p.mean())
    # One simulated guess per trial, succeeding with probability P; the same uniform draw per
    # trial for every k (common random numbers), so equal evidence gives equal counts.
    hits = int((draws < p).sum())
    return RepeatedEnrolmentStats(
        k=k,
        mean_log2_candidates=mean_log2,
        empty_fraction=float((~nonempty).mean()),
        pinned_fraction=float((count == 1).mean()),
        recovered_fraction=float(recovered.mean()),
        recovered_ci=wilson_interval(int(recovered.sum()), trials * features),
        guess_success=guess,
        guess_success_ci=wilson_interval(hits, trials),
        guess_bits=0.0 - math.log2(guess) if guess > 0 else math.inf,  # 0.0 − …: no −0.0
        extra=dict(extra or {}),
    )


def _noisy(values: np.ndarray, sd: float, low: int, high: int, rng: np.random.Generator) -> np.ndarray:
    """Rounded Gaussian capture noise of standard deviation ``sd`` (in steps), clipped to ``[low, high]``."""
    if sd == 0:
        return values.copy()
    return np.clip(np.rint(values + sd * rng.standard_normal(values.shape)), low, high).astype(np.int64)


def _check_noise(name: str, value: Any, upper: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (upper is not None and value > upper):
        bounds = f"in [0, {upper}]" if upper is not None else "finite and >= 0"
        raise ParameterError(f"{name} must be {bounds}, got {value!r}")
    return cast("float", value)


# -- lattice families: interval and asymmetric s1 ---------------------------------------------------
def _lattice_masks(residues: np.ndarray, moduli: np.ndarray, n: int, slack: int) -> np.ndarray:
    """Cumulative candidate masks ``(K, trials, features, n)``: ``c`` consistent with helpers ``1..k``.

    ``c`` is consistent with helper ``i`` iff the circular distance of ``(c − r_i) mod M_i`` is at
    most ``slack``; the running AND over enrolments gives every ``k`` at once.
    """
    c = np.arange(n, dtype=np.int64)
    delta = (c - residues[..., None]) % moduli[..., None]
    ok = np.minimum(delta, moduli[..., None] - delta) <= slack
    return np.logical_and.accumulate(ok, axis=0)


def _lattice_stats(
    masks: np.ndarray, truth: np.ndarray, rng: np.random.Generator
) -> tuple[RepeatedEnrolmentStats, ...]:
    draws = rng.random(int(truth.shape[0]))
    out = []
    for i, mask in enumerate(masks):
        count = mask.sum(axis=-1)
        contains = np.take_along_axis(mask, truth[..., None], axis=-1)[..., 0]
        out.append(_stats(i + 1, count, contains, draws))
    return tuple(out)


def _grid_guard(trials: int, features: int, n: int, k: int) -> None:
    if trials * features * n * k > MAX_GRID:
        raise ParameterError(
            f"trials × features × n × k = {trials * features * n * k} exceeds {MAX_GRID}: use fewer trials"
        )


def _interval_attack(
    sketch: IntervalSketch | None, k: int, trials: int, rng: np.random.Generator, opts: dict[str, Any]
) -> _Outcome:
    if sketch is not None:
        n, features = sketch.n, sketch.features
        default: list[Any] = [sketch.v.tolist()] * k
    else:
        n = check_int("n", opts.pop("n", 64), 2)
        features = check_int("features", opts.pop("features", 16), 1)
        v = check_int("v", opts.pop("v", 3), 1, n)
        default = [min(v + i, n) for i in range(k)]
    tolerances = opts.pop("tolerances", default)
    if isinstance(tolerances, (str, bytes)) or not isinstance(tolerances, Sequence) or len(tolerances) < k:
        raise ParameterError(f"tolerances must be a sequence of at least k={k} tolerances")
    noise = _check_noise("noise", opts.pop("noise", 0.25))
    slack = check_int("slack", opts.pop("slack", 0), 0, n)
    _no_more(opts)
    _grid_guard(trials, features, n, k)
    sketches = [IntervalSketch(n, t, features=features) for t in tolerances[:k]]
    truth = rng.integers(0, n, size=(trials, features), dtype=np.int64)
    residues = np.empty((k, trials, features), dtype=np.int64)
    moduli = np.empty_like(residues)
    for i, sk in enumerate(sketches):
        captures = _noisy(truth, noise, 0, n - 1, rng)
        for t in range(trials):
            residues[i, t] = sk.symbols(sk.payload(sk.encode(captures[t])))[0].astype(np.int64)
        moduli[i] = sk.moduli
    stats = _lattice_stats(_lattice_masks(residues, moduli, n, slack), truth, rng)
    used = {"tolerances": [s.params()["v"] for s in sketches], "noise": noise, "slack": slack}
    return sketches[0].params(), stats, used


def _asymmetric_setup(
    sketch: AsymmetricIntervalSketch | None, scheme: str, opts: dict[str, Any], jitter: float
) -> tuple[AsymmetricIntervalSketch, float, float]:
    """The options both asymmetric attacks share: the sketch (given, or from ``n``, ``q``,
    ``features``), the capture ``noise`` and the ``tolerance_jitter`` (default ``jitter``)."""
    if sketch is None:
        n = check_int("n", opts.pop("n", 64), 2)
        q = check_int("q", opts.pop("q", 8), 1, n)
        features = check_int("features", opts.pop("features", 16), 1)
        sketch = AsymmetricIntervalSketch(n, q, scheme=scheme, features=features)
    noise = _check_noise("noise", opts.pop("noise", 0.25))
    return sketch, noise, _check_noise("tolerance_jitter", opts.pop("tolerance_jitter", jitter))


def _asymmetric_truth(
    sk: AsymmetricIntervalSketch, k: int, trials: int, rng: np.random.Generator, noise: float, jitter: float
) -> tuple[np.ndarray, np.ndarray, list[list[bytes]]]:
    """True ``(b, v)`` per trial and the ``K`` helpers of each trial's noisy enrolments.

    ``v`` is drawn in ``[1, q]`` and ``b`` so that ``(b − v, b + v)`` fits in ``[0, n]`` when the
    universe allows it (as a template derived from well-spread samples would).
    """
    shape = (trials, sk.features)
    v = rng.integers(1, sk.q + 1, size=shape, dtype=np.int64)
    low = np.minimum(v, sk.n - 1)
    high = np.maximum(low + 1, sk.n - v)
    b = low + np.floor(rng.random(shape) * (high - low)).astype(np.int64)
    helpers: list[list[bytes]] = [[] for _ in range(trials)]
    for _ in range(k):
        bi = _noisy(b, noise, 0, sk.n - 1, rng)
        vi = _noisy(v, jitter, 1, sk.q, rng)
        for t in range(trials):
            helpers[t].append(sk.encode((bi[t], vi[t])))
    return b, v, helpers


def _s1_attack(
    sketch: AsymmetricIntervalSketch | None, k: int, trials: int, rng: np.random.Generator, opts: dict[str, Any]
) -> _Outcome:
    sk, noise, jitter = _asymmetric_setup(sketch, "s1", opts, jitter=1.0)
    slack = check_int("slack", opts.pop("slack", 0), 0, sk.n)
    _no_more(opts)
    _grid_guard(trials, sk.features, sk.n, k)
    b, _, helpers = _asymmetric_truth(sk, k, trials, rng, noise, jitter)
    residues = np.empty((k, trials, sk.features), dtype=np.int64)
    moduli = np.empty_like(residues)
    for t in range(trials):
        for i, h in enumerate(helpers[t]):
            residues[i, t] = sk.symbols(sk.payload(h))[0].astype(np.int64)
            moduli[i, t] = 2 * sk.published_tolerances(h) - 1
    stats = _lattice_stats(_lattice_masks(residues, moduli, sk.n, slack), b, rng)
    return sk.params(), stats, {"noise": noise, "tolerance_jitter": jitter, "slack": slack}


# -- asymmetric s2: intersecting partitions -----------------------------------------------------------
def _s2_candidates(parts: Sequence[np.ndarray], n: int, tau: int) -> Iterator[np.ndarray]:
    """Candidate ``(b, v)`` rows of one feature for ``k = 1..len(parts)``: intervals of the first
    partition, centre in ``[0, n)``, with a similar interval (Fang's thesis §6.2) in each of partitions
    ``2..k``. The mask is narrowed by one partition per ``k``, so each pair is compared once."""
    first = parts[0]
    lo, hi = first[:-1], first[1:]
    centre, length = (lo + hi) / 2, hi - lo
    rows = np.stack([(lo + hi) // 2, (hi - lo) // 2], axis=1)
    # A possible secret interval has the even length 2v (every s2 interval does; s3 adds odd decoys).
    keep = (centre >= 0) & (centre < n) & (length % 2 == 0)
    yield rows[keep]
    for other in parts[1:]:
        oc, ol = (other[:-1] + other[1:]) / 2, other[1:] - other[:-1]
        similar = (np.abs(length[:, None] - ol[None, :]) < 2 * tau) & (np.abs(centre[:, None] - oc[None, :]) < tau)
        keep = keep & similar.any(axis=1)
        yield rows[keep]


def _s2_attack(
    sketch: AsymmetricIntervalSketch | None,
    k: int,
    trials: int,
    rng: np.random.Generator,
    opts: dict[str, Any],
    scheme: str = "s2",
) -> _Outcome:
    sk, noise, jitter = _asymmetric_setup(sketch, scheme, opts, jitter=0.0)
    tau = check_int("tau", opts.pop("tau", 1), 1, sk.n)
    _no_more(opts)
    b, v, helpers = _asymmetric_truth(sk, k, trials, rng, noise, jitter)
    partitions = [[sk.partition(h) for h in hs] for hs in helpers]  # [trial][enrolment][feature]
    count = np.zeros((k, trials, sk.features), dtype=np.int64)
    contains = np.zeros_like(count, dtype=bool)
    for t in range(trials):
        for j in range(sk.features):
            parts = [partitions[t][i][j] for i in range(k)]
            for i, cand in enumerate(_s2_candidates(parts, sk.n, tau)):
                count[i, t, j] = cand.shape[0]
                contains[i, t, j] = bool(np.any((cand[:, 0] == b[t, j]) & (cand[:, 1] == v[t, j])))
    draws = rng.random(trials)
    stats = tuple(_stats(i + 1, count[i], contains[i], draws) for i in range(k))
    return sk.params(), stats, {"noise": noise, "tolerance_jitter": jitter, "tau": tau}


# -- linear families: code-offset and PinSketch -------------------------------------------------------
def _difference_stats(
    k: int, symbols: int, learnt: np.ndarray, trials: int, log2_candidates: float, bound_note: str, draws: np.ndarray
) -> RepeatedEnrolmentStats:
    """Stats of the linear attacker: no template symbol is learnt, only capture differences."""
    pairs = learnt[:, : k - 1]
    extra: dict[str, Any] = {"guess_success_kind": bound_note}
    if pairs.size:
        extra["difference_learnt_fraction"] = float(pairs.mean())
        extra["difference_learnt_ci"] = list(wilson_interval(int(pairs.sum()), int(pairs.size)))
    guess = 2.0 ** (-log2_candidates)
    hits = int((draws < guess).sum())
    return RepeatedEnrolmentStats(
        k=k,
        mean_log2_candidates=log2_candidates,
        empty_fraction=0.0,
        pinned_fraction=0.0,
        recovered_fraction=0.0,
        recovered_ci=wilson_interval(0, trials * symbols),
        guess_success=guess,
        guess_success_ci=wilson_interval(hits, trials),
        guess_bits=log2_candidates,
        extra=extra,
    )


def _pairs_learnt(
    sk: LinearSketch, helpers: list[list[bytes]], truths: list[list[Any]], same: Callable[[Any, Any], bool]
) -> np.ndarray:
    """``learnt[t, i−1]``: did ``S_1 ⊕ S_i`` decode to the true capture difference (``i = 2..K``)?"""
    trials, k = len(helpers), len(helpers[0])
    learnt = np.zeros((trials, max(k - 1, 0)), dtype=bool)
    for t in range(trials):
        for i in range(1, k):
            try:
                diff = difference_decoding(sk, helpers[t][0], helpers[t][i])
            except DecodeError:
                continue
            learnt[t, i - 1] = same(diff, truths[t][i])
    return learnt


def _code_offset_attack(
    sketch: CodeOffsetSketch | None, k: int, trials: int, rng: np.random.Generator, opts: dict[str, Any]
) -> _Outcome:
    sk = sketch if sketch is not None else CodeOffsetSketch(opts.pop("n", 32), opts.pop("t", 4))
    rate = _check_noise("error_rate", opts.pop("error_rate", 0.05), 1.0)
    _no_more(opts)
    helpers, diffs = [], []
    for _ in range(trials):
        w = rng.integers(0, 256, size=sk.n, dtype=np.uint8)
        caps = []
        for _ in range(k):
            flip = rng.random(sk.n) < rate
            caps.append(np.where(flip, w ^ rng.integers(1, 256, size=sk.n, dtype=np.uint8), w))
        helpers.append([sk.encode(c.tobytes()) for c in caps])
        diffs.append([(caps[0] ^ c).tobytes() for c in caps])
    learnt = _pairs_learnt(sk, helpers, diffs, lambda a, b: a == b)
    bits = 8.0 * sk.k  # the coset w ⊕ C: 256^k_code equally likely templates for a uniform w
    draws = rng.random(trials)
    kind = "exact (uniform template)"
    stats = tuple(_difference_stats(i + 1, sk.n, learnt, trials, bits, kind, draws) for i in range(k))
    return sk.params(), stats, {"error_rate": rate}


def _pinsketch_attack(
    sketch: PinSketch | None, k: int, trials: int, rng: np.random.Generator, opts: dict[str, Any]
) -> _Outcome:
    sk = sketch if sketch is not None else PinSketch(opts.pop("m", 8), opts.pop("t", 4))
    universe = (1 << sk.m) - 1
    size = check_int("set_size", opts.pop("set_size", 2 * sk.t), 1, universe // 2)
    rate = _check_noise("error_rate", opts.pop("error_rate", 0.05), 1.0)
    _no_more(opts)
    elements = np.arange(1, universe + 1)
    helpers, diffs = [], []
    for _ in range(trials):
        a = rng.choice(elements, size=size, replace=False)
        outside = np.setdiff1d(elements, a)  # where a capture's replacement elements come from
        caps = []
        for _ in range(k):
            drop = rng.random(size) < rate
            caps.append(np.sort(np.concatenate([a[~drop], rng.choice(outside, size=int(drop.sum()), replace=False)])))
        helpers.append([sk.encode(c) for c in caps])
        diffs.append([np.setxor1d(caps[0], c) for c in caps])
    learnt = _pairs_learnt(sk, helpers, diffs, lambda a, b: np.array_equal(np.asarray(a), b))
    # Sketch bound: H̃∞(A|S) ≥ log2 C(N, s) − t·m for a uniform s-set; k sketches add nothing on A.
    bits = max(0.0, math.log2(math.comb(universe, size)) - sk.t * sk.m)
    draws = rng.random(trials)
    kind = "bound (sketch bound, uniform set)"
    stats = tuple(_difference_stats(i + 1, size, learnt, trials, bits, kind, draws) for i in range(k))
    return sk.params(), stats, {"error_rate": rate, "set_size": size}


# -- the registry and entry point -------------------------------------------------------------------------
#: ``run(sketch or None, k, trials, rng, options) -> outcome``: one family's simulation.
_Run = Callable[..., _Outcome]


@dataclass(frozen=True)
class _Attack:
    """A repeated-enrolment attack, named by the descriptors' ``repeated_attacks``.

    ``forms`` maps what the attack dispatches on — ``dispatch``: the attack key's variant
    (``asymmetric-interval/s3`` → ``s3``), the family's sample kind, or nothing (``""``) — to the
    description and the simulation of that form. Each simulation takes the sketch class it reads.
    """

    name: str
    forms: Mapping[str, tuple[str, _Run]]
    dispatch: Literal["", "variant", "sample_kind"] = ""

    def form(self, key: str) -> tuple[str, _Run]:
        """The description and simulation for the attack key ``key`` (``family[/variant]``)."""
        family, _, variant = key.partition("/")
        if self.dispatch == "variant":
            return self.forms[variant]
        if self.dispatch == "sample_kind":
            return self.forms[scheme_descriptor(family).sample_kind]
        return self.forms[""]


ATTACKS: Mapping[str, _Attack] = {
    "crt": _Attack(
        "crt", {"": ("CRT over residues b mod (2v_i - 1) of enrolments with tolerances v_i", _interval_attack)}
    ),
    "crt-clear-tolerances": _Attack(
        "crt-clear-tolerances", {"": ("CRT over residues with the clear per-enrolment tolerances", _s1_attack)}
    ),
    "partition-intersection": _Attack(
        "partition-intersection",
        {
            "s2": ("intervals (b, v) similar (tau) in all k partitions", _s2_attack),
            "s3": (
                "even intervals (b, v) similar (tau) in all k partitions",
                lambda sketch, k, trials, rng, opts: _s2_attack(sketch, k, trials, rng, opts, scheme="s3"),
            ),
        },
        dispatch="variant",
    ),
    "difference-decoding": _Attack(
        "difference-decoding",
        {
            "bytes": ("decode(S_1 xor S_i, 0) = w_1 xor w_i: differences only", _code_offset_attack),
            "set": ("decode(s(A_1) xor s(A_i), {}) = A_1 delta A_i: differences only", _pinsketch_attack),
        },
        dispatch="sample_kind",
    ),
}


def _no_more(opts: dict[str, Any]) -> None:
    if opts:
        raise ParameterError(f"unknown option(s) for this scheme: {', '.join(sorted(opts))}")


def _targets() -> dict[str, str]:
    """Every attack key a scheme name may give (``asymmetric-interval/s2``) → its attack's name."""
    return {key: name for d in descriptors().values() for key, name in d.repeated_attacks.items()}


def _key(target: str | SecureSketch[Any, Any]) -> tuple[str, _Attack, SecureSketch[Any, Any] | None]:
    """The attack key of ``target``, the attack its descriptor names, and the sketch (if given)."""
    sketch: SecureSketch[Any, Any] | None
    if isinstance(target, SecureSketch):
        d = getattr(type(target), "descriptor", None)
        key = target.scheme_name if d is None else d.attack_key(target.params())
        name = None if d is None else d.repeated_attacks.get(key)
        sketch = target
    elif isinstance(target, str):
        key, sketch = target, None
        name = _targets().get(key)
    else:
        raise ParameterError("expected a scheme name or a SecureSketch")
    if name is None or name not in ATTACKS:
        raise ParameterError(f"no repeated-enrolment attack for {key!r}; known: {', '.join(sorted(_targets()))}")
    return key, ATTACKS[name], sketch


def repeated_enrolment_attack(
    scheme_name_or_sketch: str | SecureSketch[Any, Any], k: int, trials: int, seed: int, **options: Any
) -> RepeatedEnrolmentResult:
    """Simulate ``trials`` people each enrolled ``k`` times; measure the combining attacker per k.

    ``scheme_name_or_sketch``: a configured sketch, or an attack key of the descriptors'
    ``repeated_attacks`` (``interval``, ``asymmetric-interval/s1`` to ``/s3``, ``code-offset``,
    ``pinsketch``) with the parameters as options; the descriptor names the attack of
    :data:`ATTACKS`. Options (defaults):

    * interval — ``n`` (64), ``features`` (16), ``v`` (3), ``tolerances`` (one per enrolment;
      ``v, v+1, …`` for a name, the sketch's own ``v`` every time for a sketch), ``noise`` (0.25:
      Gaussian capture noise in steps, rounded), ``slack`` (0);
    * asymmetric s1 — ``n`` (64), ``q`` (8), ``features`` (16), ``noise`` (0.25),
      ``tolerance_jitter`` (1.0: Gaussian jitter of each enrolment's derived ``v``), ``slack`` (0);
    * asymmetric s2 and s3 — the same with ``tolerance_jitter`` (0.0) and ``tau`` (1: equal intervals);
    * code-offset — ``n`` (32), ``t`` (4), ``error_rate`` (0.05 per byte);
    * pinsketch — ``m`` (8), ``t`` (4), ``set_size`` (2t), ``error_rate`` (0.05 per element).

    Unknown options, ``k`` outside ``[1, 64]``, ``trials`` outside ``[1, 100000]`` raise
    :class:`ParameterError`.
    """
    key, attack, sketch = _key(scheme_name_or_sketch)
    k = check_int("k", k, 1, MAX_ENROLMENTS)
    trials = check_int("trials", trials, 1, MAX_TRIALS)
    seed = check_int("seed", seed, 0)
    description, run = attack.form(key)
    rng = np.random.default_rng(seed)
    params, stats, used = run(sketch, k, trials, rng, dict(options))
    return RepeatedEnrolmentResult(
        scheme=key,
        params=params,
        attack=attack.name,
        description=description,
        trials=trials,
        seed=seed,
        options=used,
        per_k=stats,
    )
