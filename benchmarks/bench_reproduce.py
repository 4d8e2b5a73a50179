"""Speed of ``sketchauth reproduce`` and of the exact chaff tables it relies on.

Run ``nice python3 benchmarks/bench_reproduce.py [--out FILE]`` (a few minutes on a shared 2-core
box). Writes JSON (default ``benchmarks/results/bench_reproduce.json``) with the date, the commit,
the CPU and:

* the wall and CPU time (``time.process_time``: this process, all threads) of
  ``reproduce(quick=True)`` (the CI run) and of the full run, one run each, with the load average
  when each started (the machine is shared: wall time depends on the other jobs, CPU time much
  less), and the full run's steps sorted by CPU time — run as the command runs it, inside
  ``sketchauth.cli.reproduce.retained_heap``;
* the exact chaff randomness of ``ChaffPointSketch(24, 3)`` (605 sketches): median ms of the run
  tables + exact ``H∞(R)`` from a cold cache, of the exact sketch distribution, and of the exact
  5-bit guessing success;
* the run tables against the step-by-step fill they replace, on every secret of universe 16.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402


def _chaff() -> dict[str, float]:
    from sketchauth.evaluate.guessing import exact_pad_success
    from sketchauth.sketches import chaff

    def cold_report() -> float:
        chaff._segment_weights.cache_clear()
        return chaff.ChaffPointSketch(24, 3).report().randomness_bits

    sk = chaff.ChaffPointSketch(24, 3)
    distribution = sk.sketch_distribution()
    out = {
        "report_exact_randomness_ms": timing.median_ms(cold_report, budget_seconds=2.0, min_repeats=5, max_repeats=50),
        "sketch_distribution_ms": timing.median_ms(
            sk.sketch_distribution, budget_seconds=2.0, min_repeats=5, max_repeats=50
        ),
        "exact_guessing_success_ms": timing.median_ms(
            lambda: exact_pad_success(distribution.values(), sk.sketch_count, 5),
            budget_seconds=1.0,
            min_repeats=5,
            max_repeats=50,
        ),
    }
    small = chaff.ChaffPointSketch(16, 2)
    secrets = list(small.secret_space())
    out["universe16_run_tables_ms"] = timing.median_ms(
        lambda: [small.exact_randomness_space(s) for s in secrets], budget_seconds=1.0, min_repeats=3, max_repeats=20
    )
    out["universe16_step_by_step_fill_ms"] = timing.median_ms(
        lambda: [chaff.fill_by_orders(16, 2, s.tolist()) for s in secrets],
        budget_seconds=0.0,
        min_repeats=1,
        max_repeats=1,
    )
    return out


def _reproduce(quick: bool) -> dict[str, Any]:
    from sketchauth.cli.reproduce import retained_heap
    from sketchauth.papers import Options, reproduce

    steps: list[tuple[str, float]] = []
    last = [time.process_time()]

    def progress(name: str) -> None:
        now = time.process_time()
        steps.append((name, round(now - last[0], 2)))
        last[0] = now

    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    with retained_heap() as applied:  # as the command runs it
        reproduce(Options(quick=quick), progress=progress)
    return {
        "retained_heap": applied,
        "wall_seconds": round(time.perf_counter() - wall, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
        "load_average_1min_at_start": round(load, 2),
        "steps_by_cpu_seconds": dict(sorted(steps, key=lambda s: -s[1])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_reproduce.json"))
    args = parser.parse_args()
    result = {
        **timing.provenance("reproduce"),
        "chaff_universe_24": _chaff(),
        "reproduce_quick": _reproduce(True),
        "reproduce_full": _reproduce(False),
    }
    timing.write_result(args.out, result)


if __name__ == "__main__":
    main()
