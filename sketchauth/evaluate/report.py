"""The evaluation report: error rates, leakage and unlinkability as JSON, Markdown and PNG (ISO/IEC 19795-1).

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
   identity has the ``2k`` samples two enrolments need.

For the interval family with a ``step`` but neither ``n`` nor ``offset``,
:meth:`EvaluationTarget.fitted` (what the command line uses) fits the quantiser's range to the
enrolment samples and the report's notes say so; comparisons whose probe the scheme refuses
(``malformed_probes``, e.g. outside that range) are rejections and the notes and Markdown say how
many, rather than advising a wider sweep.

:func:`write_report` writes ``report.json`` (stable keys, see :data:`REPORT_VERSION`),
``report.md`` and, with matplotlib (extra ``plots``), ``det.png``, ``scores.png`` and
``linkage.png``.

**Extension point** (``--pipeline``). Everything above consumes an :class:`EvaluationTarget`:
a name, the swept parameter, ``factory(setting) -> SecureSketch``, ``enrol(sketch, samples,
setting)``, an optional ``probe(sample)`` transform, a batch ``decide`` and the baseline metrics.
:meth:`EvaluationTarget.from_scheme` builds one for a registered scheme; a feature pipeline
(transform + sketch) builds its own — its ``enrol`` and ``probe`` apply the fitted transform —
and passes it to :func:`run_report` unchanged.

Example::

    >>> from sketchauth.evaluate.data import synthetic_vectors
    >>> data = synthetic_vectors(30, 3, 8, noise=1.0, seed=1)
    >>> target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 8})
    >>> report = run_report(target, data, [2, 4, 6], seed=1, profile=None, crosscheck_trials=0)
    >>> sorted(report.as_dict())[:3]
    ['data', 'error_rates', 'figures']
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.error_rates import (
    QUANTISED_SCHEMES,
    TARGET_FMR,
    DecideFn,
    EnrolFn,
    ErrorRateResult,
    ProbeFn,
    adapter,
    evaluate_scheme,
    fit_quantiser_params,
)
from sketchauth.evaluate.leakage import LeakageReport, leakage_report
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.rates import RatePoint
from sketchauth.evaluate.unlinkability import UnlinkabilityResult, evaluate_unlinkability
from sketchauth.sketches.base import SecureSketch, scheme_class

__all__ = [
    "REPORT_VERSION",
    "TARGET_FMR",
    "TARGET_FNMR",
    "EvaluationTarget",
    "Report",
    "check_scheme_params",
    "choose_operating_point",
    "default_sweep",
    "draw_figures",
    "markdown",
    "plots_available",
    "require_plots",
    "run_report",
    "write_report",
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
    factory: Callable[[Any], SecureSketch]
    enrol: EnrolFn
    decide: DecideFn
    probe: ProbeFn | None = None
    baseline_metrics: tuple[str, ...] = ()
    data_kind: str = "vectors"
    min_enrol_samples: int = 1
    #: Remarks carried into the report's notes (e.g. a quantiser range fitted to the data).
    notes: tuple[str, ...] = ()

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


def _range_is_fitted(scheme: str, params: dict[str, Any]) -> bool:
    """Whether :meth:`EvaluationTarget.fitted` will fit ``offset`` and ``n`` to the data."""
    return (
        scheme in QUANTISED_SCHEMES and params.get("step") is not None and "n" not in params and "offset" not in params
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
    """A sensible sweep of the tolerance parameter when none is given."""
    if scheme == "interval":
        return [2, 4, 6, 8, 10, 12, 16]
    if scheme == "asymmetric-interval":
        return [0, 1, 2, 4, 8]
    if scheme in ("code-offset", "fuzzy-vault"):
        size = int(params.get("n", params.get("m", 8)))
        top = (size - 1) // 2
        return sorted({max(1, round(top * f)) for f in (0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0)})
    if scheme == "pinsketch":
        return [2, 4, 8, 12, 16, 24]
    if scheme == "weighted-vault":
        top = (int(params.get("g", 9)) - 1) // 2
        return sorted({max(0, round(top * f)) for f in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)})
    raise ParameterError(f"no default sweep for {scheme!r}: pass the settings explicitly")


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


def _templates(sketch: SecureSketch, target: EvaluationTarget, data: Any, k: int, setting: Any) -> Any:
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

    def as_dict(self) -> dict[str, Any]:
        op = self.operating_point
        return _jsonable(
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
                    "target_fmr": TARGET_FMR,
                    "target_fnmr": TARGET_FNMR,
                },
                "leakage": {**self.leakage.to_dict(), **self.security},
                "unlinkability": None if self.unlinkability is None else self.unlinkability.to_dict(),
                "figures": list(self.figures),
                "score_files": list(self.score_files),
                "notes": list(self.notes),
            }
        )


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


def run_report(
    target: EvaluationTarget,
    data: LabelledVectors | LabelledSets,
    settings: Sequence[Any],
    *,
    source: str = "data",
    enrol_samples: int | None = None,
    max_impostors_per_identity: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    progress: bool = False,
    profile: str | None = "owasp",
    source_min_entropy: float | None = None,
    operating_setting: Any = None,
    crosscheck_trials: int = 10,
    nonmated_per_identity: int = 10,
    omega: float = 1.0,
    tau: int = 2,
    set_kind: str = "open",
    attack_people: int = 10,
    attack_tries: int = 100,
) -> Report:
    """Evaluate ``target`` on ``data`` (steps in the module docstring).

    ``set_kind`` declares whether the evaluated people were in the data a transform or quantiser
    was fitted on (``"closed"``) or not (``"open"``); the report states the protocol either way.
    ``attack_people``/``attack_tries`` size the offline attack with the database (0 tries: skipped):
    up to that many enrolled people, each attacked with that many samples of the other people.
    """
    k = enrol_samples if enrol_samples is not None else target.min_enrol_samples
    if k < target.min_enrol_samples:
        raise ParameterError(f"{target.name} enrols from at least {target.min_enrol_samples} samples")
    expected = LabelledSets if target.data_kind == "sets" else LabelledVectors
    if not isinstance(data, expected):
        raise ParameterError(f"{target.name} evaluates {target.data_kind}, got {type(data).__name__}")
    rates = evaluate_scheme(
        target.factory,
        target.enrol,
        data,
        settings,
        parameter=target.sweep,
        probe_fn=target.probe,
        decide=target.decide,
        baseline_metrics=target.baseline_metrics,
        enrol_samples=k,
        max_impostors_per_identity=max_impostors_per_identity,
        seed=seed,
        jobs=jobs,
        progress=progress,
        crosscheck_trials=crosscheck_trials,
    )
    op = choose_operating_point(rates.points, operating_setting)
    sketch = target.factory(op.setting)
    notes: list[str] = list(target.notes)
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
    templates = None if source_min_entropy is not None else _templates(sketch, target, data, k, op.setting)
    leak = leakage_report(
        sketch,
        source_min_entropy=source_min_entropy,
        templates=templates,
        profile=profile,
        false_matches=op.false_matches,
        impostor_trials=op.impostor_trials,
    )
    link = None
    try:
        link = evaluate_unlinkability(
            sketch,
            target.enrol,
            data,
            enrol_samples=k,
            setting=op.setting,
            nonmated_per_identity=nonmated_per_identity,
            omega=omega,
            tau=tau,
            seed=seed,
            progress=progress,
        )
    except (ParameterError, SampleError) as exc:
        # E.g. too few samples for two enrolments, or a second enrolment the scheme cannot take.
        notes.append(f"unlinkability not evaluated: {exc}")
    protocol = Protocol(k, set_kind, getattr(data, "split_column", None))
    plan = protocol.plan(
        data.identities, getattr(data, "split", None), max_impostors_per_identity=max_impostors_per_identity, seed=seed
    )
    description = describe_data(data, source)
    description["protocol"] = {**protocol.to_dict(), "statement": protocol.describe(plan)}
    if max_impostors_per_identity is not None:
        description["protocol"]["statement"] += (
            f" Impostor probes subsampled: at most {max_impostors_per_identity} per identity (seed {seed})."
        )
    security = _security(target, data, k, op.setting, leak, attack_people, attack_tries, seed, plan)
    return Report(target, description, seed, rates, op, leak, link, notes, security=security)


def _security(
    target: EvaluationTarget,
    data: Any,
    k: int,
    setting: Any,
    leak: LeakageReport,
    people: int,
    tries: int,
    seed: int,
    plan: Any,
) -> dict[str, Any]:
    """(c) the offline attack with the database and (d) the PIN cascade at the operating setting.

    The attacker holds every stored record (helper data and argon2id hash, the cheap ``test``
    profile here: evaluations are counted, not timed) and tries the samples of the *other* people
    in the data (a zero-effort background) through the helper data and the hash.
    """
    from sketchauth.enrolment import enrol, hasher
    from sketchauth.features.security import OfflineAttack, attack_record, pin_cascade_bits

    out: dict[str, Any] = {}
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


# -- writing ---------------------------------------------------------------------------------------------
def plots_available() -> bool:
    """Whether matplotlib (extra ``plots``) can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def require_plots() -> None:
    """``ParameterError`` naming the extra to install unless :func:`plots_available`."""
    if not plots_available():
        raise ParameterError("PNG plots need matplotlib: pip install 'sketchauth[plots]' (or pass --no-plots)")


