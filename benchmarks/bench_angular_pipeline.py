"""The angular pipeline as a deployment uses it, on real deep embeddings of people outside the background.

For each cached set of real embeddings (:mod:`benchmarks.deep_embeddings`; never committed) and
each code on the sphere (``polar``: :class:`~sketchauth.sketches.angular_polar.PolarAngularSketch`;
``sparse``: IronMask's :class:`~sketchauth.sketches.angular.AngularSketch`), at 64 bits of codebook:

1. **Split** (:func:`benchmarks.deep_embeddings.identity_split`, fixed seed): the background and
   calibration people (disjoint from the evaluation people) are the *background*; the evaluation
   people are never seen before step 3.
2. **Fit and calibrate on the background only**, through the library:
   ``fit_transform(background, projection="centre", normalise=True)`` and
   ``fitting.angular.for_target_fmr(..., target_fmr, enrol_samples=k, refit=True, code=...)``
   (identity-disjoint 5-fold cross-validation, one-sided 95% Clopper–Pearson bound on the FMR).
3. **Measure on the evaluation people**: each is enrolled once from their first ``k`` captures
   (real ``encode``); every other evaluation capture is a probe (genuine: the same person). All
   pairs are decided by the scheme's exact vectorised decider — for the polar code the decoder
   itself on a batch — and a seeded sample is re-decided by real ``decode`` (0 disagreements).
4. **Beside it, the same pairs, the unprotected matcher**: cosine of the *raw* model outputs
   (template: the mean of the ``k`` normalised captures) — its FNMR at the sketch's realised FMR
   (interpolated on its DET) and at the target, and the ratios. The calibration check: the
   realised FMR against the target and the predicted interval.
5. **Attacks by a thief holding the database and the pepper**, who decodes a helper offline —
   *without* the verifier's ``min_cos`` check — and tests each codeword on the argon2id hash:
   (c) the population attack — every embedding of ``<name>-all`` (or of this set) of anybody but
   the helper's owner through helpers of evaluation people; the work is ``log2(1/success per
   try)`` argon2id evaluations; and a population model's best guesses — the background's mean
   direction and top principal directions. Sealed-record linkage (``D↔sys`` with the pepper).
   Cost: encode and decode at 512 dimensions.

BLAS runs single-threaded. Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python
-m benchmarks.bench_angular_pipeline [--sets ...]`` → ``benchmarks/results/bench_angular_pipeline.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_angular import fnmr_at_fmr
from benchmarks.deep_embeddings import available, identity_split, load, rows_of
from benchmarks.timing import median_ms, provenance, write_result
from sketchauth.errors import ParameterError
from sketchauth.evaluate import fitting
from sketchauth.evaluate.angular_attacks import sealed_linkage_score
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import angular_scores, decide_exact, polar_accepts
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.evaluate.trials import Enrolled
from sketchauth.evaluate.unlinkability import linkability
from sketchauth.pepper import Pepper, new_nonce, wrap
from sketchauth.sketches.angular import AngularSketch, probe_matrix
from sketchauth.sketches.angular_polar import PolarAngularSketch

RESULT = Path(__file__).resolve().parent / "results" / "bench_angular_pipeline.json"
TARGETS = (1e-3, 1e-4)
CODES = ("polar", "sparse")
SECURITY_BITS = 64
#: Helpers attacked by the population attack; pairs re-decided by real decode.
POPULATION_HELPERS, DECODE_CHECKS = 40, 300


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def protocol(labels: np.ndarray, people: np.ndarray, k: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Per evaluation person the rows of their first ``k`` captures; the probe rows and each probe's person index."""
    enrol, probes, owner = [], [], []
    for j, person in enumerate(people):
        rows = np.flatnonzero(labels == person)
        enrol.append(rows[:k])
        probes.extend(rows[k:].tolist())
        owner.extend([j] * (rows.size - k))
    return enrol, np.array(probes), np.array(owner)


