"""CI's speed check: the same-run ratio benchmarks in a quick mode, each ratio against its floor.

Every ratio of ``benchmarks/ratios.json`` names the benchmark that measures it (two sides timed in
the same run, interleaved: what survives a loaded machine), where the ratio is in that
benchmark's JSON (the path syntax of ``benchmarks/figures.py``), its **floor** (what the docs say
holds, usually a figure of the full run) and its **noise** (how far a quick run falls below the
full run's value on a loaded machine: ``--calibrate``). A ratio fails when it is below
``floor - noise``. Each benchmark runs once, in its quick mode, writing its JSON to a temporary
directory (the docs' results in ``benchmarks/results/`` are left alone).

    python3 benchmarks/ratios.py --quick                 # what .ci/run runs (~3 min at load 20 on 2 cores)
    python3 benchmarks/ratios.py --quick --only bench_service
    python3 benchmarks/ratios.py --calibrate 3           # 3 quick runs: prints the noise to store

To add a ratio: give the benchmark a ``--quick`` mode and an ``--out PATH`` option, add it under
``"benchmarks"`` (its command line, without ``--quick`` and ``--out``) and each of its ratios
under ``"ratios"``; the floor is the value the docs state (a figure span reading the full run's
JSON), the noise what ``--calibrate`` measures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.figures import resolve  # noqa: E402

CONFIG = ROOT / "benchmarks" / "ratios.json"


@dataclass(frozen=True, slots=True)
class Ratio:
    name: str
    benchmark: str
    path: str
    floor: float
    noise: float
    #: A regression found and not yet fixed, in words: the ratio is reported (``KNOWN``), not failed.
    known_regression: str | None = None

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Ratio:
        floor, noise = float(entry["floor"]), float(entry["noise"])
        return cls(entry["name"], entry["benchmark"], entry["path"], floor, noise, entry.get("known_regression"))


def load(config: Path = CONFIG) -> tuple[dict[str, list[str]], list[Ratio]]:
    """The benchmarks' command lines and the ratios of ``config``."""
    document = json.loads(config.read_text(encoding="utf-8"))
    ratios = [Ratio.of(entry) for entry in document["ratios"]]
    benchmarks = {name: list(entry["command"]) for name, entry in document["benchmarks"].items()}
    unknown = sorted({r.benchmark for r in ratios} - set(benchmarks))
    if unknown:
        raise ValueError(f"ratios name benchmarks that {config.name} does not define: {', '.join(unknown)}")
    return benchmarks, ratios


def run_quick(command: list[str], out: Path) -> dict[str, Any]:
    """Run one benchmark in its quick mode; its JSON result."""
    subprocess.run(
        [sys.executable, *command, "--quick", "--out", str(out)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def measure(benchmarks: dict[str, list[str]], ratios: list[Ratio], only: set[str] | None) -> dict[str, float]:
    """Each ratio's value from one quick run of each benchmark."""
    values: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in benchmarks.items():
            if only and name not in only:
                continue
            started = time.monotonic()
            document = run_quick(command, Path(tmp) / f"{name}.json")
            print(f"ratios: {name} --quick in {time.monotonic() - started:.0f} s")
            for ratio in ratios:
                if ratio.benchmark == name:
                    values[ratio.name] = float(resolve(document, ratio.path))
    return values


def verdicts(ratios: list[Ratio], values: dict[str, float]) -> list[str]:
    """One line per measured ratio; those below ``floor - noise`` start with ``FAIL``."""
    lines = []
    for ratio in ratios:
        if ratio.name not in values:
            continue
        value = values[ratio.name]
        bound = ratio.floor - ratio.noise
        status = "ok  " if value >= bound else ("KNOWN" if ratio.known_regression else "FAIL")
        line = f"{status} {ratio.name}: {value:.3f} (floor {ratio.floor:.3f} - noise {ratio.noise:.3f})"
        lines.append(line + (f" — known regression: {ratio.known_regression}" if status == "KNOWN" else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="run the benchmarks' quick modes (the only mode)")
    parser.add_argument("--only", nargs="+", default=None, help="run only these benchmarks")
    parser.add_argument("--calibrate", type=int, default=0, help="N quick runs: each ratio's spread below its floor")
    parser.add_argument("--config", type=Path, default=CONFIG)
    args = parser.parse_args(argv)
    if not args.quick and not args.calibrate:
        parser.error("say --quick (CI's run) or --calibrate N")
    benchmarks, ratios = load(args.config)
    only = set(args.only) if args.only else None
    if args.calibrate:
        runs = [measure(benchmarks, ratios, only) for _ in range(args.calibrate)]
        for ratio in ratios:
            seen = [run[ratio.name] for run in runs if ratio.name in run]
            if seen:
                below = max(0.0, ratio.floor - min(seen))
                spread = statistics.pstdev(seen)
                print(
                    f"{ratio.name}: quick runs {', '.join(f'{v:.3f}' for v in seen)}; "
                    f"floor {ratio.floor:.3f}; deepest fall below it {below:.3f}; spread {spread:.3f}"
                )
        return 0
    lines = verdicts(ratios, measure(benchmarks, ratios, only))
    print("\n".join(lines))
    failed = [line for line in lines if line.startswith("FAIL")]
    if failed:
        print(f"ratios: {len(failed)} ratio(s) below floor - noise", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
