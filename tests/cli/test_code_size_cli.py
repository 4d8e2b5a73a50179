"""The angular code size through the real CLI: the curve, ``--code-size auto``, the refusal, ``--pipelines DIR``.

The "model" is seeded: unit vectors of 96 dimensions around a per-person direction (NPZ, as a
model's export). With within-person noise 0.03 every genuine cosine is far above the 64-bit
capacity cosine (0.763 at 96-D): ``auto`` takes 64 bits, the largest size 96 dimensions hold.
With noise 0.08 about a fifth of the genuine pairs lie below even the 32-bit capacity cosine
(0.580) while the cosine matcher rejects none: no size meets the rule, and ``fit`` refuses.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import features_evaluate, features_fit

from sketchauth.evaluate.capacity import CODE_SIZES, FLOOR_BITS, FNMR_FACTOR, FNMR_SLACK
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.pipeline import load_pipeline

DIMENSIONS = 96
FIT = ["--kinds", "angular", "--projection", "centre", "--normalise", "--target-fmr", "0.01", "--quiet"]
CURVE_COLUMNS = (
    "| code bits | capacity cos | floor FNMR | FNMR | FNMR / floor | realised FMR | cosine FNMR "
    "| population attack (argon2, bits) |"
)
POINT_KEYS = {"bits", "floor_fnmr", "fnmr", "fnmr_over_floor", "fmr", "cosine_fnmr", "attack_bits"}


def _embeddings(path: Path, people: int, seed: int, noise: float, captures: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(people, DIMENSIONS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, captures, axis=0) + rng.normal(scale=noise, size=(people * captures, DIMENSIONS))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.savez(path, X=x.astype(np.float32), labels=np.repeat([f"p{seed}-{i}" for i in range(people)], captures))
    return path


def _fit(background: Path, root: Path, *extra: str) -> tuple[int, dict[str, Any] | None]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = features_fit(background, root / "t.json", "--pipelines", str(root / "pipelines"), *FIT, *extra)
    return code, json.loads(printed.getvalue()) if code == 0 else None


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """``features fit --kinds angular`` with the default ``--code-size auto``: directory, summary, stderr."""
    root = tmp_path_factory.mktemp("code-size")
    background = _embeddings(root / "bg.npz", 40, seed=1, noise=0.03)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code, summary = _fit(background, root)
    assert code == 0, err.getvalue()
    assert summary is not None
    return root, summary, err.getvalue()


def test_fit_prints_the_curve_per_code_size_and_records_it(fitted: tuple[Path, dict[str, Any], str]) -> None:
    _, summary, err = fitted
    assert CURVE_COLUMNS in err
    curve = summary["code_size"]
    assert curve["dimension"] == DIMENSIONS and curve["target_fmr"] == 0.01
    assert [p["bits"] for p in curve["points"]] == [k for k in CODE_SIZES if k < DIMENSIONS] == [32, 48, 64]
    for point in curve["points"]:
        assert set(point) >= POINT_KEYS
        assert 0.0 <= point["floor_fnmr"] <= point["fnmr"] <= 1.0  # no code beats the capacity floor
        assert point["fmr"] <= 0.01
        # 40 people x 2 probes against 39 others: no decoded impostor, so the attack figure is log2(tries).
        assert point["attack_bits_is_lower_bound"] and point["attack_bits"] == pytest.approx(np.log2(40 * 39 * 2))
    for line in (f"| {p['bits']} | {p['capacity_cos']:.3f} | {p['floor_fnmr']:.4f} |" for p in curve["points"]):
        assert line in err


def test_auto_takes_the_largest_size_the_rule_allows(fitted: tuple[Path, dict[str, Any], str]) -> None:
    root, summary, err = fitted
    curve = summary["code_size"]
    assert curve["choice"]["bits"] == curve["chosen_bits"] == 64 and curve["chosen_by"] == "auto"
    assert "Default code size: 64 bits" in err
    pipeline = load_pipeline((root / "pipelines" / "angular.json").read_text())
    assert isinstance(pipeline, AngularPipeline) and pipeline.sketch.params()["bits"] == 64
    assert summary["pipelines"]["angular"]["params"] == pipeline.sketch.params()
    # Decode failures are measured for the size kept (the curve's other sizes skip them).
    failures = summary["pipelines"]["angular"]["decode_failures"]
    assert failures["checked"] > 0 and failures["refused"] <= failures["checked"]
    # The rule's constants, as docs/embeddings.md states them.
    assert (FNMR_FACTOR, FNMR_SLACK, FLOOR_BITS) == (1.5, 0.01, 32)


def test_fit_refuses_in_one_line_when_no_code_size_is_acceptable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    background = _embeddings(tmp_path / "bg.npz", 40, seed=3, noise=0.08)
    code, _ = _fit(background, tmp_path)
    assert code == 2
    err = capsys.readouterr().err
    assert CURVE_COLUMNS in err  # the figures behind the refusal are shown first
    last = err.strip().splitlines()[-1]
    assert last.startswith("sketchauth: error: no code size is acceptable: even 32 bits reject ")
    assert last.endswith("accept fewer bits explicitly (--code-size N)")
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "pipelines").exists()


def test_an_explicit_code_size_is_the_acceptance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    background = _embeddings(tmp_path / "bg.npz", 40, seed=3, noise=0.08)
    code, summary = _fit(background, tmp_path, "--code-size", "32", "--keep-unusable")
    assert code == 0, capsys.readouterr().err
    assert summary is not None
    assert summary["code_size"]["chosen_by"] == "--code-size" and summary["code_size"]["chosen_bits"] == 32
    assert summary["code_size"]["choice"]["bits"] is None  # the rule still says none would do
    assert summary["pipelines"]["angular"]["params"]["bits"] == 32
    assert (tmp_path / "pipelines" / "angular.json").exists()


@pytest.mark.parametrize("value", ["0", "-3", "big"])
def test_code_size_must_be_auto_or_bits(tmp_path: Path, value: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        features_fit(tmp_path / "bg.npz", tmp_path / "t.json", "--code-size", value)
    assert exit_.value.code == 2


def _evaluate(root: Path, out: Path, people: Path, *extra: str) -> int:
    args = ["--data", str(people), "--no-plots", "--attack-tries", "5", "--attack-people", "4", "--quiet"]
    return features_evaluate(root / "t.json", root / "bg.npz", out, *args, "--target-fmr", "0.01", *extra)


@pytest.fixture(scope="module")
def evaluated(
    fitted: tuple[Path, dict[str, Any], str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], AngularPipeline]:
    """``features evaluate --pipelines DIR`` on a pipeline directory whose angular ``min_cos`` was changed
    by hand to 0.9: what is measured must be that file, not a recalibration."""
    root, _, _ = fitted
    tmp = tmp_path_factory.mktemp("evaluate")
    written = load_pipeline((root / "pipelines" / "angular.json").read_text())
    assert isinstance(written, AngularPipeline)
    edited = AngularPipeline(written.transform, written.dims, min_cos=0.9, bits=64)
    (tmp / "pipelines").mkdir()
    (tmp / "pipelines" / "angular.json").write_text(edited.to_json())
    people = _embeddings(tmp / "people.npz", 20, seed=2, noise=0.03)
    code = _evaluate(root, tmp / "report", people, "--pipelines", str(tmp / "pipelines"), "--decode-checks", "300")
    assert code == 0
    return json.loads((tmp / "report" / "features.json").read_text()), edited


def test_evaluate_measures_the_pipelines_fit_wrote_as_written(evaluated: tuple[dict[str, Any], Any]) -> None:
    report, edited = evaluated
    (row,) = report["loaded_pipelines"]
    assert row["pipeline"] == "angular" and row["params"] == edited.sketch.params()
    assert row["params"]["min_cos"] == 0.9
    assert row["genuine_trials"] == 40 and row["impostor_trials"] == 20 * 19 * 2
    assert row["decode_check"]["checked"] == 300 and row["decode_check"]["disagreements"] == 0
    assert report["calibrated_on_background"] == []  # nothing recalibrated


def test_evaluate_puts_the_angular_pipeline_in_every_table(evaluated: tuple[dict[str, Any], Any]) -> None:
    report, _ = evaluated
    angular = [m for m in report["matchers"] if m["name"].startswith("angular")]
    assert len(angular) == 1 and angular[0]["protected"] and angular[0]["name"] == "angular (polar 64-bit, list 8)"
    check = angular[0]["decode_check"]
    assert check["checked"] == 300 and check["disagreements"] == 0 and check["boundary_trials"] > 0
    security = {s["pipeline"]: s for s in report["security"]}
    figures = security["angular (polar 64-bit, list 8)"]
    assert figures["a_basis"] == "codebook" and figures["a_provable_residual_bits"] == 64.0
    assert figures["c_offline_attack"]["people"] == 4  # the offline population attack ran on it
    assert any(row["pipeline"].startswith("angular") for row in report["tuning"])
    points = report["code_size"]["points"]
    assert [p["bits"] for p in points] == [32, 48, 64] and all(set(p) >= POINT_KEYS for p in points)
    assert "choice" not in report["code_size"]  # measured on new people: shown, not chosen from


def test_the_recommendation_weighs_the_angular_pipeline(
    fitted: tuple[Path, dict[str, Any], str], tmp_path: Path
) -> None:
    root, _, _ = fitted
    people = _embeddings(tmp_path / "people.npz", 20, seed=4, noise=0.03)
    code = _evaluate(root, tmp_path / "report", people, "--decode-checks", "50")
    assert code == 0
    report = json.loads((tmp_path / "report" / "features.json").read_text())
    angular = [r for r in report["tuning"] if r["pipeline"].startswith("angular")]
    assert angular and all(r["basis"] == "codebook" and r["guaranteed_bits"] == 64.0 for r in angular)
    eligible = [r["fnmr"] for r in angular if r["fmr"] <= 1e-2]
    assert eligible and report["recommendation"]["fnmr"] <= min(eligible)
    # Without --pipelines each kind is calibrated on the background, the angular one at the row's code size.
    calibrated = {row["pipeline"]: row for row in report["calibrated_on_background"]}
    assert calibrated["angular"]["params"]["bits"] == 64


def test_an_unusable_pipeline_is_evaluated_only_with_keep_unusable(
    fitted: tuple[Path, dict[str, Any], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = fitted
    written = load_pipeline((root / "pipelines" / "angular.json").read_text())
    written.unusable = "predicted FNMR 0.9 (a test's mark)"
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "angular.json").write_text(written.to_json())
    people = _embeddings(tmp_path / "people.npz", 12, seed=5, noise=0.03)
    extra = ["--pipelines", str(tmp_path / "pipelines"), "--decode-checks", "20"]
    assert _evaluate(root, tmp_path / "a", people, *extra) == 0
    assert "angular.json is marked unusable (predicted FNMR 0.9 (a test's mark)); skipped" in capsys.readouterr().err
    assert json.loads((tmp_path / "a" / "features.json").read_text())["loaded_pipelines"] == []
    assert _evaluate(root, tmp_path / "b", people, *extra, "--keep-unusable") == 0
    (row,) = json.loads((tmp_path / "b" / "features.json").read_text())["loaded_pipelines"]
    assert row["unusable"] == "predicted FNMR 0.9 (a test's mark)"


def test_evaluate_fails_when_the_angular_row_disagrees_with_the_scheme(
    fitted: tuple[Path, dict[str, Any], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sketchauth.evaluate.pipelines import evaluation

    real = evaluation.angular_decode_check

    def one_wrong(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**real(*args, **kwargs), "disagreements": 1}

    monkeypatch.setattr(evaluation, "angular_decode_check", one_wrong)
    root, _, _ = fitted
    people = _embeddings(tmp_path / "people.npz", 12, seed=6, noise=0.03)
    assert _evaluate(root, tmp_path / "report", people, "--decode-checks", "20") == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("sketchauth: error: the rows do NOT equal the real schemes")
    assert re.search(r"angular \(polar 64-bit, list \d+\): 1 of 20", last)
    assert (tmp_path / "report" / "features.json").exists()  # the report is kept for inspection


def test_evaluate_refuses_pipelines_of_another_transform(
    fitted: tuple[Path, dict[str, Any], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = fitted
    other = tmp_path / "other"
    other.mkdir()
    background = _embeddings(other / "bg.npz", 40, seed=7, noise=0.03)
    assert _fit(background, other)[0] == 0
    people = _embeddings(tmp_path / "people.npz", 12, seed=6, noise=0.03)
    assert _evaluate(root, tmp_path / "report", people, "--pipelines", str(other / "pipelines")) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        f"sketchauth: error: --pipelines {other / 'pipelines'}: angular.json was fitted on another transform "
        f"than {root / 't.json'}"
    )


def test_fit_names_pipeline_files_an_earlier_fit_left(tmp_path: Path) -> None:
    """The service serves every ``<name>.json`` of the directory: one this fit did not write is named."""
    background = _embeddings(tmp_path / "bg.npz", 40, seed=1, noise=0.03)
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "code-offset.json").write_text("{}\n", encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code, summary = _fit(background, tmp_path)
    assert code == 0 and summary is not None
    assert summary["written"] == ["angular"] and summary["left_from_earlier"] == ["code-offset.json"]
    warning = f"warning: {tmp_path / 'pipelines' / 'code-offset.json'} was not written by this fit"
    assert warning in err.getvalue()
    assert (tmp_path / "pipelines" / "code-offset.json").exists()  # named, never deleted
