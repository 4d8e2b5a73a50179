"""Wall time of the test suite's two runs: README's quick run and CI's serial phase.

Run ``python3 benchmarks/bench_test_suite.py [--out FILE] [--runs N]`` from the repository root
(about 6 minutes per round on a shared 2-core box). Writes JSON (default
``benchmarks/results/test_suite.json``) with the date, the commit, the CPU and, per run of each
phase: the command, its wall time, the CPU time of pytest and its workers (``RUSAGE_CHILDREN``),
pytest's exit status, its closing summary line, and the 1-minute load average before and after
(the machine is shared: the wall time depends on the other jobs, the CPU time much less).

* ``quick`` — ``pytest -n auto -m "not slow and not statistical"`` (README's command: pytest-xdist,
  one worker per core);
* ``serial`` — ``pytest -p no:xdist -m "slow or statistical"`` (the tests that start servers, the
  timing oracles and the large populations, one at a time, as ``.ci/run`` runs them after it).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

PHASES = {
    "quick": ["-n", "auto", "-m", "not slow and not statistical"],
    "serial": ["-p", "no:xdist", "-m", "slow or statistical"],
}


def _load() -> float:
    return os.getloadavg()[0]


def run_phase(args: list[str]) -> dict[str, Any]:
    """One pytest run of ``args`` in the repository root: wall, children's CPU, status, summary line."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = _load()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = done.stdout.strip().splitlines()
    return {
        "command": "pytest " + " ".join(f'"{a}"' if " " in a else a for a in args),
        "wall_s": round(wall, 1),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
        "status": done.returncode,
        "summary": lines[-1] if lines else "",
        "load_1min_before": load_before,
        "load_1min_after": _load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "test_suite.json"))
    parser.add_argument("--runs", type=int, default=1, help="rounds of both phases (default 1)")
    options = parser.parse_args()
    result: dict[str, Any] = {**timing.provenance("test_suite"), "phases": {name: [] for name in PHASES}}
    for _ in range(options.runs):
        for name, args in PHASES.items():
            result["phases"][name].append(run_phase(args))
    timing.write_result(options.out, result)


if __name__ == "__main__":
    main()
