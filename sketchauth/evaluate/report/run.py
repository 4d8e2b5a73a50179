"""Running the evaluation report: error rates, operating point, leakage and unlinkability (ISO/IEC 19795-1).

:func:`run_report` evaluates one :class:`EvaluationTarget` on labelled data:

1. **error rates** over the sweep (:func:`sketchauth.evaluate.error_rates.evaluate_scheme`),
   with the unprotected baselines and a cross-check of a few decisions against the real argon2
   ``verify``;
2. the **operating point**: the first setting of the sweep meeting both targets people ask for
   (NIST SP 800-63B-4: FMR ≤ 1/10,000 and FNMR < 5%); when none does, the setting minimising
   ``max(FNMR, FMR)`` (the one nearest the EER); ``operating_setting`` overrides;
3. the **leakage report** of the sketch at that setting (:mod:`sketchauth.evaluate.leakage`),
   with the false-accept cost from its FMR;
4. **unlinkability** at that setting (:mod:`sketchauth.evaluate.unlinkability`), when every
   identity has the ``2k`` samples two enrolments need, with its chance level, and
   **renewability** (:mod:`sketchauth.evaluate.renewability`) on the same two enrolments;
5. the unprotected baselines' **ROC and EPC** (:mod:`sketchauth.evaluate.report.curves`) and the
   **ISO/IEC 30136 / 24745 section** (:mod:`sketchauth.evaluate.report.standard`).

The rates' 95% intervals are Wilson score intervals, or exact Clopper–Pearson ones with
``interval="clopper-pearson"`` (:func:`sketchauth.evaluate.rates.rate_interval`).

For the interval family with a ``step`` but neither ``n`` nor ``offset``,
:meth:`EvaluationTarget.fitted` (what the command line uses) fits the quantiser's range to the
enrolment samples and the report's notes say so; comparisons whose probe the scheme refuses
(``malformed_probes``, e.g. outside that range) are rejections and the notes and Markdown say how
many, rather than advising a wider sweep.

The result is a :class:`Report`; :func:`sketchauth.evaluate.report.files.write_report` writes it.

**Extension point** (``--pipeline``). Everything above consumes an :class:`EvaluationTarget`:
a name, the swept parameter, ``factory(setting) -> SecureSketch``, ``enrol(sketch, samples,
setting)``, an optional ``probe(sample)`` transform, a batch ``decide`` and the baseline metrics.
:meth:`EvaluationTarget.from_scheme` builds one for a registered scheme; a feature pipeline
(transform + sketch, :func:`sketchauth.evaluate.pipelines.report_target.pipeline_target`) builds its own —
its ``enrol`` and ``probe`` apply the fitted transform — and passes it to :func:`run_report`
unchanged.

Example::

    >>> from sketchauth.evaluate.data import VectorModel, synthetic_vectors
    >>> data = synthetic_vectors(30, 3, 8, seed=1, model=VectorModel(noise=1.0))
    >>> target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 8})
    >>> report = run_report(target, data, [2, 4, 6], seed=1, profile=None, crosscheck_trials=0)
    >>> sorted(report.as_dict()["iso_30136"])
    ['irreversibility', 'performance', 'reference', 'renewability', 'standards', 'unlinkability']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sketchauth.enrolment import enrol, hasher
from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.baselines import SCORE_FILE_LIMIT
from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.error_rates import (
    TARGET_FMR,
    DecideFn,
    EnrolFn,
    ErrorRateResult,
    ProbeFn,
    RunOptions,
    SweepSpec,
    adapter,
    evaluate_scheme,
    fit_quantiser_params,
    quantised_schemes,
)
from sketchauth.evaluate.leakage import LeakageReport, leakage_report
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.rates import INTERVAL_METHODS, RatePoint
from sketchauth.evaluate.renewability import evaluate_renewability
from sketchauth.evaluate.report.curves import baseline_curves
from sketchauth.evaluate.report.standard import standard_section
from sketchauth.evaluate.security import OfflineAttack, attack_record, pin_cascade_bits
from sketchauth.evaluate.unlinkability import (
    UnlinkabilityOptions,
    UnlinkabilityResult,
    chance_level,
    evaluate_unlinkability,
    link_pairs,
)
from sketchauth.sketches.base import SecureSketch, scheme_class
from sketchauth.sketches.registry import scheme_descriptor

__all__ = [
    "REPORT_VERSION",
    "TARGET_FMR",
    "TARGET_FNMR",
    "EvaluationTarget",
    "Report",
    "ReportOptions",
    "check_scheme_params",
    "choose_operating_point",
    "default_sweep",
    "describe_data",
    "range_is_fitted",
    "run_report",
]

#: Version of the JSON layout; bumped whenever a key changes meaning or disappears.
REPORT_VERSION = 1
#: NIST SP 800-63B-4 targets for biometric comparison (``TARGET_FMR``: 1 in 10,000, from error_rates).
TARGET_FNMR = 0.05


@dataclass(frozen=True)
class EvaluationTarget:
    """What to evaluate: a sketch family with its swept parameter, enrolment and decision path."""

    name: str
    params: dict[str, Any]
    sweep: str
    factory: Callable[[Any], SecureSketch[Any, Any]]
    enrol: EnrolFn
    decide: DecideFn
    probe: ProbeFn | None = None
    baseline_metrics: tuple[str, ...] = ()
    data_kind: str = "vectors"
    min_enrol_samples: int = 1
    #: Remarks carried into the report's notes (e.g. a quantiser range fitted to the data).
    notes: tuple[str, ...] = ()
    #: ``enrol``'s secret does not depend on the setting (only the sketch does): each identity is
    #: enrolled once and its secret encoded under every setting of the sweep (same numbers, less
    #: work; :func:`~sketchauth.evaluate.error_rates.evaluate_scheme`). Leave it ``False`` unless
    #: that holds: e.g. a feature pipeline whose sweep only moves the sketch's tolerance.
    enrol_once: bool = False

    @classmethod
    def from_scheme(cls, scheme: str, params: dict[str, Any], *, notes: Sequence[str] = ()) -> EvaluationTarget:
        """The target of a registered scheme, from its evaluation adapter.

        ``params`` are the scheme's parameters without the swept one; a missing or unknown
        parameter, or the swept one given here, is a :class:`ParameterError` that lists what the
        scheme needs.
        """
        ad = adapter(scheme)
        check_scheme_params(scheme, params)
        return cls(
            name=scheme,
            params=dict(params),
            sweep=ad.sweep,
            factory=lambda setting: ad.make_sketch(params, setting),
            enrol=ad.enrol,
            decide=ad.decide,
            probe=ad.probe_for(params),
            baseline_metrics=ad.baseline_metrics,
            data_kind=ad.data_kind,
            min_enrol_samples=ad.min_enrol_samples,
            notes=tuple(notes),
        )

    @classmethod
    def fitted(
        cls,
        scheme: str,
        params: dict[str, Any],
        data: Any,
        *,
        enrol_samples: int | None = None,
        settings: Sequence[Any] = (),
    ) -> EvaluationTarget:
        """:meth:`from_scheme` after fitting an interval sketch's ``offset`` and ``n`` to the data.

        :func:`~sketchauth.evaluate.error_rates.fit_quantiser_params` (only when ``params`` has a
        ``step`` and neither ``n`` nor ``offset``); the fitted values are in the target's ``params``
        and its notes say how they were chosen.
        """
        k = enrol_samples if enrol_samples is not None else adapter(scheme).min_enrol_samples
        fitted, notes = fit_quantiser_params(scheme, params, data, enrol_samples=k, settings=settings)
        return cls.from_scheme(scheme, fitted, notes=notes)


def range_is_fitted(scheme: str, params: dict[str, Any]) -> bool:
    """Whether :meth:`EvaluationTarget.fitted` will fit ``offset`` and ``n`` to the data."""
    return (
        scheme in quantised_schemes()
        and params.get("step") is not None
        and "n" not in params
        and "offset" not in params
    )


def check_scheme_params(scheme: str, params: Any, *, where: str = "params") -> None:
    """Refuse evaluation parameters that miss a required key, name an unknown one or set the swept one.

    The message lists what the scheme needs (its :class:`~sketchauth.sketches.params.ParameterSpec`
    minus the parameter the sweep supplies), instead of a ``KeyError`` deep in the evaluation.
    """
    ad = adapter(scheme)
    swept = None if ad.sweep_at_enrolment else ad.sweep
    scheme_class(scheme).parameters.check_swept(scheme, params, swept, where=where)


def default_sweep(scheme: str, params: dict[str, Any]) -> list[int]:
    """A sensible sweep of the tolerance parameter when none is given: the descriptor's own
    (:attr:`~sketchauth.sketches.base.SchemeDescriptor.default_sweep`, pure: no data)."""
    d = scheme_descriptor(scheme)
    if d.default_sweep is None:
        raise ParameterError(f"no default sweep for {scheme!r}: pass the settings explicitly")
    return d.default_sweep(params)


def choose_operating_point(points: Sequence[RatePoint], override: Any = None) -> RatePoint:
    """The operating point (rule in the module docstring)."""
    if override is not None:
        for p in points:
            if p.setting == override:
                return p
        raise ParameterError(f"operating setting {override!r} is not in the sweep")
    for p in points:
        if p.meets(TARGET_FMR, TARGET_FNMR):  # integer counts, no float rounding at the boundary
            return p
    return min(points, key=lambda p: max(p.fnmr, p.fmr))


def _templates(sketch: SecureSketch[Any, Any], target: EvaluationTarget, data: Any, k: int, setting: Any) -> Any:
    """The enrolled secrets as a matrix (vectors, bytes; ``(b, v)`` side by side) or a set list."""
    rows = []
    for _, samples in data.by_identity():
        secret = sketch.check_secret(target.enrol(sketch, samples[:k], setting))
        if isinstance(secret, bytes):
            rows.append(np.frombuffer(secret, dtype=np.uint8).astype(np.int64))
        elif isinstance(secret, tuple):
            rows.append(
                np.concatenate([np.asarray(x) for x in secret])
                if target.data_kind == "vectors"
                else np.asarray(secret[0])
            )
        else:
            rows.append(np.asarray(secret))
    return np.stack(rows) if target.data_kind != "sets" else rows


@dataclass
class Report:
    """Results of :func:`run_report` (objects for plotting; :meth:`as_dict` for JSON)."""

    target: EvaluationTarget
    data_description: dict[str, Any]
    seed: int
    error_rates: ErrorRateResult
    operating_point: RatePoint
    leakage: LeakageReport
    unlinkability: UnlinkabilityResult | None
    notes: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    #: (c) the offline attack with the database and (d) the PIN cascade, beside the leakage's (a) and (b).
    security: dict[str, Any] = field(default_factory=dict)
    score_files: list[str] = field(default_factory=list)
    #: How the rates' 95% intervals were computed (:data:`~sketchauth.evaluate.rates.INTERVAL_METHODS`).
    interval_method: str = "wilson"
    #: D↔sys's chance level (labels permuted) and p-value (:func:`~sketchauth.evaluate.unlinkability.chance_level`).
    unlinkability_chance: dict[str, float] | None = None
    #: :func:`~sketchauth.evaluate.renewability.evaluate_renewability` at the operating setting.
    renewability: dict[str, Any] | None = None
    #: ROC and EPC per unprotected baseline (:func:`~sketchauth.evaluate.report.curves.baseline_curves`).
    curves: list[dict[str, Any]] = field(default_factory=list)
    #: True when the operating point was picked by the NIST rule on this data (no ``operating_setting``).
    chosen_on_evaluated_people: bool = False

    def _unlinkability_dict(self) -> dict[str, Any] | None:
        if self.unlinkability is None:
            return None
        out = self.unlinkability.to_dict()
        if self.unlinkability_chance is not None:
            out |= {k: v for k, v in self.unlinkability_chance.items() if k != "d_sys"}
        return out

    def as_dict(self) -> dict[str, Any]:
        payload = self._payload()
        payload["iso_30136"] = standard_section(payload)
        return payload

    def _payload(self) -> dict[str, Any]:
        op = self.operating_point
        payload: dict[str, Any] = _jsonable(
            {
                "report_version": REPORT_VERSION,
                "scheme": self.target.name,
                "params": self.target.params,
                "sweep": self.target.sweep,
                "seed": self.seed,
                "data": self.data_description,
                "error_rates": self.error_rates.to_dict(),
                "operating_point": {
                    **op.to_dict(),
                    "meets_targets": op.meets(TARGET_FMR, TARGET_FNMR),
                    # A setting picked from the sweep on the evaluated people flatters its own rates.
                    "chosen_on_evaluated_people": self.chosen_on_evaluated_people,
                    "target_fmr": TARGET_FMR,
                    "target_fnmr": TARGET_FNMR,
                },
                "leakage": {**self.leakage.to_dict(), **self.security},
                "interval_method": self.interval_method,
                "unlinkability": self._unlinkability_dict(),
                "renewability": self.renewability,
                "curves": self.curves,
                "figures": list(self.figures),
                "score_files": list(self.score_files),
                "notes": list(self.notes),
            }
        )
        return payload


def _jsonable(value: Any) -> Any:
    """Plain JSON types; non-finite floats become the strings "inf"/"-inf"/"nan"."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
    return value


