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

Speed and exactness: the registered schemes are decided by their exact acceptance rules on arrays
(:mod:`sketchauth.evaluate.deciders`: the interval box, the s1/s2 rules, at most ``t`` byte errors,
``|A Δ B| ≤ t``), any other (the vaults, a new family) by its own batch decoder, and the same run
re-decides a seeded sample of at least 10^4 comparisons (all of them in smaller runs) by real
``decode``; the result's
``decode_check`` states how many disagreed (0 — anything else is a bug the report shows loudly).
The comparisons stream in tiles on ``jobs`` worker processes or a Dask cluster (:mod:`.blocks`).

Modules: this one runs the sweep and holds its result; the comparison plan and the enrolment of
the population are :mod:`.trials`, the acceptance rules :mod:`.deciders`, the unprotected
comparator :mod:`.baselines`, the per-scheme defaults :mod:`.adapters` (derived from the schemes'
descriptors) and the templates
:mod:`sketchauth.templates`. Their public names are re-exported here.

Extension point (a feature pipeline, ``--pipeline``): :func:`evaluate_scheme` takes callables —
``scheme_factory(setting) -> SecureSketch``, ``enrol_fn(sketch, samples, setting) -> secret``,
optionally ``probe_fn(sample) -> probe`` (a feature transform applied to every probe before
decoding) and ``decide`` (a batch decider with the signature of :func:`decide_by_decoding`).
A pipeline supplies its transform as ``probe_fn`` and ``enrol_fn`` and reuses everything else.