def write_report(report: Report, out: str | Path, *, plots: bool = True) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and (``plots``) the PNG figures into ``out``."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"cannot create {out}: {exc.strerror}") from None
    if plots:
        require_plots()
        report.figures = draw_figures(report, out)
    report.score_files = write_scores(report, out / "scores")
    payload = report.as_dict()
    (out / "report.json").write_text(json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")
    (out / "report.md").write_text(markdown(payload))
    return payload


def write_scores(report: Report, directory: Path) -> list[str]:
    """Each unprotected baseline's scores as bob.measure 4/5-column and pyeer files (see
    :func:`sketchauth.evaluate.rates.write_score_files`), so the rates can be re-checked there."""
    from sketchauth.evaluate.rates import write_score_files

    er = report.error_rates
    if not er.baselines or er.trial_labels is None:
        return []
    claimed, real, rows = er.trial_labels
    labels = [(c, r, f"sample{q}") for c, r, q in zip(claimed.tolist(), real.tolist(), rows.tolist(), strict=False)]
    n_gen = er.points[0].genuine_trials
    names: list[str] = []
    for b in er.baselines:
        written = write_score_files(
            directory,
            f"unprotected_{b.metric}",
            b.genuine_scores,
            b.impostor_scores,
            genuine_labels=labels[:n_gen],
            impostor_labels=labels[n_gen:],
        )
        names += [f"scores/{n}" for n in written]
    return names


def _eer_advice(malformed: int) -> str:
    if malformed:
        return f" ({malformed} comparisons had malformed probes: fix the data or the range first, see the notes)"
    return " (widen the sweep)"


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _ci(ci: Sequence[float]) -> str:
    return f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def _num(x: Any, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}f}"


