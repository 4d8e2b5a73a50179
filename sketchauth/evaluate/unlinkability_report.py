"""Unlinkability of real re-enrolments, per feature pipeline, with and without a pepper (ISO/IEC 30136).

**What is measured.** A feature transform is fitted on a *background* file
(:func:`~sketchauth.evaluate.fitting.transform.fit_transform`) and the pipelines of
:mod:`sketchauth.features.pipeline` are calibrated on it (interval, thermometer → PinSketch,
code-offset, asymmetric interval s1/s2/s3). On the *evaluation* file every identity's captures are
split (seeded order) into disjoint groups of ``enrol_samples`` captures; each group is enrolled
through the pipeline's own enrolment template (:meth:`Pipeline.secret_from_samples`, built on
:mod:`sketchauth.templates`) **twice**, once per deployment, each with its own encoding randomness.

* a **mated pair** is (deployment A's helper of group ``a``, deployment B's helper of group ``b``)
  of one identity with ``a < b``: two enrolments of one person from *disjoint* captures;
* a **non-mated pair** is the same for two different identities (a seeded subsample of all of
  them, at most ``max_nonmated``).

Every pair is scored by every linkage attack of the project that applies to the scheme
(:data:`PIPELINE_ATTACKS`: residue distance, difference decoding, the s1 tolerance test, the
similar-interval count, its even-interval variant and the parity test of
:mod:`sketchauth.evaluate.linkage`), and the scores give the local ``D↔(s)`` and global ``D↔sys``
of Gomez-Barrero et al., IEEE TIFS 2018 (:func:`~sketchauth.evaluate.unlinkability.linkability`).

**With a pepper.** Deployment A stores ``wrap(helper, p_A, N)`` and deployment B
``wrap(helper, p_B, N')`` (:func:`sketchauth.pepper.wrap`): the whole helper record sealed
(ChaCha20-Poly1305 under a key of the deployment's pepper, a fresh per-enrolment nonce; here
under seal keys drawn per run, :mod:`sketchauth.evaluate.sealing`), for
every scheme alike. The attacks then run on what the two databases store. A sealed record no
longer parses as a helper, so the project's attacks cannot be applied to it as they are; each
pair is scored by the best generic attack that can be stated (:func:`sealed_attack`): the
scheme's own attack when both records parse as helpers of the scheme (they practically never
do: the header is sealed too), else **byte agreement**, the number of equal bytes at equal
positions of two records of equal length (``-1`` for different lengths). The ``clear``
condition is the control: the same sealed records unsealed with each deployment's pepper (a
thief holding the databases *and* the peppers), which link exactly as unpeppered helpers. A
PinSketch whose syndromes are not independent is sealed like any other helper, but the
difference-decoding attack cannot read its syndromes as a group; both conditions then use the
smallest larger field where it can (:func:`attack_ready`).

**Chance level.** ``D↔sys`` is estimated from histograms, and with a few hundred mated pairs even
two identical distributions give a positive estimate. So the bins follow the sample size (one per
integer when the scores take few values, else ``⌈√M / 2⌉`` equal bins for ``M`` mated pairs), and
the report gives the estimate's chance level: ``D↔sys`` of the same scores with the mated /
non-mated labels permuted (mean and 95th percentile over ``permutations``). A ``D↔sys`` at or
below the 95th percentile is indistinguishable from unlinkable at this sample size.

**Repeated enrolments in one database.** For s2 and s3 the attacker holding ``k`` helpers of one
person in the *same* database (no pepper helps here: it is one deployment) intersects the
partitions (the attack of :mod:`sketchauth.evaluate.repeated`, here on real captures): per ``k``
the mean ``log2`` of the candidate ``(b, v)`` per feature and how often the first enrolment's
``(b, v)`` is pinned down exactly. The operational rule follows: the service never keeps two
helpers of one person, and revocation erases the old helper.

Example (two score lists: disjoint, then identical distributions)::

    >>> measure_linkability([5, 5, 6], [1, 2, 1, 2], permutations=0)["d_sys"]
    1.0
    >>> measure_linkability([1, 2, 1, 2], [1, 2, 2, 1], permutations=0)["d_sys"]
    0.0

**Modules.** This one runs the evaluation; the attacks on stored records are in
:mod:`sketchauth.evaluate.record_attacks` (the asymmetric adversaries' scores in
:mod:`sketchauth.evaluate.linkage`, the others in :mod:`sketchauth.evaluate.unlinkability`) and
the report's files in :mod:`sketchauth.evaluate.unlinkability_files`; their public names are
importable from here as well.

Nothing here keeps a sample; helpers live only in memory during the run. The deployments' seal
keys (:class:`~sketchauth.evaluate.sealing.DrawnSealer`) and nonces are drawn from :mod:`secrets`
(the scores do not depend on their values); only the grouping and subsampling are seeded.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SketchAuthError
from sketchauth.evaluate import fitting
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.linkage import partition_parity_bits, similar_even_intervals
from sketchauth.evaluate.record_attacks import (
    PIPELINE_ATTACKS,
    PairAttack,
    attack_ready,
    byte_agreement,
    parses_as_helper,
    registered_attack,
    sealed_attack,
)
from sketchauth.evaluate.repeated import _s2_candidates
from sketchauth.evaluate.sealing import DrawnSealer
from sketchauth.evaluate.unlinkability import chance_level, linkability

# The report's files (summary rows, Markdown, figure, writing) live in their own module; re-exported.
from sketchauth.evaluate.unlinkability_files import (
    plot_curves,
    render_markdown,
    summary_rows,
    write_unlinkability_report,
)
from sketchauth.features.pipeline import (
    AsymmetricIntervalPipeline,
    Pipeline,
)
from sketchauth.features.transform import FeatureTransform
from sketchauth.pepper import new_nonce
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.params import check_int

__all__ = [
    "OPERATIONAL_RULE",
    "PIPELINE_ATTACKS",
    "PIPELINE_KINDS",
    "PairAttack",
    "UnlinkabilityReportOptions",
    "attack_ready",
    "build_pipelines",
    "byte_agreement",
    "enrolment_groups",
    "measure_linkability",
    "partition_parity_bits",
    "plot_curves",
    "registered_attack",
    "render_markdown",
    "run_unlinkability_report",
    "sealed_attack",
    "similar_even_intervals",
    "summary_rows",
    "write_unlinkability_report",
]

#: The pipelines evaluated, in report order.
PIPELINE_KINDS = ("interval", "thermometer", "code-offset", "s1", "s2", "s3")
#: Permutations of the mated/non-mated labels for the chance level of ``D↔sys``.
DEFAULT_PERMUTATIONS = 200
#: Below this many mated pairs the report notes that D↔sys is coarse.
FEW_MATED_PAIRS = 100
#: Most non-mated pairs scored per pipeline (a seeded subsample beyond).
DEFAULT_MAX_NONMATED = 4000

OPERATIONAL_RULE = (
    "The service never keeps two helpers of one person: re-enrolment and revocation replace the "
    "record and erase the old helper (no copy in backups that outlive the rotation). Two helpers "
    "of one person in one database are linked by the same attacks as two unpeppered deployments, "
    "and several helpers can be combined against the template (sketchauth.evaluate.repeated); a "
    "pepper protects only across deployments (different peppers), not within one."
)


# -- the measures ----------------------------------------------------------------------------------
def _bins(mated: np.ndarray, nonmated: np.ndarray) -> int | None:
    """Bins for the sample size: one per integer when that is few enough, else ``⌈√M / 2⌉``."""
    count = max(2, math.ceil(math.sqrt(mated.size) / 2))
    scores = np.concatenate([mated, nonmated])
    integral = bool(np.all(scores == np.round(scores)))
    if integral and scores.max() - scores.min() + 1 <= count:
        return None
    return count


def measure_linkability(
    mated: Any, nonmated: Any, *, permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0
) -> dict[str, Any]:
    """``D↔sys``, the ``D↔(s)`` curve and the chance level (labels permuted) of two score lists."""
    m, n = np.asarray(mated, dtype=float), np.asarray(nonmated, dtype=float)
    bins = _bins(m, n)
    result = linkability(m, n, bins=bins)
    chance = chance_level(m, n, bins=bins, permutations=permutations, seed=seed)
    return {
        "d_sys": result.d_sys,
        "chance_d_sys_mean": chance["chance_d_sys_mean"],
        "chance_d_sys_p95": chance["chance_d_sys_p95"],
        "linked": bool(result.d_sys > chance["chance_d_sys_p95"]),
        "mated_pairs": int(m.size),
        "nonmated_pairs": int(n.size),
        "mated_mean": float(m.mean()),
        "nonmated_mean": float(n.mean()),
        "bins": int(result.d_local.size),
        "curve": {
            "edges": [float(x) for x in result.edges],
            "d_local": [float(x) for x in result.d_local],
            "p_mated": [float(x) for x in result.p_mated],
            "p_nonmated": [float(x) for x in result.p_nonmated],
        },
    }


# -- enrolment groups and pairs --------------------------------------------------------------------
def enrolment_groups(
    data: LabelledVectors, enrol_samples: int, groups: int, seed: int, *, source: str = "the data"
) -> list[tuple[Any, list[np.ndarray]]]:
    """Per identity, up to ``groups`` disjoint groups of ``enrol_samples`` captures (seeded order).

    Identities with fewer than two groups are left out; ``ParameterError`` (naming ``source``)
    when fewer than two identities remain.
    """
    enrol_samples = check_int("enrol_samples", enrol_samples, 1)
    groups = check_int("groups", groups, 2)
    rng = np.random.default_rng(seed)
    out = []
    counts = []
    for label, samples in data.by_identity():
        counts.append(len(samples))
        order = rng.permutation(len(samples))
        usable = min(groups, len(samples) // enrol_samples)
        if usable >= 2:
            out.append((label, [samples[order[g * enrol_samples : (g + 1) * enrol_samples]] for g in range(usable)]))
    if len(out) < 2:
        raise ParameterError(
            f"{source}: {len(out)} of {len(counts)} identities have the {2 * enrol_samples} samples two disjoint "
            f"enrolments of {enrol_samples} captures need (most samples of one identity: {max(counts)}); "
            "give at least two identities that many samples, or lower --enrol-samples"
        )
    return out


def _pairs(
    group_counts: Sequence[int], max_nonmated: int, rng: np.random.Generator
) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int, int]]]:
    """Mated ``(i, a, i, b)`` with ``a < b`` and a subsample of non-mated ``(i, a, j, b)``, ``i ≠ j``."""
    mated = [(i, a, i, b) for i, g in enumerate(group_counts) for a in range(g) for b in range(a + 1, g)]
    flat = [(i, a) for i, g in enumerate(group_counts) for a in range(g)]
    total = sum(group_counts) ** 2 - sum(g * g for g in group_counts)
    if total <= max_nonmated:
        chosen = [(i, a, j, b) for i, a in flat for j, b in flat if i != j]
    else:
        chosen, seen = [], set()
        while len(chosen) < max_nonmated:
            x, y = (int(v) for v in rng.integers(0, len(flat), size=2))
            if flat[x][0] != flat[y][0] and (x, y) not in seen:
                seen.add((x, y))
                chosen.append((*flat[x], *flat[y]))
    return mated, chosen


# -- pipelines -------------------------------------------------------------------------------------
def build_pipelines(
    transform: FeatureTransform,
    background: LabelledVectors,
    kinds: Sequence[str],
    *,
    enrol_samples: int,
    target_fmr: float,
) -> dict[str, Pipeline | str]:
    """Each pipeline calibrated on the background at ``target_fmr``, or the reason it cannot be."""
    out: dict[str, Pipeline | str] = {}
    for kind in kinds:
        try:
            out[kind] = _build(kind, transform, background, enrol_samples, target_fmr)
        except SketchAuthError as exc:
            out[kind] = str(exc)
    return out


def _build(kind: str, transform: FeatureTransform, background: LabelledVectors, m: int, fmr: float) -> Pipeline:
    if kind == "interval":
        return fitting.interval.for_target_fmr(
            transform, background, CalibrationOptions(target_fmr=fmr, enrol_samples=m)
        )
    if kind == "thermometer":
        return fitting.thermometer.for_target_fmr(
            transform, background, CalibrationOptions(target_fmr=fmr, enrol_samples=m)
        )
    if kind == "code-offset":
        # Every level bit: few dimensions at 2 bits make too few bytes for any t >= 1.
        return fitting.code_offset.for_target_fmr(
            transform, background, CalibrationOptions(target_fmr=fmr, code_bits=transform.level_bits, enrol_samples=m)
        )
    if m < 2:
        raise ParameterError("the asymmetric pipelines need at least 2 captures per enrolment (--enrol-samples)")
    s2 = fitting.asymmetric.for_target_fmr(transform, background, CalibrationOptions(target_fmr=fmr, enrol_samples=m))
    return AsymmetricIntervalPipeline(
        transform, s2.dims, q=s2.sketch.params()["q"], scale=s2.scale, margin=s2.margin, spread=s2.spread, scheme=kind
    )


# -- one pipeline ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Enrolled:
    """Both deployments' helpers per (identity, group), in clear and peppered."""

    clear: tuple[list[list[bytes]], list[list[bytes]]]
    peppered: tuple[list[list[bytes]], list[list[bytes]]]


