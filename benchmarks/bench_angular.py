"""The angular (IronMask) sketch on real deep embeddings: error rates next to cosine, and its attacks.

For each cached set of real embeddings (``<name>.npz`` with ``X`` [captures, d] and ``labels``,
in ``$SKETCHAUTH_EMBEDDINGS_DIR``; how to rebuild them is in each set's ``<name>.json`` — the
data are never committed) this measures, on people outside the background:

1. **Protocol.** Identities with at least two captures are shuffled (seed 0): 40% join the
   one-capture people as the *background*, the rest are the *evaluation* people. Every capture of
   an evaluation person is enrolled once (its own helper, real ``AngularSketch.encode``) and
   compared with every other evaluation capture: same person = genuine, other = impostor.
   Representation: ``raw`` (unit vectors as the model gives them) or ``centred`` (the background
   mean subtracted, then normalised: fitted on the background only).
2. **Calibration on the background.** ``min_cos = τ`` is the cosine threshold at the target FMR
   among the background's impostor pairs (identity-disjoint from the evaluation); the sketch
   accepts iff the probe decodes *and* ``cos ≥ τ``, so its FMR is at most cosine's at ``τ``.
3. **Decisions**: the exact vectorised decider (``angular_scores``: the integer margin rule and
   the exact angle check) on every pair; a seeded sample re-decided by real ``decode`` and by
   real argon2 ``verify`` (must agree: 0 disagreements).
4. **Beside it**: the unprotected cosine matcher on the same pairs — its FNMR at the sketch's
   *realised* FMR (interpolated on its DET) and at the same ``τ`` — and the ratio; the bits
   ``log2 |C_α|``; the packing limit ``cos θ_k`` (no ``k``-bit code decodes every probe beyond
   it) and the share of genuine pairs below it.
5. **Attacks** (``sketchauth.evaluate.angular_attacks``): the population attack with every
   background embedding through helpers of evaluation people (every embedding of
   ``<name>-all.npz`` whose person is not an evaluation person, when the cache has that larger
   set of the same model); the prior-guided rank of the true
   codeword; the Haar statistic on the mean direction; linkage ``D↔sys`` of two enrolments of one
   person without the pepper (the ``R_2 R_1ᵀ`` attack) and with it (sealed records).
6. **Cost** at 512 dimensions: encode and decode median ms, helper bytes.

BLAS runs single-threaded (``OPENBLAS_NUM_THREADS=1``): small matrix products on a shared
machine are faster and steadier so. Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python
benchmarks/bench_angular.py`` → ``benchmarks/results/bench_angular.json``.
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

from benchmarks.timing import median_ms, provenance, write_result
from sketchauth.evaluate.angular_attacks import (
    linkage_score,
    mean_direction_statistic,
    population_attack,
    prior_guided_rank,
    sealed_linkage_score,
)
from sketchauth.evaluate.deciders import angular_scores, crosscheck_by_decoding, crosscheck_with_verify
from sketchauth.evaluate.trials import Enrolled
from sketchauth.evaluate.unlinkability import linkability
from sketchauth.pepper import Pepper, new_nonce, wrap
from sketchauth.sketches.angular import AngularSketch, codebook_bits, packing_limit_cos, probe_matrix

RESULT = Path(__file__).resolve().parent / "results" / "bench_angular.json"
TARGETS = (1e-3, 1e-4)
#: Most evaluation captures enrolled per configuration (each is one 2n²-byte helper and encode).
MAX_TEMPLATES = 600
#: Pairs re-decided by real decode, and by real argon2 verify, per configuration.
DECODE_CHECKS, VERIFY_CHECKS = 2000, 60
#: Helpers attacked by the population attack / ranked by the prior-guided attacker.
POPULATION_HELPERS, RANKED_HELPERS = 40, 12
#: Mated and non-mated helper pairs of the linkage measurement, and seals of each (with the pepper).
MATED, NONMATED, SEALS = 40, 80, 20


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def split(labels: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (background, evaluation) over captures: identity-disjoint."""
    names, counts = np.unique(labels, return_counts=True)
    multi = names[counts >= 2]
    rng = np.random.default_rng(seed)
    rng.shuffle(multi)
    background_ids = set(names[counts < 2]) | set(multi[: int(0.4 * multi.size)])
    background = np.array([x in background_ids for x in labels])
    return background, ~background


