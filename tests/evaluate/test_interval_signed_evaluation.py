"""Evaluating the interval family on signed real features: mapped or counted, never clipped.

Embeddings are signed. The evaluation used to clip every template into ``[0, (n − 1)·step]`` and
quantise probes without looking at the range: on data with a third of its features negative it
reported FNMR 100% with ``malformed_probes: 0`` and advised widening the sweep. Now a template
outside the sketch's range stops the evaluation with the range and a way out, a probe outside it
is counted as malformed (the report says so), and with a ``step`` but neither ``n`` nor
``offset`` the range is fitted to the enrolment samples (documented rule, checked here).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sketchauth.cli import main
from sketchauth.errors import SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.error_rates import (
    decide_by_decoding,
    decide_interval,
    enrol_population,
    enrol_rounded_mean,
    evaluate_adapter,
    fit_quantiser_params,
    plan_trials,
)
from sketchauth.evaluate.report import EvaluationTarget, markdown, run_report
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.samples import Quantiser

POP = EmbeddingPopulation(informative=8, useless=0, noise_scale=0.3, seed=3)
STEP = 0.05


@pytest.fixture(scope="module")
def signed() -> LabelledVectors:
    data = POP.draw(30, 4, seed=1)
    assert 0.2 < float((data.samples < 0).mean()) < 0.8  # really signed
    return data


def _outside(quantiser: Quantiser, data: LabelledVectors) -> np.ndarray:
    """Rows with a value outside the quantiser's range, computed from the documented formula."""
    levels = np.floor((data.samples - (quantiser.offset or 0.0)) / STEP + 0.5)
    return np.any((levels < 0) | (levels >= quantiser.n), axis=1)


def test_signed_templates_are_refused_not_clipped(signed: LabelledVectors) -> None:
    with pytest.raises(SampleError) as err:
        evaluate_adapter("interval", {"n": 256, "features": 8, "step": STEP}, signed, [4, 8], seed=0)
    message = str(err.value)
    assert "cannot enrol identity" in message and "lies outside [-0.025, 12.775)" in message
    assert "fit" in message  # how to get out: a range, or a fitted one
    # Integer data beyond [0, n) is refused too (it used to be moved to the edge).
    data = LabelledVectors(np.repeat(np.arange(4), 2), np.tile([[1, 70]], (8, 1)))
    with pytest.raises(SampleError, match="cannot enrol identity 0: secret feature 1 is outside"):
        evaluate_adapter("interval", {"n": 64, "features": 2}, data, [4], seed=0)


def test_fitted_range_follows_the_documented_rule(signed: LabelledVectors) -> None:
    params, notes = fit_quantiser_params(
        "interval", {"features": 8, "step": STEP}, signed, enrol_samples=1, settings=[4, 16, 8]
    )
    enrolment_rows = plan_trials(signed).enrol_rows
    first = signed.samples[np.concatenate(enrolment_rows)]
    expected = Quantiser.covering(first.min() - 15 * STEP, first.max() + 15 * STEP, STEP)
    assert (params["n"], params["offset"]) == (expected.n, expected.offset)
    assert params["offset"] < 0 and notes and "fitted to the enrolment samples" in notes[0]
    # Every enrolment sample is at least 15 levels (widest tolerance 16, minus 1) inside the range.
    levels = np.floor((first - params["offset"]) / STEP + 0.5)
    assert levels.min() == 15 and levels.max() == params["n"] - 16
    # Nothing to fit when the range is given, or when there is no step.
    assert fit_quantiser_params("interval", {"features": 8, "step": STEP, "n": 300}, signed)[1] == ()
    assert fit_quantiser_params("interval", {"features": 8, "n": 300}, signed)[1] == ()
    assert fit_quantiser_params("pinsketch", {"m": 8, "t": 2, "step": 1}, signed)[1] == ()


def test_fitted_evaluation_maps_signed_features(signed: LabelledVectors) -> None:
    settings = [4, 16, 64]
    result = evaluate_adapter("interval", {"features": 8, "step": STEP}, signed, settings, seed=0)
    params, _ = fit_quantiser_params("interval", {"features": 8, "step": STEP}, signed, settings=settings)
    quantiser = Quantiser(params["n"], STEP, params["offset"])
    trials = plan_trials(signed)
    pairs = np.hstack([trials.genuine, trials.impostor])
    expected = int(_outside(quantiser, signed)[pairs[1]].sum())
    assert result.malformed_probes == (expected,) * len(settings)
    fnmr = [p.fnmr for p in result.points]
    assert fnmr[-1] < 0.5 and fnmr == sorted(fnmr, reverse=True)  # not the clipped 100%