def decide(sketch: AngularSketch, enrolled: Enrolled, probes: np.ndarray, e: np.ndarray, q: np.ndarray) -> np.ndarray:
    accepted, _ = decide_exact(sketch, enrolled, probes, e, q)
    return accepted


def run_set(name: str, k: int) -> dict[str, Any]:
    x, labels = load(name)
    x = x.astype(np.float64)
    split = identity_split(labels)
    bg_rows = rows_of(labels, np.concatenate([split["background"], split["calibration"]]))
    background = LabelledVectors(labels[bg_rows], x[bg_rows])
    people = split["evaluation"]
    enrol_rows, probe_rows, owner = protocol(labels, people, k)
    transform = fit_transform(background, projection="centre", normalise=True)
    # The unprotected matcher on the raw outputs, on exactly these pairs.
    raw_t = _unit(np.stack([_unit(x[r]).mean(axis=0) for r in enrol_rows]))
    raw_p = _unit(x[probe_rows])
    cos = raw_t @ raw_p.T
    same = owner[None, :] == np.arange(len(people))[:, None]
    g_cos, i_cos = cos[same], cos[~same]
    out: dict[str, Any] = {
        "set": name,
        "dimension": int(x.shape[1]),
        "captures_per_enrolment": k,
        "background_identities": int(np.unique(background.identities).size),
        "background_captures": int(background.samples.shape[0]),
        "evaluation_identities": int(people.size),
        "genuine_pairs": int(g_cos.size),
        "impostor_pairs": int(i_cos.size),
        "rows": [],
    }
    population, population_labels = _population(name, labels, x)
    projected_population = transform.project(population)
    # The offline attacker decodes a stolen helper without the verifier's min_cos check, so its
    # attacks do not depend on the target: measured once per code (on the first target's helpers).
    offline: dict[str, Any] = {}
    for code in CODES:
        for f in TARGETS:
            started = time.perf_counter()
            try:
                pipeline = fitting.angular.for_target_fmr(
                    transform,
                    background,
                    CalibrationOptions(
                        target_fmr=f, enrol_samples=k, refit=True, code=code, security_bits=SECURITY_BITS
                    ),
                )
            except ParameterError as exc:  # a background too small for this target: said, not skipped silently
                out["rows"].append({"code": code, "target_fmr": f, "unavailable": str(exc)})
                continue
            fit_seconds = time.perf_counter() - started
            sketch = pipeline.sketch
            secrets = [pipeline.secret_from_samples(x[r]) for r in enrol_rows]
            helpers = [sketch.encode(s) for s in secrets]
            enrolled = Enrolled(tuple(helpers), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets))
            probes = transform.project(x[probe_rows])
            started = time.perf_counter()
            accepted = _decide_all(sketch, enrolled, secrets, probes)
            decide_seconds = time.perf_counter() - started
            fnmr, fmr = float(1 - accepted[same].mean()), float(accepted[~same].mean())
            # The capacity floor: n coordinates at SNR cos²/(1 − cos²) carry 64 bits only from
            # cos_cap = sqrt(1 − 2^(−2·64/n)) on, so no 64-bit code decodes typical probes below it.
            centred = np.stack([np.asarray(s.template) for s in secrets]) @ _unit(probes).T
            cap = math.sqrt(1.0 - 2.0 ** (-2.0 * SECURITY_BITS / x.shape[1]))
            floor = float(np.mean(centred[same] < max(cap, sketch.min_cos)))
            cos_same = fnmr_at_fmr(g_cos, i_cos, max(fmr, 1.0 / i_cos.size))
            cos_target = fnmr_at_fmr(g_cos, i_cos, f)
            calibration = pipeline.calibration
            assert calibration is not None
            lo, hi = calibration.fmr_interval
            row = {
                "code": code,
                "target_fmr": f,
                "params": sketch.params(),
                "codebook_bits": float(sketch.report().extra["codebook_bits"]),
                "predicted_fmr": calibration.fmr,
                "predicted_fmr_interval": [lo, hi],
                "predicted_fnmr_cosine_rule": calibration.fnmr,
                "background_decode_failures": pipeline.decode_failures,
                "sketch_fnmr": fnmr,
                "sketch_fmr": fmr,
                "sketch_fmr_interval95": list(wilson_interval(int(accepted[~same].sum()), int((~same).sum()))),
                "realised_over_target": fmr / f,
                "realised_within_2x_target": 0.5 * f <= fmr <= 2 * f,
                "realised_in_predicted_interval": lo <= fmr <= hi,
                "raw_cosine_fnmr_at_sketch_fmr": cos_same,
                "raw_cosine_fnmr_at_target_fmr": cos_target,
                "ratio_at_same_fmr": fnmr / cos_same if cos_same > 0 else math.inf,
                "ratio_at_target_fmr": fnmr / cos_target if cos_target > 0 else math.inf,
                "capacity_cos_64_bits": cap,
                "genuine_share_below_capacity_cos": float(np.mean(centred[same] < cap)),
                "fnmr_floor_of_any_64_bit_code": floor,
                "fit_seconds": fit_seconds,
                "decide_seconds": decide_seconds,
                "decode_check": _decode_check(sketch, helpers, secrets, probes, accepted),
                "offline_attacks": offline[code]
                if code in offline
                else offline.setdefault(
                    code,
                    {
                        **_population_attack(
                            sketch, helpers, secrets, projected_population, population_labels != people[:, None]
                        ),
                        "principal_directions": _principal_attack(
                            sketch, helpers, secrets, transform.project(background.samples)
                        ),
                    },
                ),
                "calibration_check": calibration.realised(
                    LabelledVectors(labels[np.isin(labels, people)], x[np.isin(labels, people)]), enrol_samples=k
                ),
                "sealed_linkage": _sealed_linkage(sketch, helpers, secrets),
            }
            out["rows"].append(row)
            print(
                {key: row[key] for key in ("code", "target_fmr", "sketch_fnmr", "sketch_fmr", "ratio_at_same_fmr")},
                flush=True,
            )
    out["population_embeddings"] = int(population.shape[0])
    out["population_identities"] = int(np.unique(population_labels).size)
    return out


