"""Feature evaluation: exact fixed-seed error counts, the goal check, the table and the DET plot."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from sketchauth.errors import ParameterError
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.features.evaluation import GOAL_RATIO, evaluate_pipelines
from sketchauth.features.transform import FeatureTransform

POP = EmbeddingPopulation(informative=16, useless=4, noise_scale=0.4, seed=4)


@pytest.fixture(scope="module")
def result():
    transform = FeatureTransform.fit(POP.draw(160, 5, seed=1), levels=16)
    return evaluate_pipelines(
        transform,
        POP.draw(60, 5, seed=2),
        POP.draw(50, 5, seed=3),
        enrol_samples=2,
        kinds=("interval", "thermometer", "asymmetric-interval"),
        decode_checks=600,
    )


def _counts(row, genuine: int, impostor: int) -> list[tuple[int, int]]:
    return [(round(p.fnmr * genuine), round(p.fmr * impostor)) for p in row.points]


def test_exact_error_counts_on_a_fixed_population(result) -> None:
    assert (result.identities, result.genuine_trials, result.impostor_trials) == (50, 150, 7350)
    names = [r.name.split(" ")[0] for r in result.results]
    assert names == ["reference", "interval", "thermometer", "asymmetric"]
    g, i = result.genuine_trials, result.impostor_trials
    ref, interval, thermo, asym = result.results
    # (false non-matches, false matches) at FMR 1e-2, 1e-3, 1e-4.
    assert _counts(ref, g, i) == [(0, 73), (0, 7), (0, 0)]
    assert _counts(interval, g, i) == [(3, 67), (12, 7), (32, 0)]
    assert _counts(thermo, g, i) == [(0, 68), (0, 6), (3, 0)]
    # s2 accepts −v ≤ Δ < v (the left end b − v too); the |Δ| < v rule gave (59, 65), (71, 5), (102, 0).
    assert _counts(asym, g, i) == [(45, 57), (60, 5), (84, 0)]
    assert not ref.protected and ref.loss_bound_bits is None
    assert thermo.loss_bound_bits == 1353.0
    for row in result.results:
        for point in row.points:
            assert point.fmr <= point.target_fmr
            assert point.fnmr_ci[0] <= point.fnmr <= point.fnmr_ci[1]


def test_goal_compares_best_protected_with_reference(result) -> None:
    goal = result.goal
    assert goal["pipeline"].startswith("thermometer")
    assert (goal["fnmr"], goal["reference_fnmr"], goal["ratio"], goal["met"]) == (0.0, 0.0, 1.0, True)
    assert goal["target_ratio"] == GOAL_RATIO
    table = result.table()
    assert table.count("\n| ") == 4 and "met" in table
    assert result.to_dict()["goal"] == goal


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the plots extra")
def test_det_plot_is_a_png(result, tmp_path) -> None:
    out = result.plot(tmp_path / "det.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_kind_and_asymmetric_with_one_sample_are_refused() -> None:
    transform = FeatureTransform.fit(POP.draw(40, 3, seed=1), levels=8)
    data = POP.draw(10, 3, seed=2)
    with pytest.raises(ParameterError, match="unknown pipeline kind"):
        evaluate_pipelines(transform, data, data, kinds=("box",))
    with pytest.raises(ParameterError, match="enrol_samples >= 2"):
        evaluate_pipelines(transform, data, data, kinds=("asymmetric-interval",))


def test_code_offset_row_scores_beyond_t_max_as_never_accepted() -> None:
    easy = EmbeddingPopulation(informative=24, useless=2, noise_scale=0.02, between_decay=1.0, seed=6)
    transform = FeatureTransform.fit(easy.draw(120, 4, seed=1), levels=8)
    result = evaluate_pipelines(transform, easy.draw(60, 4, seed=2), easy.draw(40, 4, seed=3), kinds=("code-offset",))
    row = result.results[1]
    assert row.name == "code-offset (Gray 1-bit, 3 bytes)"
    assert row.points[0].setting <= 1  # t_max of 3 bytes
    assert row.loss_bound_bits == 16.0 and row.secret_bits == 24.0
    assert np.isfinite(row.eer)


def test_every_protected_row_is_cross_checked_by_real_decodes_in_the_same_run(result) -> None:
    for row in result.results[1:]:
        check = row.decode_check
        assert check["checked"] == 600 and check["disagreements"] == 0, row.name
        assert check["boundary_trials"] > 0
        assert row.to_dict()["decode_check"] == check
    assert "Disagreements with real encode → decode" in result.table()
