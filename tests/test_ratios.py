"""CI's speed check (benchmarks/ratios.py): a ratio fails only below its floor by more than its noise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import figures, ratios  # noqa: E402


def test_a_ratio_fails_only_below_floor_minus_noise() -> None:
    r = ratios.Ratio("service.owasp", "bench_service", "x", floor=0.90, noise=0.05)
    lines = ratios.verdicts([r], {"service.owasp": 0.86})
    assert lines[0].startswith("ok")
    lines = ratios.verdicts([r], {"service.owasp": 0.84})
    assert lines[0].startswith("FAIL")


def test_every_ratio_of_the_config_names_a_benchmark_and_a_documented_floor() -> None:
    benchmarks, entries = ratios.load()
    assert entries, "benchmarks/ratios.json checks no ratio"
    for entry in entries:
        assert entry.benchmark in benchmarks
        assert entry.floor > 0 and 0 <= entry.noise < entry.floor


def test_each_floor_is_the_documented_figure_of_its_benchmarks_full_run() -> None:
    """The floor is the value the docs state: the full run's JSON (benchmarks/results/<benchmark>.json), as
    written to two decimals."""
    for entry in ratios.load()[1]:
        result = ROOT / "benchmarks" / "results" / f"{entry.benchmark}.json"
        value = figures.resolve(json.loads(result.read_text()), entry.path)
        assert f"{value:.2f}" == f"{entry.floor:.2f}", f"{entry.name}: floor {entry.floor}, the full run gives {value}"


def test_a_config_naming_an_unknown_benchmark_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "ratios.json"
    config.write_text(
        json.dumps({"benchmarks": {}, "ratios": [{"name": "a", "benchmark": "b", "path": "x", "floor": 1, "noise": 0}]})
    )
    with pytest.raises(ValueError, match="does not define"):
        ratios.load(config)
