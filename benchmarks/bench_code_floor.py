"""The code alone against the capacity floor, by simulation: which code/decoder comes nearest?

The capacity floor (:mod:`sketchauth.evaluate.capacity`) is the FNMR of an ideal ``k``-bit code on
``S^(n−1)``: a probe fails iff its angle to the template exceeds ``θ_k``, the angle of a cap of
measure ``2^−k``. Here each code's decode probability ``P(cos)`` at a fixed cosine to the
template is measured (probes ``cos·c + sin·z``, ``z`` uniform on the unit sphere orthogonal to the
codeword, as :mod:`benchmarks.bench_spherical_codes`; rounded to integers at ``2^28``, as the
sketch quantises; seeded per ``(n, k)`` and grid point, the same seeds for every decoder) on a grid
of cosines around ``cos θ_k``; then the **FNMR ratio to the floor** under models of genuine noise:
genuine cosines normal with spread ``s`` (0.10, 0.15) and mean set so that the floor FNMR is
3%, 10% or 20% (real sets: ``benchmarks/bench_code_sizes.py``). Below the grid nothing decodes,
above it everything does (checked: ``top``, the share decoded at the grid's last point).

Decoders (:data:`DECODERS`): the shipped polar code with its list-128 CRC-6 decoder, CRC 4 and 8,
lists of 512 and 1024 with CRCs of 6, 8 and 11 (the compiled kernel takes lists up to 1024; the
sketch offers 128), and a Reed–Muller/polar hybrid information set (the ``k + crc`` indices of
largest row weight, ties by polarisation weight; Li, Shen and Tse, "A RM-polarized code",
arXiv:1407.5483, §III) — measured here only, not offered. Per decoder: ``ml_share``, the share of
failures where the decoder returned a *codeword* at least as correlated with the probe as the
enrolled one (an error of maximum-likelihood decoding of that code: no list removes it).

**Limits** (no decoder): the random spherical code of ``2^k`` words uniform on the sphere, decoded
by maximum correlation, fails at cosine ``c`` with probability ``1 − (1 − A(c))^(2^k − 1)`` (``A``:
the cap's share; exact); the random *binary* code (``2^k`` words uniform on ``{±1/√n}^n``, the BPSK
restriction of every binary code on the sphere) with probability ``1 − (1 − q(y))^(2^k − 1)``, ``q(y)``
the share of sign vectors more correlated with the probe than the codeword, by the
Lugannani–Rice saddlepoint approximation (Lugannani and Rice 1980; Butler, "Saddlepoint
approximations", 2007, §1.2), averaged over probes.

Run: ``python -m benchmarks.bench_code_floor [--dimensions 128 256 512] [--trials 200]``
→ ``benchmarks/results/bench_code_floor.json`` (or one dimension per process, ``--out`` each, then
``--merge A.json B.json ...``).
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
from scipy.optimize import brentq
from scipy.stats import norm

from benchmarks.bench_spherical_codes import _probes
from benchmarks.timing import provenance, write_result
from sketchauth.evaluate.capacity import capacity_cos, code_sizes, log2_cap_fraction
from sketchauth.sketches.polar import PolarCode, decode_batch, signs

RESULT = Path(__file__).resolve().parent / "results" / "bench_code_floor.json"
#: (name, list size, CRC bits, information set, dimensions measured): the shipped decoder first.
DECODERS: tuple[tuple[str, int, int, str, tuple[int, ...]], ...] = (
    ("list128-crc6", 128, 6, "polarisation-weight", (128, 256, 512)),
    ("list128-crc4", 128, 4, "polarisation-weight", (128, 256, 512)),
    ("list128-crc8", 128, 8, "polarisation-weight", (128, 256, 512)),
    ("list128-crc6-rm-hybrid", 128, 6, "rm-hybrid", (128, 256, 512)),
    ("list512-crc8", 512, 8, "polarisation-weight", (128,)),
    ("list1024-crc6", 1024, 6, "polarisation-weight", (128,)),
    ("list1024-crc11", 1024, 11, "polarisation-weight", (128,)),
    # longer CRCs need longer lists; measured at 64 bits beyond 128-D only (--bits 64 --decoders ...)
    ("list512-crc11", 512, 11, "polarisation-weight", (256, 512)),
    ("list1024-crc11-long", 1024, 11, "polarisation-weight", (256,)),
)
#: Genuine-cosine models: normal spread and the floor FNMR the mean is set to.
SPREADS = (0.10, 0.15)
FLOORS = (0.03, 0.10, 0.20)
#: The model the summary quotes.
CENTRAL = "spread10_floor10"
#: Grid of cosines: cos θ_k + these offsets.
OFFSETS = np.round(np.arange(-0.14, 0.1001, 0.01), 3)


def rm_hybrid(code: PolarCode) -> PolarCode:
    """``code`` with its information set chosen by row weight first (Reed–Muller), ties by polarisation weight."""
    index = np.arange(code.N)
    m = code.N.bit_length() - 1
    weight = sum(((index >> b) & 1) * 2.0 ** (b / 4.0) for b in range(m))
    rows = np.array([bin(i).count("1") for i in index], dtype=np.float64)
    key = np.where(index < code.n, rows * 1e6 + weight, -1.0)
    code.info = np.sort(np.argsort(-key, kind="stable")[: code.k + code.crc])
    code.data, code.check = code.info[: code.k], code.info[code.k :]
    code.frozen = np.ones(code.N, dtype=bool)
    code.frozen[code.info] = False
    return code


def decode_curve(code: PolarCode, list_size: int, grid: np.ndarray, trials: int, seed: int) -> dict[str, Any]:
    """Share decoded per grid cosine, the share of failures that are ML errors, CPU ms per decode."""
    decoded, ml, failures, cpu = [], 0, 0, 0.0
    for g, cos in enumerate(grid):
        rng = np.random.default_rng([seed, g])
        words = signs(code.encode(rng.integers(0, 2, (trials, code.k)).astype(np.uint8)))
        y = np.rint(_probes(words / math.sqrt(code.n), float(cos), rng) * 2.0**28)
        start = time.process_time()
        out = decode_batch(y, code, list_size)
        cpu += time.process_time() - start
        ok = np.all(signs(out) == words, axis=1)
        closer = np.einsum("ij,ij->i", signs(out).astype(np.float64), y) >= np.einsum("ij,ij->i", words, y)
        ml += int(np.count_nonzero(~ok & code.valid(out) & closer))
        failures += int(np.count_nonzero(~ok))
        decoded.append(float(np.mean(ok)))
    return {
        "decoded": decoded,
        "ml_share": round(ml / failures, 4) if failures else None,
        "decode_ms": round(cpu / (grid.size * trials) * 1e3, 4),
    }


def floor_ratios(grid: np.ndarray, decoded: np.ndarray, cap: float) -> dict[str, float]:
    """FNMR over the floor FNMR per genuine-cosine model (``spread10_floor3``: spread 0.10, floor FNMR 3%)."""
    fine = np.linspace(grid[0], grid[-1], 4001)
    p = np.interp(fine, grid, decoded)
    out = {}
    for s in SPREADS:
        for f in FLOORS:
            mu = cap + s * norm.ppf(1.0 - f)  # P(cos < cap) = f
            miss = np.sum(norm.pdf(fine, mu, s) * (1.0 - p)) * (fine[1] - fine[0]) + norm.cdf(grid[0], mu, s)
            out[f"spread{round(s * 100)}_floor{round(f * 100)}"] = round(float(miss / f), 4)
    return out


def _log_binary_tail(a: np.ndarray, t: float) -> float:
    """``ln P(Σ ε_i a_i ≥ t)`` for independent uniform signs ``ε_i`` (Lugannani–Rice)."""
    if t <= 0:
        return math.log(0.5)
    if t >= float(a.sum()):
        return -math.inf

    def cumulant(s: float) -> float:
        return float(np.sum(np.logaddexp(s * a, -s * a)) - a.size * math.log(2.0))

    s = brentq(lambda s: float(np.sum(a * np.tanh(s * a))) - t, 1e-12, 1e6 / float(a.max()))
    w = math.sqrt(max(2.0 * (s * t - cumulant(s)), 1e-300))
    u = s * math.sqrt(float(np.sum(a * a * (1.0 - np.tanh(s * a) ** 2))))
    mills = math.exp(float(norm.logsf(w) - norm.logpdf(w)))
    return float(norm.logpdf(w)) + math.log(max(mills + 1.0 / u - 1.0 / w, 1e-300))


def _fail(log_share: float, k: int) -> float:
    """``1 − (1 − e^log_share)^(2^k − 1)``."""
    if log_share < -700:
        return 0.0
    return -math.expm1((2.0**k - 1.0) * math.log1p(-math.exp(log_share)))


def limit_curves(n: int, k: int, grid: np.ndarray, trials: int, seed: int) -> dict[str, list[float]]:
    """Decode probability of the random spherical and random binary codes (ML) per grid cosine."""
    spherical = [1.0 - _fail(log2_cap_fraction(n, float(c)) * math.log(2.0), k) for c in grid]
    binary = []
    for g, cos in enumerate(grid):
        rng = np.random.default_rng([seed, g, 1])
        words = rng.choice([-1.0, 1.0], size=(trials, n))
        y = _probes(words / math.sqrt(n), float(cos), rng)
        fails = [_fail(_log_binary_tail(np.abs(row), float(word @ row)), k) for word, row in zip(words, y, strict=True)]
        binary.append(1.0 - float(np.mean(fails)))
    return {"random_spherical": spherical, "random_binary": binary}


def run_size(n: int, k: int, trials: int, limit_trials: int, names: list[str] | None = None) -> dict[str, Any]:
    cap = capacity_cos(n, k)
    grid = np.round(cap + OFFSETS, 4)
    seed = 1000 * n + k
    row: dict[str, Any] = {"dimension": n, "bits": k, "capacity_cos": cap, "grid": grid.tolist(), "decoders": {}}
    for name, list_size, crc, construction, dims in DECODERS:
        if n not in dims or k + crc >= n or (names is not None and name not in names):
            continue
        code = PolarCode(n, k, crc)
        if construction == "rm-hybrid":
            code = rm_hybrid(code)
        curve = decode_curve(code, list_size, grid, trials, seed)
        curve["ratio"] = floor_ratios(grid, np.array(curve["decoded"]), cap)
        curve["top"] = curve["decoded"][-1]
        row["decoders"][name] = curve
        print(n, k, name, curve["ratio"][CENTRAL], curve["ml_share"], curve["decode_ms"], flush=True)
    limits = limit_curves(n, k, grid, limit_trials, seed)
    row["limits"] = {name: {"decoded": p, "ratio": floor_ratios(grid, np.array(p), cap)} for name, p in limits.items()}
    print(n, k, {name: v["ratio"][CENTRAL] for name, v in row["limits"].items()}, flush=True)
    return row


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Every ratio (re)computed from the stored curves, and per size the shipped decoder, the best
    measured one and the limits under :data:`CENTRAL` (``summary``)."""
    result["models"] = {"spreads": list(SPREADS), "floor_fnmr": list(FLOORS), "central": CENTRAL}
    summary = []
    for row in result["sizes"]:
        grid, cap = np.array(row["grid"]), row["capacity_cos"]
        for entry in [*row["decoders"].values(), *row["limits"].values()]:
            entry["ratio"] = floor_ratios(grid, np.array(entry["decoded"]), cap)
        ratios = {name: d["ratio"][CENTRAL] for name, d in row["decoders"].items()}
        if DECODERS[0][0] not in ratios or not row.get("limits"):
            continue  # a partial run (--decoders): summarised once merged with the full one
        best = min(ratios, key=ratios.__getitem__)
        summary.append(
            {
                "dimension": row["dimension"],
                "bits": row["bits"],
                "shipped": ratios[DECODERS[0][0]],
                "best_decoder": best,
                "best": ratios[best],
                "best_decode_ms": row["decoders"][best]["decode_ms"],
                "shipped_decode_ms": row["decoders"][DECODERS[0][0]]["decode_ms"],
                "random_binary": row["limits"]["random_binary"]["ratio"][CENTRAL],
                "random_spherical": row["limits"]["random_spherical"]["ratio"][CENTRAL],
            }
        )
    result["summary"] = summary
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dimensions", type=int, nargs="*", default=[128, 256, 512])
    parser.add_argument("--trials", type=int, default=200, help="probes per grid cosine and decoder")
    parser.add_argument("--limit-trials", type=int, default=100, help="probes per grid cosine, random binary code")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--bits", type=int, nargs="*", default=None, help="code sizes (default: every one)")
    parser.add_argument("--decoders", nargs="*", default=None, help="decoder names (default: every one)")
    parser.add_argument("--merge", type=Path, nargs="*", default=None, help="join these runs' sizes into --out")
    args = parser.parse_args(argv)
    if args.merge:
        runs = [json.loads(path.read_text()) for path in args.merge]
        sizes: dict[tuple[int, int], dict[str, Any]] = {}
        for row in (row for run in runs for row in run["sizes"]):  # a later run's decoders join the size's row
            key = (row["dimension"], row["bits"])
            if key in sizes:
                sizes[key]["decoders"].update(row["decoders"])
            else:
                sizes[key] = row
        merged = {**runs[0], "sizes": sorted(sizes.values(), key=lambda r: (r["dimension"], r["bits"]))}
        merged["runs"] = [{k: run[k] for k in ("load", "trials", "limit_trials") if k in run} for run in runs]
        write_result(args.out, summarise(merged), echo=False)
        return
    result: dict[str, Any] = {
        **provenance("bench_code_floor"),
        "load": os.getloadavg(),
        "trials": args.trials,
        "limit_trials": args.limit_trials,
        "models": {"spreads": list(SPREADS), "floor_fnmr": list(FLOORS)},
        "decoders": [
            {"name": d[0], "list_size": d[1], "crc": d[2], "information_set": d[3], "dimensions": list(d[4])}
            for d in DECODERS
        ],
        "sizes": [],
    }
    for n in args.dimensions:
        for k in code_sizes(n):
            if args.bits is None or k in args.bits:
                result["sizes"].append(run_size(n, k, args.trials, args.limit_trials, args.decoders))
            write_result(args.out, summarise(result), echo=False)  # partial results survive an interrupted run


if __name__ == "__main__":
    main()
