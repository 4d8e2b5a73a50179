"""`sketchauth features fit | evaluate` and the angular pipeline, on a simulated cosine embedding.

The "model" is seeded: unit vectors of 96 dimensions around a per-person direction, exported to
NPZ as a model's would be (``numpy.savez(path, X=embeddings, labels=labels)``). ``features fit``
always builds the angular pipeline with the defaults: ``--code-size auto`` takes the polar code of
64 bits in 96 dimensions (these genuine pairs are far inside every size's capacity cosine). In 64
dimensions the polar code cannot hold ``--code-size 64``: the pipeline is reported unavailable with
what to change.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import features_evaluate, features_fit

from sketchauth.features.angular import AngularPipeline
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.pipeline import load_pipeline
from sketchauth.features.transform import FeatureTransform

DIMENSIONS = 96
BITS = 64  # the default security_bits: the polar code's information bits


def _embeddings(path: Path, people: int, captures: int, seed: int, dimensions: int = DIMENSIONS) -> Path:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(people, dimensions))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, captures, axis=0) + rng.normal(scale=0.01, size=(people * captures, dimensions))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.savez(path, X=x.astype(np.float32), labels=np.repeat([f"p{seed}-{i}" for i in range(people)], captures))
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``features fit --projection centre --normalise --target-fmr 0.01``: the directory and the summary."""
    root = tmp_path_factory.mktemp("angular-cli")
    background = _embeddings(root / "bg.npz", 60, 3, seed=1)
    args = ["--pipelines", str(root / "pipelines"), "--projection", "centre", "--normalise", "--target-fmr", "0.01"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert features_fit(background, root / "t.json", *args, "--levels", "4", "--quiet") == 0
    return root, json.loads(printed.getvalue())


def test_fit_writes_an_angular_pipeline_with_measured_decode_failures(fitted: tuple[Path, dict[str, Any]]) -> None:
    root, summary = fitted
    transform = FeatureTransform.from_json((root / "t.json").read_text())
    assert transform.projection_kind == "centre" and transform.normalises
    assert transform.dimensions == transform.features == DIMENSIONS
    assert (summary["projection"], summary["normalise"], summary["kept_dimensions"]) == ("centre", True, DIMENSIONS)

    pipeline = load_pipeline((root / "pipelines" / "angular.json").read_text())
    assert isinstance(pipeline, AngularPipeline) and pipeline.transform == transform
    assert pipeline.calibration is None and pipeline.decode_failures is None  # configuration only
    listed = summary["pipelines"]["angular"]
    assert DEFAULTS.angular_security_bits == BITS and DEFAULTS.angular_code == "polar"
    assert listed["scheme"] == "angular-polar" and listed["params"] == pipeline.sketch.params()
    assert BITS <= listed["params"]["bits"] < DIMENSIONS and listed["params"]["list_size"] == DEFAULTS.angular_list_size
    assert listed["secret_bits"] == pipeline.secret_bits == listed["params"]["bits"]
    predicted = listed["predicted_on_new_people"]
    assert predicted["predicted_fmr_upper"] <= 0.01 and predicted["folds"] == 5
    assert listed["params"]["min_cos"] == -predicted["point"]
    failures = listed["decode_failures"]
    assert set(failures) == {"checked", "refused", "share"}
    assert 0 < failures["checked"] <= 120 and failures["refused"] <= 0.1 * failures["checked"]
    assert "expected_on_check_optimistic" not in listed
    # The other pipelines are written beside it, on the same transform.
    assert {"interval", "thermometer", "code-offset", "angular"} <= set(summary["pipelines"])


def test_the_written_pipeline_enrols_and_verifies_raw_float32_vectors(fitted: tuple[Path, dict[str, Any]]) -> None:
    from sketchauth.enrolment import hasher

    root, _ = fitted
    pipeline = load_pipeline((root / "pipelines" / "angular.json").read_text())
    people = np.load(_embeddings(root / "people.npz", 2, 3, seed=5))["X"]
    test_hash = hasher("test")
    enrolment = pipeline.enrol(people[:1], password_hasher=test_hash)
    assert pipeline.verify(enrolment, people[1], password_hasher=test_hash)  # cos ~0.99: inside the code
    assert not pipeline.verify(enrolment, people[3], password_hasher=test_hash)


def test_evaluate_checks_the_angular_pipeline_on_held_out_people(
    fitted: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = fitted
    people = _embeddings(tmp_path / "people.npz", 30, 3, seed=2)
    out = tmp_path / "report"
    args = ["--data", str(people), "--no-plots", "--attack-tries", "10", "--decode-checks", "50"]
    code = features_evaluate(root / "t.json", root / "bg.npz", out, *args, "--quiet")
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "features.json").read_text())
    rows = {row["pipeline"]: row for row in report["calibrated_on_background"]}
    angular = rows["angular"]
    assert BITS <= angular["params"]["bits"] < DIMENSIONS and angular["predicted"]["predicted_fmr_upper"] <= 0.01
    failures = angular["realised"]["decode_failures"]
    assert set(failures) == {"checked", "refused", "share"} and 0 < failures["checked"] <= 60
    assert angular["realised"]["genuine_trials"] == 60


def test_fit_reports_the_angular_pipeline_unavailable_below_two_dimensions(tmp_path: Path, capsys) -> None:
    background = _embeddings(tmp_path / "bg.npz", 30, 3, seed=3)
    assert features_fit(background, tmp_path / "t.json", "--dimensions", "1", "--levels", "4", "--quiet") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kept_dimensions"] == 1
    assert "at least 2 dimensions" in summary["angular"]["unavailable"]
    assert "angular" not in summary["pipelines"]


def test_fit_reports_the_polar_code_unavailable_when_the_dimension_cannot_hold_its_bits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    background = _embeddings(tmp_path / "bg.npz", 30, 3, seed=3, dimensions=64)
    args = ["--projection", "centre", "--normalise", "--levels", "4", "--quiet", "--code-size", "64"]
    assert features_fit(background, tmp_path / "t.json", *args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kept_dimensions"] == 64 and "angular" not in summary["pipelines"]
    assert [p["bits"] for p in summary["code_size"]["points"]] == [32, 48]  # the sizes 64 dimensions hold
    reason = summary["angular"]["unavailable"]
    assert reason.startswith("a polar code of 64 bits needs more than 64 dimensions")
    assert "ask for fewer security_bits (at most 63) or keep more dimensions" in reason


def test_fit_refuses_dimensions_with_the_centre_projection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    background = _embeddings(tmp_path / "bg.npz", 20, 3, seed=3, dimensions=16)
    args = ["--projection", "centre", "--normalise", "--dimensions", "8", "--quiet"]
    assert features_fit(background, tmp_path / "t.json", *args) != 0
    err = capsys.readouterr().err
    assert "projection 'centre' keeps every axis" in err and "drop dimensions (--dimensions)" in err
    assert not (tmp_path / "t.json").exists()
