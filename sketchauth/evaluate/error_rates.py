"""Error rates of a protected scheme on labelled data, next to unprotected matching (ISO/IEC 19795-1).

Protocol (ISO/IEC 19795-1 vocabulary):

1. **Enrolment.** Each identity is enrolled from its first ``k`` samples (``enrol_samples``):
   ``secret = enrol_fn(sketch, samples[:k], setting)`` (e.g. the rounded mean of ``k`` feature
   vectors; ``setting`` is the swept value, for schemes whose tolerance is set at enrolment),
   ``helper = sketch.encode(secret)`` — the real encoder, with fresh randomness from
   :mod:`secrets`. Identities with only ``k`` samples are enrolled but have no genuine trials.
2. **Genuine trials**: every other sample of the same identity. **Impostor trials** (zero
   effort): every probe sample of every other identity, or ``max_impostors_per_identity`` of them
   drawn with the seeded generator. The plan is :class:`sketchauth.evaluate.protocol.Protocol`'s,
   shared with the feature evaluation (an explicit ``split`` column assigns roles instead of order).
3. **Decision** = the real verification path: ``candidate = sketch.decode(helper, probe)`` then
   compare the canonical encoding ``sketch.secret_bytes(candidate)`` with that of the enrolled
   secret. :func:`sketchauth.enrolment.verify` hashes exactly those bytes (behind a fixed
   prefix) with argon2id and compares hashes; since argon2id is deterministic for a given salt,
   hash equality *is* equality of the recovered secret (up to a 2^-256 collision), so here the
   slow hash is replaced by a constant-time comparison (:func:`hmac.compare_digest`) of the
   canonical secrets. :func:`crosscheck_with_verify` re-runs a sample of trials through the real
   ``enrol``/``verify`` with argon2 and reports agreement; the report includes it.
   ``DecodeError`` is a rejection. A probe the scheme cannot take at all (``SampleError``: wrong
   length, out of range) is a rejection too and is counted separately (``malformed_probes``).
4. **Sweep** the scheme's tolerance parameter; per setting a :class:`RatePoint` with 95% Wilson
   intervals; the EER over the sweep; and a DET curve of the *unprotected* comparator (the same
   templates and probes compared by a plain distance, no sketch) so that the cost of
   protection — the operating points a scheme can reach versus those plain matching can — is
   visible.

Signed and real features (the interval family): templates and probes go through the sketch's
own quantiser (``⌊(x − offset)/step + 1/2⌋``, levels ``[0, n)``). Nothing is clipped into range:
a template outside it stops the evaluation with the range and how to cover the data, and a probe
outside it is a malformed probe (a rejection, counted). With a ``step`` but neither ``n`` nor
``offset`` in the parameters, :func:`evaluate_adapter` fits them to the enrolment samples first
(:func:`fit_quantiser_params`: their smallest and largest value plus the widest tolerance as
margin).

Speed and exactness: every registered scheme is decided by its exact acceptance rule on arrays
(:mod:`sketchauth.evaluate.deciders`: the interval box, the s1/s2 rules, at most ``t`` byte errors,
``|A Δ B| ≤ t``; the vaults by their batch decoders), and the same run re-decides a seeded sample
of at least 10^4 comparisons (all of them in smaller runs) by real ``decode``; the result's
``decode_check`` states how many disagreed (0 — anything else is a bug the report shows loudly).
Custom deciders without the ``vectorised`` mark run in processes (``jobs``).

Extension point (a feature pipeline, ``--pipeline``): :func:`evaluate_scheme` takes callables —
``scheme_factory(setting) -> SecureSketch``, ``enrol_fn(sketch, samples, setting) -> secret``,
optionally ``probe_fn(sample) -> probe`` (a feature transform applied to every probe before
decoding) and ``decide`` (a batch decider with the signature of :func:`decide_by_decoding`).
A pipeline supplies its transform as ``probe_fn`` and ``enrol_fn`` and reuses everything else.

Example::

    >>> from sketchauth.evaluate.data import synthetic_vectors
    >>> data = synthetic_vectors(20, 3, 8, noise=1.0, seed=1)
    >>> result = evaluate_adapter("interval", {"n": 256, "features": 8}, data, [1, 3, 6], seed=1)
    >>> [p.setting for p in result.points], result.points[-1].fnmr < result.points[0].fnmr
    ([1, 3, 6], True)
"""

from __future__ import annotations

import hmac
import inspect
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.evaluate.data import LabelledSets, LabelledVectors, rows_by_identity
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.rates import (
    RatePoint,
    det_from_scores,
    eer,
    eer_interval,
    fmr_at_fnmr,
    fnmr_at_fmr_on_det,
    identity_bootstrap,
)
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.params import check_int, check_positive_float

__all__ = [
    "ADAPTERS",
    "QUANTISED_SCHEMES",
    "BaselineResult",
    "Enrolled",
    "ErrorRateResult",
    "SchemeAdapter",
    "Trials",
    "adapter",
    "baseline_scores",
    "crosscheck_with_verify",
    "decide_batch",
    "decide_by_decoding",
    "decide_interval",
    "enrol_byte_mode",
    "enrol_majority_set",
    "enrol_population",
    "enrol_rounded_mean",
    "evaluate_adapter",
    "evaluate_scheme",
    "fit_quantiser_params",
    "fit_set_size",
    "plan_trials",
]

