"""The evaluation report's ISO/IEC 30136 / 24745 section, renewability, interval option and curves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _helpers import evaluate_report

from sketchauth.evaluate.data import VectorModel, synthetic_vectors
from sketchauth.evaluate.error_rates import adapter
from sketchauth.evaluate.rates import clopper_pearson_interval, wilson_interval
from sketchauth.evaluate.renewability import evaluate_renewability
from sketchauth.evaluate.report import EvaluationTarget, run_report, write_report
from sketchauth.evaluate.unlinkability import UnlinkabilityOptions, chance_level, evaluate_unlinkability, link_pairs
from sketchauth.sketches.interval import IntervalSketch

SCHEME = ["--scheme", "interval", "--params", '{"n": 256, "features": 8}', "--sweep", "2,4,6,8,10", "--seed", "3"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = {}
    for method in ("wilson", "clopper-pearson"):
        path = tmp_path_factory.mktemp(method)
        code = evaluate_report(path, *SCHEME, "--synthetic", "identities=30,samples=4,noise=3", "--interval", method)
        assert code == 0
        out[method] = json.loads((path / "report.json").read_text()) | {"md": (path / "report.md").read_text()}
    return out


def test_interval_option_recomputes_the_rates_intervals_from_the_same_counts(reports: dict[str, dict]) -> None:
    wilson, exact = reports["wilson"], reports["clopper-pearson"]
    assert (wilson["interval_method"], exact["interval_method"]) == ("wilson", "clopper-pearson")
    for pw, pe in zip(wilson["error_rates"]["points"], exact["error_rates"]["points"], strict=True):
        assert (pw["false_matches"], pw["impostor_trials"]) == (pe["false_matches"], pe["impostor_trials"])
        assert tuple(pw["fmr_ci"]) == pytest.approx(wilson_interval(pw["false_matches"], pw["impostor_trials"]))
        assert tuple(pe["fmr_ci"]) == pytest.approx(
            clopper_pearson_interval(pe["false_matches"], pe["impostor_trials"])
        )
        assert tuple(pe["fnmr_ci"]) == pytest.approx(
            clopper_pearson_interval(pe["false_non_matches"], pe["genuine_trials"])
        )
    assert "95% Clopper–Pearson" in exact["md"] and "95% Wilson" in wilson["md"]


def test_iso_section_restates_the_reports_numbers(reports: dict[str, dict]) -> None:
    r = reports["clopper-pearson"]
    iso = r["iso_30136"]
    assert iso["standards"] == ["ISO/IEC 24745:2022", "ISO/IEC 30136:2018"]
    pf, op = iso["performance"], r["operating_point"]
    assert pf["setting"] == {"v": op["setting"]} and pf["interval"] == "clopper-pearson"
    assert (pf["fmr"], pf["fmr_ci"], pf["fnmr_ci"]) == (op["fmr"], op["fmr_ci"], op["fnmr_ci"])
    assert pf["eer_unprotected"] == {b["metric"]: b["eer"] for b in r["error_rates"]["baselines"]}
    bound = iso["irreversibility"]["bound"]
    assert bound["loss_bound_bits"] == r["leakage"]["loss_bound_bits"]
    assert iso["irreversibility"]["attack_on_one_record"] == r["leakage"]["offline_attack"]
    assert iso["irreversibility"]["two_linked_records"] == r["unlinkability"]["reversibility"]
    ul = iso["unlinkability"]
    assert ul["d_sys"] == r["unlinkability"]["d_sys"]
    assert 0.0 <= ul["chance_d_sys_mean"] <= ul["chance_d_sys_p95"] < ul["d_sys"]  # residues link
    assert ul["linkable"] is True and ul["p_value"] < 0.01
    assert iso["renewability"] == r["renewability"]
    md = r["md"]
    for word in ("ISO/IEC 30136", "**Performance**", "**Irreversibility**", "**Unlinkability**", "**Renewability**"):
        assert word in md
    assert "pepper rotation" in md and "chance level" in md


def test_renewability_sealed_records_do_not_link_and_clear_ones_do() -> None:
    data = synthetic_vectors(80, 2, 8, seed=2, model=VectorModel(noise=1.0))
    sketch = IntervalSketch(256, 6, features=8)
    enrol = adapter("interval").enrol
    out = evaluate_renewability(sketch, link_pairs(sketch, enrol, data, seed=1), permutations=100, seed=1)
    assert (out["mated_pairs"], out["nonmated_pairs"]) == (80, 800)
    for scenario in out["scenarios"].values():
        # Byte agreement of independently sealed records: chance-level D↔sys. Measured 0.01-0.09
        # over runs (fresh peppers and nonces each run); 0.3 is far above, far below the clear 0.9+.
        assert scenario["d_sys"] < 0.3 and 0.0 < scenario["p_value"] <= 1.0
    # The control: the same two enrolments in clear (renewal by fresh randomness alone) link.
    clear = evaluate_unlinkability(sketch, enrol, data, UnlinkabilityOptions(seed=1))
    assert clear.measures.d_sys > 0.8
    assert chance_level(clear.mated_scores, clear.nonmated_scores, permutations=50)["p_value"] < 0.05


def test_roc_and_epc_in_the_json_and_as_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    data = synthetic_vectors(24, 3, 8, seed=4, model=VectorModel(noise=2.0))
    target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 8})
    rep = run_report(target, data, [2, 4, 8], seed=2, profile="test", crosscheck_trials=0, attack_tries=0)
    payload = write_report(rep, tmp_path)
    assert {"roc.png", "epc.png"} <= set(payload["figures"])
    assert (tmp_path / "roc.png").stat().st_size > 0 and (tmp_path / "epc.png").stat().st_size > 0
    curve = payload["curves"][0]
    base = rep.error_rates.baselines[0]
    assert curve["roc"]["fmr"][0] == 0.0 and curve["roc"]["fmr"][-1] == 1.0
    assert np.all(np.diff(curve["roc"]["tpr"]) >= 0)
    assert curve["roc"]["tpr"][-1] == 1.0 - base.fnmr[-1]
    e = curve["epc"]
    assert len(e["alpha"]) == len(e["hter"]) == 21 and all(0.0 <= h <= 1.0 for h in e["hter"])
    assert (
        e["development_trials"]["genuine"] + e["evaluation_trials"]["genuine"]
        == payload["error_rates"]["genuine_trials"]
    )
    assert "seeded halves" in e["split"]
    assert "scores/unprotected_euclidean.2col" in payload["score_files"]
