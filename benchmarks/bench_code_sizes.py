"""The angular pipeline's code-size curve on real embeddings of people outside the background.

For each cached set of real embeddings (:mod:`benchmarks.deep_embeddings`; never committed):

1. **Split** (:func:`benchmarks.deep_embeddings.identity_split`, fixed seed): background and
   calibration people are the *background* (those with at least 2 captures); the evaluation people
   are never seen before steps 2 and 4.
2. **The code alone, per decoder** (:data:`DECODERS`: list 8 plain — the code shipped before —,
   list 32 plain, and the default list 128 with a 6-bit CRC; no calibration, so every decoder sees
   the same attempts): each evaluation person enrolled for real, every genuine attempt decoded
   without the angle check — :func:`sketchauth.evaluate.capacity.code_fnmr`, its ratio to the
   capacity floor on the same attempts, with 1 and 3 captures per attempt, and the decoder's CPU
   time per decode at the capacity angle.
3. **On the background only**: ``fit_transform(background, projection="centre",
   normalise=True)``, then :func:`sketchauth.evaluate.capacity.background_curve` — per code size
   (32, 48, 64, 96, 128 bits where the dimension allows) the polar pipeline (default decoder)
   calibrated for each target FMR (:data:`TARGETS`) by identity-disjoint 5-fold cross-validation,
   and the default rule's choice.
4. **On the evaluation people**: :func:`sketchauth.evaluate.capacity.measured_curve` — each person
   enrolled once from the first ``k`` captures (real ``encode``), every pair decided by the exact
   decider and 200 pairs per size re-decided by real ``decode`` (a disagreement stops the run):
   the capacity floor, FNMR and its ratio to the floor, the realised FMR against the target, the
   unprotected centred-cosine FNMR (its threshold read on the evaluation people themselves), and
   the population attack's argon2 work; then the same with attempts of 3 captures (the normalised
   mean of their directions, the library's rule) on the people with enough captures, at the
   background's thresholds (the FMR each realises is reported beside).
5. **Several captures, like for like** (:func:`sketchauth.evaluate.capacity.measured_captures`):
   on the evaluation people with enough captures for the largest attempt (``enrol`` + 3), each
   enrolled once per code size, attempts of 1, 2 and 3 captures drawn from the same captures
   beyond the enrolment, at the same background thresholds, each with the FMR it realises
   (``same_people``; ``evaluation_3_captures`` is its 3-capture curve). A set with fewer than 2
   such people says so (``same_people.skipped``) instead of measuring, and a target the background
   has too few impostor trials to calibrate for is kept with the calibration's refusal
   (``unavailable``) instead of its curves.

Without any cached set the run says so and measures nothing (exit 0).
BLAS runs single-threaded. Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python -m benchmarks.bench_code_sizes
[--sets ...] [--enrol 3] [--attack-pairs N]`` → ``benchmarks/results/bench_code_sizes.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.deep_embeddings import CacheMissing, available, identity_split, load, rows_of
from benchmarks.timing import provenance, write_result
from sketchauth.errors import ParameterError
from sketchauth.evaluate import capacity
from sketchauth.evaluate.capacity import (
    FLOOR_BITS,
    FNMR_FACTOR,
    FNMR_SLACK,
    background_curve,
    capacity_cos,
    code_fnmr,
    code_limits,
    code_sizes,
    measured_captures,
    measured_curve,
)
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.defaults import DEFAULTS
from sketchauth.sketches.polar import decode_batch

RESULT = Path(__file__).resolve().parent / "results" / "bench_code_sizes.json"
#: The target FMRs every set is calibrated for (on the background) and measured at.
TARGETS = (1e-3, 1e-4)
#: The decoders compared, same run: (name, list size, CRC bits). The first is the one shipped
#: before the CRC (list 8, plain code); the last is the default (DEFAULTS.angular_list_size, angular_crc).
DECODERS = (("list8", 8, 0), ("list32", 32, 0), ("list128-crc6", DEFAULTS.angular_list_size, DEFAULTS.angular_crc))
#: Captures per verification attempt compared (the library's rule: the normalised mean of their directions).
PROBE_CAPTURES = (1, 2, 3)
#: Independent enrolments (fresh Haar rotations) the achievable rows average the shipped code over.
ENROLMENT_DRAWS = 8
#: Rotated probes timed per code size for the decoder's CPU time.
TIMED_DECODES = 200


def _background(labels: np.ndarray, x: np.ndarray, split: dict[str, np.ndarray]) -> LabelledVectors:
    """Background and calibration people, and the short ones with at least 2 captures (within-person noise)."""
    ids = np.concatenate([split["background"], split["calibration"], split["background_short"]])
    rows = rows_of(labels, ids)
    names, counts = np.unique(labels[rows], return_counts=True)
    rows = rows[np.isin(labels[rows], names[counts >= 2])]
    return LabelledVectors(labels[rows], x[rows])


def _with_captures(people: LabelledVectors, least: int) -> LabelledVectors:
    """The people with at least ``least`` captures."""
    names, counts = np.unique(people.identities, return_counts=True)
    keep = np.isin(people.identities, names[counts >= least])
    return LabelledVectors(people.identities[keep], people.samples[keep])


def decode_ms(sketch: Any, seed: int) -> float:
    """CPU milliseconds per decode of the sketch's list decoder (its decoder alone, no helper
    expansion) on rotated probes at the capacity angle, one probe per call as ``decode`` runs it."""
    rng = np.random.default_rng(seed)
    n = sketch.dimension
    cos = capacity_cos(n, sketch.bits)
    words = np.array([sketch.random_codeword(rng) for _ in range(TIMED_DECODES)], dtype=np.float64) / np.sqrt(n)
    noise = rng.standard_normal(words.shape)
    noise -= np.sum(noise * words, axis=1, keepdims=True) * words
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    y = np.rint((cos * words + np.sqrt(1.0 - cos * cos) * noise) * 2.0**28)
    start = time.process_time()
    for row in y:
        decode_batch(row[None, :], sketch.code, sketch.list_size)
    return (time.process_time() - start) / TIMED_DECODES * 1e3


def _code_alone(transform: Any, people: LabelledVectors, enrol: int, decoders: Any) -> list[dict[str, Any]]:
    """Per decoder and size: the code alone's FNMR (no angle check, no calibration) against the floor
    on the same attempts, 1 and 3 captures per attempt, and the decoder's CPU time."""
    dims = np.arange(transform.dimensions)
    several = _with_captures(people, enrol + max(PROBE_CAPTURES))
    rows = []
    for label, list_size, crc in decoders:
        for bits in code_sizes(int(dims.size)):
            pipeline = AngularPipeline(
                transform, dims, min_cos=0.0, bits=bits, list_size=list_size, crc=crc if bits + crc < dims.size else 0
            )
            alone, floor = code_fnmr(pipeline, people, enrol_samples=enrol)
            row: dict[str, Any] = {
                "decoder": label,
                "bits": bits,
                "list_size": list_size,
                "crc": pipeline.sketch.crc,
                "code_fnmr": alone,
                "floor_fnmr": floor,
                "code_fnmr_over_floor": alone / floor if floor else None,
                "decode_ms": round(decode_ms(pipeline.sketch, bits), 3),
            }
            if np.unique(several.identities).size >= 2:
                for k in PROBE_CAPTURES:
                    a, f = code_fnmr(pipeline, several, enrol_samples=enrol, probe_captures=k)
                    row[f"captures_{k}"] = {"code_fnmr": a, "floor_fnmr": f}
            else:
                row["captures_skipped"] = f"fewer than 2 evaluation people with {enrol + max(PROBE_CAPTURES)} captures"
            print(f"  {label} {bits} bits: code FNMR {alone:.4f} floor {floor:.4f}", flush=True)
            rows.append(row)
    return rows


