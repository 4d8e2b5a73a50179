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
