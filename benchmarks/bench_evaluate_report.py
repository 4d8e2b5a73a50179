"""``evaluate report``'s decision path against plain numpy: decisions per CPU second, same run, JSON.

The population is made as a researcher makes it (as ``bench_scale.py`` does): ``features synth``
(6 samples per person), a transform fitted on a 600-person background (``features fit
--pipelines``), then the interval pipeline's report over its five settings (offsets −2 … 2).

Measured in fresh child processes, interleaved (peer, report, peer, report, …), ``--repeats``
times per population, each child timing itself with ``time.process_time`` (its own CPU, after its
imports; one worker, ``jobs=1``, so that no CPU escapes into other processes):

* **peer**: ``benchmarks/baseline_numpy_report.py`` — the same CSV, quantiser edges, settings,
  protocol and tiles in plain numpy;
* **decision path**: what the report does to get the same counts — read the CSV, enrol every
  identity under every setting through the real encoder, transform the probes, decide every
  tile under every setting, tally the counts per setting and identity, and bootstrap the
  intervals (``evaluate_scheme`` with the real-decode and argon2 checks off);
* **extras**, each timed on its own: the real-decode check and the argon2 cross-check (timed
  where they run, in a second run of the decision path with them on), the leakage report, the
  unlinkability and renewability evaluation, and the offline attack with the database.

**decision path, enrolled once** is the same with the pipeline target declaring
``enrol_once=True`` (its secret does not depend on the offset, only the sketch's tolerances do),
as ``sketchauth.evaluate.pipelines.report_target.pipeline_target`` now does for interval pipelines
(the two rows measure the same code there; they differ on a tree that does not set the flag).

The child checks that the report's counts equal the peer's. The ratio is the peer's median CPU
over the decision path's (decisions per CPU second of the report over those of the peer).
``--before DIR`` also runs the decision path of another source tree (e.g. ``git archive <commit>
sketchauth | tar -x -C DIR``) in the same interleaving, for a before figure under the same load.

Run ``python3 benchmarks/bench_evaluate_report.py --people 1000,3000`` (minutes);
the result goes to ``benchmarks/results/bench_evaluate_report.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import ROOT, provenance, write_result  # benchmarks/ is not a package

EXE = [sys.executable, "-m", "sketchauth.cli"]
PEER = Path(__file__).resolve().parent / "baseline_numpy_report.py"


def _child(tree: Path, pipeline: Path, data: Path, *flags: str) -> dict[str, Any]:
    """Run :func:`_measure` in a fresh interpreter importing ``sketchauth`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, __file__, "--child", str(pipeline), str(data), *flags]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _peer(pipeline: Path, data: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PEER), "--pipeline", str(pipeline), "--data", str(data)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _measure(pipeline_file: Path, data_file: Path, extras: bool, enrol_once: bool) -> dict[str, Any]:
    """In the child: CPU seconds of the decision path (and of each extra); the counts per setting."""
    from sketchauth.evaluate.data import load_vectors
    from sketchauth.evaluate.error_rates import evaluate_scheme
    from sketchauth.features import load_pipeline

    try:
        from sketchauth.evaluate.pipelines.report_target import default_pipeline_sweep, pipeline_target
    except ImportError:  # a tree from before the pipelines' report target moved to evaluate
        from sketchauth.features.report_target import (  # type: ignore[import-not-found,no-redef]
            default_pipeline_sweep,
            pipeline_target,
        )

    pipeline = load_pipeline(pipeline_file.read_text(encoding="utf-8"))
    target = pipeline_target(pipeline)
    if enrol_once:
        from dataclasses import replace

        target = replace(target, enrol_once=True)
    settings = default_pipeline_sweep(pipeline)

    # Only when asked: a tree from before the flag existed is measured without it.
    flag: dict[str, Any] = {"enrol_once": True} if enrol_once else {}

    def rates(checks: bool) -> Any:
        data = load_vectors(data_file)
        sweep = {"parameter": target.sweep, "probe_fn": target.probe, "decide": target.decide, **flag}
        run = {"crosscheck_trials": 10 if checks else 0, "decode_check": None if checks else 0, "seed": 0, "jobs": 1}
        try:  # the option sets as values (this tree); a tree from before them takes keywords
            from sketchauth.evaluate.error_rates import RunOptions, SweepSpec
        except ImportError:
            return data, evaluate_scheme(target.factory, target.enrol, data, settings, **sweep, **run)
        return data, evaluate_scheme(
            target.factory, target.enrol, data, settings, sweep=SweepSpec(**sweep), run=RunOptions(**run)
        )

    start = time.process_time()
    data, result = rates(checks=False)
    out: dict[str, Any] = {
        "decision_path_cpu": time.process_time() - start,
        "false_non_matches": [p.false_non_matches for p in result.points],
        "false_matches": [p.false_matches for p in result.points],
        "comparisons_per_setting": result.points[0].genuine_trials + result.points[0].impostor_trials,
        "settings": list(settings),
    }
    if extras:
        out["extras_cpu"] = _extras(target, data, rates)
    return out


def _extras(target: Any, data: Any, rates: Any) -> dict[str, float]:
    """CPU seconds of the report's extras at the configured operating setting (0: the calibrated one)."""
    from sketchauth.evaluate import error_rates
    from sketchauth.evaluate.report.run import ReportOptions, _description, _leakage, _linkage, _security

    opts = ReportOptions(seed=0, jobs=1, operating_setting=0)
    out: dict[str, float] = {"real_decode_check": 0.0, "argon2_crosscheck": 0.0}

    def timed(name: str, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                out[name] += time.process_time() - start

        return run

    # The checks run inside evaluate_scheme, after the decisions: timed where they run.
    checks = error_rates._Checks
    checks.decode = timed("real_decode_check", checks.decode)  # type: ignore[method-assign]
    checks.verify = timed("argon2_crosscheck", checks.verify)  # type: ignore[method-assign]
    _, checked = rates(checks=True)
    op = next(p for p in checked.points if p.setting == 0)
    start = time.process_time()
    leak = _leakage(target, data, 1, op, opts)
    out["leakage"] = time.process_time() - start
    start = time.process_time()
    _linkage(target, data, 1, op.setting, opts)
    out["unlinkability_and_renewability"] = time.process_time() - start
    start = time.process_time()
    _, plan = _description(data, 1, opts)
    _security(target, data, 1, op.setting, leak, plan, opts)
    out["offline_attack"] = time.process_time() - start
    return out


def _population(work: Path, people: int) -> Path:
    """``people.csv`` of ``people`` identities (made once per size), beside the shared background fit."""
    if not (work / "pipelines" / "interval.json").exists():
        background = ["features", "synth", "--out", "background.csv", "--identities", "600", "--samples", "6"]
        subprocess.run([*EXE, *background, "--seed", "1"], cwd=work, check=True, capture_output=True)
        fit = ["features", "fit", "--data", "background.csv", "--out", "transform.json", "--pipelines", "pipelines"]
        subprocess.run([*EXE, *fit], cwd=work, check=True, capture_output=True)
    data = work / f"people-{people}.csv"
    if not data.exists():
        synth = ["features", "synth", "--out", data.name, "--identities", str(people), "--samples", "6"]
        subprocess.run([*EXE, *synth, "--seed", "2", "--prefix", "person"], cwd=work, check=True, capture_output=True)
    return data


def _size(work: Path, people: int, repeats: int, before: Path | None) -> dict[str, Any]:
    """Interleaved runs of the peer and the decision path(s) at one population size."""
    pipeline, data = work / "pipelines" / "interval.json", _population(work, people)
    runs: dict[str, list[float]] = {"peer": [], "report": [], "report_enrol_once": [], "before": []}
    extras: list[dict[str, float]] = []
    counts: dict[str, Any] = {}
    for r in range(repeats):
        peer = _peer(pipeline, data)
        runs["peer"].append(peer["cpu_seconds"])
        mine = _child(ROOT, pipeline, data, *(["--extras"] if r == 0 else []))
        runs["report"].append(mine["decision_path_cpu"])
        once = _child(ROOT, pipeline, data, "--enrol-once")
        runs["report_enrol_once"].append(once["decision_path_cpu"])
        extras += [mine["extras_cpu"]] if "extras_cpu" in mine else []
        if before is not None:
            runs["before"].append(_child(before, pipeline, data)["decision_path_cpu"])
        for key in ("false_non_matches", "false_matches", "comparisons_per_setting"):
            if not peer[key] == mine[key] == once[key]:
                raise SystemExit(f"{people} people: the report's {key} {mine[key]} differ from the peer's {peer[key]}")
        counts = {key: mine[key] for key in ("false_non_matches", "false_matches", "comparisons_per_setting")}
    median = {k: statistics.median(v) for k, v in runs.items() if v}
    decisions = counts["comparisons_per_setting"] * len(peer["settings"])
    out: dict[str, Any] = {
        "people": people,
        "decisions": decisions,
        "cpu_seconds": runs,
        "cpu_seconds_median": median,
        "decisions_per_cpu_second": {k: decisions / v for k, v in median.items()},
        "ratio_to_peer": median["peer"] / median["report"],
        "ratio_to_peer_enrol_once": median["peer"] / median["report_enrol_once"],
        "extras_cpu_seconds": extras[0] if extras else None,
        "counts": counts,
    }
    if "before" in median:
        out["ratio_to_peer_before"] = median["peer"] / median["before"]
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        flags = set(sys.argv[4:])
        print(json.dumps(_measure(Path(sys.argv[2]), Path(sys.argv[3]), "--extras" in flags, "--enrol-once" in flags)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", default="1000,3000", help="population sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a source tree whose decision path is measured in the same run")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: a temporary directory)")
    args = parser.parse_args()
    result: dict[str, Any] = {**provenance("bench_evaluate_report.py"), "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="sketchauth-report-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        sizes = [int(x) for x in args.people.split(",") if x.strip()]
        result["before_tree"] = None if args.before is None else str(args.before)
        result["sizes"] = [_size(work, n, args.repeats, args.before) for n in sizes]
    result["load_average_after"] = os.getloadavg()
    write_result(ROOT / "benchmarks" / "results" / "bench_evaluate_report.json", result)


if __name__ == "__main__":
    main()