def describe_data(data: LabelledVectors | LabelledSets, source: str) -> dict[str, Any]:
    """Counts only (never values): identities, samples, features or set sizes, where it came from."""
    out: dict[str, Any] = {"source": source, "identities": data.identity_count, "samples": len(data.identities)}
    if isinstance(data, LabelledVectors):
        out["features"] = data.features
    else:
        sizes = np.array([s.size for s in data.sets])
        out["set_size_mean"] = float(sizes.mean())
    return out


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """How :func:`run_report` evaluates: every option of ``sketchauth evaluate report`` beside the data.

    ``source`` names the data in the report; ``enrol_samples`` (default: the target's minimum)
    samples make each enrolment; ``max_impostors_per_identity`` subsamples the impostors (seeded
    by ``seed``, which seeds every random choice of the report). ``jobs`` worker processes, or a
    Dask ``client`` (:mod:`sketchauth.evaluate.distributed`), decide the comparisons
    (:mod:`sketchauth.evaluate.blocks`; the same integer counts either way); ``progress`` shows bars.
    ``profile`` is the argon2 profile whose false-accept cost the leakage reports (``None``: not
    measured); ``source_min_entropy`` the source's min-entropy in bits when known (else estimated
    from the templates). ``operating_setting`` overrides the NIST rule's choice;
    ``crosscheck_trials`` comparisons per setting are re-run through argon2 ``enrol``/``verify``.
    ``nonmated_per_identity``, ``omega`` and ``tau`` size and score the unlinkability attack.
    ``set_kind`` declares whether the evaluated people were in the data a transform or quantiser
    was fitted on (``"closed"``) or not (``"open"``); the report states the protocol either way.
    ``attack_people``/``attack_tries`` size the offline attack with the database (0 tries: skipped):
    up to that many enrolled people, each attacked with that many samples of the other people.
    ``interval`` names the method of the rates' 95% intervals (``"wilson"`` or ``"clopper-pearson"``).
    """

    source: str = "data"
    enrol_samples: int | None = None
    max_impostors_per_identity: int | None = None
    seed: int = 0
    jobs: int = 1
    progress: bool = False
    profile: str | None = "owasp"
    source_min_entropy: float | None = None
    operating_setting: Any = None
    crosscheck_trials: int = 10
    nonmated_per_identity: int = 10
    omega: float = 1.0
    tau: int = 2
    set_kind: str = "open"
    attack_people: int = 10
    attack_tries: int = 100
    interval: str = "wilson"
    client: Any = None