def _enrol_all(
    pipeline: Pipeline, sketch: SecureSketch[Any, Any], groups: list[tuple[Any, list[np.ndarray]]]
) -> _Enrolled:
    """Both deployments' sealed records, and the control: the same records unsealed with each pepper."""
    # Each deployment's seal key, drawn (DrawnSealer): the bytes a pepper's key seals, without its argon2id.
    peppers = (DrawnSealer(), DrawnSealer())
    clear: tuple[list[list[bytes]], list[list[bytes]]] = ([], [])
    peppered: tuple[list[list[bytes]], list[list[bytes]]] = ([], [])
    for _, captures in groups:
        secrets_ = [pipeline.secret_from_samples(c) for c in captures]
        for d in (0, 1):
            # Each deployment encodes anew: a randomised sketch draws fresh randomness.
            nonces = [new_nonce() for _ in secrets_]
            sealed = [peppers[d].seal(sketch.encode(s), n, b"") for s, n in zip(secrets_, nonces, strict=True)]
            peppered[d].append(sealed)
            clear[d].append([peppers[d].open(r, n, b"") for r, n in zip(sealed, nonces, strict=True)])
    return _Enrolled(clear, peppered)


def _score_pairs(
    sketch: SecureSketch[Any, Any],
    attack: PairAttack,
    stored: tuple[list[list[bytes]], list[list[bytes]]],
    pairs: Sequence[tuple[int, int, int, int]],
    tau: int,
    tick: Callable[[int], Any],
) -> np.ndarray:
    prepared = [[[attack.prepare(sketch, h) for h in person] for person in side] for side in stored]
    out = np.empty(len(pairs))
    for k, (i, a, j, b) in enumerate(pairs):
        out[k] = attack.compare(prepared[0][i][a], prepared[1][j][b], tau)
        tick(1)
    return out