def _population(name: str, labels: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every embedding of the ``-all`` set of the same model if cached (else this set), with labels:
    each helper is attacked with the embeddings of everybody but its owner."""
    if f"{name}-all" in available():
        every, every_labels = load(f"{name}-all")
        return every.astype(np.float64), every_labels
    return x, labels


#: A pair whose cosine to the enrolled template is this far below ``min_cos`` cannot be accepted:
#: acceptance needs ``cos(p, R̂ᵀc) ≥ min_cos`` and ``‖R̂ᵀc/2^14 − t‖ ≤ n·2^−15 ≤ 0.0625`` (entrywise
#: rounding of ``R``, Frobenius bound) for every ``n ≤ 2048``; such pairs are refused without decoding.
SHORTCUT_MARGIN = 0.0625


def _decide_all(sketch: AngularSketch, enrolled: Enrolled, secrets: list[Any], probes: np.ndarray) -> np.ndarray:
    """Every (template, probe) pair by the exact decider; pairs provably below ``min_cos`` refused outright."""
    templates = np.stack([np.asarray(s.template) for s in secrets])
    cos = templates @ _unit(probes).T
    candidates = cos >= sketch.min_cos - SHORTCUT_MARGIN if sketch.min_cos > 0 else np.ones_like(cos, dtype=bool)
    e, q = np.nonzero(candidates)
    accepted = np.zeros(cos.shape, dtype=bool)
    accepted[e, q] = decide(sketch, enrolled, probes, e, q)
    return accepted


def _decode_check(
    sketch: AngularSketch, helpers: list[bytes], secrets: list[Any], probes: np.ndarray, accepted: np.ndarray
) -> dict[str, int]:
    rng = np.random.default_rng(5)
    # Half the sample among accepted pairs (rare), half among all pairs.
    hits = np.argwhere(accepted)
    chosen = [tuple(hits[i]) for i in rng.choice(len(hits), min(DECODE_CHECKS // 2, len(hits)), replace=False)]
    chosen += [
        (int(rng.integers(accepted.shape[0])), int(rng.integers(accepted.shape[1]))) for _ in range(DECODE_CHECKS // 2)
    ]
    disagreements = 0
    for e, q in chosen:
        try:
            ok = sketch.secret_bytes(sketch.decode(helpers[e], probes[q])) == sketch.secret_bytes(secrets[e])
        except Exception:
            ok = False
        disagreements += int(ok != bool(accepted[e, q]))
    return {"checked": len(chosen), "disagreements": disagreements}


def _offline_hits(sketch: AngularSketch, helpers: list[bytes], secrets: list[Any], probes: np.ndarray) -> np.ndarray:
    """``helpers × probes``: does the probe decode to the helper's codeword *without* the angle check
    (what an attacker holding the helper does offline before testing the codeword on the hash)."""
    quantised, refused = probe_matrix(probes, sketch.dimension)
    out = np.zeros((len(helpers), probes.shape[0]), dtype=bool)
    for i, (helper, secret) in enumerate(zip(helpers, secrets, strict=True)):
        matrix = sketch.matrix(helper)
        if isinstance(sketch, PolarAngularSketch):
            unchecked = PolarAngularSketch(sketch.dimension, sketch.bits, sketch.list_size)
            out[i] = polar_accepts(unchecked, matrix, secret, quantised)
        else:
            out[i] = angular_scores(AngularSketch(sketch.dimension, sketch.alpha), matrix, secret, quantised) > 0
    return out & ~refused[None, :]


def _population_attack(
    sketch: AngularSketch, helpers: list[bytes], secrets: list[Any], attackers: np.ndarray, others: np.ndarray
) -> dict[str, Any]:
    """(c) Every embedding of other people through each of the first helpers, decoded offline
    (``others[i, j]``: embedding ``j`` is not helper ``i``'s owner's); the work is
    ``log2(1/success per try)`` argon2id evaluations (one per codeword tested on the hash).

    (d) without the pepper, the same decodings link: two helpers are scored by how many
    embeddings of other people decode under both (a second enrolment of each template, mated,
    against pairs of different people, non-mated).
    """
    count = min(POPULATION_HELPERS, len(helpers))
    mask = others[:count]
    hits = _offline_hits(sketch, helpers[:count], secrets[:count], attackers) & mask
    successes, tries = int(hits.sum()), int(mask.sum())
    low, high = wilson_interval(successes, tries)
    rate = successes / tries
    again = [sketch.check_secret(np.asarray(s.template)) for s in secrets[:count]]
    second = _offline_hits(sketch, [sketch.encode(s) for s in again], again, attackers) & mask
    mated = [int((hits[i] & second[i]).sum()) for i in range(count)]
    nonmated = [int((hits[i] & hits[j]).sum()) for i in range(count) for j in range(count) if j != i]
    return {
        "population": {
            "attacker_embeddings_per_helper_min": int(mask.sum(axis=1).min()),
            "helpers": count,
            "tries": tries,
            "successes": successes,
            "success_per_try": rate,
            "success_per_try_ci95": [low, high],
            "helpers_fallen": int(hits.any(axis=1).sum()),
            "argon2_evaluations_log2": math.log2(1.0 / (rate if successes else high)),
            "work_is_lower_bound": successes == 0,
        },
        "linkage_without_pepper": {
            "attack": "embeddings of other people that decode under both helpers",
            "mated_pairs": count,
            "nonmated_pairs": len(nonmated),
            "mated_linked": int(np.count_nonzero(mated)),
            "d_sys": linkability(mated, nonmated, bins=20).d_sys,
        },
    }


#: Principal directions of the background (each with both signs) tried against every helper.
PRINCIPAL_DIRECTIONS = 32


def _principal_attack(
    sketch: AngularSketch, helpers: list[bytes], secrets: list[Any], background: np.ndarray
) -> dict[str, Any]:
    """A population model's best single guesses: the background's mean direction and its top
    principal directions (both signs), decoded offline under every helper — the attack that reads
    IronMask's codeword off raw embeddings (their common direction)."""
    units = _unit(background)
    mean = units.mean(axis=0)
    _, _, vt = np.linalg.svd(units - mean, full_matrices=False)
    guesses = [mean] if np.linalg.norm(mean) > 1e-9 else []
    for v in vt[:PRINCIPAL_DIRECTIONS]:
        guesses += [v, -v]
    count = min(POPULATION_HELPERS, len(helpers))
    hits = _offline_hits(sketch, helpers[:count], secrets[:count], np.stack(guesses))
    return {"helpers": count, "guesses_per_helper": len(guesses), "successes": int(hits.sum())}


#: Mated/non-mated helper pairs of the sealed-record linkage, and seals of each pair.
LINKED, SEALS = 40, 50


def _sealed_linkage(sketch: AngularSketch, helpers: list[bytes], secrets: list[Any]) -> dict[str, Any]:
    """``D↔sys`` of sealed records (what a database thief without the pepper compares): two
    enrolments of one person (the helper and a fresh one of the same template) against helpers of
    two people, each pair sealed :data:`SEALS` times with fresh nonces under one pepper."""
    pepper = Pepper(b"bench-angular-pipeline-pepper-0123456789")
    rng = np.random.default_rng(7)
    count = min(LINKED, len(helpers) // 2)
    mated, nonmated = [], []
    for i in range(count):
        again = sketch.encode(np.asarray(secrets[i].template))
        j = int(rng.integers(count, len(helpers)))
        for _ in range(SEALS):
            mated.append(sealed_linkage_score(wrap(helpers[i], pepper, new_nonce()), wrap(again, pepper, new_nonce())))
            nonmated.append(
                sealed_linkage_score(wrap(helpers[i], pepper, new_nonce()), wrap(helpers[j], pepper, new_nonce()))
            )
    return {
        "pairs": count,
        "seals_per_pair": SEALS,
        "d_sys_with_pepper": linkability(mated, nonmated, bins=20).d_sys,
    }


def _cost(sketch: AngularSketch, t: np.ndarray, probe: np.ndarray) -> dict[str, Any]:
    helper = sketch.encode(t)
    return {
        "params": sketch.params(),
        "helper_bytes": len(helper),
        "encode_ms": median_ms(lambda: sketch.encode(t), budget_seconds=5, min_repeats=5, max_repeats=30),
        "decode_ms": median_ms(lambda: sketch.decode(helper, probe), budget_seconds=4, min_repeats=20, max_repeats=300),
    }


def timings(d: int = 512) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    t = rng.normal(size=d)
    probe = t + 0.5 * rng.normal(size=d)
    out: dict[str, Any] = {"dimension": d, "decode_target_ms": 2.0}
    for code, sketch in (("polar", PolarAngularSketch(d, SECURITY_BITS)), ("sparse", AngularSketch(d, 8))):
        out[code] = _cost(sketch, t, probe)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=None, help="set names (default: every cached set but *-all)")
    parser.add_argument("--enrol-samples", type=int, nargs="*", default=[3, 1])
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args()
    names = args.sets or [s for s in available() if not s.endswith("-all")]
    result: dict[str, Any] = {
        **provenance("bench_angular_pipeline"),
        "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
    }
    result["timing"] = timings()
    print(result["timing"], flush=True)
    result["sets"] = [run_set(name, k) for name in names for k in args.enrol_samples]
    write_result(args.out, result)


if __name__ == "__main__":
    main()