def achievable(
    transform: Any, people: LabelledVectors, enrol: int, shipped: tuple[str, int, int]
) -> list[dict[str, Any]]:
    """Per size, on the code-alone attempts: the floor no code beats, the FNMR of a *random* code of
    the size decoded to the nearest word (Shannon's random-code bound: achievable), and the shipped
    decoder's code-alone FNMR against both, averaged over :data:`ENROLMENT_DRAWS` enrolments (the
    smallest and largest draw beside it)."""
    dims = np.arange(transform.dimensions)
    rows = []
    for bits in code_sizes(int(dims.size)):
        crc = shipped[2] if bits + shipped[2] < dims.size else 0
        pipeline = AngularPipeline(transform, dims, min_cos=0.0, bits=bits, list_size=shipped[1], crc=crc)
        floor, random_code = code_limits(pipeline, people, enrol_samples=enrol)
        # Each enrolment draws its own Haar rotations (from `secrets`): near the cap angle an attempt
        # decodes under one rotation and not another, so the shipped code's FNMR is averaged.
        draws = [code_fnmr(pipeline, people, enrol_samples=enrol)[0] for _ in range(ENROLMENT_DRAWS)]
        shipped_fnmr = float(np.mean(draws))
        rows.append(
            {
                "bits": bits,
                "decoder": shipped[0],
                "floor_fnmr": floor,
                "random_code_fnmr": random_code,
                "random_code_over_floor": random_code / floor if floor else None,
                "shipped_fnmr": shipped_fnmr,
                "shipped_fnmr_draws": [min(draws), max(draws)],
                "enrolment_draws": ENROLMENT_DRAWS,
                "shipped_over_floor": shipped_fnmr / floor if floor else None,
                "shipped_over_random_code": shipped_fnmr / random_code if random_code else None,
            }
        )
        print(f"  {bits} bits: floor {floor:.4f} random code {random_code:.4f} shipped {shipped_fnmr:.4f}", flush=True)
    return rows