def decode_check_line(check: dict[str, Any]) -> str:
    """One sentence on the same-run check of the fast decisions against real decodes."""
    if not check:
        return "Fast decisions were not cross-checked against real decodes in this run."
    scope = (
        "every comparison" if check["all_trials"] else f"{check['checked']:,} of {check['total_trials']:,} comparisons"
    )
    return (
        f"{check['disagreements']} disagreements between the fast exact decider and real encode → decode on {scope} "
        f"({check['boundary_trials']:,} of them boundary trials, decided differently by two settings)"
    )


def _decode_check_lines(check: dict[str, Any]) -> list[str]:
    line = decode_check_line(check)
    if check and check["disagreements"]:
        examples = "; ".join(json.dumps(x, sort_keys=True) for x in check.get("examples", []))
        return [
            "",
            f"> **WARNING: {line}. The rates above do NOT equal the real scheme** — report this as a bug "
            f"of the evaluation. First disagreements: {examples}",
        ]
    return [f"Cross-check: {line}."]


def markdown(r: dict[str, Any]) -> str:
    """The human-readable summary of a report dictionary."""
    lines = _error_rate_lines(r)
    lines += _operating_point_lines(r)
    lines += _leakage_lines(r["leakage"])
    lines += _unlinkability_lines(r["unlinkability"])
    if r["figures"]:
        lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in r["figures"]]
    for n in r["notes"]:
        lines.append(f"\nNote: {n}")
    return "\n".join(lines) + "\n"


