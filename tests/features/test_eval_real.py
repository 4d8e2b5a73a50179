"""Evaluation on small real-looking data: impossible configurations, small populations, protocols,
security figures (through the Python API and the command line)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sketchauth.cli import main
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.features.evaluation import evaluate_pipelines
from sketchauth.features.transform import FeatureTransform

POP = EmbeddingPopulation(informative=10, useless=2, noise_scale=0.4, seed=7)


def _write_csv(path, data, split=None) -> None:
    lines = ["identity," + ("split," if split is not None else "") + ",".join(f"f{j}" for j in range(data.features))]
    for i, (label, row) in enumerate(zip(data.identities.tolist(), data.samples)):
        cells = [f"p{label}"] + ([split[i]] if split is not None else []) + [f"{v:.6g}" for v in row]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


# -- one impossible configuration must not sink the run ----------------------------------------------
@pytest.mark.parametrize("bits", [1, 2])
def test_impossible_code_offset_is_reported_unavailable_and_the_rest_evaluated(bits: int) -> None:
    # 8 kept dimensions: 1 bit gives 1 byte, 2 bits give 2 bytes; neither corrects one byte error.
    transform = FeatureTransform.fit(POP.draw(80, 4, seed=1), levels=16, dimensions=8)
    assert transform.dimensions == 8
    result = evaluate_pipelines(
        transform, POP.draw(30, 4, seed=2), POP.draw(20, 4, seed=3), code_bits=bits,
        kinds=("interval", "code-offset", "thermometer"),
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
    assert main(["features", "fit", "--data", str(background), "--out", str(transform), "--levels", "16",
                 "--dimensions", "8", "--code-bits", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "unavailable" in summary["code-offset"]
    out = tmp_path / "ev"
    assert main(["features", "evaluate", "--transform", str(transform), "--background", str(background),
                 "--data", str(people), "--out", str(out), "--code-bits", "2", "--no-plot"]) == 0
    printed = capsys.readouterr().out
    assert "code-offset: unavailable" in printed and "thermometer" in printed
    report = json.loads((out / "features.json").read_text())
    assert report["unavailable"][0]["pipeline"] == "code-offset"