def add_achievable(out: Path, sets: list[str], decoders: tuple[tuple[str, int, int], ...]) -> None:
    """Recompute only each set's ``achievable`` rows in ``out`` (deterministic: the same split, the
    same transform, every person enrolled for real), keeping every other measurement as it is."""
    result = json.loads(out.read_text())
    for entry in result["sets"]:
        if entry["set"] not in sets:
            continue
        x, labels = load(entry["set"])
        split = identity_split(labels)
        rows = rows_of(labels, split["evaluation"])
        people = LabelledVectors(labels[rows], x[rows])
        transform = fit_transform(_background(labels, x, split), projection="centre", normalise=True)
        print(entry["set"], flush=True)
        entry["achievable"] = achievable(transform, people, entry["enrol_captures"], decoders[-1])
        entry["achievable_provenance"] = {**provenance("bench_code_sizes"), "load": os.getloadavg()}
    write_result(out, finite(result), echo=False)


def finite(value: Any) -> Any:
    """``value`` with every infinite or NaN float (a ratio to a floor of 0) replaced by ``None``: strict JSON.

    >>> finite({"a": [1.0, float("inf")], "b": float("nan")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def _points(curve: Any, target: float) -> list[dict[str, Any]]:
    return [{**p.to_dict(), "fmr_over_target": p.fmr / target} for p in curve.points]


def _same_people(pipelines: Any, several: LabelledVectors, enrol: int, target: float) -> dict[str, Any]:
    """1-, 2- and 3-capture attempts on the same people and enrolments, at the same thresholds."""
    identities = int(np.unique(several.identities).size)
    need = enrol + max(PROBE_CAPTURES)
    if identities < 2:
        return {"identities": identities, "skipped": f"fewer than 2 evaluation people with {need} captures or more"}
    curves = measured_captures(pipelines, several, enrol_samples=enrol, target_fmr=target, captures=PROBE_CAPTURES)
    out: dict[str, Any] = {"identities": identities, "least_captures": need}
    for k, curve in curves.items():
        print(f"FMR {target:g}, {k} capture(s) per attempt, {identities} people", curve.table(), sep="\n", flush=True)
        out[f"attempts_{k}_captures"] = _points(curve, target)
    return out


def run_set(
    name: str, enrol: int, decoders: tuple[tuple[str, int, int], ...], targets: tuple[float, ...] = TARGETS
) -> dict[str, Any]:
    x, labels = load(name)
    split = identity_split(labels)
    background = _background(labels, x, split)
    rows = rows_of(labels, split["evaluation"])
    people = LabelledVectors(labels[rows], x[rows])
    start, cpu = time.perf_counter(), time.process_time()
    transform = fit_transform(background, projection="centre", normalise=True)
    # Calibration needs genuine trials: the background people with a probe beyond their enrolment.
    calibration = _with_captures(background, enrol + 1)
    several = _with_captures(people, enrol + max(PROBE_CAPTURES))
    out: dict[str, Any] = {
        "set": name,
        "dimension": int(x.shape[1]),
        "enrol_captures": enrol,
        "background_identities": int(np.unique(background.identities).size),
        "calibration_identities": int(np.unique(calibration.identities).size),
        "evaluation_identities": int(np.unique(people.identities).size),
        "several_captures_identities": int(np.unique(several.identities).size),
        "decoders": [{"name": d[0], "list_size": d[1], "crc": d[2]} for d in decoders],
        "code_alone": _code_alone(transform, people, enrol, decoders),
        "achievable": achievable(transform, people, enrol, decoders[-1]),
        "targets": [],
    }
    shipped = decoders[-1]
    for target in targets:
        label = f"{target:.0e}".replace("e-0", "e-")  # "1e-3": a label a figure span can select
        try:
            curve, pipelines = background_curve(
                transform,
                calibration,
                target_fmr=target,
                enrol_samples=enrol,
                refit=True,
                list_size=shipped[1],
                crc=shipped[2],
            )
        except ParameterError as exc:  # too few background impostor trials to calibrate for this target
            print(f"{name} FMR {target:g}: not measured: {exc}", flush=True)
            out["targets"].append({"fmr": label, "target_fmr": target, "decoder": shipped[0], "unavailable": str(exc)})
            continue
        entry: dict[str, Any] = {
            "fmr": label,
            "target_fmr": target,
            "decoder": shipped[0],
            "background_curve": curve.to_dict(),
            "default_choice_on_background": curve.choice().to_dict(),
        }
        measured = measured_curve(pipelines, people, enrol_samples=enrol, target_fmr=target)
        print(f"{name} FMR {target:g} {shipped[0]}, 1 capture, everybody", measured.table(), sep="\n", flush=True)
        entry["evaluation_1_captures"] = _points(measured, target)
        entry["same_people"] = _same_people(pipelines, several, enrol, target)
        if "skipped" not in entry["same_people"]:
            entry[f"evaluation_{max(PROBE_CAPTURES)}_captures"] = entry["same_people"][
                f"attempts_{max(PROBE_CAPTURES)}_captures"
            ]
        out["targets"].append(entry)
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["cpu_seconds"] = round(time.process_time() - cpu, 1)  # this process, every thread
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=None, help="cached sets (default: every cached one)")
    parser.add_argument("--enrol", type=int, nargs="*", default=[3], help="captures to enrol (default 3)")
    parser.add_argument("--decoders", nargs="*", default=None, help=f"of {[d[0] for d in DECODERS]} (default all)")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--append", action="store_true", help="keep the other sets already in --out")
    parser.add_argument("--targets", type=float, nargs="*", default=list(TARGETS), help="target FMRs")
    parser.add_argument(
        "--achievable-only", action="store_true", help="recompute only the floor/random-code rows of --out's sets"
    )
    parser.add_argument("--attack-pairs", type=int, default=capacity.ATTACK_PAIRS, help="population-attack sample")
    args = parser.parse_args(argv)
    capacity.ATTACK_PAIRS = args.attack_pairs  # read by population_attack at each call
    sets = args.sets if args.sets else [s for s in available() if not s.endswith("-all")]
    if not sets:
        print(f"no cached embedding set: nothing measured ({CacheMissing.__doc__})")
        return
    decoders = tuple(d for d in DECODERS if args.decoders is None or d[0] in args.decoders)
    if args.achievable_only:
        add_achievable(args.out, sets, decoders)
        return
    runs = []
    for name in sets:
        for k in args.enrol:
            # Each set's own provenance: sets are measured as their caches become available.
            runs.append(
                {
                    **provenance("bench_code_sizes"),
                    "load": os.getloadavg(),
                    **run_set(name, k, decoders, tuple(args.targets)),
                }
            )
    kept = []
    if args.append and args.out.is_file():
        done = {(r["set"], r["enrol_captures"]) for r in runs}
        kept = [r for r in json.loads(args.out.read_text())["sets"] if (r["set"], r["enrol_captures"]) not in done]
    result = {
        **provenance("bench_code_sizes"),
        "targets": list(args.targets),
        "decoders": [{"name": d[0], "list_size": d[1], "crc": d[2]} for d in decoders],
        "rule": {"fnmr_factor": FNMR_FACTOR, "fnmr_slack": FNMR_SLACK, "floor_bits": FLOOR_BITS},
        "attack_pairs": args.attack_pairs,
        "split": "identity_split: background + calibration people calibrate; evaluation people measured only",
        "sets": kept + runs,
    }
    write_result(args.out, finite(result), echo=False)


if __name__ == "__main__":
    main()