def run_report(
    target: EvaluationTarget,
    data: LabelledVectors | LabelledSets,
    settings: Sequence[Any],
    options: ReportOptions | None = None,
    **overrides: Any,
) -> Report:
    """Evaluate ``target`` on ``data`` over ``settings`` (steps in the module docstring).

    ``options`` (default :class:`ReportOptions`), with any of its fields overridden by keyword
    (``run_report(target, data, [2, 4], seed=1, profile=None)``).
    """
    opts = replace(options or ReportOptions(), **overrides)
    k = _enrol_samples(target, data, opts)
    rates = _error_rates(target, data, settings, k, opts)
    op = choose_operating_point(rates.points, opts.operating_setting)
    notes = [*target.notes, *_rate_notes(target, rates)]
    leak = _leakage(target, data, k, op, opts)
    linkage = _linkage(target, data, k, op.setting, opts)
    notes.extend(linkage.notes)
    description, plan = _description(data, k, opts)
    return Report(
        target,
        description,
        opts.seed,
        rates,
        op,
        leak,
        linkage.unlinkability,
        notes,
        security=_security(target, data, k, op.setting, leak, plan, opts),
        interval_method=opts.interval,
        unlinkability_chance=linkage.chance,
        renewability=linkage.renewability,
        curves=baseline_curves(rates, seed=opts.seed),
        chosen_on_evaluated_people=opts.operating_setting is None,
    )


