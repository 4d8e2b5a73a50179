"""`sketchauth features synth | fit | evaluate` end to end on a small synthetic population."""

from __future__ import annotations

import json

import pytest
from _helpers import evaluate_report, features_evaluate, features_fit

from sketchauth.cli import main
from sketchauth.features.pipeline import load_pipeline
from sketchauth.features.transform import FeatureTransform


def test_synth_fit_evaluate(tmp_path, capsys) -> None:
    background, people = tmp_path / "background.csv", tmp_path / "people.csv"
    assert main(["features", "synth", "--out", str(background), "--identities", "150", "--samples", "5"]) == 0
    assert (
        main(
            [
                "features",
                "synth",
                "--out",
                str(people),
                "--identities",
                "40",
                "--samples",
                "4",
                "--seed",
                "2",
                "--prefix",
                "p",
            ]
        )
        == 0
    )
    assert background.read_text().splitlines()[0].startswith("identity,f0,f1")
    capsys.readouterr()

    transform_path, pipelines = tmp_path / "transform.json", tmp_path / "pipelines"
    code = features_fit(background, transform_path, "--pipelines", str(pipelines), "--levels", "16")
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    transform = FeatureTransform.from_json(transform_path.read_text())
    assert summary["kept_dimensions"] == transform.dimensions
    assert summary["levels"] == 16 and summary["bits_per_dimension"] == 4
    # Every background identity fits the transform and calibrates by 5-fold cross-validation.
    assert summary["background"]["identities"] == 150 == summary["calibration_identities"]
    assert "check_identities" not in summary and "cross-validation" in summary["protocol"]
    assert transform.training["folds"] == 5 and transform.training["split_seed"] == 0
    for name in ("interval", "thermometer"):
        predicted = summary["pipelines"][name]["predicted_on_new_people"]
        assert predicted["predicted_fmr_upper"] <= 0.01 and predicted["folds"] == 5
        low, high = predicted["predicted_fmr_interval"]
        assert low <= predicted["predicted_fmr"] <= high and predicted["impostor_trials"] == 150 * 4 * 149
        assert load_pipeline((pipelines / f"{name}.json").read_text()).transform == transform

    out = tmp_path / "report"
    args = ["--data", str(people), "--no-plots", "--attack-tries", "10", "--decode-checks", "400"]
    code = features_evaluate(transform_path, background, out, *args)
    assert code == 0
    printed = capsys.readouterr().out
    assert "reference (whitened Euclidean, unprotected)" in printed
    # Thresholds read off these people are labelled optimistic; the held-out figures are separate.
    assert "OPTIMISTIC" in printed and "Calibrated on the background" in printed and " met" not in printed
    report = json.loads((out / "features.json").read_text())
    calibrated = {row["pipeline"]: row for row in report["calibrated_on_background"]}
    realised = calibrated["thermometer"]["realised"]
    assert realised["impostor_trials"] == report["impostor_trials"] and 0.0 <= realised["fmr"] <= 1.0
    assert calibrated["thermometer"]["predicted"]["predicted_fmr_upper"] <= 0.01
    for row in report["matchers"][1:]:
        assert row["decode_check"]["disagreements"] == 0
        assert row["decode_check"]["checked"] in (0, 400, row["decode_check"].get("total_trials"))
    assert report["identities"] == 40 and report["genuine_trials"] == 120
    assert (out / "features.md").read_text().startswith("| matcher |")

    # The general evaluation report runs the real scheme through the pipeline.
    few = tmp_path / "few.csv"
    assert main(["features", "synth", "--out", str(few), "--identities", "8", "--samples", "3", "--seed", "4"]) == 0
    capsys.readouterr()
    thermometer = load_pipeline((pipelines / "thermometer.json").read_text())
    t = thermometer.sketch.params()["t"]
    pipeline = str(pipelines / "thermometer.json")
    args = ["--pipeline", pipeline, "--data", str(few), "--max-impostors", "3", "--sweep", str(t + 1)]
    code = evaluate_report(tmp_path / "full", *args)
    assert code == 0
    full = json.loads((tmp_path / "full" / "report.json").read_text())
    # The operating point is the calibrated configuration (added to the sweep), not one picked here.
    assert full["scheme"] == "pipeline:thermometer" and full["operating_point"]["setting"] == t
    assert full["operating_point"]["chosen_on_evaluated_people"] is False
    # Few comparisons: every one is re-decided by real PinSketch decodes, none disagrees.
    check = full["error_rates"]["decode_check"]
    assert check["all_trials"] and check["disagreements"] == 0 and check["checked"] == check["total_trials"]
    assert full["leakage"]["loss_bound_bits"] == thermometer.report().loss_bound_bits


