"""Pipelines as ``features fit`` wrote them, measured on people outside the background.

``sketchauth features evaluate --pipelines DIR`` loads every configuration in ``DIR`` and measures
it *as written* — no recalibration from the transform: every evaluation person is enrolled once by
the pipeline (real ``encode`` from the pipeline's own secret of the raw enrolment captures), every
genuine and impostor pair is decided by the scheme's exact array decider
(:func:`~sketchauth.evaluate.deciders.decide_exact`), and a seeded sample of pairs (a third
accepted) is re-decided by real ``decode`` of the raw capture under the same helper. One
disagreement makes :meth:`FeatureEvaluation.require_exact` fail the run. The angular pipeline's
pairs whose cosine is more than :data:`~sketchauth.evaluate.capacity.PREFILTER` below ``min_cos``
cannot pass its angle check: they are rejected without decoding (the sample checks them too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from sketchauth.evaluate.capacity import PREFILTER
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import Disagreements, crosscheck_sample, decide_exact, real_decode_recovers
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.rates import clopper_pearson_interval
from sketchauth.evaluate.trials import Enrolled
from sketchauth.features.angular import AngularPipeline, unit
from sketchauth.features.base import Pipeline

__all__ = ["loaded_table", "measure_loaded"]


def _enrol(pipeline: Pipeline, enrol_raw: Sequence[np.ndarray]) -> Enrolled:
    sketch = pipeline.sketch
    secrets = [sketch.check_secret(pipeline.secret_from_samples(x)) for x in enrol_raw]
    return Enrolled(
        tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
    )


def _candidate_pairs(pipeline: Pipeline, enrolled: Enrolled, probes: list[Any], people: int) -> np.ndarray:
    """A ``people × probes`` mask of the pairs to decide (the angular pipeline's cosine pre-filter; else all)."""
    if not isinstance(pipeline, AngularPipeline):
        return np.ones((people, len(probes)), dtype=bool)
    templates = np.stack([np.asarray(s.template) for s in enrolled.secrets])
    cos = templates @ unit(np.stack(probes)).T
    return np.asarray(cos >= pipeline.sketch.min_cos - PREFILTER)


def measure_loaded(
    name: str,
    pipeline: Pipeline,
    data: LabelledVectors,
    protocol: Protocol,
    *,
    checks: int,
    seed: int = 0,
) -> dict[str, Any]:
    """FNMR and FMR of one written pipeline on ``data`` (module docstring), with its real-decode check."""
    plan = protocol.plan(data.identities, data.split)
    enrol_raw = [data.samples[rows] for rows in plan.enrol_rows]
    probes_raw = data.samples[plan.probe_index]
    owner = np.asarray(plan.probe_owner)
    enrolled = _enrol(pipeline, enrol_raw)
    probes = [pipeline.sample_transform(x) for x in probes_raw]
    people = len(enrol_raw)
    candidates = _candidate_pairs(pipeline, enrolled, probes, people)
    e, p = np.nonzero(candidates)
    rows = cast("Sequence[Any]", np.stack(probes) if isinstance(pipeline, AngularPipeline) else probes)
    decided, _ = decide_exact(pipeline.sketch, enrolled, rows, e.astype(np.int64), p.astype(np.int64))
    accepted = np.zeros((people, len(probes)), dtype=bool)
    accepted[e[decided], p[decided]] = True
    genuine = owner[None, :] == np.arange(people)[:, None]
    check = _decode_check(pipeline, enrolled, probes, accepted, checks, seed)
    fnm, g = int(np.count_nonzero(~accepted & genuine)), int(genuine.sum())
    fm, n = int(np.count_nonzero(accepted & ~genuine)), int((~genuine).sum())
    return {
        "pipeline": name,
        "kind": pipeline.kind,
        "scheme": pipeline.sketch.scheme_name,
        "params": pipeline.sketch.params(),
        "unusable": pipeline.unusable,
        "fnmr": fnm / g,
        "fnmr_interval": list(clopper_pearson_interval(fnm, g)),
        "fmr": fm / n,
        "fmr_interval": list(clopper_pearson_interval(fm, n)),
        "false_non_matches": fnm,
        "genuine_trials": g,
        "false_matches": fm,
        "impostor_trials": n,
        "decode_check": check,
    }


def _decode_check(
    pipeline: Pipeline, enrolled: Enrolled, probes: list[Any], accepted: np.ndarray, count: int, seed: int
) -> dict[str, Any]:
    """``count`` pairs (a third accepted, seeded) re-decided by real ``decode`` under the same helpers."""
    flat = accepted.reshape(-1)
    chosen = crosscheck_sample(flat, count=count, rng=np.random.default_rng([seed, 0x10AD])) if count else flat[:0]
    sketch = pipeline.sketch
    found = Disagreements()
    for k in np.asarray(chosen, dtype=np.int64).tolist():
        j, q = divmod(k, accepted.shape[1])
        real = real_decode_recovers(sketch, enrolled.helpers[j], enrolled.canonical[j], probes[q])
        found.record(real, bool(flat[k]), template=j, probe=q)
    return {"checked": int(np.size(chosen)), "disagreements": found.count, "examples": found.examples}


def loaded_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of :func:`measure_loaded` as a Markdown table."""
    lines = [
        "| pipeline | scheme | FNMR [95% CI] | FMR [95% CI] | false matches | real-decode disagreements |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = " (marked unusable)" if r.get("unusable") else ""
        c = r["decode_check"]
        lines.append(
            f"| {r['pipeline']}{mark} | {r['scheme']} | {r['fnmr']:.4f} [{r['fnmr_interval'][0]:.4f}, "
            f"{r['fnmr_interval'][1]:.4f}] | {r['fmr']:.2e} [{r['fmr_interval'][0]:.2e}, {r['fmr_interval'][1]:.2e}] "
            f"| {r['false_matches']} / {r['impostor_trials']} | {c['disagreements']} of {c['checked']} |"
        )
    return "\n".join(lines) + "\n"