def _error_rate_lines(r: dict[str, Any]) -> list[str]:
    """Title, data description and the error-rate table with its EER, decode and baseline lines."""
    er, data = r["error_rates"], r["data"]
    lines = [
        f"# sketchauth evaluation: {r['scheme']}",
        "",
        f"Parameters `{json.dumps(r['params'], sort_keys=True)}`, swept `{r['sweep']}`, seed {r['seed']}.",
        f"Data: {data['source']} — {data['identities']} identities, {data['samples']} samples; "
        f"enrolment from the first {er['enrol_samples']} sample(s); {er['genuine_trials']} genuine and "
        f"{er['impostor_trials']} impostor comparisons per setting.",
        "",
        data.get("protocol", {}).get("statement", ""),
        "",
        "## Error rates (protected: each scheme's exact acceptance rule, cross-checked by real encode → decode)",
        "",
        f"| {r['sweep']} | FNMR (errors/trials) | 95% Wilson | 95% over people "
        "| FMR (errors/trials) | 95% Wilson | 95% over people |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [_error_rate_row(p) for p in er["points"]]
    lines += [
        "",
        "Wilson intervals treat comparisons as independent; the intervals over people resample whole enrolled "
        "identities (seeded bootstrap, ISO/IEC 19795-1) and are the ones to quote when one person's comparisons "
        "are correlated.",
    ]
    eer = er["eer"]
    malformed = sum(int(p.get("malformed_probes", 0)) for p in er["points"])
    lines += [
        "",
        f"EER over the sweep: {'not reached' + _eer_advice(malformed) if eer is None else _pct(eer)}"
        + (f" (interpolated; FVC low/high {_ci(er['eer_fvc_low_high'])})." if er.get("eer_fvc_low_high") else "."),
    ]
    if malformed:
        lines.append(
            f"**{malformed} comparisons used a probe the scheme refuses** (counted as rejections; see the notes)."
        )
    lines += _decode_check_lines(er.get("decode_check") or {})
    if er["crosscheck"]:
        cc = er["crosscheck"]
        lines.append(f"Cross-check against argon2 `verify`: {cc['agreed']}/{cc['checked']} decisions agree.")
    if er["baselines"]:
        lines += ["", "Unprotected matching of the same templates and probes:", ""]
        lines += [_baseline_line(b) for b in er["baselines"]]
    return lines


def _error_rate_row(p: dict[str, Any]) -> str:
    """One row of the error-rate table: a setting's FNMR and FMR with their intervals."""
    return (
        f"| {p['setting']} | {_pct(p['fnmr'])} ({p['false_non_matches']}/{p['genuine_trials']}) | "
        f"{_ci(p['fnmr_ci'])} | "
        f"{_ci(p['fnmr_ci_identity']) if 'fnmr_ci_identity' in p else '—'} | "
        f"{_pct(p['fmr'])} ({p['false_matches']}/{p['impostor_trials']}) | {_ci(p['fmr_ci'])} | "
        f"{_ci(p['fmr_ci_identity']) if 'fmr_ci_identity' in p else '—'} |"
    )


def _baseline_line(b: dict[str, Any]) -> str:
    """One unprotected-matching baseline: its EER and the rates at the target FMR and FNMR."""
    return (
        f"- {b['metric']} distance: EER {_pct(b['eer'])} (FVC low/high {_ci(b['eer_fvc_low_high'])}); "
        f"FNMR at FMR ≤ {b['target_fmr']:g}: {_pct(b['fnmr_at_target_fmr'])} "
        f"{_ci(b['fnmr_at_target_fmr_ci'])}; "
        f"FMR at FNMR ≤ {b['target_fnmr']:g}: {_pct(b['fmr_at_target_fnmr'])} {_ci(b['fmr_at_target_fnmr_ci'])}"
    )


def _operating_point_lines(r: dict[str, Any]) -> list[str]:
    """The chosen setting's rates against the NIST SP 800-63B-4 targets."""
    op = r["operating_point"]
    return [
        "",
        "## Operating point",
        "",
        f"{r['sweep']} = {op['setting']}: FNMR {_pct(op['fnmr'])} {_ci(op['fnmr_ci'])}, "
        f"FMR {_pct(op['fmr'])} {_ci(op['fmr_ci'])} — "
        + ("meets" if op["meets_targets"] else "does **not** meet")
        + " the NIST SP 800-63B-4 targets (FMR ≤ 1/10,000, FNMR < 5%).",
    ]


def _leakage_lines(lk: dict[str, Any]) -> list[str]:
    """The leakage bound, the remaining entropy and the attack costs, one bullet each."""
    lines = [
        "",
        "## Leakage and attack costs",
        "",
        f"- loss bound |S| − H∞(R) = {_num(lk['sketch_bits'])} − {_num(lk['randomness_bits'])} = "
        f"**{_num(lk['loss_bound_bits'])} bits**",
        f"- source min-entropy ({lk['source_entropy_origin']}): {_num(lk['source_min_entropy_bits'])} bits; "
        f"remaining H̃∞(d|S) ≥ **{_num(lk['remaining_bits'])} bits**",
    ]
    og = lk["offline_guessing"]
    if og["hash"] is not None:
        lines.append(
            f"- offline guessing: 2^{_num(og['log2_argon2_evaluations'])} argon2id evaluations at profile "
            f"`{og['hash']['profile']}` ({og['hash']['cpu_seconds'] * 1000:.1f} ms CPU each) "
            f"≈ 2^{_num(og['log2_cpu_years'])} CPU years"
        )
    fa = lk["false_accept_attack"]
    if fa is not None:
        bits = "∞ (no false match observed)" if fa["bits"] is None else f"{fa['bits']:.1f}"
        lines.append(
            f"- false-accept attack log2(1/FMR): {bits} bits; at least {fa['bits_ci'][0]:.1f} bits (95% upper FMR)"
        )
    lines += _attack_lines(lk.get("offline_attack"), lk.get("pin_cascade"))
    ex = lk["exact_small_instance"]
    if ex is not None:
        lines.append(_exact_instance_line(ex))
    for n in lk["notes"]:
        lines.append(f"- note: {n}")
    return lines


def _attack_lines(oa: dict[str, Any] | None, pc: dict[str, Any] | None) -> list[str]:
    """The database attack's cost and the PIN cascade's remaining entropy, when evaluated."""
    lines = []
    if oa is not None:
        med = oa["median_argon2_evaluations"]
        lines.append(
            "- offline attack with the database (other people's samples through helper data and hash): "
            + (
                f"> {oa['tries_per_person']} tries for most people"
                if med is None
                else f"median {med:g} argon2 evaluations to the first success"
            )
            + f"; {oa['broken']}/{oa['people']} people broken within {oa['tries_per_person']} tries"
        )
    if pc is not None:
        lines.append(
            f"- with a 6-digit PIN cascade (Theorem 7, β = {pc['beta']:.1f}): "
            f"remaining ≥ {pc['residual_bits']:.1f} bits ({pc['diverted_bits']:+.1f} diverted to the PIN)"
        )
    return lines


def _exact_instance_line(ex: dict[str, Any]) -> str:
    """The exact leakage of the small instance and its repeated-enrolment Chernoff rate."""
    rate = ex["chernoff_rate_bits"]
    rate_text = rate if isinstance(rate, str) else _num(rate, 3)
    return (
        f"- exact leakage of the small instance `{json.dumps(ex['params'], sort_keys=True)}` over {ex['secrets']} "
        f"uniform secrets: {ex['exact_loss_bits']:.3f} bits (bound {ex['loss_bound_bits']:.3f}); "
        f"repeated-enrolment Chernoff rate: {rate_text} bits per enrolment"
    )


def _unlinkability_lines(ul: dict[str, Any] | None) -> list[str]:
    """The linkage attack's D↔sys and the template fraction recovered from two linked sketches."""
    lines = ["", "## Unlinkability", ""]
    if ul is None:
        lines.append("Not evaluated (see notes).")
        return lines
    rev = ul["reversibility"]
    lines += [
        f"Attack `{ul['attack']}` ({ul['description']}) on {ul['mated_pairs']} mated and "
        f"{ul['nonmated_pairs']} non-mated pairs:",
        f"**D↔sys = {ul['d_sys']:.3f}** (0 unlinkable, 1 fully linkable; ω = {ul['omega']:g}).",
        f"Reversibility: {rev['method']} — {_pct(rev['recovered_fraction'])} of the template recovered "
        "from two linked sketches.",
    ]
    return lines


def probit(x: Any, floor: float) -> np.ndarray:
    """Normal deviate ``Φ⁻¹(x)`` with rates clipped to ``[floor, 1 − floor]`` (DET axes)."""
    dist = NormalDist()
    arr = np.clip(np.asarray(x, dtype=float), floor, 1.0 - floor)
    return np.array([dist.inv_cdf(float(v)) for v in arr.ravel()]).reshape(arr.shape)


# -- figures (matplotlib, extra "plots") --------------------------------------------------------------
_DET_TICKS = (1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8, 0.95)
#: At most this many points of a baseline DET curve are drawn (the curve is thinned, not binned).
_DET_POINTS = 2000


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


#: Colours of every figure: same person (genuine trials, mated pairs) and different people
#: (impostor trials, non-mated pairs) — the score histograms and the linkage plot agree.
SAME_PERSON_COLOUR = "#1b7837"
OTHER_PERSON_COLOUR = "#c51b7d"


def det_floor(*trials: int) -> float:
    """Where DET plots draw a rate of 0 (or 1): half a count from the edge of the largest trial set."""
    return 0.5 / max(*trials, 2)


def draw_nist_targets(ax: Any, floor: float) -> None:
    """The NIST SP 800-63B-4 targets as labelled lines (FMR ≤ 1/10,000; FNMR < 5%)."""
    x, y = probit([TARGET_FMR], floor)[0], probit([TARGET_FNMR], floor)[0]
    ax.axvline(x, color="grey", ls=":", lw=1)
    ax.axhline(y, color="grey", ls=":", lw=1)
    ax.annotate(
        "NIST FMR ≤ 0.01%",
        (x, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(3, -12),
        textcoords="offset points",
        fontsize=7,
        color="dimgrey",
    )
    ax.annotate(
        "NIST FNMR < 5%",
        (1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(-4, 3),
        textcoords="offset points",
        fontsize=7,
        color="dimgrey",
        ha="right",
    )


def det_axes(ax: Any, floor: float) -> None:
    """Normal-deviate axes labelled in percent; rates of 0 (1) sit at ``floor`` (``1 − floor``), labelled 0 and 100%."""
    _det_axes(ax, floor)
    edge, top = probit([floor, 1 - floor], floor)
    for axis in (ax.xaxis, ax.yaxis):
        positions = [edge, *axis.get_ticklocs(), top]
        labels = ["0", *[t.get_text() for t in axis.get_ticklabels()], "100%"]
        axis.set_ticks(positions, labels)
    ax.set_xlim(edge - 0.25, top + 0.25)
    ax.set_ylim(edge - 0.25, top + 0.25)
    ax.axvline(edge, color="lightgrey", lw=0.8, zorder=0)
    ax.axhline(edge, color="lightgrey", lw=0.8, zorder=0)
    ax.axvline(top, color="lightgrey", lw=0.8, zorder=0)
    ax.axhline(top, color="lightgrey", lw=0.8, zorder=0)


def _det_axes(ax: Any, floor: float) -> None:
    ticks: list[float] = []
    for t in _DET_TICKS:
        # Keep ticks at least 0.55 normal deviates apart so their labels do not overlap.
        if floor <= t <= 1 - floor and (not ticks or probit([t], floor)[0] - probit([ticks[-1]], floor)[0] >= 0.55):
            ticks.append(t)
    positions = probit(ticks, floor)
    labels = [f"{100 * t:g}%" for t in ticks]
    ax.set_xticks(positions, labels, rotation=30)
    ax.set_yticks(positions, labels)
    ax.set_xlabel("FMR (false match rate, normal-deviate scale)")
    ax.set_ylabel("FNMR (false non-match rate, normal-deviate scale)")
    ax.grid(True, alpha=0.3)


def _draw_det(report: Report, path: Path) -> None:
    plt = _pyplot()
    fig = det_figure(report)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def det_figure(report: Report) -> Any:
    """The DET figure of a report (matplotlib ``Figure``; :func:`draw_figures` saves it)."""
    plt = _pyplot()
    er = report.error_rates
    first = er.points[0]
    # Rates of 0 or 1 have no normal deviate; draw them at half a count from the edge.
    floor = det_floor(first.impostor_trials, first.genuine_trials)
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    for b in er.baselines:
        keep = np.unique(np.linspace(0, b.fmr.size - 1, min(b.fmr.size, _DET_POINTS)).astype(int))
        ax.plot(probit(b.fmr[keep], floor), probit(b.fnmr[keep], floor), label=f"unprotected ({b.metric})", lw=1.2)
    fmr = np.array([p.fmr for p in er.points])
    fnmr = np.array([p.fnmr for p in er.points])
    x, y = probit(fmr, floor), probit(fnmr, floor)
    xerr = np.abs(probit(np.array([p.fmr_ci for p in er.points]).T, floor) - x)
    yerr = np.abs(probit(np.array([p.fnmr_ci for p in er.points]).T, floor) - y)
    ax.errorbar(
        x, y, xerr=xerr, yerr=yerr, fmt="o", color="black", ms=4, capsize=2, label=f"protected ({er.scheme}), 95% CI"
    )
    for p, xi, yi in zip(er.points, x, y, strict=False):
        ax.annotate(f"{er.parameter}={p.setting}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    draw_nist_targets(ax, floor)
    det_axes(ax, floor)
    ax.set_title("DET: protected operating points vs unprotected matching")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _draw_scores(report: Report, path: Path) -> None:
    plt = _pyplot()
    baselines = report.error_rates.baselines
    fig, axes = plt.subplots(1, max(1, len(baselines)), figsize=(5.5 * max(1, len(baselines)), 4.0), squeeze=False)
    for ax, b in zip(axes[0], baselines, strict=False):
        both = np.concatenate([b.genuine_scores, b.impostor_scores])
        edges = np.histogram_bin_edges(both, bins=60)
        ax.hist(
            b.impostor_scores,
            bins=edges,
            density=True,
            alpha=0.6,
            color=OTHER_PERSON_COLOUR,
            label=f"impostor ({b.impostor_scores.size})",
        )
        ax.hist(
            b.genuine_scores,
            bins=edges,
            density=True,
            alpha=0.6,
            color=SAME_PERSON_COLOUR,
            label=f"genuine ({b.genuine_scores.size})",
        )
        ax.set_xlabel(f"{b.metric} distance to the enrolled template")
        ax.set_ylabel("density")
        ax.set_title(f"unprotected scores ({b.metric}), EER {100 * b.eer:.3g}%")
        ax.legend(fontsize=8)
    if not baselines:
        axes[0][0].text(0.5, 0.5, "no unprotected baseline for this target", ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_linkage(report: Report, path: Path) -> None:
    plt = _pyplot()
    fig = linkage_figure(report)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def linkage_figure(report: Report) -> Any:
    """The linkage histograms and local D↔ of a report (matplotlib ``Figure``)."""
    plt = _pyplot()
    ul = report.unlinkability
    assert ul is not None
    m = ul.measures
    centres = (m.edges[:-1] + m.edges[1:]) / 2
    width = float(np.diff(m.edges).min())
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.bar(
        centres,
        m.p_nonmated,
        width=width,
        alpha=0.55,
        color=OTHER_PERSON_COLOUR,
        label=f"non-mated ({m.nonmated_pairs})",
    )
    ax.bar(centres, m.p_mated, width=width, alpha=0.55, color=SAME_PERSON_COLOUR, label=f"mated ({m.mated_pairs})")
    ax.set_xlabel(f"linkage score: {ul.attack} ({'higher' if ul.higher_is_mated else 'lower'} = more likely mated)")
    ax.set_ylabel("share of pairs per bin")
    twin = ax.twinx()
    # D↔(s) only means something where mated pairs fall; elsewhere it is 0 by definition.
    seen = m.p_mated > 0
    twin.plot(centres[seen], m.d_local[seen], "k.", ms=5, label="local D<->(s) (bins with mated pairs)")
    twin.set_ylim(-0.02, 1.02)
    twin.set_ylabel("local linkability D<->(s)")
    ax.set_title(f"{ul.scheme}: D<->sys = {m.d_sys:.3f}")
    lines = ax.get_legend_handles_labels()
    tl = twin.get_legend_handles_labels()
    # Below the axes: inside, the legend covered the D↔ points it explains.
    ax.legend(lines[0] + tl[0], lines[1] + tl[1], fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    fig.tight_layout()
    return fig


def draw_figures(report: Report, out: Path) -> list[str]:
    """Draw the DET curve, the score histograms and the linkage histograms; return file names."""
    names = ["det.png", "scores.png"]
    _draw_det(report, out / "det.png")
    _draw_scores(report, out / "scores.png")
    if report.unlinkability is not None:
        _draw_linkage(report, out / "linkage.png")
        names.append("linkage.png")
    return names


# -- command line --------------------------------------------------------------------------------------
def _spec_value(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--synthetic {key}={text!r} is not a number") from None


def parse_synthetic(spec: str) -> dict[str, float]:
    """``"identities=200,samples=4,noise=2"`` → a mapping (values are numbers)."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ParameterError(f"--synthetic expects key=value pairs, got {item!r}")
        out[key.strip()] = _spec_value(key, value.strip())
    return out


_SYNTHETIC_KEYS = {
    "vectors": {"identities", "samples", "spread", "noise", "reliability_spread"},
    "strings": {"identities", "samples", "error_rate"},
    "sets": {"identities", "samples", "set_size", "dropout", "insertion"},
}


def synthetic_data(target: EvaluationTarget, spec: str, seed: int) -> LabelledVectors | LabelledSets:
    """A seeded synthetic population shaped for ``target`` (its features, length or universe)."""
    from sketchauth.evaluate import data as d

    opts = parse_synthetic(spec)
    unknown = set(opts) - _SYNTHETIC_KEYS[target.data_kind]
    if unknown:
        raise ParameterError(
            f"--synthetic keys for {target.data_kind}: {', '.join(sorted(_SYNTHETIC_KEYS[target.data_kind]))}; "
            f"unknown: {', '.join(sorted(unknown))}"
        )
    people = int(opts.pop("identities", 100))
    samples = int(opts.pop("samples", 4))
    p = target.params
    if target.data_kind == "vectors":
        try:
            features, n = int(p["features"]), int(p["n"])
        except KeyError as exc:
            raise ParameterError(f"--params needs {exc.args[0]!r} to shape synthetic vectors") from None
        return d.synthetic_vectors(people, samples, features, n=n, seed=seed, **opts)
    if target.data_kind == "strings":
        return d.synthetic_strings(people, samples, int(p.get("n", 32)), seed=seed, **opts)
    if target.name == "pinsketch":
        low, high, size = 1, 2 ** int(p.get("m", 16)), 32
    elif target.name == "fuzzy-vault":
        low, high, size = 0, int(p["p"]), int(p["m"])
    else:
        q, g = int(p.get("q", 4)), int(p.get("g", 30))
        low, high, size = 0, int(p["p"]), -(-g // (q - 1)) + 2
    size = int(opts.pop("set_size", size))
    return d.synthetic_sets(people, samples, low=low, high=high, set_size=size, seed=seed, **opts)


def _settings(text: str | None, scheme: str, params: dict[str, Any]) -> list[Any]:
    if text is None:
        return default_sweep(scheme, params)
    try:
        values = [json.loads(x) for x in text.split(",") if x.strip()]
    except json.JSONDecodeError:
        raise ParameterError(f"--sweep must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise ParameterError("--sweep is empty")
    return values


def cli_report(args: Any) -> int:
    """Handler of ``sketchauth evaluate report`` (arguments in :mod:`sketchauth.cli`)."""
    import sys

    from sketchauth.evaluate.data import load_sets, load_vectors

    if getattr(args, "pipeline", None) is not None:
        from sketchauth.features.report_target import cli_pipeline_report

        return cli_pipeline_report(args)
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"--params is not valid JSON: {exc.msg}") from None
    if not isinstance(params, dict):
        raise ParameterError("--params must be a JSON object")
    # An interval sketch with a step but neither n nor offset gets its range fitted to the data
    # below; until then its other parameters are checked with a provisional (largest) level count.
    provisional = {**params, "n": 2**40} if _range_is_fitted(args.scheme, params) else params
    check_scheme_params(args.scheme, provisional, where="--params")
    if args.plots:
        require_plots()  # before the evaluation, not after it
    target = EvaluationTarget.from_scheme(args.scheme, provisional)
    settings = _settings(args.sweep, args.scheme, provisional)
    target.factory(settings[0])  # the parameters' values, checked before any data is read or made
    if args.data is not None:
        data = load_sets(args.data) if target.data_kind == "sets" else load_vectors(args.data)
        source = f"file {Path(args.data).name}"
    else:
        data = synthetic_data(target, args.synthetic, args.seed)
        source = f"synthetic ({args.synthetic or 'defaults'}, seed {args.seed})"
    # An interval sketch given a step but neither n nor offset: fit the range to the enrolment data.
    target = EvaluationTarget.fitted(args.scheme, params, data, enrol_samples=args.enrol_samples, settings=settings)
    progress = not args.quiet and sys.stderr.isatty()
    report = run_report(
        target,
        data,
        settings,
        source=source,
        enrol_samples=args.enrol_samples,
        max_impostors_per_identity=args.max_impostors,
        seed=args.seed,
        jobs=args.jobs,
        progress=progress,
        profile=args.profile,
        source_min_entropy=args.source_entropy,
        operating_setting=None if args.operating_setting is None else json.loads(args.operating_setting),
        set_kind="closed" if getattr(args, "closed_set", False) else "open",
        attack_people=getattr(args, "attack_people", 10),
        attack_tries=getattr(args, "attack_tries", 50),
    )
    payload = write_report(report, args.out, plots=args.plots)
    print(summary(payload, args.out))
    return 0


def summary(r: dict[str, Any], out: Any) -> str:
    """The key numbers of a report, a few lines for the terminal."""
    er, op, lk, ul = r["error_rates"], r["operating_point"], r["leakage"], r["unlinkability"]
    lines = [
        f"{r['scheme']} {json.dumps(r['params'], sort_keys=True)}: {er['identities']} identities, "
        f"{er['genuine_trials']} genuine + {er['impostor_trials']} impostor comparisons per setting",
    ]
    for p in er["points"]:
        lines.append(
            f"  {r['sweep']}={p['setting']}: FNMR {_pct(p['fnmr'])} {_ci(p['fnmr_ci'])}  "
            f"FMR {_pct(p['fmr'])} {_ci(p['fmr_ci'])}"
        )
    lines.append(f"  EER (sweep): {'not reached' if er['eer'] is None else _pct(er['eer'])}")
    malformed = sum(int(p.get("malformed_probes", 0)) for p in er["points"])
    if malformed:
        lines.append(
            f"  malformed probes: {malformed} comparisons refused by the scheme "
            "(counted as rejections; see report notes)"
        )
    for b in er["baselines"]:
        lines.append(
            f"  unprotected {b['metric']}: EER {_pct(b['eer'])}, FNMR@FMR<=1e-4 {_pct(b['fnmr_at_target_fmr'])}"
        )
    lines.append(
        f"operating point {r['sweep']}={op['setting']}: FNMR {_pct(op['fnmr'])}, FMR {_pct(op['fmr'])}"
        + (" (meets NIST targets)" if op["meets_targets"] else " (misses NIST targets)")
    )
    og = lk["offline_guessing"]
    lines.append(
        f"leakage: bound {lk['loss_bound_bits']:.1f} bits; source {_num(lk['source_min_entropy_bits'])} bits "
        f"({lk['source_entropy_origin']}); remaining {_num(lk['remaining_bits'])} bits; "
        f"offline guessing 2^{_num(og['log2_cpu_seconds'])} CPU s"
    )
    fa = lk["false_accept_attack"]
    if fa is not None:
        lines.append(
            "false-accept attack: "
            + (
                f"{fa['bits']:.1f} bits"
                if fa["bits"] is not None
                else f">= {fa['bits_ci'][0]:.1f} bits (no false match seen)"
            )
        )
    oa, pc = lk.get("offline_attack"), lk.get("pin_cascade")
    if oa is not None:
        med = oa["median_argon2_evaluations"]
        lines.append(
            "offline attack with the database: "
            + (
                f"> {oa['tries_per_person']} tries for most people"
                if med is None
                else f"median {med:g} argon2 evaluations"
            )
            + f" ({oa['broken']}/{oa['people']} broken)"
        )
    if pc is not None:
        lines.append(
            f"with a 6-digit PIN cascade: remaining >= {pc['residual_bits']:.1f} bits "
            f"({pc['diverted_bits']:+.1f} diverted)"
        )
    lines.append(r["data"].get("protocol", {}).get("statement", ""))
    if ul is not None:
        lines.append(
            f"unlinkability ({ul['attack']}): D<->sys = {ul['d_sys']:.3f}; "
            f"reversibility {_pct(ul['reversibility']['recovered_fraction'])} of the template"
        )
    if er.get("decode_check"):
        flag = "WARNING: " if er["decode_check"]["disagreements"] else ""
        lines.append(f"{flag}decode cross-check: {decode_check_line(er['decode_check'])}")
    if er["crosscheck"]:
        cc = er["crosscheck"]
        lines.append(f"argon2 verify cross-check: {cc['agreed']}/{cc['checked']} agree")
    lines.append(
        f"wrote {Path(out) / 'report.json'}, report.md" + (f", {', '.join(r['figures'])}" if r["figures"] else "")
    )
    return "\n".join(lines)