def test_fit_reports_library_errors_as_one_line(tmp_path, capsys) -> None:
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("identity,a,b\nx,1,2\nx,2,3\ny,3,1\ny,1,1\n")
    assert features_fit(tiny, tmp_path / "t.json") == 2
    assert "sketchauth: error:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["features"], ["features", "fit"]])
def test_usage_errors(argv) -> None:
    with pytest.raises(SystemExit):
        main(argv)


def _noisy_background(path, noise_scale: float = 3.0):
    """An NPZ export of 40 people × 4 captures; at noise 3.0 no pipeline keeps its genuine users at FMR 1%."""
    import numpy as np

    from sketchauth.evaluate.embeddings import EmbeddingPopulation

    data = EmbeddingPopulation(informative=8, useless=2, noise_scale=noise_scale, seed=2).draw(40, 4, seed=1)
    np.savez(path, X=data.samples, labels=data.identities.astype(str))
    return path


def test_fit_calibrates_only_the_kinds_asked_and_says_each_stage(tmp_path, capsys) -> None:
    background = _noisy_background(tmp_path / "bg.npz", noise_scale=0.2)
    args = ["--kinds", "thermometer", "--levels", "8", "--pipelines", str(tmp_path / "p")]
    assert features_fit(background, tmp_path / "t.json", *args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert list(summary["pipelines"]) == ["thermometer"] and summary["written"] == ["thermometer"]
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["thermometer.json"]
    # No terminal: one line per stage on stderr, in order.
    stages = [line for line in captured.err.splitlines() if line.startswith("features fit [")]
    assert stages == [
        "features fit [1/3]: load data",
        "features fit [2/3]: fit the transform",
        "features fit [3/3]: calibrate thermometer",
    ]
    assert features_fit(background, tmp_path / "t.json", "--kinds", "thermometer", "--levels", "8", "--quiet") == 0
    assert "features fit [" not in capsys.readouterr().err


@pytest.mark.parametrize("kinds", ["bogus", "angular,angular", ""])
def test_fit_refuses_unknown_kinds_in_one_line(tmp_path, capsys, kinds: str) -> None:
    background = _noisy_background(tmp_path / "bg.npz")
    assert features_fit(background, tmp_path / "t.json", "--kinds", kinds, "--quiet") == 2
    err = capsys.readouterr().err
    assert err.startswith("sketchauth: error:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "t.json").exists()


def test_an_unusable_pipeline_is_reported_not_written_unless_kept_and_then_marked(tmp_path, capsys) -> None:
    background = _noisy_background(tmp_path / "bg.npz")
    out = tmp_path / "p"
    args = ["--kinds", "interval,thermometer", "--levels", "8", "--pipelines", str(out), "--quiet"]
    assert features_fit(background, tmp_path / "t.json", *args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    for kind in ("interval", "thermometer"):
        predicted = summary["pipelines"][kind]["predicted_on_new_people"]["predicted_fnmr"]
        assert predicted > 0.5 and summary["pipelines"][kind]["unusable"].startswith(f"predicted FNMR {predicted:.2f}")
        assert f"warning: pipeline {kind} is unusable: predicted FNMR" in captured.err
    assert summary["written"] == [] and not list(out.iterdir())
    assert features_fit(background, tmp_path / "t.json", *args, "--keep-unusable") == 0
    assert json.loads(capsys.readouterr().out)["written"] == ["interval", "thermometer"]
    loaded = load_pipeline((out / "thermometer.json").read_text())
    assert loaded.unusable is not None and "above 0.5" in loaded.unusable
    assert json.loads((out / "thermometer.json").read_text())["unusable"] == loaded.unusable
