"""Start-up cost of the library against numpy's: CPU time of fresh interpreters, same run, JSON.

Run::

    python3 benchmarks/bench_import.py [--before DIR] [--label L]   # -> benchmarks/results/bench_import-L.json

Each statement runs in a fresh ``python -c`` many times, interleaved; the CPU time (user + system)
of each child comes from ``getrusage(RUSAGE_CHILDREN)``. A statement's *import cost* is its CPU
time minus that of ``python -c pass`` (the interpreter's own start-up), best of the runs (on a
shared machine the best run is the least disturbed one; medians are recorded too). With
``--before``, both trees are measured in the same rounds, interleaved statement by statement. The ratio the
docs quote is ``cost(library) / cost(numpy)``: the library's imports include numpy's.

The library is imported from a copy of this tree's ``sketchauth`` package in a temporary directory,
in two states: ``bytecode`` (compiled first with :mod:`compileall`, as ``pip install`` leaves an
installed package) and ``source`` (no ``__pycache__`` and ``PYTHONDONTWRITEBYTECODE=1``: every
module compiled at each start, as a checkout run with that variable set). ``-X importtime`` of the
bytecode state gives the library's most expensive modules (self time, best run).
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import ROOT, provenance, write_result  # benchmarks/ is not a package

#: What programs using the library start with: one sketch family, every family, every family and
#: enrolment (argon2id); the last is the README's first example.
LIBRARY = {
    "pinsketch": "from sketchauth import PinSketch",
    "code-offset": "from sketchauth import CodeOffsetSketch",
    "all-sketches": "from sketchauth import PinSketch, CodeOffsetSketch, IntervalSketch, FuzzyVault, "
    "WeightedFuzzyVault, AsymmetricIntervalSketch, ChaffPointSketch",
    "all-and-enrolment": "from sketchauth import PinSketch, CodeOffsetSketch, IntervalSketch, FuzzyVault, "
    "WeightedFuzzyVault, AsymmetricIntervalSketch, ChaffPointSketch; from sketchauth.enrolment import enrol, verify",
}
STATEMENTS = {"python": "pass", "numpy": "import numpy", **LIBRARY}
IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")


def _cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, cwd=env["PYTHONPATH"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _package_copy(tree: Path, directory: Path, *, bytecode: bool) -> Path:
    """A copy of ``tree``'s ``sketchauth`` (with its built extension, without caches) under ``directory``."""
    target = directory / ("bytecode" if bytecode else "source")
    shutil.copytree(tree / "sketchauth", target / "sketchauth", ignore=shutil.ignore_patterns("__pycache__"))
    if bytecode:
        compileall.compile_dir(target / "sketchauth", quiet=1)
    return target


