"""Evaluation on small real-looking data: impossible configurations, small populations, protocols,
security figures (through the Python API and the command line)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _helpers import evaluate_report, features_evaluate, features_fit

from sketchauth.evaluate import fitting
from sketchauth.evaluate.data import LabelledVectors, load_vectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.pipelines.evaluation import EvaluationChecks, evaluate_pipelines

POP = EmbeddingPopulation(informative=10, useless=2, noise_scale=0.4, seed=7)


def _write_csv(path, data, split=None, prefix="p") -> None:
    lines = ["identity," + ("split," if split is not None else "") + ",".join(f"f{j}" for j in range(data.features))]
    for i, (label, row) in enumerate(zip(data.identities.tolist(), data.samples, strict=False)):
        cells = [f"{prefix}{label}"] + ([split[i]] if split is not None else []) + [f"{v:.6g}" for v in row]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


# -- one impossible configuration must not sink the run ----------------------------------------------
@pytest.mark.parametrize("bits", [1, 2])
def test_impossible_code_offset_is_reported_unavailable_and_the_rest_evaluated(bits: int) -> None:
    # 8 kept dimensions: 1 bit gives 1 byte, 2 bits give 2 bytes; neither corrects one byte error.
    transform = fit_transform(POP.draw(80, 4, seed=1), levels=16, dimensions=8)
    assert transform.dimensions == 8
    result = evaluate_pipelines(
        transform,
        POP.draw(30, 4, seed=2),
        POP.draw(20, 4, seed=3),
        kinds=("interval", "code-offset", "thermometer"),
        options=CalibrationOptions(code_bits=bits),
    )
    assert [r.name.split(" ")[0] for r in result.results] == ["reference", "interval", "thermometer"]
    assert [kind for kind, _ in result.unavailable] == ["code-offset"]
    reason = result.unavailable[0][1]
    assert "bits" in reason and ("use more" in reason)
    assert "t must be" not in reason
    table = result.table()
    assert "code-offset: unavailable" in table and "Goal" in table
    assert result.to_dict()["unavailable"][0]["pipeline"] == "code-offset"


def test_cli_features_evaluate_reports_unavailable_code_offset(tmp_path, capsys) -> None:
    background, people = tmp_path / "bg.csv", tmp_path / "people.csv"
    _write_csv(background, POP.draw(80, 4, seed=1))
    _write_csv(people, POP.draw(20, 4, seed=3))
    transform = tmp_path / "t.json"
    assert features_fit(background, transform, "--levels", "16", "--dimensions", "8", "--code-bits", "2") == 0
    summary = json.loads(capsys.readouterr().out)
    assert "unavailable" in summary["code-offset"]
    out = tmp_path / "ev"
    assert features_evaluate(transform, background, out, "--data", str(people), "--code-bits", "2", "--no-plot") == 0
    printed = capsys.readouterr().out
    assert "code-offset: unavailable" in printed and "thermometer" in printed
    report = json.loads((out / "features.json").read_text())
    assert report["unavailable"][0]["pipeline"] == "code-offset"


# -- small real data sets ------------------------------------------------------------------------------
def test_cli_small_population_names_the_file_and_split_then_closed_set_split_works(tmp_path, capsys) -> None:
    background, people = tmp_path / "nine.csv", tmp_path / "nine_later.csv"
    nine = POP.draw(9, 17, seed=1)
    first = np.tile(np.arange(17) < 12, 9)  # rows are identity by identity
    _write_csv(background, LabelledVectors(nine.identities[first], nine.samples[first]))
    transform = tmp_path / "t.json"
    # Cross-validation uses all 9 people; the summary says what such a background is worth.
    assert features_fit(background, transform, "--levels", "8", "--folds", "3") == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert "nine.csv, all identities" in summary["warnings"][0] and "9 identities (fewer than 10)" in captured.err
    assert summary["calibration_identities"] == 9 and "cross-validation" in summary["protocol"]
    for name in ("interval", "thermometer"):
        # Each either calibrated within its bound or unavailable, saying how many trials and people it needs.
        entry = summary["pipelines"].get(name) or summary[name]
        reason = entry.get("unavailable", "impostor trials background people")
        assert ("impostor trials" in reason and "background people" in reason) or entry["predicted_on_new_people"]

    args = ["--levels", "8", "--calibration-split", "samples", "--pipelines", str(tmp_path / "pipes")]
    args += ["--target-fmr", "0.1", "--folds", "3"]  # 72 impostor trials: enough for a 10% bound only
    assert features_fit(background, transform, *args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["background"]["identities"] == 9
    assert "closed set" in summary["protocol"]
    assert "9 identities (fewer than 10)" in summary["warnings"][0] and "nine.csv, fit part" in summary["warnings"][0]
    assert "warning: " in captured.err
    assert "interval" in summary["pipelines"] and "thermometer" in summary["pipelines"]

    # The same nine people, later samples: features evaluate says it is a closed set.
    _write_csv(people, LabelledVectors(nine.identities[~first], nine.samples[~first]))
    out = tmp_path / "ev"
    assert features_evaluate(transform, background, out, "--data", str(people), "--no-plot") == 0
    assert "CLOSED SET" in capsys.readouterr().out
    assert "CLOSED SET" in json.loads((out / "features.json").read_text())["protocol"]


def test_cli_too_few_samples_per_identity_for_a_sample_split_names_identity_and_part(tmp_path, capsys) -> None:
    background = tmp_path / "short.csv"
    _write_csv(background, POP.draw(9, 4, seed=1))
    assert features_fit(background, tmp_path / "t.json", "--levels", "8", "--calibration-split", "samples") == 2
    err = capsys.readouterr().err
    assert "short.csv: identity" in err and "has 4 samples" in err and "at least 2" in err
    assert "at least 12 samples" in err


# -- one explicit protocol -----------------------------------------------------------------------------
def test_protocol_plan_counts_and_split_column_roles() -> None:
    from sketchauth.errors import ParameterError
    from sketchauth.evaluate.protocol import Protocol

    ids = np.array(["a"] * 3 + ["b"] * 3 + ["c"] * 2)
    plan = Protocol(enrol_samples=1).plan(ids)
    # Probes: a 2, b 2, c 1 = 5; impostors: each identity against the others' probes: 3 + 3 + 4.
    assert plan.genuine.shape[1] == 5 and plan.impostor.shape[1] == 10
    assert [r.tolist() for r in plan.enrol_rows] == [[0], [3], [6]]
    # An explicit split: the LAST row of each identity enrols.
    split = np.array(["probe", "probe", "enrol", "probe", "probe", "enrol", "probe", "enrol"])
    plan = Protocol(enrol_samples=1, split_column="session").plan(ids, split)
    assert [r.tolist() for r in plan.enrol_rows] == [[2], [5], [7]]
    assert plan.genuine.shape[1] == 5 and plan.impostor.shape[1] == 10
    with pytest.raises(ParameterError, match=r"'train'.*neither enrol"):
        Protocol(split_column="split").plan(ids, np.array(["train"] * 8))
    with pytest.raises(ParameterError, match="fewer than 2 samples"):
        Protocol(enrol_samples=2).plan(np.array(["a", "a", "a", "b"]))
    closed = Protocol(set_kind="closed").describe(plan)
    assert "CLOSED SET" in closed and "5 genuine and 10 impostor trials" in closed


def test_evaluate_report_and_features_evaluate_count_the_same_trials() -> None:
    # Same data, same protocol: both evaluations count the same genuine and impostor trials
    # (they used to differ: 5,120 vs 2,960 impostor trials on one file).
    from sketchauth.evaluate.pipelines.report_target import pipeline_target
    from sketchauth.evaluate.report import run_report

    transform = fit_transform(POP.draw(80, 4, seed=1), levels=16)
    heldout, data = POP.draw(30, 4, seed=2), POP.draw(15, 4, seed=3)
    features = evaluate_pipelines(transform, heldout, data, kinds=("interval",))
    pipeline = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.05))
    report = run_report(pipeline_target(pipeline), data, [0], profile=None, crosscheck_trials=0)
    point = report.error_rates.points[0]
    assert (
        (features.genuine_trials, features.impostor_trials)
        == (point.genuine_trials, point.impostor_trials)
        == (45, 630)
    )
    statement = report.as_dict()["data"]["protocol"]["statement"]
    assert statement.split(" 15 identities")[0] == features.protocol.split(" 15 identities")[0]
    assert "open set" in statement and "every probe of every other identity" in statement


def test_split_column_and_separate_probe_file_through_the_cli(tmp_path, capsys) -> None:
    background = tmp_path / "bg.csv"
    _write_csv(background, POP.draw(60, 4, seed=1))
    transform = tmp_path / "t.json"
    assert features_fit(background, transform, "--levels", "16") == 0
    people = POP.draw(12, 4, seed=5)
    # Session column: the 3rd sample of each person enrols; the others probe.
    roles = ["probe", "probe", "enrol", "probe"] * 12
    with_split = tmp_path / "sessions.csv"
    _write_csv(with_split, people, split=roles, prefix="q")
    loaded = load_vectors(with_split)
    assert loaded.split_column == "split" and loaded.features == people.features
    enrol_rows = np.array(roles) == "enrol"
    enrol_file, probe_file = tmp_path / "enrol.csv", tmp_path / "probe.csv"
    _write_csv(enrol_file, LabelledVectors(people.identities[enrol_rows], people.samples[enrol_rows]), prefix="q")
    _write_csv(probe_file, LabelledVectors(people.identities[~enrol_rows], people.samples[~enrol_rows]), prefix="q")
    capsys.readouterr()
    results = []
    for extra in (["--data", str(with_split)], ["--data", str(enrol_file), "--probe-data", str(probe_file)]):
        out = tmp_path / f"ev{len(results)}"
        assert features_evaluate(transform, background, out, "--no-plot", *extra) == 0
        results.append(json.loads((out / "features.json").read_text()))
    assert results[0]["genuine_trials"] == results[1]["genuine_trials"] == 36
    assert results[0]["impostor_trials"] == results[1]["impostor_trials"] == 12 * 11 * 3
    assert [m["points"] for m in results[0]["matchers"]] == [m["points"] for m in results[1]["matchers"]]
    assert "'split' column" in results[0]["protocol"] and "enrol.csv enrols, probe.csv probes" in results[1]["protocol"]
    assert "open set" in results[0]["protocol"]


# -- security told four ways ------------------------------------------------------------------------------
def test_offline_attack_counts_argon2_evaluations_until_first_success() -> None:
    from sketchauth.evaluate.security import offline_attack

    transform = fit_transform(POP.draw(80, 4, seed=1), levels=16)
    pipeline = fitting.interval.for_target_fmr(transform, POP.draw(30, 4, seed=2), CalibrationOptions(target_fmr=0.01))
    person = POP.draw(1, 1, seed=9).samples
    others = POP.draw(20, 1, seed=10).samples
    # The database attacker tries the victim's own enrolment sample among strangers' samples:
    # a stranger's sample is tried until it decodes; the victim's own sample breaks it.
    background = np.vstack([others, person])
    attack = offline_attack(pipeline, [person], background, attempts=21, seed=0)
    assert attack.evaluations[0] is not None and 1 <= attack.evaluations[0] <= attack.spent[0] <= 21
    assert attack.median == attack.evaluations[0] and attack.successes == 1
    # Excluding the victim's own samples (closed-set background): strangers only.
    labels = np.array(["x"] * 20 + ["victim"])
    alone = offline_attack(pipeline, [person], background, attempts=21, background_labels=labels, labels=["victim"])
    assert alone.attempts == 20
    if alone.evaluations[0] is None:
        assert alone.median is None and alone.describe().startswith("> 20 tries")


def test_pin_cascade_diverts_at_most_the_pin_and_recommendation_rules() -> None:
    import math

    from sketchauth.evaluate.security import pin_cascade, recommend
    from sketchauth.features.pipeline import IntervalPipeline

    transform = fit_transform(POP.draw(80, 4, seed=1), levels=16)
    pipeline = IntervalPipeline(transform, np.arange(4), [2, 2, 3, 1])
    report = pipeline.sketch.report()
    pin = pin_cascade(pipeline, 6)
    assert pin["pin_bits"] == 6 * math.log2(10)
    without = max(0.0, pipeline.secret_bits - report.loss_bound_bits)
    assert 0.0 <= pin["diverted_bits"] <= pin["pin_bits"]
    assert pin["residual_bits"] == pytest.approx(min(16.0, without + pin["pin_bits"] - pin["beta"]))
    rows = [
        {
            "pipeline": "a",
            "setting": 1.0,
            "fnmr": 0.30,
            "fmr": 0.001,
            "guaranteed_bits": 25.0,
            "guaranteed_bits_with_pin": 40.0,
        },
        {
            "pipeline": "a",
            "setting": 2.0,
            "fnmr": 0.10,
            "fmr": 0.005,
            "guaranteed_bits": 12.0,
            "guaranteed_bits_with_pin": 30.0,
        },
        {
            "pipeline": "b",
            "setting": 9.0,
            "fnmr": 0.01,
            "fmr": 0.050,
            "guaranteed_bits": 30.0,
            "guaranteed_bits_with_pin": 50.0,
        },
    ]
    assert recommend(rows)["setting"] == 1.0 and recommend(rows)["how"] == "biometric alone"
    assert recommend(rows, bits=26)["setting"] == 2.0 and "PIN" in recommend(rows, bits=26)["how"]
    assert "does not allow 45 guaranteed bits" in recommend(rows, bits=45)["text"]


def test_cli_features_evaluate_states_the_four_security_figures_and_a_recommendation(tmp_path, capsys) -> None:
    background, people = tmp_path / "bg.csv", tmp_path / "people.csv"
    _write_csv(background, POP.draw(60, 4, seed=1))
    _write_csv(people, POP.draw(12, 4, seed=5), prefix="q")
    transform = tmp_path / "t.json"
    assert features_fit(background, transform, "--levels", "16") == 0
    out = tmp_path / "ev"
    args = ["--data", str(people), "--no-plot", "--attack-people", "3", "--attack-tries", "30"]
    assert features_evaluate(transform, background, out, *args) == 0
    printed = capsys.readouterr().out
    assert "(a) guaranteed bits" in printed and "(c) offline attack" in printed and "Recommended" in printed
    assert "Tuning view" in printed
    report = json.loads((out / "features.json").read_text())
    rows = {row["pipeline"].split(" ")[0]: row for row in report["security"]}
    assert set(rows) == {"interval", "thermometer"}
    for row in rows.values():
        assert row["a_provable_residual_bits"] == max(0.0, row["secret_bits"] - row["loss_bound_bits"])
        assert row["c_offline_attack"]["people"] == 3 and row["c_offline_attack"]["tries_per_person"] == 30
        assert row["d_pin_cascade"]["pin_bits"] > 19.9
        if row["fmr"] > 0:
            assert row["b_false_accept_bits"] == pytest.approx(-np.log2(row["fmr"]))
    assert report["recommendation"]["text"]
    kinds = {row["pipeline"].split(" ")[0] for row in report["tuning"]}
    assert kinds == {"interval", "thermometer"}


# -- plots people can read --------------------------------------------------------------------------------
def test_both_det_plots_share_axes_and_every_legend_entry_has_points(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from sketchauth.evaluate.pipelines.report_target import pipeline_target
    from sketchauth.evaluate.report import figures as figures_module
    from sketchauth.evaluate.report import run_report
    from sketchauth.evaluate.report.figures import (
        OTHER_PERSON_COLOUR,
        SAME_PERSON_COLOUR,
        det_figure,
        linkage_figure,
    )

    wide = EmbeddingPopulation(informative=24, useless=2, noise_scale=0.4, seed=7)  # 24 dims: code-offset fits
    transform = fit_transform(wide.draw(80, 4, seed=1), levels=16)
    heldout, data = wide.draw(30, 4, seed=2), wide.draw(15, 4, seed=3)
    features = evaluate_pipelines(
        transform,
        heldout,
        data,
        kinds=("interval", "code-offset", "thermometer"),
        checks=EvaluationChecks(security=False),
    )
    assert not features.unavailable
    pipeline = fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.05))
    rep = run_report(pipeline_target(pipeline), data, [-1, 0, 1], profile=None, crosscheck_trials=0)

    f_fig, r_fig = features.det_figure(), det_figure(rep)
    f_ax, r_ax = f_fig.axes[0], r_fig.axes[0]
    for ax in (f_ax, r_ax):
        xlabels = [t.get_text() for t in ax.get_xticklabels()]
        assert xlabels[0] == "0" and xlabels[-1] == "100%"
        assert all(label.endswith("%") for label in xlabels[1:])  # percent, not fractions
        texts = [t.get_text() for t in ax.texts]
        assert "NIST FMR ≤ 0.01%" in texts and "NIST FNMR < 5%" in texts
    # Every legend entry of the feature DET has drawn points (code-offset used to be legend-only).
    lines = {line.get_label(): line for line in f_ax.get_lines() if not line.get_label().startswith("_")}
    assert len(lines) == len(features.results) == 4
    for line in lines.values():
        assert np.all(np.isfinite(line.get_xydata())) and len(line.get_xydata()) >= 1
    plt.close(f_fig)
    plt.close(r_fig)

    assert rep.unlinkability is not None
    l_fig = linkage_figure(rep)
    ax = l_fig.axes[0]
    colours = {c.get_label(): c.patches[0].get_facecolor()[:3] for c in ax.containers}
    from matplotlib.colors import to_rgb

    assert colours[f"mated ({rep.unlinkability.measures.mated_pairs})"] == pytest.approx(to_rgb(SAME_PERSON_COLOUR))
    assert colours[f"non-mated ({rep.unlinkability.measures.nonmated_pairs})"] == pytest.approx(
        to_rgb(OTHER_PERSON_COLOUR)
    )
    legend = ax.get_legend()
    # The legend sits below the axes, not over the D↔ points.
    l_fig.canvas.draw()
    assert legend.get_window_extent().y1 <= ax.get_window_extent().y0
    plt.close(l_fig)
    assert figures_module.SAME_PERSON_COLOUR != figures_module.OTHER_PERSON_COLOUR


def test_cli_evaluate_report_states_protocol_and_four_security_figures(tmp_path, capsys) -> None:
    from sketchauth.evaluate.data import VectorModel, synthetic_vectors

    data = synthetic_vectors(12, 3, 4, n=64, seed=3, model=VectorModel(spread=3, noise=1.5))
    path = tmp_path / "people.csv"
    path.write_text(
        "identity,a,b,c,d\n"
        + "\n".join(
            f"{label}," + ",".join(str(int(v)) for v in row)
            for label, row in zip(data.identities.tolist(), data.samples, strict=False)
        )
        + "\n"
    )
    out = tmp_path / "rep"
    code = evaluate_report(
        out,
        *("--scheme", "interval", "--params", '{"n": 64, "features": 4}', "--sweep", "2,4,6", "--data", str(path)),
        *("--closed-set", "--attack-tries", "30"),
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "CLOSED SET" in printed and "offline attack with the database" in printed and "PIN cascade" in printed
    report = json.loads((out / "report.json").read_text())
    lk = report["leakage"]
    assert {"remaining_bits", "false_accept_attack", "offline_attack", "pin_cascade"} <= set(lk)
    attack = lk["offline_attack"]
    assert attack["people"] == 10 and attack["hash_profile"] == "test" and attack["tries_per_person"] == 30
    assert all(
        e is None or 1 <= e <= s for e, s in zip(attack["per_person"], attack["argon2_evaluations_spent"], strict=False)
    )
    assert report["data"]["protocol"]["set"] == "closed"
    # Picked by the NIST rule on these people: labelled optimistic wherever it is stated.
    assert report["operating_point"]["chosen_on_evaluated_people"] is True
    assert "**optimistic**" in (out / "report.md").read_text() and "optimistic: setting chosen" in printed
    assert report["error_rates"]["impostor_trials"] == 12 * 11 * 2
    md = (out / "report.md").read_text()
    assert "impostor trials (zero effort): each identity against every probe of every other identity" in md
    assert "offline attack with the database" in md and "PIN cascade" in md
