"""Several captures per attempt against one, at the same FMR, on real embeddings.

The split, transform and enrolment of :mod:`benchmarks.bench_code_sizes` (``identity_split``, its
background, ``fit_transform(..., projection="centre", normalise=True)``, 3 captures to enrol). Per
code size (:data:`SIZES`) and target FMR (:data:`TARGETS`) the polar pipeline is calibrated on the
background for one capture (``for_target_fmr``, as ``background_curve`` does). The evaluation
people with ``enrol + 3`` captures are enrolled **once** per size; attempts of ``k`` = 1, 2, 3
captures come from the same captures (:func:`sketchauth.evaluate.capacity.grouped_probes`), and
each ``k`` is verified at four thresholds:

* ``calibrated_1``: the background's 1-capture threshold (what ``bench_code_sizes`` measures);
* ``background_k``: a threshold calibrated on the background's own ``k``-capture attempts (its
  people with ``enrol + 3`` captures, enrolled for real): the smallest ``min_cos`` at which the
  impostor attempts the code decodes realise at most the target FMR there
  (:func:`~sketchauth.evaluate.capacity.threshold_at_fmr`) — a point rule, not the library's
  cross-validated calibration, and on the people the transform was fitted on;
* ``pipeline_k``: the pipeline's own threshold for ``k`` captures
  (:func:`~sketchauth.evaluate.fitting.angular.calibrate_captures`, what ``features fit`` writes
  and the service applies): the decoding-aware decider and the cross-validated Clopper–Pearson
  calibration of the 1-capture threshold, over the background's ``k``-capture attempts — deployable;
* ``matched_fmr``: the threshold at which the evaluation people's own ``k``-capture impostor
  attempts realise at most the FMR the 1-capture attempts realise at ``calibrated_1`` — chosen
  on the evaluated people, so an oracle comparison at equal FMR, not a deployable threshold.

Pairs are scored down to :data:`SEARCH_BELOW` under the 1-capture threshold; a threshold found
there is kept (``at_floor``: the FMR is met at every threshold the search saw, a lower one was not
sought). Every pair within 0.02 of a threshold is decided by the exact decider, 200 per threshold re-decided
by real ``decode`` (a disagreement stops the run), and the exact decider's accept set must equal
the scores' (:func:`~sketchauth.evaluate.capacity.pair_scores`). FNMR with its 95 %
Clopper–Pearson interval, the realised FMR with its trials.

Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python -m benchmarks.bench_captures_fmr [--sets ...]``
→ ``benchmarks/results/bench_captures_fmr.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_code_sizes import _background, _with_captures
from benchmarks.deep_embeddings import CacheMissing, available, identity_split, load, rows_of
from benchmarks.timing import provenance, write_result
from sketchauth.errors import ParameterError
from sketchauth.evaluate.capacity import (
    PREFILTER,
    CrossCheckError,
    accepted_pairs,
    grouped_probes,
    pair_scores,
    rethresholded,
    threshold_at_fmr,
)
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.angular import for_target_fmr, projected_directions
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.rates import clopper_pearson_interval
from sketchauth.evaluate.trials import Enrolled, projected_trials
from sketchauth.features.defaults import DEFAULTS

RESULT = Path(__file__).resolve().parent / "results" / "bench_captures_fmr.json"
SIZES = (32, 48, 64, 96)
TARGETS = (1e-3, 1e-4)
CAPTURES = (1, 2, 3)
ENROL = 3
#: Scores are computed for pairs with cosine this far below the 1-capture threshold (and no threshold lower).
SEARCH_BELOW = 0.15


class People:
    """Templates, single-capture probes and owners of some people, enrolled per sketch on demand."""

    def __init__(self, transform: Any, people: LabelledVectors) -> None:
        dims = np.arange(transform.dimensions)
        self.trials = projected_trials(lambda x: x, people, ENROL)
        self.templates, self.single = projected_directions(transform, dims, self.trials)
        self.identities = int(self.templates.shape[0])

    def enrol(self, sketch: Any) -> Enrolled:
        secrets = [sketch.check_secret(t) for t in self.templates]
        return Enrolled(
            tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
        )


class Attempts:
    """``k``-capture attempts against every template: cosines, and decoded/score of the pairs near the thresholds."""

    def __init__(self, people: People, sketch: Any, enrolled: Enrolled, k: int, floor: float) -> None:
        self.probes, self.owner = grouped_probes(people.single, people.trials.owner, k)
        self.cos = people.templates @ self.probes.T
        self.genuine = self.owner[None, :] == np.arange(self.cos.shape[0])[:, None]
        self.e, self.p = np.nonzero(self.cos >= floor - PREFILTER)
        self.decoded, self.score = pair_scores(sketch, enrolled, self.probes, self.e, self.p)
        self.floor = floor

    @property
    def impostor_trials(self) -> int:
        return int((~self.genuine).sum())

    def impostor_scores(self) -> np.ndarray:
        mine = self.decoded & ~self.genuine[self.e, self.p]
        return np.asarray(self.score[mine])

    def accepted_by_scores(self, tau: float) -> np.ndarray:
        out = np.zeros(self.cos.shape, dtype=bool)
        hit = self.decoded & (self.score >= tau)
        out[self.e[hit], self.p[hit]] = True
        return out


def _point(attempts: Attempts, sketch: Any, enrolled: Enrolled, tau: float, seed: int) -> dict[str, Any]:
    """FNMR (Clopper–Pearson 95 %) and realised FMR at ``min_cos = tau``: exact decider, real-decode cross-check."""
    if tau < attempts.floor:
        raise ParameterError(f"threshold {tau} below the scored floor {attempts.floor}")
    at, helpers = rethresholded(sketch, enrolled, tau)
    accepted = accepted_pairs(at, helpers, attempts.probes, attempts.cos, seed)
    if not np.array_equal(accepted, attempts.accepted_by_scores(tau)):
        raise CrossCheckError(f"{sketch.bits} bits, min_cos {tau}: the exact decider and the scores disagree")
    genuine = int(attempts.genuine.sum())
    rejected = genuine - int(np.count_nonzero(accepted & attempts.genuine))
    false_matches = int(np.count_nonzero(accepted & ~attempts.genuine))
    lo, hi = clopper_pearson_interval(rejected, genuine)
    return {
        "min_cos": tau,
        "fnmr": rejected / genuine,
        "fnmr_ci95": [lo, hi],
        "false_rejects": rejected,
        "genuine_trials": genuine,
        "fmr": false_matches / attempts.impostor_trials,
        "false_matches": false_matches,
        "impostor_trials": attempts.impostor_trials,
        "at_floor": tau == attempts.floor,
    }


def _size(transform: Any, calibration: LabelledVectors, groups: tuple[People, People], bits: int, target: float) -> Any:
    """One code size at one target: the four thresholds per number of captures."""
    background, evaluated = groups
    options = CalibrationOptions(
        target_fmr=target,
        enrol_samples=ENROL,
        security_bits=bits,
        code="polar",
        match_threshold=False,
        measure_decode_failures=False,
        calibrate_captures=True,
        refit=True,
        list_size=DEFAULTS.angular_list_size,
        crc=DEFAULTS.angular_crc,
    )
    pipeline = for_target_fmr(transform, calibration, options)
    sketch, per_k = pipeline.sketch, pipeline.captures_min_cos
    floor = max(0.0, min(float(sketch.min_cos) - SEARCH_BELOW, *per_k.values()))
    enrolled, enrolled_bg = evaluated.enrol(sketch), background.enrol(sketch)
    rows: dict[str, Any] = {
        "bits": bits,
        "calibrated_min_cos": float(sketch.min_cos),
        "pipeline_captures_min_cos": {str(k): v for k, v in per_k.items()},
        "pipeline_captures_calibration": {
            str(k): c if isinstance(c, str) else c.to_dict() for k, c in pipeline.captures_calibration.items()
        },
        "score_floor": floor,
    }
    single_fmr = None
    for k in CAPTURES:
        mine = Attempts(evaluated, sketch, enrolled, k, floor)
        theirs = Attempts(background, sketch, enrolled_bg, k, floor)
        one = _point(mine, sketch, enrolled, float(sketch.min_cos), k)
        single_fmr = one["fmr"] if single_fmr is None else single_fmr
        tau_b = threshold_at_fmr(theirs.impostor_scores(), theirs.impostor_trials, target, floor)
        tau_c = threshold_at_fmr(mine.impostor_scores(), mine.impostor_trials, single_fmr, floor)
        rows[f"captures_{k}"] = {
            "attempts": int(mine.owner.size),
            "calibrated_1": one,
            "background_k": {
                **_point(mine, sketch, enrolled, tau_b, 10 + k),
                "background_fmr": _point(theirs, sketch, enrolled_bg, tau_b, 20 + k)["fmr"],
                "background_impostor_trials": theirs.impostor_trials,
            },
            "matched_fmr": {**_point(mine, sketch, enrolled, tau_c, 30 + k), "fmr_matched_to": single_fmr},
            "pipeline_k": _point(mine, sketch, enrolled, per_k.get(k, float(sketch.min_cos)), 40 + k),
        }
        print(f"  {bits} bits, {k} capture(s): " + _line(rows[f"captures_{k}"]), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    return ", ".join(
        f"{name} τ {row[name]['min_cos']:.3f} FNMR {row[name]['fnmr']:.3f} FMR {row[name]['fmr']:.1e}"
        for name in ("calibrated_1", "background_k", "pipeline_k", "matched_fmr")
    )


def run_set(name: str, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    x, labels = load(name)
    split = identity_split(labels)
    background = _background(labels, x, split)
    rows = rows_of(labels, split["evaluation"])
    people = LabelledVectors(labels[rows], x[rows])
    cpu = time.process_time()
    transform = fit_transform(background, projection="centre", normalise=True)
    calibration = _with_captures(background, ENROL + 1)
    groups = (
        People(transform, _with_captures(background, ENROL + max(CAPTURES))),
        People(transform, _with_captures(people, ENROL + max(CAPTURES))),
    )
    out: dict[str, Any] = {
        "set": name,
        "dimension": int(x.shape[1]),
        "background_identities_k": groups[0].identities,
        "evaluation_identities_k": groups[1].identities,
        "targets": [],
    }
    if min(g.identities for g in groups) < 2:
        out["skipped"] = f"fewer than 2 people with {ENROL + max(CAPTURES)} captures"
        return out
    for target in TARGETS:
        entry: dict[str, Any] = {"fmr": f"{target:.0e}".replace("e-0", "e-"), "target_fmr": target, "sizes": []}
        try:
            for bits in (b for b in sizes if b + DEFAULTS.angular_crc < x.shape[1]):
                print(f"{name} FMR {target:g}:", flush=True)
                entry["sizes"].append(_size(transform, calibration, groups, bits, target))
        except ParameterError as exc:  # too few background impostor trials for this target
            entry["unavailable"] = str(exc)
        out["targets"].append(entry)
    out["cpu_seconds"] = round(time.process_time() - cpu, 1)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=None, help="cached sets (default: every cached one)")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--append", action="store_true", help="keep the other sets already in --out")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help=f"code sizes (default {SIZES})")
    args = parser.parse_args(argv)
    sets = args.sets if args.sets else [s for s in available() if not s.endswith("-all")]
    if not sets:
        print(f"no cached embedding set: nothing measured ({CacheMissing.__doc__})")
        return
    result = {
        **provenance("bench_captures_fmr"),
        "enrol_captures": ENROL,
        "captures": list(CAPTURES),
        "thresholds": {
            "calibrated_1": "background-calibrated 1-capture threshold (for_target_fmr, cross-validated)",
            "background_k": "point rule on the background's own k-capture impostor attempts (transform fitted there)",
            "matched_fmr": "chosen on the evaluated people: their k-capture FMR at most the 1-capture FMR",
            "pipeline_k": "the pipeline's own k-capture threshold (calibrate_captures: cross-validated on the "
            "background's k-capture attempts, the bound of the 1-capture calibration); deployable",
        },
        "sets": [],
    }
    # Each set's own provenance: sets may be measured by separate runs (--append).
    runs = [{**provenance("bench_captures_fmr"), **run_set(name, tuple(args.sizes))} for name in sets]
    kept = []
    if args.append and args.out.is_file():
        kept = [r for r in json.loads(args.out.read_text())["sets"] if r["set"] not in sets]
    result["sets"] = kept + runs
    write_result(args.out, result, echo=False)


if __name__ == "__main__":
    main()