def _evaluate_pipeline(
    kind: str,
    pipeline: Pipeline,
    groups: list[tuple[Any, list[np.ndarray]]],
    *,
    tau: int,
    max_nonmated: int,
    permutations: int,
    seed: int,
    progress: bool,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    mated, nonmated = _pairs([len(g) for _, g in groups], max_nonmated, rng)
    sketch = attack_ready(pipeline.sketch)
    enrolled = _enrol_all(pipeline, sketch, groups)
    attacks = PIPELINE_ATTACKS[kind]
    from tqdm import tqdm  # start-up: tqdm loads importlib.metadata; only progress bars need it

    results = []
    total = 2 * len(attacks) * (len(mated) + len(nonmated))
    with tqdm(total=total, desc=f"unlinkability {kind}", unit="pair", leave=False, disable=not progress) as bar:
        for attack in attacks:
            entry: dict[str, Any] = {
                "attack": attack.name,
                "description": attack.description,
                "higher_is_mated": attack.higher_is_mated,
            }
            for label, stored, scored in (
                ("clear", enrolled.clear, attack),
                ("peppered", enrolled.peppered, sealed_attack(attack)),
            ):
                m = _score_pairs(sketch, scored, stored, mated, tau, bar.update)
                n = _score_pairs(sketch, scored, stored, nonmated, tau, bar.update)
                entry[label] = measure_linkability(m, n, permutations=permutations, seed=seed)
            entry["peppered"]["parsed_fraction"] = _parsed_fraction(sketch, enrolled.peppered)
            results.append(entry)
    helpers = [h for per_identity in enrolled.clear[0] for h in per_identity]
    sealed = [h for per_identity in enrolled.peppered[0] for h in per_identity]
    out = {
        "scheme": sketch.scheme_name,
        "params": sketch.params(),
        "dims": int(pipeline.dims.size),
        # What a thief of one database sees of a record: its length (the seal adds a 16-byte tag).
        "helper_bytes_mean": float(np.mean([len(h) for h in helpers])),
        "sealed_bytes_mean": float(np.mean([len(h) for h in sealed])),
        "attacks": results,
    }
    if sketch is not pipeline.sketch:
        out["pipeline_params"] = pipeline.sketch.params()
        out["sketch_note"] = (
            f"the pipeline's {pipeline.sketch!r} has dependent syndromes, which the difference-decoding attack "
            f"cannot read as a group; both conditions use {sketch!r} (same sets and tolerance t, larger field)"
        )
    return out


def _parsed_fraction(sketch: SecureSketch[Any, Any], stored: tuple[list[list[bytes]], list[list[bytes]]]) -> float:
    """Share of sealed records that happen to parse as helpers of the scheme (expected: 0)."""
    records = [h for side in stored for person in side for h in person]
    return float(np.mean([parses_as_helper(sketch, h) for h in records]))


# -- repeated enrolments in one database (s2, s3) --------------------------------------------------
def _repeated(pipeline: Pipeline, groups: list[tuple[Any, list[np.ndarray]]], taus: Sequence[int]) -> dict[str, Any]:
    """The partition-intersection attacker with ``k = 1..K`` helpers of one person in one database,
    for each closeness ``τ`` in ``taus`` (real re-enrolments move ``(b, v)`` by more than simulated noise)."""
    sketch = pipeline.sketch
    k_max = min(len(g) for _, g in groups)
    n = int(sketch.params()["n"])
    targets, parts = [], []
    for _, captures in groups:
        targets.append(pipeline.secret_from_samples(captures[0]))  # the target: the first enrolment's (b, v)
        parts.append([sketch.partition(sketch.encode(pipeline.secret_from_samples(c))) for c in captures[:k_max]])  # type: ignore[attr-defined]
    return {
        "attack": "partition-intersection",
        "description": "intervals (b, v) of the first helper similar (tau) to one of every other helper",
        "identities": len(groups),
        "features": int(pipeline.dims.size),
        "target": "the first enrolment's (b, v)",
        "per_tau": {str(tau): _intersections(targets, parts, n, k_max, tau) for tau in taus},
    }


def _intersections(
    targets: Sequence[tuple[np.ndarray, np.ndarray]], parts: Sequence[Sequence[Any]], n: int, k_max: int, tau: int
) -> list[dict[str, Any]]:
    features = len(targets[0][0])
    count = np.zeros((k_max, len(targets), features))
    contains = np.zeros_like(count, dtype=bool)
    for p, ((b, v), person) in enumerate(zip(targets, parts, strict=True)):
        for j in range(features):
            for i, cand in enumerate(_s2_candidates([part[j] for part in person], n, tau)):
                count[i, p, j] = cand.shape[0]
                contains[i, p, j] = bool(np.any((cand[:, 0] == b[j]) & (cand[:, 1] == v[j])))
    per_k = []
    for i in range(k_max):
        c = count[i]
        nonempty = c > 0
        per_k.append(
            {
                "k": i + 1,
                "mean_log2_candidates": float(np.log2(c[nonempty]).mean()) if nonempty.any() else 0.0,
                "empty_fraction": float(1.0 - nonempty.mean()),
                "contains_fraction": float(contains[i].mean()),
                "pinned_fraction": float((c == 1).mean()),
                "recovered_fraction": float(((c == 1) & contains[i]).mean()),
            }
        )
    return per_k


# -- the report ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UnlinkabilityReportOptions:
    """What :func:`run_unlinkability_report` fits, enrols and attacks.

    ``kinds``: the pipelines (:data:`PIPELINE_KINDS`); ``enrol_samples`` captures per enrolment and
    ``groups`` enrolments per person; ``tau`` the asymmetric attacks' similarity; ``levels`` the
    transform's quantiser levels; ``target_fmr`` the pipelines' calibration target;
    ``max_nonmated`` and ``permutations`` bound the non-mated pairs and the chance-level draws;
    ``seed``; ``progress`` bars on a terminal; ``sources`` name the background and evaluation
    files in errors and in the report.
    """

    kinds: Sequence[str] = PIPELINE_KINDS
    enrol_samples: int = 2
    groups: int = 12
    tau: int = 2
    levels: int = 32
    target_fmr: float = 0.01
    max_nonmated: int = DEFAULT_MAX_NONMATED
    permutations: int = DEFAULT_PERMUTATIONS
    seed: int = 0
    progress: bool = False
    sources: tuple[str, str] = ("background", "data")


def run_unlinkability_report(
    background: LabelledVectors,
    data: LabelledVectors,
    options: UnlinkabilityReportOptions = UnlinkabilityReportOptions(),
) -> dict[str, Any]:
    """Fit, calibrate, enrol twice per deployment, attack, measure: the report as a JSON-ready dict."""
    o = _checked_options(options, background, data)
    kinds, enrol_samples, groups, levels, target_fmr = o.kinds, o.enrol_samples, o.groups, o.levels, o.target_fmr
    tau, max_nonmated, permutations, seed, sources = o.tau, o.max_nonmated, o.permutations, o.seed, o.sources
    groups_ = enrolment_groups(data, enrol_samples, groups, seed, source=sources[1])
    transform, notes = _fitted_transform(background, levels, sources[0])
    shared = np.intersect1d(np.unique(background.identities.astype(str)), np.unique(data.identities.astype(str)))
    pipelines = build_pipelines(transform, background, kinds, enrol_samples=enrol_samples, target_fmr=target_fmr)
    report_pipelines, repeated = _attack_pipelines(pipelines, groups_, o)
    notes += _notes(groups_, sources[1])
    return {
        "kind": "unlinkability-report",
        "measure": "Gomez-Barrero et al., IEEE TIFS 2018: D<->(s) and D<->sys (omega = 1)",
        "sources": {
            "background": sources[0],
            "data": sources[1],
            "background_identities": int(background.identity_count),
            "data_identities": int(data.identity_count),
            "shared_labels": int(shared.size),
            "set": "closed (labels shared: transform fitted on the same people)" if shared.size else "open",
        },
        "settings": {
            "pipelines": list(kinds),
            "enrol_samples": enrol_samples,
            "groups_per_identity": groups,
            "identities_enrolled": len(groups_),
            "tau": tau,
            "levels": levels,
            "target_fmr": target_fmr,
            "max_nonmated": max_nonmated,
            "permutations": permutations,
            "seed": seed,
        },
        "pepper": {
            "construction": "whole helper record sealed by ChaCha20-Poly1305 (pyca/cryptography) under the "
            "deployment's seal key, fresh 96-bit nonce per enrolment, as sketchauth.pepper.wrap seals",
            "implementation": "sketchauth.evaluate.sealing.DrawnSealer: seal keys drawn from secrets per run "
            "(to a database thief the same as a key derived from a pepper, without its 128 MiB argon2id)",
            "deployments": "A stores wrap(helper, p_A, N), B stores wrap(helper, p_B, N'), fresh nonce per enrolment",
            "sealed_attack": "the scheme's attack where both records parse as helpers, else byte agreement "
            "(equal bytes at equal positions; -1 for different lengths)",
            "control": "clear = the sealed records unsealed with each deployment's pepper (database and pepper)",
        },
        "pipelines": report_pipelines,
        "repeated": repeated,
        "operational_rule": OPERATIONAL_RULE,
        "notes": notes,
    }


def _checked_options(
    o: UnlinkabilityReportOptions, background: LabelledVectors, data: LabelledVectors
) -> UnlinkabilityReportOptions:
    """``o`` with its counts checked, or a ``ParameterError`` saying what to change."""
    unknown = [k for k in o.kinds if k not in PIPELINE_KINDS]
    if unknown or not o.kinds:
        raise ParameterError(f"pipelines must be among {', '.join(PIPELINE_KINDS)}; got {', '.join(o.kinds) or 'none'}")
    checked = replace(
        o,
        tau=check_int("tau", o.tau, 1),
        max_nonmated=check_int("max_nonmated", o.max_nonmated, 1),
        permutations=check_int("permutations", o.permutations, 0),
    )
    if background.features != data.features:
        raise ParameterError(
            f"{o.sources[0]} has {background.features} features but {o.sources[1]} has {data.features}; "
            "both must come from the same feature extractor"
        )
    return checked


def _fitted_transform(background: LabelledVectors, levels: int, source: str) -> tuple[Any, list[str]]:
    """The transform fitted on ``background``, and its warnings as report notes."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transform = fit_transform(background, levels=levels)
    except SketchAuthError as exc:
        raise ParameterError(f"{source}: the feature transform cannot be fitted: {exc}") from None
    return transform, [f"{source}: {w.message}" for w in caught]


def _attack_pipelines(
    pipelines: dict[str, Any], groups: Any, o: UnlinkabilityReportOptions
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every pipeline's attacks (or why it is unavailable), and the asymmetric ones' repeated enrolments."""
    report_pipelines: dict[str, Any] = {}
    repeated: dict[str, Any] = {}
    for kind in o.kinds:
        pipeline = pipelines[kind]
        if isinstance(pipeline, str):
            report_pipelines[kind] = {"unavailable": pipeline}
            continue
        report_pipelines[kind] = _evaluate_pipeline(
            kind,
            pipeline,
            groups,
            tau=o.tau,
            max_nonmated=o.max_nonmated,
            permutations=o.permutations,
            seed=o.seed,
            progress=o.progress,
        )
        if kind in ("s2", "s3"):
            repeated[kind] = _repeated(pipeline, groups, sorted({1, o.tau, 4 * o.tau}))
    return report_pipelines, repeated


def _notes(groups: Any, source: str) -> list[str]:
    """What a reader must know of the evaluation's size and of what it leaves out."""
    notes = []
    mated = sum(len(g) * (len(g) - 1) // 2 for _, g in groups)
    if mated < FEW_MATED_PAIRS:
        notes.append(
            f"{source}: only {mated} mated pairs (fewer than {FEW_MATED_PAIRS}): D<->sys is a coarse estimate, "
            "read it against its chance level; more --groups or fewer --enrol-samples give more pairs"
        )
    notes.append(
        "fuzzy vaults: no feature pipeline produces vault sets; the differential cross-matching attack "
        "(sketchauth.evaluate.unlinkability) is evaluated on labelled sets by 'sketchauth evaluate report'"
    )
    return notes