#: Shrinkage of the whitening, as a share of the background covariance's mean eigenvalue.
WHITENING_SHRINKAGE = 0.1


def representation(kind: str, background: np.ndarray) -> Any:
    """``raw`` (unit vectors), ``centred`` (minus the background mean), ``centred-β`` (minus β times
    it: between the two) or ``whitened`` (centred, then multiplied by ``(Σ + λI)^(−1/2)``, ``Σ`` the
    background covariance), each normalised."""
    units = _unit(background)
    centre = units.mean(axis=0)
    if kind == "raw":
        return lambda x: _unit(np.asarray(x, dtype=np.float64))
    if kind.startswith("centred"):
        beta = float(kind.partition("-")[2] or 1.0)
        return lambda x: _unit(_unit(np.asarray(x, dtype=np.float64)) - beta * centre)
    values, vectors = np.linalg.eigh(np.cov((units - centre).T))
    values = np.clip(values, 0.0, None) + WHITENING_SHRINKAGE * values.mean()
    whiten = (vectors / np.sqrt(values)[None, :]) @ vectors.T
    return lambda x: _unit((_unit(np.asarray(x, dtype=np.float64)) - centre) @ whiten)


def cosine_pairs(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor cosines of every ordered pair of distinct captures."""
    s = x @ x.T
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    return s[same & off], s[~same]


def threshold_at(impostor: np.ndarray, fmr: float) -> float:
    """Smallest τ whose share of impostor scores ≥ τ is at most ``fmr``."""
    ordered = np.sort(impostor)[::-1]
    allowed = math.floor(fmr * ordered.size)
    return float(np.nextafter(ordered[allowed], 2.0)) if allowed < ordered.size else float(ordered[-1])


def fnmr_at_fmr(genuine: np.ndarray, impostor: np.ndarray, fmr: float) -> float:
    """Cosine FNMR at the threshold whose realised FMR is ``fmr`` (linear on the DET between steps)."""
    ordered = np.sort(impostor)[::-1]
    k = fmr * ordered.size
    lo, hi = math.floor(k), math.ceil(k)
    if hi >= ordered.size:
        return float(np.mean(genuine < ordered[-1]))
    a = float(np.mean(genuine < np.nextafter(ordered[lo], 2.0)))
    b = float(np.mean(genuine < np.nextafter(ordered[hi], 2.0)))
    return a if hi == lo else a + (b - a) * (k - lo)


def enrolments(
    ev: np.ndarray, labels: np.ndarray, k: int, rng: np.random.Generator
) -> list[tuple[np.ndarray, Any, np.ndarray]]:
    """``(template, label, its enrolment rows)``: every capture alone (``k = 1``), or per identity
    with more than ``k`` captures the mean direction of its first ``k`` (at most :data:`MAX_TEMPLATES`)."""
    if k == 1:
        out = [(ev[e], labels[e], np.array([e])) for e in range(len(labels))]
    else:
        out = []
        for person in np.unique(labels):
            rows = np.flatnonzero(labels == person)
            if rows.size > k:
                out.append((_unit(ev[rows[:k]]).mean(axis=0), person, rows[:k]))
    if len(out) > MAX_TEMPLATES:
        out = [out[i] for i in np.sort(rng.choice(len(out), MAX_TEMPLATES, replace=False))]
    return out


def evaluate(
    name: str,
    x: np.ndarray,
    labels: np.ndarray,
    kind: str,
    alpha: int,
    background: np.ndarray,
    k: int = 1,
    population: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """One configuration (representation, α, captures per enrolment) on one set: rates, checks, attacks."""
    rng = np.random.default_rng(1)
    prep = representation(kind, x[background])
    bg, ev = prep(x[background]), prep(x[~background])
    bg_labels, ev_labels = labels[background], labels[~background]
    d = x.shape[1]
    _, bg_impostor = cosine_pairs(bg, bg_labels)
    taus = {f: threshold_at(bg_impostor, f) for f in TARGETS}
    templates = enrolments(ev, ev_labels, k, rng)
    probes, refused = probe_matrix(ev, d)
    assert not refused.any()
    base = AngularSketch(d, alpha)
    sketches = {f: AngularSketch(d, alpha, min_cos=min(1.0, max(0.0, taus[f]))) for f in TARGETS}
    deployed = sketches[TARGETS[0]]
    genuine: dict[float, list[np.ndarray]] = {f: [] for f in (0.0, *TARGETS)}
    impostor: dict[float, list[np.ndarray]] = {f: [] for f in (0.0, *TARGETS)}
    cos_gen, cos_imp = [], []
    keep_helpers, keep_secrets, keep_probes = [], [], []
    started = time.perf_counter()
    for template, label, rows in templates:
        secret = deployed.check_secret(template)
        helper = deployed.encode(secret)  # the deployment at the first target keeps these helpers
        matrix = deployed.matrix(helper)
        others = np.setdiff1d(np.arange(len(ev_labels)), rows)
        same = ev_labels[others] == label
        margin = angular_scores(base, matrix, secret, probes[others])
        genuine[0.0].append(margin[same] > 0)
        impostor[0.0].append(margin[~same] > 0)
        for f, sk in sketches.items():
            ok = angular_scores(sk, matrix, secret, probes[others]) > 0
            genuine[f].append(ok[same])
            impostor[f].append(ok[~same])
        cosines = ev[others] @ (template / np.linalg.norm(template))
        cos_gen.append(cosines[same])
        cos_imp.append(cosines[~same])
        if len(keep_helpers) < max(POPULATION_HELPERS, 60):
            keep_helpers.append(helper)
            keep_secrets.append(secret)
            keep_probes.append(others)
    elapsed = time.perf_counter() - started
    g_cos, i_cos = np.concatenate(cos_gen), np.concatenate(cos_imp)
    bits = codebook_bits(d, alpha)
    limit = packing_limit_cos(d, bits)
    out: dict[str, Any] = {
        "set": name,
        "representation": kind,
        "alpha": alpha,
        "dimension": d,
        "bits_log2_codebook": bits,
        "background_captures": int(background.sum()),
        "background_identities": int(np.unique(labels[background]).size),
        "evaluation_identities": int(np.unique(ev_labels).size),
        "captures_per_enrolment": k,
        "enrolled_templates": len(templates),
        "genuine_pairs": int(g_cos.size),
        "impostor_pairs": int(i_cos.size),
        "decode_failures_genuine_no_angle_check": float(1 - np.mean(np.concatenate(genuine[0.0]))),
        "decode_successes_impostor_no_angle_check": float(np.mean(np.concatenate(impostor[0.0]))),
        "packing_limit_cos": limit,
        "genuine_share_below_packing_limit": float(np.mean(g_cos < limit)),
        "seconds_encode_and_decide": elapsed,
        "operating_points": [],
    }
    for f in TARGETS:
        g_ok, i_ok = np.concatenate(genuine[f]), np.concatenate(impostor[f])
        fnmr, fmr = float(1 - g_ok.mean()), float(i_ok.mean())
        cos_at_realised = fnmr_at_fmr(g_cos, i_cos, max(fmr, 1.0 / i_cos.size))
        cos_at_target = fnmr_at_fmr(g_cos, i_cos, f)
        cos_same_tau = (float(np.mean(g_cos < taus[f])), float(np.mean(i_cos >= taus[f])))
        out["operating_points"].append(
            {
                "target_fmr": f,
                "min_cos_from_background": taus[f],
                "sketch_fnmr": fnmr,
                "sketch_fmr": fmr,
                "sketch_fmr_within_2x_target": fmr <= 2 * f,
                "cosine_fnmr_at_sketch_fmr": cos_at_realised,
                "cosine_fnmr_at_target_fmr": cos_at_target,
                "cosine_fnmr_fmr_at_same_min_cos": list(cos_same_tau),
                "ratio_at_same_fmr": fnmr / cos_at_realised if cos_at_realised > 0 else math.inf,
                "ratio_at_target_fmr": fnmr / cos_at_target if cos_at_target > 0 else math.inf,
                "bound_fnmr_packing_limit": float(np.mean(g_cos < max(limit, taus[f]))),
            }
        )
    # Real decode and real argon2 verify on a sample of the kept helpers' pairs.
    f = TARGETS[0]
    sk = sketches[f]
    kept = Enrolled(tuple(keep_helpers), tuple(sk.secret_bytes(s) for s in keep_secrets), tuple(keep_secrets))
    pairs = np.array([(i, q) for i, others in enumerate(keep_probes) for q in others.tolist()]).T
    decided = np.concatenate(
        [
            angular_scores(sk, sk.matrix(h), s, probes[pairs[1][pairs[0] == i]]) > 0
            for i, (h, s) in enumerate(zip(keep_helpers, keep_secrets, strict=True))
        ]
    )
    chosen = np.sort(rng.choice(pairs.shape[1], min(DECODE_CHECKS, pairs.shape[1]), replace=False))
    checked, disagreements, _ = crosscheck_by_decoding(sk, kept, probes, pairs, decided, np.zeros_like(decided), chosen)
    agreed, verified = crosscheck_with_verify(sk, kept, probes, pairs, decided, VERIFY_CHECKS, seed=1)
    out["decode_check"] = {"checked": checked, "disagreements": disagreements}
    out["verify_check"] = {"checked": verified, "agreed": agreed, "argon2_profile": "test"}
    # (c) population attack: every background capture through helpers of evaluation people.
    out["population_attack"] = {}
    # The attacker's embeddings: a larger set of the same model when there is one (its people who are
    # not evaluation people), else the background.
    attackers = bg if population is None else prep(population[0][~np.isin(population[1], ev_labels)])
    for f in TARGETS:
        target = sketches[f]
        secrets = keep_secrets[:POPULATION_HELPERS]
        helpers = keep_helpers[:POPULATION_HELPERS] if target is sk else [target.encode(s) for s in secrets]
        out["population_attack"][str(f)] = population_attack(target, helpers, secrets, attackers)
    # (a) prior-guided ranking under a Gaussian model of the background in this representation.
    centre = bg.mean(axis=0)
    cov = np.cov((bg - centre).T) + 1e-3 * np.eye(d)
    precision = np.linalg.inv(cov)
    ranks = [
        prior_guided_rank(sk, h, s, centre, precision)
        for h, s in zip(keep_helpers[:RANKED_HELPERS], keep_secrets[:RANKED_HELPERS], strict=True)
    ]
    out["prior_guided_rank_log2"] = {
        "helpers": len(ranks),
        "median": float(np.median(ranks)),
        "min": float(np.min(ranks)),
        "codebook_bits": bits,
    }
    matrices = [sk.matrix(h) for h in keep_helpers]
    # The templates' dominant public direction: top eigenvector of the background's second moment
    # (the mean direction for raw embeddings, the first principal axis once centred).
    direction = np.linalg.eigh(bg.T @ bg)[1][:, -1]
    out["haar_statistic_mean_direction"] = mean_direction_statistic(matrices, direction)
    return out


def linkage(
    name: str, x: np.ndarray, labels: np.ndarray, kind: str, alpha: int, background: np.ndarray
) -> dict[str, Any]:
    """D↔sys of two enrolments (two different captures) of one person, without and with the pepper."""
    rng = np.random.default_rng(2)
    prep = representation(kind, x[background])
    ev, ev_labels = prep(x[~background]), labels[~background]
    names, counts = np.unique(ev_labels, return_counts=True)
    people = names[counts >= 2][:MATED]
    sketch = AngularSketch(x.shape[1], alpha)
    pepper = Pepper(b"bench-angular-pepper-0123456789abcdef")
    first, second = [], []
    for person in people:
        rows = np.flatnonzero(ev_labels == person)[:2]
        first.append(sketch.encode(ev[rows[0]]))
        second.append(sketch.encode(ev[rows[1]]))
    k = len(people)
    nonmated = [(i, j) for i in range(k) for j in rng.choice([j for j in range(k) if j != i], 2, replace=False)]
    nonmated = nonmated[:NONMATED]
    mated_scores = [linkage_score(sketch, first[i], second[i]) for i in range(k)]
    non_scores = [linkage_score(sketch, first[i], second[j]) for i, j in nonmated]
    # Sealing is cheap: each pair is sealed again with fresh nonces, SEALS times, for a steady estimate.
    sealed_m = [
        sealed_linkage_score(wrap(first[i], pepper, new_nonce()), wrap(second[i], pepper, new_nonce()))
        for i in range(k)
        for _ in range(SEALS)
    ]
    sealed_n = [
        sealed_linkage_score(wrap(first[i], pepper, new_nonce()), wrap(second[j], pepper, new_nonce()))
        for i, j in nonmated
        for _ in range(SEALS)
    ]
    return {
        "set": name,
        "representation": kind,
        "alpha": alpha,
        "mated_pairs": k,
        "nonmated_pairs": len(nonmated),
        "sealed_pairs_mated_nonmated": [len(sealed_m), len(sealed_n)],
        "attack": "max <c2, R2 R1^T c1> by truncated power iteration from every column",
        "mated_score_median": float(np.median(mated_scores)),
        "nonmated_score_median": float(np.median(non_scores)),
        "d_sys_without_pepper": linkability(mated_scores, non_scores, bins=20).d_sys,
        "d_sys_with_pepper": linkability(sealed_m, sealed_n, bins=20).d_sys,
    }


def timings(d: int = 512, alpha: int = 8) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    sketch = AngularSketch(d, alpha)
    t = rng.normal(size=d)
    helper = sketch.encode(t)
    probe = t + 0.3 * rng.normal(size=d)
    return {
        "dimension": d,
        "alpha": alpha,
        "helper_bytes": len(helper),
        "encode_ms": median_ms(lambda: sketch.encode(t), budget_seconds=5, min_repeats=5, max_repeats=50),
        "decode_ms": median_ms(lambda: sketch.decode(helper, probe), budget_seconds=3, min_repeats=20, max_repeats=500),
        "decode_target_ms": 2.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("SKETCHAUTH_EMBEDDINGS_DIR", ""))
    parser.add_argument("--sets", nargs="*", default=None, help="set names (default: every .npz in --data)")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args()
    if not args.data:
        raise SystemExit("give --data or SKETCHAUTH_EMBEDDINGS_DIR: the folder of cached <name>.npz embeddings")
    folder = Path(args.data)
    # "<name>-all.npz" is the population of set <name> (more people, for the population attack).
    names = args.sets or sorted(p.stem for p in folder.glob("*.npz") if not p.stem.endswith("-all"))
    result: dict[str, Any] = {**provenance("bench_angular"), "blas_threads": os.environ["OPENBLAS_NUM_THREADS"]}
    result["timing"] = timings()
    result["sets"] = []
    result["linkage"] = []
    for name in names:
        data = np.load(folder / f"{name}.npz")
        meta = json.loads((folder / f"{name}.json").read_text()) if (folder / f"{name}.json").exists() else {}
        x, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["labels"]).astype(str)
        background, _ = split(labels)
        extra = folder / f"{name}-all.npz"
        population = None
        if extra.exists():
            everyone = np.load(extra)
            population = (np.asarray(everyone["X"], dtype=np.float64), np.asarray(everyone["labels"]).astype(str))
        d = x.shape[1]
        floor = next(a for a in range(1, d) if codebook_bits(d, a) >= 64)
        strong = next(a for a in range(1, d) if codebook_bits(d, a) >= 115)
        info = {
            "set": name,
            "model": meta.get("model", ""),
            "modality": meta.get("modality", ""),
            "licence": meta.get("licence", ""),
        }
        fused = int(np.median(np.unique(labels, return_counts=True)[1])) > 4  # enough captures for k = 3
        configs = [("raw", floor, 1), ("centred", floor, 1), ("whitened", floor, 1), ("centred", strong, 1)]
        configs += (
            [("raw", floor, 3), ("centred-0.5", floor, 3), ("centred-0.8", floor, 3), ("centred", floor, 3)]
            if fused
            else []
        )
        for kind, alpha, k in configs:
            row = evaluate(name, x, labels, kind, alpha, background, k, population)
            result["sets"].append({**info, **row})
            keys = ("set", "representation", "alpha", "captures_per_enrolment", "seconds_encode_and_decide")
            print(json.dumps({key: row[key] for key in keys}), flush=True)
        result["linkage"].append(linkage(name, x, labels, "centred", floor, background))
    write_result(args.out, result)


if __name__ == "__main__":
    main()