Example::

    >>> from sketchauth.evaluate.data import VectorModel, synthetic_vectors
    >>> data = synthetic_vectors(20, 3, 8, seed=1, model=VectorModel(noise=1.0))
    >>> result = evaluate_adapter("interval", {"n": 256, "features": 8}, data, [1, 3, 6], seed=1)
    >>> [p.setting for p in result.points], result.points[-1].fnmr < result.points[0].fnmr
    ([1, 3, 6], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.adapters import (
    ADAPTERS,
    ProbeFn,
    SchemeAdapter,
    adapter,
    fit_quantiser_params,
    quantised_schemes,
)
from sketchauth.evaluate.baselines import (
    SCORE_FILE_LIMIT,
    TARGET_FMR,
    TARGET_FNMR,
    BaselineResult,
    baseline_scores,
    scorer,
)
from sketchauth.evaluate.blocks import Job, check_ids
from sketchauth.evaluate.blocks import run as blocks_run
from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.deciders import (
    CROSSCHECK_MIN,
    DecideFn,
    crosscheck_by_decoding,
    crosscheck_with_verify,
    decide_batch,
    decide_by_decoding,
    decide_interval,
    prepare_decider,
)
from sketchauth.evaluate.protocol import TrialPlan
from sketchauth.evaluate.rates import RatePoint, eer, eer_interval, identity_bootstraps
from sketchauth.evaluate.tally import Candidates, Tally, pair_keys
from sketchauth.evaluate.trials import Data, EnrolFn, Enrolled, enrol_population, plan_trials, samples_of
from sketchauth.sketches.base import SecureSketch, scheme_class
from sketchauth.sketches.params import check_int
from sketchauth.templates import enrol_byte_mode, enrol_majority_set, enrol_rounded_mean, fit_set_size

__all__ = [
    "ADAPTERS",
    "TARGET_FMR",
    "TARGET_FNMR",
    "BaselineResult",
    "DecideFn",
    "EnrolFn",
    "Enrolled",
    "ErrorRateResult",
    "ProbeFn",
    "RunOptions",
    "SchemeAdapter",
    "SweepSpec",
    "TrialPlan",
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
    "quantised_schemes",
]

SchemeFactory = Callable[[Any], SecureSketch[Any, Any]]
#: Bootstrap resamples of the identity-level intervals (ISO/IEC 19795-1).
BOOTSTRAP_RESAMPLES = 2000


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


def _identity_intervals(trials: np.ndarray, errors: np.ndarray, identities: int, *, seed: int) -> list[dict[str, Any]]:
    """FNMR and FMR intervals per setting, bootstrapped over enrolled identities (ISO/IEC 19795-1), seeded.

    ``trials`` ``(2, J)``: genuine (row 0) and impostor (row 1) counts per identity; ``errors``
    ``(S, 2, J)``: the same per setting. Every setting's interval resamples the same identities
    (one draw per row of ``trials``, as each setting alone would draw with this seed).
    """
    fnmr = identity_bootstraps(errors[:, 0], trials[0], resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    fmr = identity_bootstraps(errors[:, 1], trials[1], resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    note = f"{BOOTSTRAP_RESAMPLES} resamples of the {identities} enrolled identities, seed {seed}"
    return [
        {"fnmr_ci_identity": list(a), "fmr_ci_identity": list(b), "bootstrap": note}
        for a, b in zip(fnmr, fmr, strict=True)
    ]


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return _NoProgress()
    # Imported here for start-up cost: tqdm loads importlib.metadata (~0.1 s), and only progress bars need it.
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="cmp", unit_scale=True, leave=False)


@dataclass(frozen=True)
class SweepSpec:
    """How :func:`evaluate_scheme` turns samples into decisions over its sweep.

    ``parameter`` names the swept setting; ``probe_fn`` maps each raw sample to what ``decode``
    takes (default: none); ``decide`` is the batch decider; ``baseline_metrics`` the unprotected
    comparisons scored beside it; ``enrol_once``: the secret does not depend on the setting, so
    each identity is enrolled once.
    """

    parameter: str = "setting"
    probe_fn: ProbeFn | None = None
    decide: DecideFn = decide_by_decoding
    baseline_metrics: Sequence[str] = ()
    enrol_once: bool = False


@dataclass(frozen=True)
class RunOptions:
    """How much :func:`evaluate_scheme` runs and where.

    ``enrol_samples`` per enrolment, ``max_impostors_per_identity`` (default: every other
    identity), ``seed``; ``jobs`` worker processes or a Dask ``client``; ``progress`` bars;
    ``crosscheck_trials`` argon2 round trips per setting; ``decode_check`` real decodes (default
    :data:`~sketchauth.evaluate.deciders.CROSSCHECK_MIN`; 0 turns it off).
    """

    enrol_samples: int = 1
    max_impostors_per_identity: int | None = None
    seed: int = 0
    jobs: int = 1
    progress: bool = False
    crosscheck_trials: int = 0
    decode_check: int | None = None
    client: Any = None


def evaluate_scheme(
    scheme_factory: SchemeFactory,
    enrol_fn: EnrolFn,
    data: Data,
    settings: Sequence[Any],
    *,
    sweep: SweepSpec = SweepSpec(),
    run: RunOptions = RunOptions(),
) -> ErrorRateResult:
    """FNMR/FMR per setting through the real scheme (protocol in the module docstring).

    ``scheme_factory(setting)`` builds the sketch for one setting of the swept ``sweep.parameter``;
    ``enrol_fn(sketch, samples, setting)`` turns an identity's enrolment samples into its secret;
    ``sweep`` (:class:`SweepSpec`) says how samples become decisions, ``run`` (:class:`RunOptions`)
    how much runs and where. ``run.decode_check`` comparisons are re-decided by real ``decode``
    (:func:`~sketchauth.evaluate.deciders.crosscheck_by_decoding`): every one when the sweep has
    fewer, else spread over the settings, a third of them boundary trials; the result's
    ``decode_check`` states how many were checked and how many disagreed (must be 0).

    The comparisons stream (:mod:`sketchauth.evaluate.blocks`): tiles of identities × probes are
    decided under every setting and reduced at once to exact counts, on ``run.jobs`` processes or
    a Dask ``run.client``, in memory bounded by a tile; the same integers whichever runs it.
    """
    if not settings:
        raise ParameterError("the sweep needs at least one setting")
    check_int("jobs", run.jobs)
    trials = plan_trials(
        data, enrol_samples=run.enrol_samples, max_impostors_per_identity=run.max_impostors_per_identity, seed=run.seed
    )
    order = trials.probe_index
    probes = _probes(data, order, sweep.probe_fn)
    sketches = [scheme_factory(setting) for setting in settings]
    scheme_name = sketches[0].scheme_name
    population = _enrol_all(sketches, enrol_fn, data, trials, settings, sweep.enrol_once)
    budget = CROSSCHECK_MIN if run.decode_check is None else check_int("decode_check", run.decode_check, 0)
    per_setting = -(-budget // len(settings)) if budget else 0
    scorers = [scorer(m, data, trials) for m in sweep.baseline_metrics]
    streamed = [m for m, sc in zip(sweep.baseline_metrics, scorers, strict=True) if sc is not None]
    job = Job.create(
        trials,
        [prepare_decider(sweep.decide, sk, en, probes) for sk, en in zip(sketches, population, strict=True)],
        seed=run.seed,
        check=max(per_setting, run.crosscheck_trials),
        scorers=[sc for sc in scorers if sc is not None],
        features=_width(probes),
    )
    comparisons = trials.genuine_count + trials.impostor_count
    bar = _progress(comparisons, f"{scheme_name}: {len(settings)} settings of {sweep.parameter}", run.progress)
    tally = blocks_run(job, jobs=run.jobs, client=run.client, progress=bar.update)
    bar.close()
    points = _rate_points(tally, settings, scheme_name, sweep.parameter)
    per_trials, per_errors = tally.per_identity(len(trials.labels))
    intervals = _identity_intervals(per_trials, per_errors, len(trials.labels), seed=run.seed)
    checks = _Checks(job, tally, sketches, population, probes, order, jobs=run.jobs, seed=run.seed)
    crosscheck = _argon2_crosscheck(checks, len(settings), run.crosscheck_trials)
    check: dict[str, Any] = checks.decode(per_setting, settings, sweep.parameter, run.progress) if budget else {}
    baselines = tuple(
        _baseline(m, tally.scores[streamed.index(m)] if m in streamed else None, data, trials)
        for m in sweep.baseline_metrics
    )
    return ErrorRateResult(
        scheme=scheme_name,
        parameter=sweep.parameter,
        points=tuple(points),
        eer=_sweep_eer(points),
        identities=len(trials.labels),
        samples=trials.samples,
        enrol_samples=run.enrol_samples,
        malformed_probes=tuple(int(x) for x in tally.malformed),
        baselines=baselines,
        crosscheck=crosscheck,
        decode_check=check,
        identity_intervals=tuple(intervals),
        eer_range=_sweep_eer_range(points),
        trial_labels=_trial_labels(data, trials) if baselines and baselines[0].scores is not None else None,
    )


def _enrol_all(
    sketches: list[Any], enrol_fn: EnrolFn, data: Data, trials: Any, settings: Sequence[Any], once: bool
) -> list[Enrolled]:
    """Every identity enrolled under every setting's sketch (``once``: one secret per identity)."""
    population = [enrol_population(sketches[0], enrol_fn, data, trials, settings[0])]
    for sk, st in zip(sketches[1:], settings[1:], strict=True):
        population.append(
            enrol_population(sk, enrol_fn, data, trials, st, secrets_from=population[0] if once else None)
        )
    return population


def _probes(data: Data, order: np.ndarray, probe_fn: ProbeFn | None) -> Any:
    """The probes in plan order (identity by identity): the tiles' probe positions."""
    raw = samples_of(data)
    if probe_fn is None:
        return raw[order] if isinstance(raw, np.ndarray) else [raw[r] for r in order.tolist()]
    return _matrix_if_possible([probe_fn(raw[r]) for r in order.tolist()])


def _rate_points(tally: Any, settings: Sequence[Any], scheme_name: str, parameter: str) -> list[RatePoint]:
    """One rate point per setting (a ``SampleError`` when no genuine probe could be decoded)."""
    n_gen, n_imp = tally.genuine_trials, tally.impostor_trials
    points = []
    for s, setting in enumerate(settings):
        if n_gen and tally.genuine_malformed[s] == n_gen:
            raise SampleError(
                f"no genuine probe could be decoded by {scheme_name} with {parameter}={setting}: "
                "the data does not fit the scheme"
            )
        points.append(
            RatePoint.from_counts(setting, int(tally.false_non_matches[s]), n_gen, int(tally.false_matches[s]), n_imp)
        )
    return points


def _argon2_crosscheck(checks: Any, settings: int, trials: int) -> dict[str, int]:
    """``trials`` seeded argon2 enrol/verify round trips per setting, and how many agreed."""
    if not trials:
        return {}
    agreed = checked = 0
    for s in range(settings):
        a, c = checks.verify(s, trials)
        agreed, checked = agreed + a, checked + c
    return {"checked": checked, "agreed": agreed}


def _matrix_if_possible(rows: list[Any]) -> Any:
    """Transformed probes as one numeric matrix when they are equal-length vectors (compact to send
    to worker processes and a cluster), else the list as it is (sets, bytes)."""
    vectors = bool(rows) and all(isinstance(r, np.ndarray) and r.ndim == 1 and r.dtype.kind in "iuf" for r in rows)
    if vectors and len({(r.shape, r.dtype) for r in rows}) == 1:
        return np.stack(rows)
    return rows


def _width(probes: Any) -> int:
    """Cells per pair of a tile: the features of a vector, else a bitmap's words (a set) or bytes."""
    if isinstance(probes, np.ndarray) and probes.ndim == 2:
        return int(probes.shape[1])
    return 64


def _pairs(trials: TrialPlan) -> np.ndarray:
    return np.hstack([trials.genuine, trials.impostor])


def _trial_labels(data: Data, trials: TrialPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Enrolled identity label, probe's label and probe row of every trial (plan order; small runs)."""
    pairs = _pairs(trials)
    return np.asarray(trials.labels, dtype=object)[pairs[0]], np.asarray(data.identities)[pairs[1]], pairs[1]


def _baseline(metric: str, histograms: Any, data: Data, trials: TrialPlan) -> BaselineResult:
    """A baseline from the run's histograms; with every trial's score when the run is small enough."""
    if trials.genuine_count + trials.impostor_count <= SCORE_FILE_LIMIT or histograms is None:
        pairs = _pairs(trials)
        return BaselineResult.from_scores(
            metric, *np.split(baseline_scores(metric, data, trials, pairs), [trials.genuine_count])
        )
    return BaselineResult.from_histograms(metric, *histograms)


@dataclass
class _Checks:
    """The same run's checks of the fast decisions on the pairs the tally kept (:class:`~.tally.Candidates`)."""

    job: Job
    tally: Tally
    sketches: list[SecureSketch[Any, Any]]
    population: list[Enrolled]
    probes: Any
    order: np.ndarray
    jobs: int
    seed: int

    @property
    def pairs(self) -> np.ndarray:
        ids = self.candidates.ids
        return np.vstack([ids // self.job.positions, ids % self.job.positions])

    @property
    def candidates(self) -> Candidates:
        assert self.tally.candidates is not None
        return self.tally.candidates

    def verify(self, s: int, count: int) -> tuple[int, int]:
        """Argon2 ``verify`` on ``count`` kept pairs, half of them accepted (:func:`crosscheck_with_verify`)."""
        c = self.candidates
        return crosscheck_with_verify(
            self.sketches[s], self.population[s], self.probes, self.pairs, c.accepted[s], count, seed=self.seed
        )

    def chosen(self, s: int, count: int) -> np.ndarray:
        """Indices into the candidates: a third boundary, a third accepted (smallest keys), the rest random."""
        c = self.candidates
        if self.job.total() <= count:
            return np.flatnonzero(c.picked)
        keys = pair_keys(c.ids, self.seed, s)
        taken = np.zeros(c.ids.size, dtype=bool)
        for pool in (c.boundary, c.accepted[s]):
            where = np.flatnonzero(pool & ~taken)
            taken[where[np.argsort(keys[where], kind="stable")[: count // 3]]] = True
        randoms = np.searchsorted(c.ids, check_ids(self.job, self.job.k, s))
        randoms = randoms[~taken[randoms]][: count - int(taken.sum())]
        taken[randoms] = True
        return np.flatnonzero(taken)

    def decode(self, count: int, settings: Sequence[Any], parameter: str, progress: bool) -> dict[str, Any]:
        """Re-decide ``count`` comparisons per setting by real ``decode`` (:func:`crosscheck_by_decoding`)."""
        c = self.candidates
        boundary = c.boundary
        total = checked = disagreements = boundary_checked = 0
        examples: list[dict[str, Any]] = []
        bar = _progress(min(count, self.job.total()) * len(settings), "real decodes (cross-check)", progress)
        for s, setting in enumerate(settings):
            chosen = self.chosen(s, count)
            n, d, ex = crosscheck_by_decoding(
                self.sketches[s],
                self.population[s],
                self.probes,
                self.pairs,
                c.accepted[s],
                c.malformed[s],
                chosen,
                jobs=self.jobs,
            )
            total += self.tally.genuine_trials + self.tally.impostor_trials
            checked += n
            disagreements += d
            boundary_checked += int(boundary[chosen].sum())
            # The examples name the probe's row in the data, not its position in the plan.
            examples += [{parameter: setting, **x, "probe_row": int(self.order[x["probe_row"]])} for x in ex]
            bar.update(n)
        bar.close()
        return {
            "method": "real encode -> decode -> compare on a seeded sample of trials",
            "checked": checked,
            "disagreements": disagreements,
            "boundary_trials": boundary_checked,
            "total_trials": total,
            "all_trials": checked == total,
            "examples": examples[:5],
        }


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
    # A missing parameter: a clear error naming it, not a KeyError from the sketch.
    scheme_class(scheme).parameters.check_swept(
        scheme, params, None if ad.sweep_at_enrolment else ad.sweep, where="params"
    )
    sweep_fields = {k: options.pop(k) for k in ("baseline_metrics", "enrol_once") if k in options}
    unknown = sorted(set(options) - set(RunOptions.__dataclass_fields__))
    if unknown:
        raise ParameterError(
            f"unknown options {', '.join(unknown)}; known: {', '.join(RunOptions.__dataclass_fields__)}"
        )
    return evaluate_scheme(
        lambda setting: ad.make_sketch(params, setting),
        ad.enrol,
        data,
        settings,
        sweep=SweepSpec(parameter=ad.sweep, probe_fn=ad.probe_for(params), decide=ad.decide, **sweep_fields),
        run=RunOptions(**options),
    )
