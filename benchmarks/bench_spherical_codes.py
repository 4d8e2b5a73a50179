"""Codes on the sphere at 64 bits: at which cosine to the template does a probe decode?

For ``n`` = 128, 192, 256 and 512 dimensions, IronMask's ``α``-sparse code (the smallest ``α``
with ``log2 |C_α| ≥ 64``; :class:`~sketchauth.sketches.angular.AngularSketch`) and the 64-bit
polar code with lists of 1, 8 and 32 (:mod:`sketchauth.sketches.polar`, the decoder of
:class:`~sketchauth.sketches.angular_polar.PolarAngularSketch`), against the channel capacity:
``n`` coordinates at signal-to-noise ratio ``cos²/(1 − cos²)`` carry 64 bits from
``cos = sqrt(1 − 2^(−128/n))`` on.

Both sketches' decisions depend only on the rotated probe ``y = R p``; for a Haar helper and a
probe at angle ``θ`` to the template, ``y = cos θ · c + sin θ · z`` with ``z`` uniform on the unit
sphere orthogonal to the codeword ``c``. Each point of the grid (cosines in steps of 0.025) draws
``TRIALS`` such probes (seeded) for random codewords; a probe decodes when IronMask's rule (the ``α``
largest ``|y_i|`` with their signs) or the polar list decoder (on ``y`` scaled to integers, as the
sketch quantises) returns ``c``. Reported per code: the smallest grid cosine where at least half,
and where at least 90%, of the probes decode.

Run: ``python -m benchmarks.bench_spherical_codes`` → ``benchmarks/results/bench_spherical_codes.json``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.timing import provenance, write_result
from sketchauth.sketches.angular import codebook_bits
from sketchauth.sketches.polar import PolarCode, decode_batch, signs

RESULT = Path(__file__).resolve().parent / "results" / "bench_spherical_codes.json"
DIMENSIONS = (128, 192, 256, 512)
BITS = 64
TRIALS = 400
GRID = np.round(np.arange(0.30, 0.975, 0.025), 3)
LISTS = (1, 8, 32)


def _probes(codewords: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """``cos · c + sin · z``, ``z`` uniform on the unit sphere orthogonal to each unit codeword ``c``."""
    z = rng.normal(size=codewords.shape)
    z -= np.sum(z * codewords, axis=1, keepdims=True) * codewords
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return cos * codewords + math.sqrt(1.0 - cos * cos) * z


def _sparse_success(n: int, alpha: int, cos: float, rng: np.random.Generator) -> float:
    word = np.zeros((TRIALS, n))
    for row in word:
        row[rng.choice(n, alpha, replace=False)] = rng.choice([-1.0, 1.0], alpha)
    c = word / math.sqrt(alpha)
    y = _probes(c, cos, rng)
    top = np.argsort(-np.abs(y), axis=1, kind="stable")[:, :alpha]
    decoded = np.zeros_like(word)
    np.put_along_axis(decoded, top, np.sign(np.take_along_axis(y, top, axis=1)), axis=1)
    return float(np.mean(np.all(decoded == word, axis=1)))


def _polar_success(code: PolarCode, list_size: int, cos: float, rng: np.random.Generator) -> float:
    words = signs(code.encode(rng.integers(0, 2, (TRIALS, code.k)).astype(np.uint8)))
    c = words / math.sqrt(code.n)
    y = np.rint(_probes(c, cos, rng) * 2.0**30)  # integers, as the sketch's rotated probe
    return float(np.mean(np.all(signs(decode_batch(y, code, list_size)) == words, axis=1)))


def _thresholds(curve: list[float]) -> dict[str, float | None]:
    def first(share: float) -> float | None:
        return next((float(g) for g, s in zip(GRID, curve, strict=True) if s >= share), None)

    return {"cos_half_decode": first(0.5), "cos_90pct_decode": first(0.9)}


def run(seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for n in DIMENSIONS:
        alpha = next(a for a in range(1, n) if codebook_bits(n, a) >= BITS)
        row: dict[str, Any] = {
            "dimension": n,
            "capacity_cos": math.sqrt(1.0 - 2.0 ** (-2.0 * BITS / n)),
            "ironmask": {"alpha": alpha, "bits": codebook_bits(n, alpha)},
            "polar": {},
        }
        curve = [_sparse_success(n, alpha, float(g), rng) for g in GRID]
        row["ironmask"].update(_thresholds(curve), success=curve)
        code = PolarCode(n, BITS)
        for list_size in LISTS:
            curve = [_polar_success(code, list_size, float(g), rng) for g in GRID]
            row["polar"][str(list_size)] = {**_thresholds(curve), "success": curve}
        rows.append(row)
        print(
            n,
            round(row["capacity_cos"], 3),
            row["ironmask"]["cos_half_decode"],
            {k: v["cos_half_decode"] for k, v in row["polar"].items()},
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args()
    result: dict[str, Any] = {**provenance("bench_spherical_codes"), "bits": BITS, "trials": TRIALS}
    result["grid"] = GRID.tolist()
    result["dimensions"] = run()
    write_result(args.out, result)


if __name__ == "__main__":
    main()
