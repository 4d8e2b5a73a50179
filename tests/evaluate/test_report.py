"""Tests of sketchauth.evaluate.report and the 'sketchauth evaluate report' command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sketchauth.cli import main
from sketchauth.cli.evaluate import parse_synthetic
from sketchauth.errors import ParameterError
from sketchauth.evaluate import report as report_module
from sketchauth.evaluate.data import VectorModel, synthetic_vectors
from sketchauth.evaluate.rates import RatePoint
from sketchauth.evaluate.report import (
    EvaluationTarget,
    choose_operating_point,
    default_sweep,
    run_report,
    write_report,
)
from sketchauth.evaluate.report import figures as figures_module

TOP_KEYS = {
    "curves",
    "data",
    "error_rates",
    "figures",
    "interval_method",
    "iso_30136",
    "renewability",
    "score_files",
    "leakage",
    "notes",
    "operating_point",
    "params",
    "report_version",
    "scheme",
    "seed",
    "sweep",
    "unlinkability",
}


def small_report() -> report_module.Report:
    data = synthetic_vectors(12, 3, 4, n=64, seed=3, model=VectorModel(spread=3, noise=1.5))
    target = EvaluationTarget.from_scheme("interval", {"n": 64, "features": 4})
    return run_report(target, data, [2, 3, 4, 6, 8], seed=0, profile="test", crosscheck_trials=4)


def test_report_dictionary_has_stable_keys_and_exact_counts() -> None:
    rep = small_report()
    d = rep.as_dict()
    assert set(d) == TOP_KEYS
    assert d["report_version"] == 1
    counts = [(p["setting"], p["false_non_matches"], p["false_matches"]) for p in d["error_rates"]["points"]]
    assert counts == [(2, 20, 1), (3, 11, 4), (4, 4, 19), (6, 0, 83), (8, 0, 149)]
    # No setting meets FMR ≤ 1e-4 and FNMR < 5%: the one minimising max(FNMR, FMR) is v=4
    # (max(4/24, 19/264) = 0.167 against 11/24 for v=3 and 83/264 for v=6).
    assert d["operating_point"]["setting"] == 4 and d["operating_point"]["meets_targets"] is False
    assert d["leakage"]["false_accept_attack"]["fmr"] == pytest.approx(19 / 264)
    # The interval sketch is deterministic and non-mated pairs are drawn with the seed: exact.
    assert d["unlinkability"]["mated_pairs"] == 12 and d["unlinkability"]["nonmated_pairs"] == 120
    assert d["unlinkability"]["d_sys"] == pytest.approx(0.45864147426647434)
    json.dumps(d, allow_nan=False)


def test_unlinkability_skipped_without_two_enrolments() -> None:
    data = synthetic_vectors(6, 3, 4, n=64, seed=3, model=VectorModel(spread=3, noise=1.5))
    target = EvaluationTarget.from_scheme("interval", {"n": 64, "features": 4})
    rep = run_report(target, data, [4], enrol_samples=2, seed=0, profile=None, crosscheck_trials=0)
    assert rep.unlinkability is None
    assert "unlinkability not evaluated" in rep.notes[0]


def test_write_report_files(tmp_path: Path) -> None:
    rep = small_report()
    payload = write_report(rep, tmp_path, plots=True)
    for name in ("report.json", "report.md", "det.png", "scores.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "report.json").read_text()) == payload
    md = (tmp_path / "report.md").read_text()
    assert "## Error rates" in md and "| 4 | 16.7% (" in md and "## Unlinkability" in md


def test_missing_matplotlib_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures_module, "plots_available", lambda: False)
    with pytest.raises(ParameterError, match=r"sketchauth\[plots\]"):
        write_report(small_report(), tmp_path, plots=True)
    write_report(small_report(), tmp_path, plots=False)
    assert not (tmp_path / "det.png").exists()


def test_operating_point_rule() -> None:
    a = RatePoint.from_counts(1, 50, 100, 0, 10_000)
    b = RatePoint.from_counts(2, 4, 100, 1, 10_000)
    c = RatePoint.from_counts(3, 0, 100, 2, 10_000)
    assert choose_operating_point([a, b, c]).setting == 2
    assert choose_operating_point([a, c]).setting == 3
    assert choose_operating_point([a, b, c], override=1).setting == 1
    with pytest.raises(ParameterError):
        choose_operating_point([a], override=9)


def test_default_sweeps_and_synthetic_spec() -> None:
    assert default_sweep("interval", {}) == [2, 4, 6, 8, 10, 12, 16]
    assert default_sweep("code-offset", {"n": 32}) == [2, 3, 4, 7, 9, 12, 15]
    assert parse_synthetic("identities=10, noise=2.5") == {"identities": 10.0, "noise": 2.5}
    with pytest.raises(ParameterError):
        parse_synthetic("identities")
    with pytest.raises(ParameterError):
        parse_synthetic("noise=loud")


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    code = main(
        [
            "evaluate", "report", "--scheme", "interval", "--params", '{"n": 64, "features": 4}',
            "--synthetic", "identities=12,samples=4,spread=3,noise=1.5", "--sweep", "3,4,6",
            "--out", str(out), "--seed", "5", "--jobs", "1", "--profile", "test", "--no-plots", "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "v=4: FNMR" in printed and "D<->sys" in printed
    first = json.loads((out / "report.json").read_text())
    assert first["unlinkability"]["mated_pairs"] == 12
    # Same seed, same numbers (the argon2 timing aside).
    main(
        [
            "evaluate", "report", "--scheme", "interval", "--params", '{"n": 64, "features": 4}',
            "--synthetic", "identities=12,samples=4,spread=3,noise=1.5", "--sweep", "3,4,6",
            "--out", str(out), "--seed", "5", "--jobs", "1", "--profile", "test", "--no-plots", "--quiet",
        ]
    )  # fmt: skip
    second = json.loads((out / "report.json").read_text())
    assert second["error_rates"] == first["error_rates"]
    assert second["unlinkability"]["d_sys"] == first["unlinkability"]["d_sys"]


def test_cli_data_file_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = synthetic_vectors(6, 2, 3, n=32, seed=1, model=VectorModel(spread=4, noise=1))
    f = tmp_path / "d.csv"
    f.write_text(
        "".join(f"{i},{','.join(map(str, row))}\n" for i, row in zip(data.identities, data.samples, strict=False))
    )
    args = ["evaluate", "report", "--scheme", "interval", "--params", '{"n": 32, "features": 3}', "--data", str(f)]
    assert (
        main([*args, "--sweep", "2,4", "--out", str(tmp_path / "o"), "--profile", "test", "--no-plots", "--quiet"]) == 0
    )
    assert (
        main(
            [
                "evaluate",
                "report",
                "--scheme",
                "interval",
                "--params",
                "{oops",
                "--data",
                str(f),
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "--params is not valid JSON" in capsys.readouterr().err
    assert main([*args[:-2], "--synthetic", "colour=3", "--out", str(tmp_path), "--no-plots"]) == 2
    assert "unknown: colour" in capsys.readouterr().err


def test_pipeline_extension_point() -> None:
    # A target built from callables (what a feature pipeline supplies): a transform that halves
    # every feature before an interval sketch.
    from sketchauth.evaluate.error_rates import decide_by_decoding, enrol_rounded_mean
    from sketchauth.sketches.interval import IntervalSketch

    data = synthetic_vectors(8, 4, 3, n=64, seed=2, model=VectorModel(spread=8, noise=1))
    target = EvaluationTarget(
        name="halved-interval",
        params={"n": 32, "features": 3},
        sweep="v",
        factory=lambda v: IntervalSketch(n=32, v=v, features=3),
        enrol=lambda sk, samples, setting: enrol_rounded_mean(sk, np.asarray(samples) // 2),
        decide=decide_by_decoding,
        probe=lambda x: np.asarray(x) // 2,
    )
    rep = run_report(target, data, [1, 2, 3], seed=0, profile=None, crosscheck_trials=0)
    assert rep.as_dict()["scheme"] == "halved-interval"
    assert rep.error_rates.points[-1].fnmr <= rep.error_rates.points[0].fnmr