def test_probes_outside_the_range_are_counted_by_both_deciders(signed: LabelledVectors) -> None:
    trials = plan_trials(signed)
    enrolment = signed.samples[np.concatenate(trials.enrol_rows)]
    # The narrowest range holding every enrolment sample: many probes fall outside it.
    q = Quantiser.covering(float(enrolment.min()), float(enrolment.max()), STEP)
    sketch = IntervalSketch(q.n, 30, step=STEP, features=8, offset=q.offset)
    probes = signed.samples.copy()
    probes[-1, 3] = np.nan  # a probe decode refuses for another reason
    enrolled = enrol_population(sketch, enrol_rounded_mean, signed, trials)
    pairs = np.hstack([trials.genuine, trials.impostor])
    fast, fast_bad = decide_interval(sketch, enrolled, probes, pairs[0], pairs[1])
    slow, slow_bad = decide_by_decoding(sketch, enrolled, probes, pairs[0], pairs[1])
    assert np.array_equal(fast, slow) and np.array_equal(fast_bad, slow_bad)
    outside = _outside(q, LabelledVectors(signed.identities, np.nan_to_num(probes, nan=0.0)))
    outside[-1] = True
    assert np.array_equal(fast_bad, outside[pairs[1]]) and 0 < fast_bad.sum() < fast_bad.size
    assert not np.any(fast & fast_bad) and fast.any()


def test_report_says_probes_were_malformed_instead_of_widen_the_sweep(signed: LabelledVectors) -> None:
    trials = plan_trials(signed)
    enrolment = signed.samples[np.concatenate(trials.enrol_rows)]
    q = Quantiser.covering(float(enrolment.min()), float(enrolment.max()), STEP)
    params = {"features": 8, "step": STEP, "n": q.n, "offset": q.offset}
    report = run_report(
        EvaluationTarget.from_scheme("interval", params), signed, [1, 2], seed=0, profile=None, crosscheck_trials=0
    )
    payload = report.as_dict()
    malformed = sum(p["malformed_probes"] for p in payload["error_rates"]["points"])
    assert malformed > 0 and any("used a probe the scheme refuses" in n for n in payload["notes"])
    text = markdown(payload)
    assert f"**{malformed} comparisons used a probe the scheme refuses**" in text
    assert "widen the sweep" not in text


def test_cli_report_fits_or_refuses_signed_data(
    signed: LabelledVectors, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "signed.csv"
    f.write_text(
        "".join(
            f"{i},{','.join(repr(float(x)) for x in row)}\n"
            for i, row in zip(signed.identities, signed.samples, strict=False)
        )
    )
    common = [
        "evaluate",
        "report",
        "--scheme",
        "interval",
        "--data",
        str(f),
        "--sweep",
        "8,32",
        "--profile",
        "test",
        "--no-plots",
        "--quiet",
    ]
    assert main([*common, "--params", json.dumps({"features": 8, "step": STEP}), "--out", str(tmp_path / "fit")]) == 0
    report = json.loads((tmp_path / "fit" / "report.json").read_text())
    assert report["params"]["offset"] < 0 and report["params"]["n"] > 2
    assert any("fitted to the enrolment samples" in n for n in report["notes"])
    assert report["error_rates"]["points"][-1]["fnmr"] < 0.5
    capsys.readouterr()
    assert (
        main([*common, "--params", json.dumps({"n": 256, "features": 8, "step": STEP}), "--out", str(tmp_path / "no")])
        == 2
    )
    err = capsys.readouterr().err
    assert "cannot enrol identity" in err and "lies outside [-0.025, 12.775)" in err


def test_asymmetric_evaluation_of_signed_captures(signed: LabelledVectors) -> None:
    params = {"q": 16, "scheme": "s2", "features": 8, "step": STEP}
    result = evaluate_adapter("asymmetric-interval", params, signed, [1, 4], enrol_samples=2, seed=0)
    fitted, _ = fit_quantiser_params("asymmetric-interval", params, signed, enrol_samples=2)
    assert fitted["offset"] < 0
    assert result.points[-1].fnmr < 1.0 and result.points[-1].fnmr <= result.points[0].fnmr
    with pytest.raises(SampleError, match=r"cannot enrol identity .*lies outside"):
        evaluate_adapter("asymmetric-interval", {**params, "n": 256}, signed, [1], enrol_samples=2, seed=0)
