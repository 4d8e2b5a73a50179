"""How much a configured scheme leaks, and what an attacker pays (Dodis–Ostrovsky–Reyzin–Smith §3.1; NIST SP 800-63B-4).

:func:`leakage_report` puts together, for one sketch:

* the **loss bound** ``|S| − H∞(R)`` from the scheme's own :meth:`report` (Dodis–Ostrovsky–Reyzin–Smith §3.1);
* the **remaining entropy** ``H̃∞(d|S) ≥ H∞(d) − loss`` for a *declared* source min-entropy, or
  one *estimated* from data (:func:`estimate_min_entropy`);
* the **offline guessing cost** against the stored argon2id hash: ``2^remaining`` evaluations,
  times the measured cost of one hash at the configured profile (:func:`measure_hash`), in CPU
  seconds and CPU years (ISO/IEC 19795-1; Gomez-Barrero et al. 2018);
* the **false-accept attack cost** ``log2(1/FMR)`` bits (:func:`false_accept_cost`): a
  zero-effort impostor succeeds with probability FMR per attempt, so about ``1/FMR`` online
  attempts are needed. With no observed false match the point estimate is infinite and only the
  lower bound from the 95% Wilson upper limit of the FMR is reported;
* **exact leakage** of a small instance of the same family, by enumerating every secret and
  every value of the encoder's randomness (:func:`exact_leakage`, via
  :func:`sketchauth.entropy.exact_joint`), checked against that instance's bound, and the
  **repeated-enrolment rate**: the Chernoff information ``C = min_{x≠x'} C(p_x, p_x')`` of the
  channel ``p(helper | secret)`` (Boreale–Paolini): after ``k`` independent enrolments of one secret the
  best guess between the two hardest secrets errs with probability about ``2^(−k·C)``.
  ``C = 0`` means some two secrets give identically distributed helpers, so no number of
  re-enrolments tells them apart; ``inf`` means one helper already separates every pair.

Source min-entropy estimation is a plug-in estimate under a **feature-independence**
assumption: the sum over features (positions, or element memberships for sets) of
``−log2 max_a p̂(a)`` over the enrolled templates. It is limited by the number of identities
(each term is at most ``log2(identities)``) and *over*-estimates whenever features are
correlated, which real biometrics are — declare a value when you have a better one.

Example::

    >>> from sketchauth.sketches.interval import IntervalSketch
    >>> exact = exact_leakage(IntervalSketch(n=12, v=2, features=1), [[b] for b in range(12)])
    >>> round(exact.loss_bits, 4), round(exact.bound_bits, 4), exact.chernoff_rate
    (1.585, 1.585, 0.0)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sketchauth.enrolment import hasher
from sketchauth.entropy import entropy_loss, exact_joint, repeated_observation_rate
from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.sketches.base import SecureSketch, SmallInstance, scheme_class
from sketchauth.sketches.params import check_int
from sketchauth.sketches.registry import descriptors, scheme_descriptor

__all__ = [
    "SMALL_INSTANCES",
    "ExactLeakage",
    "HashCost",
    "LeakageReport",
    "estimate_min_entropy",
    "exact_leakage",
    "false_accept_cost",
    "leakage_report",
    "measure_hash",
    "small_instance",
]

SECONDS_PER_YEAR = 365.25 * 24 * 3600
#: Exact Chernoff rates compare every pair of secrets; beyond this many it is skipped.
MAX_CHERNOFF_SECRETS = 64


@dataclass(frozen=True, slots=True)
class HashCost:
    """Measured cost of one argon2id hash at a profile (median of ``repeats`` runs)."""

    profile: str
    wall_seconds: float
    cpu_seconds: float
    repeats: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
            "repeats": self.repeats,
        }


def measure_hash(profile: str = "owasp", repeats: int = 3) -> HashCost:
    """Time ``repeats`` argon2id hashes of a fixed message; the medians of wall and CPU time.

    CPU time (:func:`time.process_time`) counts every thread argon2 uses (``parallelism``), which
    is what an attacker pays per guess on their own hardware.
    """
    repeats = check_int("repeats", repeats)
    ph = hasher(profile)
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        ph.hash(b"sketchauth/evaluate/measure-hash")
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return HashCost(profile, statistics.median(walls), statistics.median(cpus), repeats)


def _plug_in(columns: np.ndarray) -> float:
    """Σ over columns of −log2 (largest share of one value in that column)."""
    total = 0.0
    for col in columns.T:
        _, counts = np.unique(col, return_counts=True)
        total += -math.log2(counts.max() / col.size)
    return total


def estimate_min_entropy(templates: Any) -> float:
    """Plug-in min-entropy estimate of a template population, features assumed independent.

    ``templates``: an ``identities × features`` array (vectors or byte strings), or a sequence of
    element sets (each element's membership is one binary feature). See the module docstring for
    what this estimate can and cannot tell.
    """
    if isinstance(templates, np.ndarray) and templates.ndim == 2:
        if templates.shape[0] < 2:
            raise ParameterError("need at least two templates to estimate min-entropy")
        return _plug_in(templates)
    sets = [np.asarray(s, dtype=np.int64) for s in templates]
    if len(sets) < 2:
        raise ParameterError("need at least two templates to estimate min-entropy")
    universe = np.unique(np.concatenate(sets))
    membership = np.stack([np.isin(universe, s) for s in sets])
    return _plug_in(membership)


def false_accept_cost(false_matches: int, impostor_trials: int) -> dict[str, Any]:
    """``log2(1/FMR)`` with the bits range from the 95% Wilson interval of the FMR.

    Keys: ``fmr``, ``fmr_ci``, ``bits`` (``None`` when no false match was seen: infinite point
    estimate), ``bits_ci`` (``[log2(1/hi), log2(1/lo)]``, upper end ``None`` when ``lo = 0``).
    """
    lo, hi = wilson_interval(false_matches, impostor_trials)
    fmr = false_matches / impostor_trials
    return {
        "fmr": fmr,
        "fmr_ci": [lo, hi],
        "bits": math.log2(1.0 / fmr) if fmr > 0 else None,
        "bits_ci": [math.log2(1.0 / hi), math.log2(1.0 / lo) if lo > 0 else None],
    }


@dataclass(frozen=True, slots=True)
class ExactLeakage:
    """Exact evaluation of a small instance over the listed secrets (uniform prior)."""

    scheme: str
    params: dict[str, Any]
    secrets: int
    helpers: int
    loss_bits: float
    bound_bits: float
    chernoff_rate: float | None

    def to_dict(self) -> dict[str, Any]:
        rate = self.chernoff_rate
        return {
            "scheme": self.scheme,
            "params": dict(self.params),
            "secrets": self.secrets,
            "distinct_helpers": self.helpers,
            "exact_loss_bits": self.loss_bits,
            "loss_bound_bits": self.bound_bits,
            # JSON has no infinity: a rate that separates every pair with one helper is "inf".
            "chernoff_rate_bits": None if rate is None else ("inf" if math.isinf(rate) else rate),
        }


def exact_leakage(sketch: SecureSketch[Any, Any], secrets: Sequence[Any]) -> ExactLeakage:
    """Exact loss ``H∞(d) − H̃∞(d|S)`` and repeated-enrolment rate over ``secrets`` (uniform).

    The Chernoff rate is computed only for at most :data:`MAX_CHERNOFF_SECRETS` secrets
    (``None`` otherwise): it compares every pair of rows of the channel.
    """
    joint, helpers = exact_joint(sketch, secrets)
    loss = entropy_loss(joint)
    rate: float | None = None
    if len(secrets) <= MAX_CHERNOFF_SECRETS:
        channel = joint / joint.sum(axis=1, keepdims=True)
        # A single secret has no pair to tell apart: nothing bounds the rate.
        rate = repeated_observation_rate(channel) if len(secrets) > 1 else math.inf
    return ExactLeakage(
        sketch.scheme_name, sketch.params(), len(secrets), len(helpers), loss, sketch.report().loss_bound_bits, rate
    )


#: A miniature of each family whose exact leakage can be enumerated: ``params -> (parameters,
#: secrets)``, the descriptors' :attr:`~sketchauth.sketches.base.SchemeDescriptor.small_instance`.
SMALL_INSTANCES: Mapping[str, SmallInstance] = {
    name: d.small_instance for name, d in descriptors().items() if d.small_instance is not None
}


def small_instance(
    scheme: str, params: Mapping[str, Any] | None = None
) -> tuple[SecureSketch[Any, Any], list[Any]] | None:
    """The miniature of ``scheme``'s family (``None`` if none is enumerable in seconds).

    From the family's descriptor, given the configured ``params``: for ``asymmetric-interval``
    the miniature keeps the configured ``scheme`` (s1 or s2). The weighted vault has none: its
    smallest instance already has ~10^5 randomness values per secret; a composite (mixing) has no
    descriptor and none either.
    """
    try:
        make = scheme_descriptor(scheme).small_instance
    except ParameterError:  # not a registered family: a composite, or unknown
        return None
    if make is None:
        return None
    small_params, secrets = make(params or {})
    return scheme_class(scheme).from_params(small_params), secrets


@dataclass(frozen=True)
class LeakageReport:
    """Everything :func:`leakage_report` computed, JSON-ready through :meth:`to_dict`."""

    scheme: str
    params: dict[str, Any]
    sketch_bits: float
    randomness_bits: float
    loss_bound_bits: float
    source_min_entropy_bits: float | None
    source_entropy_origin: str
    remaining_bits: float | None
    hash_cost: HashCost | None
    false_accept: dict[str, Any] | None
    exact: ExactLeakage | None
    notes: tuple[str, ...] = ()
    scheme_notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def log2_guess_cpu_seconds(self) -> float | None:
        if self.remaining_bits is None or self.hash_cost is None or self.hash_cost.cpu_seconds <= 0:
            return None
        return self.remaining_bits + math.log2(self.hash_cost.cpu_seconds)

    def to_dict(self) -> dict[str, Any]:
        seconds = self.log2_guess_cpu_seconds
        return {
            "scheme": self.scheme,
            "params": dict(self.params),
            "sketch_bits": self.sketch_bits,
            "randomness_bits": self.randomness_bits,
            "loss_bound_bits": self.loss_bound_bits,
            "source_min_entropy_bits": self.source_min_entropy_bits,
            "source_entropy_origin": self.source_entropy_origin,
            "remaining_bits": self.remaining_bits,
            "offline_guessing": {
                "log2_argon2_evaluations": self.remaining_bits,
                "hash": None if self.hash_cost is None else self.hash_cost.to_dict(),
                "log2_cpu_seconds": seconds,
                "log2_cpu_years": None if seconds is None else seconds - math.log2(SECONDS_PER_YEAR),
            },
            "false_accept_attack": self.false_accept,
            "exact_small_instance": None if self.exact is None else self.exact.to_dict(),
            "scheme_notes": list(self.scheme_notes),
            "notes": list(self.notes),
            "extra": dict(self.extra),
        }


def leakage_report(
    sketch: SecureSketch[Any, Any],
    *,
    source_min_entropy: float | None = None,
    templates: Any = None,
    profile: str | None = "owasp",
    false_matches: int | None = None,
    impostor_trials: int | None = None,
    exact: bool = True,
) -> LeakageReport:
    """The leakage report of one configured sketch (see the module docstring).

    ``source_min_entropy`` (declared) wins over ``templates`` (estimated); with neither, the
    remaining entropy is not computed. ``profile=None`` skips the hash measurement.
    ``false_matches``/``impostor_trials`` come from the error-rate evaluation at the chosen
    operating point.
    """
    rep = sketch.report()
    notes: list[str] = []
    if source_min_entropy is not None:
        if not (math.isfinite(source_min_entropy) and source_min_entropy >= 0):
            raise ParameterError(f"source_min_entropy must be a finite non-negative number, got {source_min_entropy!r}")
        h, origin = float(source_min_entropy), "declared"
    elif templates is not None:
        h, origin = estimate_min_entropy(templates), "estimated"
        notes.append(
            "source min-entropy is a plug-in estimate assuming independent features; it is capped by "
            "log2(identities) per feature and overestimates correlated features"
        )
    else:
        h, origin = None, "unknown"
    remaining = None if h is None else rep.remaining_entropy(h)
    if remaining == 0.0 and h is not None:
        notes.append("the loss bound is at least the source min-entropy: the bound guarantees nothing")
    cost = measure_hash(profile) if profile is not None else None
    fa = None
    if false_matches is not None and impostor_trials:
        fa = false_accept_cost(false_matches, impostor_trials)
    small = None
    if exact:
        instance = small_instance(sketch.scheme_name, sketch.params())
        if instance is not None:
            small = exact_leakage(*instance)
        else:
            notes.append(f"no small instance of {sketch.scheme_name} is enumerable: exact leakage not computed")
    return LeakageReport(
        scheme=sketch.scheme_name,
        params=sketch.params(),
        sketch_bits=rep.sketch_bits,
        randomness_bits=rep.randomness_bits,
        loss_bound_bits=rep.loss_bound_bits,
        source_min_entropy_bits=h,
        source_entropy_origin=origin,
        remaining_bits=remaining,
        hash_cost=cost,
        false_accept=fa,
        exact=small,
        notes=tuple(notes),
        scheme_notes=rep.notes,
        extra=dict(rep.extra),
    )
