"""``sketchauth evaluate report`` without ``--out``: a default directory, and the real error shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sketchauth.cli import main


def test_out_defaults_to_the_scheme_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["evaluate", "report", "--scheme", "interval", "--params", '{"n": 64, "features": 4}', "--sweep", "3"]
    args += ["--synthetic", "identities=8,samples=3", "--no-plots", "--quiet", "--profile", "test"]
    assert main([*args, "--attack-tries", "0"]) == 0
    report = json.loads((tmp_path / "report-interval" / "report.json").read_text())
    assert report["error_rates"]["identities"] == 8


def test_a_missing_out_no_longer_masks_the_real_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["evaluate", "report", "--scheme", "no-such-scheme", "--synthetic", "identities=4"])
    err = capsys.readouterr().err
    assert code == 2 and "no-such-scheme" in err and "--out" not in err