Data = LabelledVectors | LabelledSets
SchemeFactory = Callable[[Any], SecureSketch]
EnrolFn = Callable[[SecureSketch, Any, Any], Any]
ProbeFn = Callable[[Any], Any]
#: ``decide(sketch, enrolled, probes, enrolled_index, probe_index) -> (accepted, malformed)``.
DecideFn = Callable[[SecureSketch, "Enrolled", Sequence[Any], np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

#: Pairs per chunk of the vectorised interval decoder (≈ 16 MiB per int64 array at 128 features).
INTERVAL_CHUNK = 16_384
#: Target FMR of NIST SP 800-63B-4 (1 in 10,000), reported for the unprotected comparator.
TARGET_FMR = 1e-4
#: Target FNMR of NIST SP 800-63B-4 (5%): the FMR reachable at it is reported too.
TARGET_FNMR = 0.05
#: Bootstrap resamples of the identity-level intervals (ISO/IEC 19795-1).
BOOTSTRAP_RESAMPLES = 2000


# -- the comparison plan ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trials:
    """Who is enrolled from which rows, and which (enrolled identity, probe row) pairs are compared.

    ``enrol_rows[i]`` are the rows enrolling identity ``i`` (label ``labels[i]``);
    ``genuine``/``impostor`` are ``(2, T)`` int arrays: enrolled identity index, probe row.
    """

    labels: tuple[Any, ...]
    enrol_rows: tuple[np.ndarray, ...]
    genuine: np.ndarray
    impostor: np.ndarray
    samples: int


def plan_trials(
    data: Data,
    *,
    enrol_samples: int = 1,
    max_impostors_per_identity: int | None = None,
    seed: int = 0,
    protocol: Protocol | None = None,
) -> Trials:
    """The comparison plan of :class:`~sketchauth.evaluate.protocol.Protocol` (seeded impostor subsampling).

    ``protocol`` defaults to ``Protocol(enrol_samples)``; a ``split`` column of the data assigns roles.
    """
    protocol = protocol or Protocol(enrol_samples=check_int("enrol_samples", enrol_samples))
    plan = protocol.plan(
        data.identities, getattr(data, "split", None), max_impostors_per_identity=max_impostors_per_identity, seed=seed
    )
    return Trials(plan.labels, plan.enrol_rows, plan.genuine, plan.impostor, plan.samples)


def _samples_of(data: Data) -> Sequence[Any]:
    return data.samples if isinstance(data, LabelledVectors) else data.sets


# -- enrolment -------------------------------------------------------------------------------------------
def enrol_rounded_mean(sketch: SecureSketch, samples: Any, setting: Any = None) -> np.ndarray:
    """Template of the interval family: the mean of the enrolment samples — never clipped.

    For a sketch that quantises (a ``step`` or an ``offset``) the real mean is returned and the
    sketch quantises it like any real secret (``⌊(x − offset)/step + 1/2⌋``,
    :class:`~sketchauth.sketches.samples.Quantiser`), refusing a mean outside its range with
    :class:`SampleError`; otherwise the mean rounded to the nearest integer (halves up), which the
    sketch checks against ``[0, n)``. A template the sketch cannot take stops the evaluation with
    that error (:func:`enrol_population`) instead of being moved into range.
    """
    mean = np.asarray(samples, dtype=float).mean(axis=0)
    quantiser = getattr(sketch, "quantiser", None)
    if quantiser is not None and quantiser.measuring:
        return mean
    return np.floor(mean + 0.5)


def enrol_byte_mode(sketch: SecureSketch, samples: Any, setting: Any = None) -> bytes:
    """Template of code-offset: per position the most frequent byte (the smallest on ties)."""
    arr = np.asarray(samples, dtype=np.int64)
    if arr.ndim != 2 or arr.size == 0 or arr.min() < 0 or arr.max() > 255:
        raise SampleError("byte-string samples must be rows of values in [0, 255]")
    counts = np.zeros((256, arr.shape[1]), dtype=np.int64)
    np.add.at(counts, (arr, np.broadcast_to(np.arange(arr.shape[1]), arr.shape)), 1)
    return counts.argmax(axis=0).astype(np.uint8).tobytes()


def enrol_majority_set(sketch: SecureSketch, samples: Any, setting: Any = None) -> np.ndarray:
    """Template of the set schemes: the elements present in more than half of the samples."""
    sets = list(samples)
    values, counts = np.unique(np.concatenate([np.asarray(s, dtype=np.int64) for s in sets]), return_counts=True)
    return values[2 * counts > len(sets)]


@dataclass(frozen=True)
class Enrolled:
    """The enrolled population under one setting: helper data and canonical secret bytes.

    ``secrets`` are kept only inside the evaluation (this is simulation on a researcher's own
    data), never written to a report.
    """

    helpers: tuple[bytes, ...]
    canonical: tuple[bytes, ...]
    secrets: tuple[Any, ...]


def enrol_population(
    sketch: SecureSketch, enrol_fn: EnrolFn, data: Data, trials: Trials, setting: Any = None
) -> Enrolled:
    """Run ``enrol_fn`` and the real encoder for every identity of the plan."""
    samples = _samples_of(data)
    helpers, canonical, secrets = [], [], []
    for i, rows in enumerate(trials.enrol_rows):
        chosen = samples[rows] if isinstance(samples, np.ndarray) else [samples[r] for r in rows]
        try:
            # check_secret normalises once (the interval family returns Levels, which encode
            # takes as they are: normalising twice is harmless).
            secret = sketch.check_secret(enrol_fn(sketch, chosen, setting))
            helpers.append(sketch.encode(secret))
        except SampleError as exc:
            raise SampleError(f"cannot enrol identity {trials.labels[i]!s}: {exc}{_range_hint(sketch)}") from None
        canonical.append(sketch.secret_bytes(secret))
        secrets.append(secret)
    return Enrolled(tuple(helpers), tuple(canonical), tuple(secrets))


# -- deciders ---------------------------------------------------------------------------------------------
def decide_by_decoding(
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Sequence[Any],
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One real ``decode`` per trial; accepted iff the recovered canonical secret matches.

    Returns ``(accepted, malformed)`` boolean arrays (``malformed``: the probe raised
    ``SampleError``, counted as a rejection).
    """
    accepted = np.zeros(len(enrolled_index), dtype=bool)
    malformed = np.zeros(len(enrolled_index), dtype=bool)
    for k, (e, q) in enumerate(zip(enrolled_index.tolist(), probe_index.tolist(), strict=False)):
        try:
            candidate = sketch.decode(enrolled.helpers[e], probes[q])
            accepted[k] = hmac.compare_digest(sketch.secret_bytes(candidate), enrolled.canonical[e])
        except DecodeError:
            pass
        except SampleError:
            malformed[k] = True
    return accepted, malformed


def _range_hint(sketch: SecureSketch) -> str:
    quantiser = getattr(sketch, "quantiser", None)
    if quantiser is None:
        return ""
    return (
        " — give n, step and offset that cover the data, or a step without n and offset to fit "
        "them to the enrolment samples (fit_quantiser_params)"
    )


def decide_interval(
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Any,
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval decoder's exact rule on many pairs at once (same result as ``decode``).

    Accept ⇔ ``|d'_j − b_j| < v_j`` for every feature, with the helper's ``S ≡ b (mod 2v − 1)``
    checked once per identity (:func:`sketchauth.evaluate.deciders.decide_interval_exact`).
    Probes are quantised by the sketch's :class:`~sketchauth.sketches.samples.Quantiser`; a probe
    ``decode`` would refuse (not finite, not an integer without a step, outside a quantising
    sketch's range) is a rejection counted as malformed, exactly as :func:`decide_by_decoding`
    counts it. Probes that are not one matrix of the right width go through real decodes.
    """
    from sketchauth.evaluate.deciders import decide_interval_exact

    return decide_interval_exact(sketch, enrolled, probes, enrolled_index, probe_index)


decide_interval.vectorised = True  # type: ignore[attr-defined]


def _decide_chunked(
    decide: DecideFn,
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Any,
    pairs: np.ndarray,
    *,
    jobs: int,
    chunk: int,
    progress: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``decide`` over chunks of pairs, on ``jobs`` workers, updating ``progress``."""
    chunks = [pairs[:, i : i + chunk] for i in range(0, pairs.shape[1], chunk)]
    results: list[tuple[np.ndarray, np.ndarray]] = []
    if jobs <= 1 or len(chunks) <= 1:
        for c in chunks:
            results.append(decide(sketch, enrolled, probes, c[0], c[1]))
            progress.update(c.shape[1])
    else:
        # Array deciders release the GIL inside numpy, so threads suffice; decoding in Python
        # (reedsolo, field arithmetic) needs processes.
        pool_type = ThreadPoolExecutor if getattr(decide, "vectorised", False) else ProcessPoolExecutor
        with pool_type(max_workers=jobs) as pool:
            futures = [pool.submit(decide, sketch, enrolled, *_probe_subset(probes, c, pool_type)) for c in chunks]
            for c, fut in zip(chunks, futures, strict=False):
                results.append(fut.result())
                progress.update(c.shape[1])
    if not results:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    return np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])


def _probe_subset(probes: Any, pairs: np.ndarray, pool_type: type) -> tuple[Any, np.ndarray, np.ndarray]:
    """The probes a chunk needs, re-indexed: processes get only those, not the whole data set."""
    if pool_type is ThreadPoolExecutor:
        return probes, pairs[0], pairs[1]
    used, local = np.unique(pairs[1], return_inverse=True)
    subset = probes[used] if isinstance(probes, np.ndarray) else [probes[q] for q in used.tolist()]
    return subset, pairs[0], local.astype(np.int64)


# -- unprotected comparison ---------------------------------------------------------------------------
def baseline_scores(metric: str, data: Data, trials: Trials, pairs: np.ndarray) -> np.ndarray:
    """Distances (lower = more similar) between unprotected templates and probes.

    Templates are formed from the same enrolment rows as the protected run: the (real) mean
    vector for ``euclidean``/``chebyshev``, the per-position mode for ``hamming`` and the
    majority set for ``set-difference`` (``|A Δ B|``).
    """
    samples = _samples_of(data)
    if metric in ("euclidean", "chebyshev", "hamming"):
        x = np.asarray(samples, dtype=float)
        if metric == "hamming":
            templates = np.stack(
                [np.frombuffer(enrol_byte_mode(None, x[r]), dtype=np.uint8) for r in trials.enrol_rows]
            ).astype(float)  # type: ignore[arg-type]
        else:
            templates = np.stack([x[r].mean(axis=0) for r in trials.enrol_rows])
        out = np.empty(pairs.shape[1])
        for start in range(0, pairs.shape[1], INTERVAL_CHUNK):
            diff = x[pairs[1, start : start + INTERVAL_CHUNK]] - templates[pairs[0, start : start + INTERVAL_CHUNK]]
            if metric == "euclidean":
                out[start : start + diff.shape[0]] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
            elif metric == "chebyshev":
                out[start : start + diff.shape[0]] = np.abs(diff).max(axis=1)
            else:
                out[start : start + diff.shape[0]] = np.count_nonzero(diff, axis=1)
        return out
    if metric == "set-difference":
        templates = [enrol_majority_set(None, [samples[r] for r in rows]) for rows in trials.enrol_rows]  # type: ignore[arg-type]
        return np.array(
            [
                np.setxor1d(templates[e], samples[q]).size
                for e, q in zip(pairs[0].tolist(), pairs[1].tolist(), strict=False)
            ],
            dtype=float,
        )
    raise ParameterError(f"unknown comparison metric {metric!r}")


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


@dataclass(frozen=True)
class ErrorRateResult:
    """Protected operating points over a sweep, the EER, and the unprotected baselines."""

    scheme: str
    parameter: str
    points: tuple[RatePoint, ...]
    eer: float | None
    identities: int
    samples: int
    enrol_samples: int
    malformed_probes: tuple[int, ...]
    baselines: tuple[BaselineResult, ...] = ()
    crosscheck: dict[str, int] = field(default_factory=dict)
    #: Real ``decode`` against the fast decider on a sample of trials (see :func:`evaluate_scheme`).
    decode_check: dict[str, Any] = field(default_factory=dict)
    #: Per point: FNMR and FMR intervals from a seeded bootstrap over enrolled identities.
    identity_intervals: tuple[dict[str, Any], ...] = ()
    #: FVC low/high of the sweep's EER (``None`` without a crossing).
    eer_range: tuple[float, float] | None = None
    #: Trial identities for score files: enrolled identity label per pair, probe row's label, probe row.
    trial_labels: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with stable keys."""
        first = self.points[0]
        return {
            "scheme": self.scheme,
            "parameter": self.parameter,
            "identities": self.identities,
            "samples": self.samples,
            "enrol_samples": self.enrol_samples,
            "genuine_trials": first.genuine_trials,
            "impostor_trials": first.impostor_trials,
            "points": [
                p.to_dict()
                | {"malformed_probes": m}
                | (self.identity_intervals[k] if k < len(self.identity_intervals) else {})
                for k, (p, m) in enumerate(zip(self.points, self.malformed_probes, strict=False))
            ],
            "eer": self.eer,
            "eer_fvc_low_high": None if self.eer_range is None else list(self.eer_range),
            "baselines": [b.to_dict() for b in self.baselines],
            "crosscheck": dict(self.crosscheck),
            "decode_check": dict(self.decode_check),
        }


def _sweep_eer(points: Sequence[RatePoint]) -> float | None:
    """EER over the sweep, or ``None`` when the sweep does not bracket the crossing.

    Points are ordered by FMR and FNMR is replaced by its running minimum (the best FNMR
    reachable at that FMR by choosing a setting). Without a point on each side of the crossing
    any number would be an extrapolation, so none is given: widen the sweep.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i].fmr, -points[i].fnmr))
    fmr = np.array([points[i].fmr for i in order])
    fnmr = np.minimum.accumulate(np.array([points[i].fnmr for i in order]))
    if not (np.any(fnmr >= fmr) and np.any(fnmr <= fmr)):
        return None
    return eer(fmr, fnmr)


def _sweep_eer_range(points: Sequence[RatePoint]) -> tuple[float, float] | None:
    """FVC low/high of :func:`_sweep_eer` (same ordering), or ``None`` without a crossing."""
    if _sweep_eer(points) is None:
        return None
    order = sorted(range(len(points)), key=lambda i: (points[i].fmr, -points[i].fnmr))
    fmr = np.array([points[i].fmr for i in order])
    fnmr = np.minimum.accumulate(np.array([points[i].fnmr for i in order]))
    span = eer_interval(fmr, fnmr)
    return span.low, span.high


def _identity_intervals(
    accepted: np.ndarray, pairs: np.ndarray, n_gen: int, identities: int, *, seed: int
) -> dict[str, Any]:
    """FNMR and FMR intervals bootstrapped over enrolled identities (ISO/IEC 19795-1), seeded."""
    owner = pairs[0]
    gen_trials = np.bincount(owner[:n_gen], minlength=identities)
    gen_errors = np.bincount(owner[:n_gen][~accepted[:n_gen]], minlength=identities)
    imp_trials = np.bincount(owner[n_gen:], minlength=identities)
    imp_errors = np.bincount(owner[n_gen:][accepted[n_gen:]], minlength=identities)
    return {
        "fnmr_ci_identity": list(identity_bootstrap(gen_errors, gen_trials, resamples=BOOTSTRAP_RESAMPLES, seed=seed)),
        "fmr_ci_identity": list(identity_bootstrap(imp_errors, imp_trials, resamples=BOOTSTRAP_RESAMPLES, seed=seed)),
        "bootstrap": f"{BOOTSTRAP_RESAMPLES} resamples of the {identities} enrolled identities, seed {seed}",
    }


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="cmp", unit_scale=True, leave=False)


def evaluate_scheme(
    scheme_factory: SchemeFactory,
    enrol_fn: EnrolFn,
    data: Data,
    settings: Sequence[Any],
    *,
    parameter: str = "setting",
    probe_fn: ProbeFn | None = None,
    decide: DecideFn = decide_by_decoding,
    baseline_metrics: Sequence[str] = (),
    enrol_samples: int = 1,
    max_impostors_per_identity: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    chunk: int | None = None,
    progress: bool = False,
    crosscheck_trials: int = 0,
    decode_check: int | None = None,
) -> ErrorRateResult:
    """FNMR/FMR per setting through the real scheme (protocol in the module docstring).

    ``scheme_factory(setting)`` builds the sketch for one setting of the swept ``parameter``;
    ``enrol_fn(sketch, samples, setting)`` turns an identity's enrolment samples into its secret;
    ``probe_fn`` (default: none) maps each raw sample to what ``decode`` takes; ``decide`` is
    the batch decider. ``crosscheck_trials`` > 0 re-runs that many seeded trials per setting
    through argon2 ``enrol``/``verify`` (profile ``"test"``) and records agreement.

    ``decode_check`` (default :data:`~sketchauth.evaluate.deciders.CROSSCHECK_MIN`; 0 turns it
    off) is how many comparisons of the run are re-decided by real ``decode`` and compared with
    ``decide`` (:func:`~sketchauth.evaluate.deciders.crosscheck_by_decoding`): every comparison
    when the sweep has fewer, else that many spread evenly over the settings, a third of them
    boundary trials (accepted at one setting, rejected at another). The result's
    ``decode_check`` states how many were checked and how many disagreed (must be 0).
    """
    from sketchauth.evaluate.deciders import CROSSCHECK_MIN, crosscheck_by_decoding, crosscheck_sample

    if not settings:
        raise ParameterError("the sweep needs at least one setting")
    jobs = check_int("jobs", jobs)
    trials = plan_trials(
        data, enrol_samples=enrol_samples, max_impostors_per_identity=max_impostors_per_identity, seed=seed
    )
    raw = _samples_of(data)
    probes = raw if probe_fn is None else [probe_fn(x) for x in raw]
    fast = getattr(decide, "vectorised", False)
    step = chunk or (4 * INTERVAL_CHUNK if fast else max(64, -(-trials.impostor.shape[1] // (8 * jobs))))
    pairs = np.hstack([trials.genuine, trials.impostor])
    n_gen = trials.genuine.shape[1]
    points, malformed_counts = [], []
    runs: list[tuple[SecureSketch, Enrolled, np.ndarray, np.ndarray]] = []
    intervals: list[dict[str, Any]] = []
    agreed = checked = 0
    scheme_name = ""
    for setting in settings:
        sketch = scheme_factory(setting)
        scheme_name = sketch.scheme_name
        enrolled = enrol_population(sketch, enrol_fn, data, trials, setting)
        bar = _progress(pairs.shape[1], f"{scheme_name} {parameter}={setting}", progress)
        accepted, malformed = _decide_chunked(
            decide, sketch, enrolled, probes, pairs, jobs=jobs, chunk=step, progress=bar
        )
        bar.close()
        if n_gen and malformed[:n_gen].all():
            raise SampleError(
                f"no genuine probe could be decoded by {scheme_name} with {parameter}={setting}: "
                "the data does not fit the scheme"
            )
        false_non_matches = int(n_gen - np.count_nonzero(accepted[:n_gen]))
        points.append(
            RatePoint.from_counts(
                setting, false_non_matches, n_gen, int(np.count_nonzero(accepted[n_gen:])), pairs.shape[1] - n_gen
            )
        )
        malformed_counts.append(int(malformed.sum()))
        runs.append((sketch, enrolled, accepted, malformed))
        intervals.append(_identity_intervals(accepted, pairs, n_gen, len(trials.labels), seed=seed))
        if crosscheck_trials:
            a, c = crosscheck_with_verify(sketch, enrolled, probes, pairs, accepted, crosscheck_trials, seed=seed)
            agreed, checked = agreed + a, checked + c
    budget = CROSSCHECK_MIN if decode_check is None else check_int("decode_check", decode_check, 0)
    check: dict[str, Any] = {}
    if budget:
        # Boundary trials: decided differently by two settings of the sweep.
        stacked = np.stack([r[2] for r in runs])
        boundary = stacked.any(axis=0) & ~stacked.all(axis=0)
        per_setting = -(-budget // len(runs))
        rng = np.random.default_rng([seed, 0x5EED])
        total = checked_decodes = disagreements = boundary_checked = 0
        examples: list[dict[str, Any]] = []
        bar = _progress(
            min(per_setting, pairs.shape[1]) * len(runs), f"{scheme_name}: real decodes (cross-check)", progress
        )
        for setting, (sketch, enrolled, accepted, malformed) in zip(settings, runs, strict=False):
            chosen = crosscheck_sample(accepted, count=per_setting, rng=rng, boundary=boundary)
            c, d, ex = crosscheck_by_decoding(sketch, enrolled, probes, pairs, accepted, malformed, chosen, jobs=jobs)
            total += pairs.shape[1]
            checked_decodes += c
            disagreements += d
            boundary_checked += int(boundary[chosen].sum())
            examples += [{parameter: setting, **x} for x in ex]
            bar.update(c)
        bar.close()
        check = {
            "method": "real encode -> decode -> compare on a seeded sample of trials",
            "checked": checked_decodes,
            "disagreements": disagreements,
            "boundary_trials": boundary_checked,
            "total_trials": total,
            "all_trials": checked_decodes == total,
            "examples": examples[:5],
        }
    baselines = tuple(
        BaselineResult.from_scores(m, *np.split(baseline_scores(m, data, trials, pairs), [n_gen]))
        for m in baseline_metrics
    )
    return ErrorRateResult(
        scheme=scheme_name,
        parameter=parameter,
        points=tuple(points),
        eer=_sweep_eer(points),
        identities=len(trials.labels),
        samples=trials.samples,
        enrol_samples=enrol_samples,
        malformed_probes=tuple(malformed_counts),
        baselines=baselines,
        crosscheck={"checked": checked, "agreed": agreed} if crosscheck_trials else {},
        decode_check=check,
        identity_intervals=tuple(intervals),
        eer_range=_sweep_eer_range(points),
        trial_labels=(
            np.asarray(trials.labels, dtype=object)[pairs[0]],
            np.asarray(data.identities)[pairs[1]],
            pairs[1],
        ),
    )


def crosscheck_with_verify(
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Sequence[Any],
    pairs: np.ndarray,
    accepted: np.ndarray,
    count: int,
    *,
    seed: int = 0,
    profile: str = "test",
) -> tuple[int, int]:
    """Re-decide ``count`` seeded trials with the real argon2 ``verify``; ``(agreed, checked)``.

    The stored record is built as :func:`sketchauth.enrolment.enrol` builds it (the same
    ``secret_message`` hashed with argon2id) around the helper that the evaluation decoded,
    so the check compares the two decision paths on identical helper data. Half of the checked
    trials are accepted ones when there are any, so both outcomes are exercised.
    """
    from sketchauth.enrolment import Enrolment, hasher, secret_message, verify

    rng = np.random.default_rng(seed)
    ph = hasher(profile)
    yes, no = np.flatnonzero(accepted), np.flatnonzero(~accepted)
    half = min(yes.size, count // 2)
    chosen = np.concatenate(
        [rng.choice(yes, size=half, replace=False), rng.choice(no, size=min(no.size, count - half), replace=False)]
    )
    agreed = 0
    for k in chosen.tolist():
        e, q = int(pairs[0, k]), int(pairs[1, k])
        record = Enrolment(
            helper=enrolled.helpers[e],
            secret_hash=ph.hash(secret_message(sketch, enrolled.secrets[e])),
            report=sketch.report(),
        )
        try:
            outcome = verify(sketch, record, probes[q], password_hasher=ph)
        except SampleError:
            outcome = False
        agreed += int(outcome == bool(accepted[k]))
    return agreed, int(chosen.size)


# -- scheme adapters ---------------------------------------------------------------------------------
def decide_batch(
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Sequence[Any],
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Decisions through a scheme's batch decoder ``decode_many`` (the vaults: one Berlekamp–Welch
    solve per batch; PinSketch: one pass for the samples' power sums); same outcome as
    :func:`decide_by_decoding`.

    ``decode_many`` refuses a whole batch for one malformed probe, so such a batch falls back to
    the per-trial decider, which counts the malformed ones.
    """
    helpers = [enrolled.helpers[e] for e in enrolled_index.tolist()]
    samples = [probes[q] for q in probe_index.tolist()]
    decode_many = sketch.decode_many  # type: ignore[attr-defined]
    # The vaults take errors="return"; PinSketch always returns DecodeError instances in place.
    options = {"errors": "return"} if "errors" in inspect.signature(decode_many).parameters else {}
    try:
        results = decode_many(helpers, samples, **options)
    except SampleError:
        return decide_by_decoding(sketch, enrolled, probes, enrolled_index, probe_index)
    accepted = np.zeros(len(results), dtype=bool)
    for k, (e, found) in enumerate(zip(enrolled_index.tolist(), results, strict=False)):
        if not isinstance(found, DecodeError):
            accepted[k] = hmac.compare_digest(sketch.secret_bytes(found), enrolled.canonical[e])
    return accepted, np.zeros(len(results), dtype=bool)


def fit_set_size(elements: Any, size: int, universe: int) -> np.ndarray:
    """A set of exactly ``size`` elements of ``[0, universe)`` made from ``elements``.

    The complete fuzzy vault decodes only ``m``-element samples, and captured sets vary in size.
    Our evaluation rule is data-independent: a larger set keeps its ``size`` smallest elements,
    a smaller one is padded with the smallest elements of the universe it lacks (which are
    almost never genuine, so padding cannot help an impostor more than a genuine user).
    """
    arr = np.unique(np.asarray(elements, dtype=np.int64))
    if arr.size >= size:
        return arr[:size]
    absent = np.setdiff1d(np.arange(min(universe, size + arr.size + 1), dtype=np.int64), arr)
    return np.sort(np.concatenate([arr, absent[: size - arr.size]]))


def _enrol_fuzzy_vault(sketch: SecureSketch, samples: Any, setting: Any = None) -> np.ndarray:
    return fit_set_size(enrol_majority_set(sketch, samples), sketch.m, sketch.p)  # type: ignore[attr-defined]


def _enrol_weighted_vault(sketch: SecureSketch, samples: Any, setting: Any = None) -> tuple[np.ndarray, np.ndarray]:
    from sketchauth.templates import enrol_weighted_set

    return enrol_weighted_set(list(samples), sketch.q, p=sketch.p, total=sketch.g)  # type: ignore[attr-defined]


def _enrol_asymmetric(sketch: SecureSketch, samples: Any, setting: Any = None) -> tuple[np.ndarray, np.ndarray]:
    # The swept setting is the enrolment margin: v = clip(range + margin, 1, q); the captures are
    # quantised by the sketch's own quantiser (step, offset).
    return sketch.template(samples, margin=int(setting))  # type: ignore[attr-defined]


def _row_to_bytes(row: Any) -> bytes:
    arr = np.asarray(row)
    if arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
        raise SampleError("byte-string samples must be integers")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise SampleError("byte-string samples must lie in [0, 255]")
    return arr.astype(np.uint8).tobytes()


def _fuzzy_vault_probe(params: dict[str, Any]) -> ProbeFn:
    m, p = int(params["m"]), int(params["p"])
    return lambda x: fit_set_size(x, m, p)


def _weighted_vault_probe(params: dict[str, Any]) -> ProbeFn:
    from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS

    most = MAX_CANDIDATE_POINTS // int(params["q"])
    return lambda x: np.asarray(x, dtype=np.int64)[:most]


def _decide_exact(
    sketch: SecureSketch, enrolled: Enrolled, probes: Sequence[Any], enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each scheme's exact acceptance rule on arrays (:func:`sketchauth.evaluate.deciders.decide_exact`)."""
    from sketchauth.evaluate.deciders import decide_exact

    return decide_exact(sketch, enrolled, probes, enrolled_index, probe_index)


_decide_exact.vectorised = True  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SchemeAdapter:
    """How to evaluate one registered scheme: data kind, swept parameter, enrolment, decider.

    ``make_sketch(params, setting)`` builds the sketch with ``setting`` for ``sweep`` (unless
    ``sweep_at_enrolment``: then the setting goes to ``enrol`` only, e.g. the asymmetric
    schemes' enrolment margin); ``probe_for(params)`` returns the conversion of one raw sample
    (row of a vector array, or a set) into what ``decode`` takes.
    """

    scheme: str
    data_kind: str  # "vectors", "strings" or "sets"
    sweep: str
    enrol: EnrolFn
    decide: DecideFn
    baseline_metrics: tuple[str, ...]
    probe_for: Callable[[dict[str, Any]], ProbeFn | None] = lambda params: None
    min_enrol_samples: int = 1
    sweep_at_enrolment: bool = False

    def make_sketch(self, params: dict[str, Any], setting: Any) -> SecureSketch:
        from sketchauth.sketches.base import scheme_class

        merged = dict(params) if self.sweep_at_enrolment else {**params, self.sweep: setting}
        try:
            return scheme_class(self.scheme).from_params(merged)
        except KeyError as exc:
            raise ParameterError(f"{self.scheme} needs parameter {exc.args[0]!r} in --params") from None


ADAPTERS: dict[str, SchemeAdapter] = {
    "interval": SchemeAdapter(
        "interval", "vectors", "v", enrol_rounded_mean, decide_interval, ("euclidean", "chebyshev")
    ),
    "code-offset": SchemeAdapter(
        "code-offset",
        "strings",
        "t",
        enrol_byte_mode,
        _decide_exact,
        ("hamming",),
        probe_for=lambda params: _row_to_bytes,
    ),
    "pinsketch": SchemeAdapter("pinsketch", "sets", "t", enrol_majority_set, _decide_exact, ("set-difference",)),
    "fuzzy-vault": SchemeAdapter(
        "fuzzy-vault", "sets", "t", _enrol_fuzzy_vault, decide_batch, ("set-difference",), probe_for=_fuzzy_vault_probe
    ),
    "weighted-vault": SchemeAdapter(
        "weighted-vault",
        "sets",
        "t",
        _enrol_weighted_vault,
        decide_batch,
        ("set-difference",),
        probe_for=_weighted_vault_probe,
        min_enrol_samples=2,
    ),
    "asymmetric-interval": SchemeAdapter(
        "asymmetric-interval",
        "vectors",
        "margin",
        _enrol_asymmetric,
        _decide_exact,
        ("euclidean", "chebyshev"),
        min_enrol_samples=2,
        sweep_at_enrolment=True,
    ),
}


def adapter(scheme: str) -> SchemeAdapter:
    """The adapter for a registered scheme (``ParameterError`` naming the known ones)."""
    try:
        return ADAPTERS[scheme]
    except KeyError:
        raise ParameterError(
            f"no evaluation adapter for scheme {scheme!r}; known: {', '.join(sorted(ADAPTERS))}"
        ) from None


#: The schemes whose quantiser :func:`fit_quantiser_params` can fit to the data.
QUANTISED_SCHEMES = ("interval", "asymmetric-interval")


def fit_quantiser_params(
    scheme: str, params: dict[str, Any], data: Data, *, enrol_samples: int = 1, settings: Sequence[Any] = ()
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``params`` with ``offset`` and ``n`` fitted to the enrolment samples, and a note saying so.

    Applies to the interval family when ``params`` has a ``step`` but neither ``n`` nor ``offset``
    (otherwise ``params`` come back unchanged, with no note). The rule: ``lo``/``hi`` are the
    smallest and largest value, over every feature, of the first ``enrol_samples`` samples of
    every identity (the rows the evaluation enrols from — probes are not looked at); the margin is
    ``m = w − 1`` levels, ``w`` the widest tolerance that can be enrolled (the largest swept ``v``
    for ``interval``, ``q`` for ``asymmetric-interval``), so a probe within the tolerance of a
    template at the edge is still inside the range; then
    ``Quantiser.covering(lo − m·step, hi + m·step, step)``: ``offset = lo − m·step`` and
    ``n = ⌊(hi − lo)/step + 2m + 1/2⌋ + 1`` levels. Signed features are mapped, never clipped:
    probes that still fall outside are counted as malformed (and the report says how many).
    """
    from sketchauth.sketches.samples import Quantiser

    if scheme not in QUANTISED_SCHEMES or params.get("step") is None or "n" in params or "offset" in params:
        return dict(params), ()
    if not isinstance(data, LabelledVectors):
        raise ParameterError(f"{scheme} evaluates vectors, got {type(data).__name__}")
    enrol_samples = check_int("enrol_samples", enrol_samples)
    rows = np.concatenate([r[:enrol_samples] for _, r in rows_by_identity(data.identities)])
    values = np.asarray(data.samples[rows], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise SampleError("an enrolment sample has a NaN or infinite value: cannot fit the quantiser's range")
    if scheme == "interval":
        widest = max((int(x) for x in settings if isinstance(x, (int, np.integer))), default=1)
    else:
        widest = int(params.get("q", 1))
    margin = max(0, widest - 1)
    step = check_positive_float("step", params["step"])
    lo, hi = float(values.min()), float(values.max())
    fitted = Quantiser.covering(lo - margin * step, max(hi + margin * step, lo - margin * step + step), step)
    out = {**params, "n": fitted.n, "offset": fitted.offset if fitted.offset is not None else 0.0}
    note = (
        f"offset and n fitted to the enrolment samples ({enrol_samples} per identity): their values span "
        f"[{lo:g}, {hi:g}]; with {margin} level(s) of margin on each side (the widest tolerance, {widest}, minus 1) "
        f"and step {step:g} the sketch takes {fitted.describe()}; probes outside it are counted as malformed"
    )
    return out, (note,)


def evaluate_adapter(
    scheme: str,
    params: dict[str, Any],
    data: Data,
    settings: Sequence[Any],
    **options: Any,
) -> ErrorRateResult:
    """:func:`evaluate_scheme` for a registered scheme with its adapter's defaults.

    For the interval family with a ``step`` but neither ``n`` nor ``offset`` in ``params``, the
    range is fitted to the enrolment samples first (:func:`fit_quantiser_params`).
    """
    ad = adapter(scheme)
    expected = LabelledSets if ad.data_kind == "sets" else LabelledVectors
    if not isinstance(data, expected):
        raise ParameterError(f"{scheme} evaluates {ad.data_kind}, got {type(data).__name__}")
    options.setdefault("baseline_metrics", ad.baseline_metrics)
    if options.get("enrol_samples", 1) < ad.min_enrol_samples:
        raise ParameterError(f"{scheme} enrols from at least {ad.min_enrol_samples} samples (enrol_samples)")
    params, _ = fit_quantiser_params(
        scheme, params, data, enrol_samples=options.get("enrol_samples", 1), settings=settings
    )
    from sketchauth.sketches.base import scheme_class  # a missing parameter: a clear error, not a KeyError

    scheme_class(scheme).parameters.check_swept(
        scheme, params, None if ad.sweep_at_enrolment else ad.sweep, where="params"
    )
    return evaluate_scheme(
        lambda setting: ad.make_sketch(params, setting),
        ad.enrol,
        data,
        settings,
        parameter=ad.sweep,
        probe_fn=ad.probe_for(params),
        decide=ad.decide,
        **options,
    )
