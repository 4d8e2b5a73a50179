"""Timing of one benchmarked operation, and the provenance every benchmark result records.

Each benchmark script keeps its own budget and repetition bounds (they say how long that script
may run) and passes them in; this module holds only the measuring loop, so every table in the
README that says "median ms" was measured the same way, and the provenance and output of a
JSON result, so every result file starts with the same fields.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def median_ms(fn: Callable[[], object], *, budget_seconds: float, min_repeats: int, max_repeats: int) -> float:
    """Median wall time of ``fn()`` in milliseconds (after one untimed warm-up call).

    ``fn`` runs at least ``min_repeats`` times, then again until ``budget_seconds`` of timed
    calls have been spent, but never more than ``max_repeats`` times: cheap operations get many
    samples, slow ones stay within the budget. The warm-up call keeps first-use costs (imports,
    caches) out of the median.

    >>> median_ms(lambda: None, budget_seconds=0.0, min_repeats=3, max_repeats=3) >= 0.0
    True
    """
    fn()
    times: list[float] = []
    spent = 0.0
    while len(times) < max_repeats and (len(times) < min_repeats or spent < budget_seconds):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return 1000.0 * statistics.median(times)


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (else what :mod:`platform` knows), for a result's provenance."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str:
    """The checked-out commit (``-dirty`` with uncommitted changes to tracked files), or ``unknown``."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def provenance(benchmark: str) -> dict[str, Any]:
    """The fields every JSON result starts with: which benchmark, when, on which commit, CPU and Python."""
    return {
        "benchmark": benchmark,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def write_result(path: str | Path, result: dict[str, Any], *, echo: bool = True) -> None:
    """Write ``result`` as indented JSON to ``path`` (folders created, numpy floats as floats); ``echo`` prints it."""
    text = json.dumps(result, indent=2, default=float) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    if echo:
        print(text, end="")
