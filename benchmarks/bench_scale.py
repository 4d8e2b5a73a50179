"""Evaluation at population scale: wall time, CPU and peak memory of ``evaluate report --pipeline``.

The population is made as a researcher makes it: ``sketchauth features synth`` (6 samples per
person), a transform fitted on a 600-person background (``features fit --pipelines``), then
``sketchauth evaluate report --pipeline pipelines/<kind>.json --data people.csv`` (5 settings).
Each report runs as a child process; its peak memory is sampled every 0.2 s over the whole process
tree (the CLI and its forked workers) as the sum of PSS (proportional set size: pages shared
after the fork counted once), beside the largest single RSS (``ru_maxrss`` of the report's process
and its workers, from ``wait4``; runs before 2026-12-06 15:00 took it over the setup steps too).

Run ``python3 benchmarks/bench_scale.py --people 3000 --kinds thermometer,interval`` (minutes) or
``--people 10000 --kinds interval --timeout 5400`` (long: run it niced). Results are appended to
``benchmarks/results/bench_scale.json`` with date, commit, CPU and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402  (installed with the 'dask' extra's distributed)

from benchmarks import timing  # noqa: E402

EXE = [sys.executable, "-m", "sketchauth.cli"]


def _tree_pss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += p.memory_full_info().pss
    return total


def measured(cmd: list[str], cwd: Path, timeout: float) -> dict:
    """Wall, CPU and peak memory of one command (its process and the workers it waited for).

    CPU and the largest single RSS come from ``wait4`` on the command itself, so the setup steps
    run before it (``features fit``: a larger RSS than a report at 1,000 people) cannot be counted.
    """
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = psutil.Process(child.pid)
    peak = 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            child.kill()
            raise TimeoutError(f"{' '.join(cmd)} exceeded {timeout} s")
        peak = max(peak, _tree_pss(proc))
        time.sleep(0.2)
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return {
        "wall_seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_tree_pss_mb": round(peak / 2**20, 1),
        "peak_single_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=3000)
    parser.add_argument("--kinds", default="thermometer,interval")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--workdir", default=None, help="keep the data and reports here (default: a temporary one)")
    parser.add_argument(
        "--tree",
        default=None,
        help="run the reports with the sketchauth of this source tree (e.g. an earlier commit extracted with "
        "git archive, for a before figure under the same load); the data is always made by this tree",
    )
    parser.add_argument("--label", default=None, help="what --tree is, recorded with the run (e.g. its commit)")
    args = parser.parse_args()
    out_path = ROOT / "benchmarks" / "results" / "bench_scale.json"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        people = ["--identities", str(args.people), "--samples", "6", "--seed", "2", "--prefix", "person"]
        setup = [
            ["features", "synth", "--out", "background.csv", "--identities", "600", "--samples", "6", "--seed", "1"],
            ["features", "synth", "--out", "people.csv", *people],
            ["features", "fit", "--data", "background.csv", "--out", "transform.json", "--pipelines", "pipelines"],
        ]
        for step in setup:
            subprocess.run(EXE + step, cwd=work, check=True, capture_output=True)
        runs = []
        for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
            load = [round(x, 2) for x in os.getloadavg()]
            stamp = timing.provenance("scale")  # the code that runs, before it runs
            cmd = ["evaluate", "report", "--pipeline", f"pipelines/{kind}.json", "--data", "people.csv"]
            cmd += ["--out", f"report-{kind}", "--no-plots", "--quiet", "--jobs", str(args.jobs)]
            if args.tree is not None:
                os.environ["PYTHONPATH"] = str(Path(args.tree).resolve())
            try:
                result = measured(EXE + cmd, work, args.timeout)
            finally:
                os.environ["PYTHONPATH"] = str(ROOT)
            er = json.loads((work / f"report-{kind}" / "report.json").read_text())["error_rates"]
            runs.append(
                {
                    **stamp,
                    "kind": kind,
                    "tree": args.label or "this commit",
                    "command": " ".join(["sketchauth", *cmd]),
                    "people": args.people,
                    "jobs": args.jobs,
                    "comparisons_per_setting": er["genuine_trials"] + er["impostor_trials"],
                    "settings": len(er["points"]),
                    "decode_check_disagreements": er["decode_check"]["disagreements"],
                    "load_average_before": load,
                    "load_average_after": [round(x, 2) for x in os.getloadavg()],
                    **result,
                }
            )
            print(json.dumps(runs[-1]), flush=True)
    previous = json.loads(out_path.read_text()) if out_path.exists() else {"runs": []}
    result = {**timing.provenance("scale"), "runs": previous.get("runs", []) + runs}
    timing.write_result(out_path, result)


if __name__ == "__main__":
    main()