def _enrol_samples(target: EvaluationTarget, data: Any, opts: ReportOptions) -> int:
    """Samples per enrolment, after refusing an unknown interval method, too few samples or the wrong data kind."""
    if opts.interval not in INTERVAL_METHODS:
        raise ParameterError(f"interval must be one of {', '.join(INTERVAL_METHODS)}, got {opts.interval!r}")
    k = opts.enrol_samples if opts.enrol_samples is not None else target.min_enrol_samples
    if k < target.min_enrol_samples:
        raise ParameterError(f"{target.name} enrols from at least {target.min_enrol_samples} samples")
    expected = LabelledSets if target.data_kind == "sets" else LabelledVectors
    if not isinstance(data, expected):
        raise ParameterError(f"{target.name} evaluates {target.data_kind}, got {type(data).__name__}")
    return k


def _error_rates(
    target: EvaluationTarget, data: Any, settings: Sequence[Any], k: int, opts: ReportOptions
) -> ErrorRateResult:
    """Step 1: the error rates over the sweep (the decision path), with the chosen intervals."""
    rates = evaluate_scheme(
        target.factory,
        target.enrol,
        data,
        settings,
        run=RunOptions(
            enrol_samples=k,
            max_impostors_per_identity=opts.max_impostors_per_identity,
            seed=opts.seed,
            jobs=opts.jobs,
            progress=opts.progress,
            crosscheck_trials=opts.crosscheck_trials,
            client=opts.client,
        ),
        sweep=SweepSpec(
            parameter=target.sweep,
            probe_fn=target.probe,
            decide=target.decide,
            baseline_metrics=target.baseline_metrics,
            enrol_once=target.enrol_once,
        ),
    )
    if opts.interval != "wilson":
        rates = replace(rates, points=tuple(p.with_interval(opts.interval) for p in rates.points))
    return rates


