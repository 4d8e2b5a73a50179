"""Code-offset encode and decode on creedsolo against reedsolo: same run, interleaved, ratios, JSON.

Run::

    python3 benchmarks/bench_code_offset.py     # -> benchmarks/results/bench_code_offset.json

For each ``(n, t)`` the library call (``CodeOffsetSketch(n, t, codec=…)``: ``encode(secret)``,
``decode(helper, sample)`` with ``t`` byte errors, the most it corrects, and with ``t // 2``) is
timed with each codec, alternating, in batches; a batch's time is the thread's CPU time (on a
busy machine wall time mostly measures waiting for a core), and the table keeps the best batch
(least disturbed) with the median beside it. ``speedup`` is reedsolo's best over creedsolo's.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import ROOT, provenance, write_result  # benchmarks/ is not a package

from sketchauth.sketches.code_offset import CodeOffsetSketch

PROBLEMS = ((16, 2), (32, 4), (64, 8), (128, 16), (255, 32))
CODECS = ("creedsolo", "reedsolo")
BATCHES = 9
#: Calls per batch: about 20 ms of the slower codec per batch at each size.
CALLS = {16: 200, 32: 100, 64: 40, 128: 10, 255: 4}


def _batch_us(fn: Callable[[], object], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return 1e6 * (time.thread_time() - start) / calls


def _noisy(secret: bytes, errors: int, rng: random.Random) -> bytes:
    out = bytearray(secret)
    for i in rng.sample(range(len(secret)), errors):
        out[i] ^= rng.randrange(1, 256)
    return bytes(out)


def measure_problem(n: int, t: int, rng: random.Random) -> dict[str, Any]:
    sketches = {codec: CodeOffsetSketch(n, t, codec=codec) for codec in CODECS}
    secret = bytes(rng.randrange(256) for _ in range(n))
    helper = sketches["reedsolo"].encode(secret)
    samples = {"decode_t_errors": _noisy(secret, t, rng), "decode_half_t_errors": _noisy(secret, t // 2, rng)}
    operations: dict[str, Callable[[CodeOffsetSketch], object]] = {
        "encode": lambda sketch: sketch.encode(secret),
        **{name: (lambda sketch, s=sample: sketch.decode(helper, s)) for name, sample in samples.items()},
    }
    result: dict[str, Any] = {"n": n, "t": t}
    for name, operation in operations.items():
        runs: dict[str, list[float]] = {codec: [] for codec in CODECS}
        for _ in range(BATCHES):
            for codec, sketch in sketches.items():
                runs[codec].append(_batch_us(lambda sketch=sketch, operation=operation: operation(sketch), CALLS[n]))
        best = {codec: min(values) for codec, values in runs.items()}
        result[name] = {
            "best_us": best,
            "median_us": {codec: statistics.median(values) for codec, values in runs.items()},
            "speedup": best["reedsolo"] / best["creedsolo"],
        }
    return result


def main() -> None:
    rng = random.Random(20261128)
    rows = [measure_problem(n, t, rng) for n, t in PROBLEMS]
    result = {**provenance("bench_code_offset.py"), "batches": BATCHES, "calls_per_batch": CALLS, "problems": rows}
    write_result(ROOT / "benchmarks" / "results" / "bench_code_offset.json", result, echo=False)
    print(f"{'n':>4} {'t':>3} | {'encode':>8} {'dec t':>8} {'dec t/2':>8}   (speedup, reedsolo / creedsolo)")
    for row in rows:
        speedups = [row[k]["speedup"] for k in ("encode", "decode_t_errors", "decode_half_t_errors")]
        print(f"{row['n']:>4} {row['t']:>3} | " + " ".join(f"{s:>7.1f}x" for s in speedups))


if __name__ == "__main__":
    main()
