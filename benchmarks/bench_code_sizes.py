"""The angular pipeline's code-size curve on real embeddings of people outside the background.

For each cached set of real embeddings (:mod:`benchmarks.deep_embeddings`; never committed):

1. **Split** (:func:`benchmarks.deep_embeddings.identity_split`, fixed seed): background and
   calibration people are the *background* (those with at least 2 captures); the evaluation people
   are never seen before step 3.
2. **On the background only**: ``fit_transform(background, projection="centre",
   normalise=True)``, then :func:`sketchauth.evaluate.capacity.background_curve` — per code size
   (32, 48, 64, 96, 128 bits where the dimension allows) the polar pipeline calibrated for the
   target FMR by identity-disjoint 5-fold cross-validation, and the default rule's choice.
3. **On the evaluation people**: :func:`sketchauth.evaluate.capacity.measured_curve` — each person
   enrolled once from the first ``k`` captures (real ``encode``), every pair decided by the exact
   decider and 200 pairs per size re-decided by real ``decode`` (a disagreement stops the run):
   the capacity floor, FNMR and its ratio to the floor, the realised FMR against the target, the
   unprotected centred-cosine FNMR, and the population attack's argon2 work.

BLAS runs single-threaded. Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python -m benchmarks.bench_code_sizes
[--sets ...] [--enrol 3]`` → ``benchmarks/results/bench_code_sizes.json``.
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

from benchmarks.deep_embeddings import available, identity_split, load, rows_of
from benchmarks.timing import provenance, write_result
from sketchauth.evaluate.capacity import FLOOR_BITS, FNMR_FACTOR, FNMR_SLACK, background_curve, measured_curve
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.transform import fit_transform

RESULT = Path(__file__).resolve().parent / "results" / "bench_code_sizes.json"
TARGET_FMR = 1e-3


def _background(labels: np.ndarray, x: np.ndarray, split: dict[str, np.ndarray]) -> LabelledVectors:
    """Background and calibration people, and the short ones with at least 2 captures (within-person noise)."""
    ids = np.concatenate([split["background"], split["calibration"], split["background_short"]])
    rows = rows_of(labels, ids)
    names, counts = np.unique(labels[rows], return_counts=True)
    rows = rows[np.isin(labels[rows], names[counts >= 2])]
    return LabelledVectors(labels[rows], x[rows])


def run_set(name: str, enrol: int, target_fmr: float) -> dict[str, Any]:
    x, labels = load(name)
    split = identity_split(labels)
    background = _background(labels, x, split)
    rows = rows_of(labels, split["evaluation"])
    people = LabelledVectors(labels[rows], x[rows])
    start = time.perf_counter()
    transform = fit_transform(background, projection="centre", normalise=True)
    # Calibration needs genuine trials: the background people with a probe beyond their enrolment.
    names, counts = np.unique(background.identities, return_counts=True)
    keep = np.isin(background.identities, names[counts > enrol])
    calibration = LabelledVectors(background.identities[keep], background.samples[keep])
    curve, pipelines = background_curve(transform, calibration, target_fmr=target_fmr, enrol_samples=enrol, refit=True)
    fitted = time.perf_counter() - start
    measured = measured_curve(pipelines, people, enrol_samples=enrol, target_fmr=target_fmr)
    choice = curve.choice()
    offered = [p for p in measured.points if p.bits == choice.bits]
    print(curve.table(), measured.table(), sep="\n", flush=True)
    return {
        "set": name,
        "dimension": int(x.shape[1]),
        "enrol_captures": enrol,
        "background_identities": int(np.unique(background.identities).size),
        "calibration_identities": int(np.unique(calibration.identities).size),
        "evaluation_identities": int(np.unique(people.identities).size),
        "background_curve": curve.to_dict(),
        "evaluation_curve": measured.to_dict(),
        "default_choice_on_background": choice.to_dict(),
        "shipped_on_evaluation": offered[0].to_dict() if offered else None,
        "fit_and_calibrate_seconds": round(fitted, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=None, help="cached sets (default: every cached one)")
    parser.add_argument("--enrol", type=int, nargs="*", default=[3], help="captures to enrol (default 3)")
    parser.add_argument("--target-fmr", type=float, default=TARGET_FMR)
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--append", action="store_true", help="keep the other sets already in --out")
    args = parser.parse_args(argv)
    sets = args.sets if args.sets else [s for s in available() if not s.endswith("-all")]
    runs = []
    for name in sets:
        for k in args.enrol:
            # Each set's own provenance: sets are measured as their caches become available.
            runs.append({**provenance("bench_code_sizes"), **run_set(name, k, args.target_fmr)})
    kept = []
    if args.append and args.out.is_file():
        done = {(r["set"], r["enrol_captures"]) for r in runs}
        kept = [r for r in json.loads(args.out.read_text())["sets"] if (r["set"], r["enrol_captures"]) not in done]
    result = {
        **provenance("bench_code_sizes"),
        "target_fmr": args.target_fmr,
        "rule": {"fnmr_factor": FNMR_FACTOR, "fnmr_slack": FNMR_SLACK, "floor_bits": FLOOR_BITS},
        "sets": kept + runs,
    }
    write_result(args.out, result, echo=False)


if __name__ == "__main__":
    main()