def _rate_notes(target: EvaluationTarget, rates: ErrorRateResult) -> list[str]:
    """What the reader of the rates must know: no per-trial score files, probes the scheme refused."""
    notes = []
    if rates.baselines and rates.trial_labels is None:
        first = rates.points[0]
        notes.append(
            f"no per-trial score files: they are written up to {SCORE_FILE_LIMIT:,} comparisons per setting and this "
            f"run has {first.genuine_trials + first.impostor_trials:,}; the unprotected baselines' DET, EER and rates "
            "come from their score histograms (exact counts, or a 65,536-bin grid beyond 2^18 distinct scores: "
            "'score_histogram' in report.json)"
        )
    malformed = sum(rates.malformed_probes)
    if malformed:
        per_setting = ", ".join(f"{p.setting}: {m}" for p, m in zip(rates.points, rates.malformed_probes, strict=False))
        notes.append(
            f"{malformed} comparisons over the sweep used a probe the scheme refuses "
            f"(per {target.sweep}: {per_setting}) — "
            "wrong length, not finite, or outside the range of an interval sketch's quantiser; each counts as a "
            "rejection, so FNMR includes them. Fix the data or the range (n, step, offset) before reading the rates "
            "or widening the sweep"
        )
    return notes


def _leakage(target: EvaluationTarget, data: Any, k: int, op: RatePoint, opts: ReportOptions) -> LeakageReport:
    """Step 3: the sketch's leakage at the operating setting, with the false-accept cost from its FMR."""
    sketch = target.factory(op.setting)
    known = opts.source_min_entropy is not None
    return leakage_report(
        sketch,
        source_min_entropy=opts.source_min_entropy,
        templates=None if known else _templates(sketch, target, data, k, op.setting),
        profile=opts.profile,
        false_matches=op.false_matches,
        impostor_trials=op.impostor_trials,
    )


