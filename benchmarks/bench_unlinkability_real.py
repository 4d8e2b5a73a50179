"""Unlinkability of real re-enrolments (UCI Japanese Vowels), every pipeline, with and without a pepper.

Runs :func:`sketchauth.evaluate.unlinkability_report.run_unlinkability_report` — what
``sketchauth evaluate unlinkability`` runs — on the training file as background and the test file
as evaluation data, for two enrolment sizes (2 captures, up to 12 disjoint enrolments per
speaker; 3 captures, up to 8), and writes JSON (default
``benchmarks/results/bench_unlinkability_real.json``) with the date, the commit, the CPU, the wall
and CPU time of each run, a summary table (D↔sys per pipeline and attack, with the chance level:
``peppered`` = the two deployments' records sealed by their peppers (:func:`sketchauth.pepper.wrap`),
scored by the attack where they parse as helpers, else by byte agreement; ``clear`` = the same
records unsealed with the peppers, the control) and the full reports (D↔(s) curves,
repeated-enrolment tables).

Closed set: the test file holds the same 9 speakers as the training file. The data are not in the
repository; make them with ``benchmarks/real_data.py``. Run::

    python benchmarks/real_data.py /path/to/JapaneseVowels --out /tmp/vowels
    python benchmarks/bench_unlinkability_real.py --train /tmp/vowels/vowels_train.csv \\
        --test /tmp/vowels/vowels_test.csv
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

#: (captures per enrolment, disjoint enrolments per speaker at most).
CONFIGS = ((2, 12), (3, 8))
DATA = (
    "UCI Japanese Vowels (Kudo, Toyama & Shimbo 1999): 9 speakers, 270 training + 370 test utterances; "
    "embedding: mean and std of 12 LPC cepstra over frames (24 features); closed set"
)


def run(train: Path, test: Path, seed: int) -> dict[str, Any]:
    from sketchauth.evaluate.data import load_vectors
    from sketchauth.evaluate.unlinkability_report import (
        UnlinkabilityReportOptions,
        run_unlinkability_report,
        summary_rows,
    )

    background, data = load_vectors(train), load_vectors(test)
    runs = []
    for enrol_samples, groups in CONFIGS:
        wall, cpu = time.perf_counter(), time.process_time()
        report = run_unlinkability_report(
            background,
            data,
            options=UnlinkabilityReportOptions(
                enrol_samples=enrol_samples, groups=groups, seed=seed, sources=(train.name, test.name)
            ),
        )
        runs.append(
            {
                "enrol_samples": enrol_samples,
                "groups": groups,
                "wall_seconds": round(time.perf_counter() - wall, 1),
                "cpu_seconds": round(time.process_time() - cpu, 1),
                "summary": [
                    {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in summary_rows(report)
                ],
                "report": report,
            }
        )
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": timing.git_commit(),
        "cpu": timing.cpu_name(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "data": DATA,
        "command": "sketchauth evaluate unlinkability --background TRAIN --data TEST --enrol-samples M --groups G",
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, default=Path("/work/data/vowels_train.csv"), help="background CSV")
    parser.add_argument("--test", type=Path, default=Path("/work/data/vowels_test.csv"), help="evaluation CSV")
    parser.add_argument("--seed", type=int, default=0, help="grouping and subsampling seed (default 0)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_unlinkability_real.json", help="JSON out"
    )
    args = parser.parse_args(argv)
    result = run(args.train, args.test, args.seed)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for r in result["runs"]:
        print(f"m={r['enrol_samples']}, groups={r['groups']}: {r['wall_seconds']} s wall, {r['cpu_seconds']} s CPU")
        for row in r["summary"]:
            print(
                f"  {row['pipeline']:<12} {row['attack']:<24} clear {row['clear']:.3f} "
                f"(chance {row['clear_chance_p95']:.3f})"
                f"  peppered {row['peppered']:.3f} (chance {row['peppered_chance_p95']:.3f})"
            )
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