def _environment(path: Path) -> dict[str, str]:
    """Only the copy is importable as ``sketchauth`` (run with the copy as working directory too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONPATH=str(path), PYTHONDONTWRITEBYTECODE="1")
    return env


def measure(trees: dict[str, Path], repeats: int) -> dict[str, dict[str, Any]]:
    """Best and median CPU seconds of each statement in each state of each tree, all interleaved.

    Each round runs every statement of every tree once (``python -c pass`` and ``import numpy``
    once per tree too), so a drift of the machine's speed moves every figure of a round alike; the
    paired ratio of a round is its library run over its ``import numpy`` run.
    """
    with tempfile.TemporaryDirectory(prefix="sketchauth-import-") as tmp:
        states = {label: _states(tree, Path(tmp) / label) for label, tree in trees.items()}
        runs: dict[str, dict[str, list[float]]] = {label: defaultdict(list) for label in trees}
        for _ in range(repeats):
            for label, paths in states.items():
                _round(paths, runs[label])
        results = {}
        for label, paths in states.items():
            results[label] = _summary(runs[label], repeats)
            results[label]["importtime_self_us_top"] = _importtime(paths["bytecode"], repeats=min(repeats, 7))
            results[label].update(_in_process(paths["bytecode"], repeats))
    return results


def _states(tree: Path, directory: Path) -> dict[str, Path]:
    return {name: _package_copy(tree, directory, bytecode=name == "bytecode") for name in ("bytecode", "source")}


def _round(states: dict[str, Path], runs: dict[str, list[float]]) -> None:
    """One run of every statement in every state of one tree (python and numpy once)."""
    for state, path in states.items():
        for name, statement in STATEMENTS.items():
            if name in LIBRARY:
                key = f"{name}/{state}"
            elif state == "bytecode":
                key = name  # python and numpy do not depend on the state of our package
            else:
                continue
            runs[key].append(_cpu_seconds([sys.executable, "-c", statement], _environment(path)))


def _summary(runs: dict[str, list[float]], repeats: int) -> dict[str, Any]:
    best = {key: min(values) for key, values in runs.items()}
    median = {key: statistics.median(values) for key, values in runs.items()}
    cost = {key: 1000.0 * (best[key] - best["python"]) for key in best if key != "python"}
    library = [k for k in median if k not in ("python", "numpy")]
    return {
        "repeats": repeats,
        "cpu_ms_best": {k: 1000.0 * v for k, v in best.items()},
        "cpu_ms_median": {k: 1000.0 * v for k, v in median.items()},
        "import_cost_ms": cost,
        "ratio_to_numpy": {k: cost[k] / cost["numpy"] for k in cost if k != "numpy"},
        # Whole processes as they run (interpreter start-up included in both), medians: the figure
        # the import floor of tests/packaging/test_import_cost.py checks.
        "median_ratio_to_numpy": {k: median[k] / median["numpy"] for k in library},
        # The same, round by round (each library run over the import numpy run of its round): median.
        "paired_ratio_to_numpy": {
            k: statistics.median(a / b for a, b in zip(runs[k], runs["numpy"], strict=True)) for k in library
        },
        "library_extra_ms": {k: cost[k] - cost["numpy"] for k in cost if k != "numpy"},
    }


#: Run in the child: CPU of ``import numpy``, then of the statement, measured inside the process
#: (no interpreter start-up or shutdown in either figure).
_TIMED = (
    "import time; t0 = time.process_time(); import numpy; t1 = time.process_time()\n{}\n"
    "t2 = time.process_time(); print(t1 - t0, t2 - t1)"
)


def _in_process(path: Path, repeats: int) -> dict[str, Any]:
    """Best in-process CPU (ms) of ``import numpy`` and of each library statement after it; their ratio."""
    numpy_ms: list[float] = []
    after: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeats):
        for name, statement in LIBRARY.items():
            done = subprocess.run(
                [sys.executable, "-c", _TIMED.format(statement)],
                env=_environment(path),
                cwd=path,
                check=True,
                capture_output=True,
                text=True,
            )
            first, second = (1000.0 * float(x) for x in done.stdout.split())
            numpy_ms.append(first)
            after[name].append(second)
    numpy_best = min(numpy_ms)
    extra = {name: min(values) for name, values in after.items()}
    return {
        "in_process_numpy_ms": numpy_best,
        "in_process_extra_ms": extra,
        "in_process_ratio_to_numpy": {name: (numpy_best + ms) / numpy_best for name, ms in extra.items()},
    }


def _importtime(path: Path, *, repeats: int) -> dict[str, int]:
    """The ten sketchauth modules with the largest self import time (µs, best run)."""
    best: dict[str, int] = {}
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", LIBRARY["all-and-enrolment"]],
            env=_environment(path),
            cwd=path,
            check=True,
            capture_output=True,
            text=True,
        )
        for match in IMPORTTIME.finditer(done.stderr):
            name, self_us = match[3], int(match[1])
            if name.startswith("sketchauth"):
                best[name] = min(best.get(name, self_us), self_us)
    return dict(sorted(best.items(), key=lambda kv: -kv[1])[:10])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=25, help="runs of each statement (default 25)")
    parser.add_argument("--label", default="current", help="results go to benchmarks/results/import-LABEL.json")
    parser.add_argument(
        "--before",
        type=Path,
        help="an earlier source tree (e.g. `git archive <commit> sketchauth | tar -x -C DIR`, with its extension "
        "built) measured in the same run, each against its own numpy baseline",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {**provenance("bench_import.py"), "statements": STATEMENTS}
    trees = {"after": ROOT} if args.before is None else {"after": ROOT, "before": args.before}
    measured = measure(trees, args.repeats)
    result["after"] = measured["after"]
    if args.before is not None:
        result["before"] = {"tree": str(args.before), **measured["before"]}
    result["load_average"] = os.getloadavg()
    write_result(ROOT / "benchmarks" / "results" / f"bench_import-{args.label}.json", result)


if __name__ == "__main__":
    main()
