"""`sketchauth evaluate linkage`: JSON to stdout or a file, PNG histograms, clear errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from sketchauth.cli import main
from sketchauth.evaluate.linkage import LinkageSetup, linkage_experiment

ARGS = ["evaluate", "linkage", "--n", "100", "--q", "8", "--tau", "2", "--pairs", "1000", "--seed", "5"]


def test_json_to_stdout_matches_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--scheme", "s2"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    expected = linkage_experiment(LinkageSetup("s2", 100, 8, 2), 1000, 5).to_dict()
    assert out["accuracy"] == expected["accuracy"] == 0.6865
    assert out["threshold"] == 2
    assert out["histogram"] == expected["histogram"]
    assert captured.err == ""  # progress bars are for terminals: none when stderr is captured


def test_json_file_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib (extra 'plots') not installed")
    out, png = tmp_path / "link.json", tmp_path / "link.png"
    rc = main([*ARGS, "--scheme", "s1", "--features", "2", "--json", str(out), "--plot", str(png)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["scheme"] == "s1" and data["features"] == 2 and data["pairs"] == 1000
    assert sum(data["histogram"]["mated"]) == 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "accuracy" in capsys.readouterr().out


def test_missing_matplotlib_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    rc = main([*ARGS, "--scheme", "s1", "--plot", str(tmp_path / "x.png")])
    assert rc == 2
    assert "pip install 'sketchauth[plots]'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "linkage", "--scheme", "s1", "--q", "0"]) == 2
    assert "q must be" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "linkage", "--scheme", "s4"])