@dataclass(frozen=True, slots=True)
class _Linkage:
    """Step 4's results: unlinkability, its chance level, renewability, or a note saying why not."""

    unlinkability: UnlinkabilityResult | None = None
    chance: dict[str, float] | None = None
    renewability: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


def _linkage(target: EvaluationTarget, data: Any, k: int, setting: Any, opts: ReportOptions) -> _Linkage:
    """Two enrolments of every identity at the operating setting: the unlinkability attack, then renewal."""
    sketch = target.factory(setting)
    twice = {"enrol_samples": k, "setting": setting, "nonmated_per_identity": opts.nonmated_per_identity}
    twice["seed"] = opts.seed
    omega, tau = opts.omega, opts.tau
    try:
        options = UnlinkabilityOptions(omega=omega, tau=tau, progress=opts.progress, **twice)
        link = evaluate_unlinkability(sketch, target.enrol, data, options)
        chance = chance_level(link.mated_scores, link.nonmated_scores, omega=omega, seed=opts.seed)
        pairs = link_pairs(sketch, target.enrol, data, **twice)
        renewal = evaluate_renewability(sketch, pairs, omega=omega, tau=tau, seed=opts.seed)
    except (ParameterError, SampleError) as exc:
        # E.g. too few samples for two enrolments, or a second enrolment the scheme cannot take.
        return _Linkage(notes=(f"unlinkability not evaluated (nor renewability): {exc}",))
    return _Linkage(link, chance, renewal)


def _description(data: Any, k: int, opts: ReportOptions) -> tuple[dict[str, Any], Any]:
    """The data's description with the protocol's statement, and the protocol's plan."""
    protocol = Protocol(k, opts.set_kind, getattr(data, "split_column", None))
    cap = opts.max_impostors_per_identity
    plan = protocol.plan(data.identities, getattr(data, "split", None), max_impostors_per_identity=cap, seed=opts.seed)
    description = describe_data(data, opts.source)
    description["protocol"] = {**protocol.to_dict(), "statement": protocol.describe(plan)}
    if cap is not None:
        description["protocol"]["statement"] += (
            f" Impostor probes subsampled: at most {cap} per identity (seed {opts.seed})."
        )
    return description, plan


def _security(
    target: EvaluationTarget, data: Any, k: int, setting: Any, leak: LeakageReport, plan: Any, opts: ReportOptions
) -> dict[str, Any]:
    """(c) the offline attack with the database and (d) the PIN cascade at the operating setting.

    The attacker holds every stored record (helper data and argon2id hash, the cheap ``test``
    profile here: evaluations are counted, not timed) and tries the samples of the *other* people
    in the data (a zero-effort background) through the helper data and the hash.
    """
    out: dict[str, Any] = {}
    people, tries, seed = opts.attack_people, opts.attack_tries, opts.seed
    sketch = target.factory(setting)
    if leak.source_min_entropy_bits is not None:
        out["pin_cascade"] = pin_cascade_bits(leak.source_min_entropy_bits, leak.sketch_bits, leak.loss_bound_bits)
    if tries <= 0 or people <= 0:
        return out
    raw = data.samples if isinstance(data, LabelledVectors) else data.sets
    owner = np.full(len(raw), -1)
    for i, rows in enumerate(plan.probe_rows):
        owner[rows] = i
    for i, rows in enumerate(plan.enrol_rows):
        owner[rows] = i
    order = np.random.default_rng(seed).permutation(len(raw))
    ph = hasher("test")
    found, spent = [], []
    tried = 0
    for i, rows in enumerate(plan.enrol_rows[:people]):
        enrol_samples = raw[rows] if isinstance(data, LabelledVectors) else [raw[r] for r in rows]
        record = enrol(sketch, target.enrol(sketch, enrol_samples, setting), password_hasher=ph)
        others = order[owner[order] != i][:tries]
        tried = max(tried, int(others.size))
        probes = (raw[r] if target.probe is None else target.probe(raw[r]) for r in others.tolist())
        hit, used = attack_record(sketch, record, probes, ph)
        found.append(hit)
        spent.append(used)
    out["offline_attack"] = OfflineAttack(tuple(found), tuple(spent), tried, len(raw), "test").to_dict()
    return out
