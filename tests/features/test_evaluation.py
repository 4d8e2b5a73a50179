"""Feature evaluation: error rates by definition and tolerance, the goal check, the table and the DET plot.

The populations go through floating-point linear algebra (covariance roots, whitening, Fisher
eigenproblems) whose results differ between CPUs and BLAS builds, so measured rates are checked
against tolerances; trial counts, loss bounds of a chosen setting and hand-made cases are exact.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from feature_testing import STANDARD

from sketchauth.errors import ParameterError
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.interval import tolerance_path
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.pipelines import evaluation
from sketchauth.evaluate.pipelines.evaluation import (
    GOAL_RATIO,
    EvaluationChecks,
    FeatureEvaluation,
    MatcherResult,
    OperatingPoint,
    evaluate_pipelines,
)
from sketchauth.features.pipeline import ThermometerPipeline
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import descriptors

POP = STANDARD.population  # the ``transform`` fixture (tests/features/conftest.py) is fitted on it


@pytest.fixture(scope="module")
def result(transform):
    return evaluate_pipelines(
        transform,
        POP.draw(60, 5, seed=2),
        POP.draw(50, 5, seed=3),
        kinds=("interval", "thermometer", "asymmetric-interval"),
        options=CalibrationOptions(enrol_samples=2),
        checks=EvaluationChecks(security=False, decode_checks=600),
    )


def test_error_rates_on_a_population(result, transform) -> None:
    # 50 identities × 3 probes after 2 enrolment samples; every other identity's probes are impostors.
    assert (result.identities, result.genuine_trials, result.impostor_trials) == (50, 150, 7350)
    names = [r.name.split(" ")[0] for r in result.results]
    assert names == ["reference", "interval", "thermometer", "asymmetric"]
    for row in result.results:
        fnmr = [p.fnmr for p in row.points]  # at FMR 1e-2, 1e-3, 1e-4
        assert fnmr == sorted(fnmr)  # a stricter FMR never lowers the FNMR
        for point in row.points:
            assert point.fmr <= point.target_fmr
            assert point.fnmr_ci[0] <= point.fnmr <= point.fnmr_ci[1]
            # Rates are counts over trials.
            assert point.fnmr * 150 == pytest.approx(round(point.fnmr * 150), abs=1e-9)
            assert point.fmr * 7350 == pytest.approx(round(point.fmr * 7350), abs=1e-9)
    ref, interval, thermo, asym = result.results
    # FNMR at FMR 1%, measured here 0, 3, 0 and 45 of 150; on ten other populations at most 0, 15, 0, 77.
    assert ref.at(1e-2).fnmr <= 0.02 and thermo.at(1e-2).fnmr <= 0.02
    assert interval.at(1e-2).fnmr <= 0.2 and 0.0 < asym.at(1e-2).fnmr <= 0.7
    assert not ref.protected and ref.loss_bound_bits is None
    # Loss bounds of the FMR 1e-2 settings, from the settings: PinSketch's syndrome bits (at most
    # m·t); the interval box Σ log2 min(2v − 1, n); s2 (1 + 2·log2 q) per feature with q = n = 16.
    m = ThermometerPipeline.with_resolution(transform, enrol_samples=2, resolution=0.15, t=1).sketch.params()["m"]
    t = int(thermo.at(1e-2).setting)
    assert thermo.loss_bound_bits == PinSketch(m=m, t=t).report().loss_bound_bits <= m * t
    v = tolerance_path(transform, POP.draw(60, 5, seed=2), enrol_samples=2).tolerances[int(interval.at(1e-2).setting)]
    assert interval.loss_bound_bits == pytest.approx(float(np.log2(np.minimum(2 * v[v < 16] - 1, 16)).sum()))
    assert (asym.loss_bound_bits, asym.secret_bits) == (9.0 * transform.dimensions, 4.0 * transform.dimensions)


def test_goal_compares_best_protected_with_reference(result) -> None:
    goal = result.goal
    best, ref = result.best_protected, result.reference
    assert best.protected and best.at(1e-2).fnmr == min(r.at(1e-2).fnmr for r in result.results if r.protected)
    assert (goal["pipeline"], goal["fnmr"], goal["reference_fnmr"]) == (
        best.name,
        best.at(1e-2).fnmr,
        ref.at(1e-2).fnmr,
    )
    assert goal["target_ratio"] == GOAL_RATIO and goal["optimistic"]
    assert goal["within_optimistic"] is (goal["ratio"] <= GOAL_RATIO)
    # The thermometer pipeline is the best protected one here (FNMR 0 at FMR 1% on eleven populations).
    assert goal["pipeline"].startswith("thermometer") and goal["fnmr"] <= 0.02
    table = result.table()
    assert table.split("\n\nSecurity")[0].count("\n| ") == 4 and ("within" in table or "missed" in table)
    assert "OPTIMISTIC" in table and " met" not in table
    assert result.to_dict()["goal"] == goal


def _row(name: str, fnmr: float, *, protected: bool = True) -> MatcherResult:
    point = OperatingPoint(1e-2, fnmr, (0.0, 1.0), 0.0, 1.0)
    return MatcherResult(name, protected, (point,), 0.0, None, None, (np.zeros(1), np.zeros(1)))


@pytest.mark.parametrize(
    ("best", "reference", "ratio", "met"),
    [(0.0, 0.0, 1.0, True), (0.01, 0.0, math.inf, False), (0.05, 0.045, 10 / 9, True), (0.06, 0.04, 1.5, False)],
)
def test_goal_ratio_conventions(best, reference, ratio, met) -> None:
    evaluation = FeatureEvaluation(
        (_row("ref", reference, protected=False), _row("worse", 0.5), _row("best", best)), 2, 2, 2, 1
    )
    goal = evaluation.goal
    within = goal["within_optimistic"]
    assert (goal["pipeline"], goal["fnmr"], goal["reference_fnmr"], within) == ("best", best, reference, met)
    assert goal["ratio"] == pytest.approx(ratio)


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the plots extra")
def test_det_plot_is_a_png(result, tmp_path) -> None:
    out = result.plot(tmp_path / "det.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_kind_and_asymmetric_with_one_sample_are_refused() -> None:
    transform = fit_transform(POP.draw(40, 3, seed=1), levels=8)
    data = POP.draw(10, 3, seed=2)
    with pytest.raises(ParameterError, match="unknown pipeline kind"):
        evaluate_pipelines(transform, data, data, kinds=("box",))
    with pytest.raises(ParameterError, match="enrol_samples >= 2"):
        evaluate_pipelines(transform, data, data, kinds=("asymmetric-interval",))


def test_code_offset_row_scores_beyond_t_max_as_never_accepted() -> None:
    easy = EmbeddingPopulation(informative=24, useless=2, noise_scale=0.02, between_decay=1.0, seed=6)
    transform = fit_transform(easy.draw(120, 4, seed=1), levels=8)
    result = evaluate_pipelines(
        transform,
        easy.draw(60, 4, seed=2),
        easy.draw(40, 4, seed=3),
        kinds=("code-offset",),
        options=CalibrationOptions(code_bits=1),
    )
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


def test_every_pipeline_kind_has_an_evaluator_and_sketch_backed_kinds_are_scheme_names() -> None:
    assert set(evaluation._EVALUATORS) == set(evaluation.PIPELINE_KINDS)
    assert set(evaluation.PIPELINE_KINDS) - {"thermometer"} <= set(descriptors())
