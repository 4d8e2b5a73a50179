"""The feature pipelines a deployment loads are core: loading and running one imports no evaluation,
command-line or service module (fitting and calibration live in ``sketchauth.evaluate.fitting``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting import interval
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform

#: Run in a fresh interpreter: import the core, load a pipeline, enrol and verify; print what got imported.
_PROBE = """
import json, sys
import sketchauth.features
from sketchauth.features import load_pipeline, load_pipelines
from sketchauth.enrolment import hasher
pipeline = load_pipeline(open(sys.argv[1], encoding="utf-8").read())
load_pipelines(sys.argv[2])
samples = json.loads(open(sys.argv[3], encoding="utf-8").read())
record = pipeline.enrol(samples[:1], password_hasher=hasher("test"))
assert pipeline.verify(record, samples[1], password_hasher=hasher("test"))
print(json.dumps(sorted(sys.modules)))
"""

FORBIDDEN = ("sketchauth.evaluate", "sketchauth.cli", "service", "sketchauth_service")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    population = EmbeddingPopulation(informative=10, useless=2, noise_scale=0.3, seed=3)
    transform = fit_transform(population.draw(60, 4, seed=1), levels=16)
    pipeline = interval.for_target_fmr(transform, population.draw(30, 4, seed=2), CalibrationOptions(target_fmr=0.05))
    root = tmp_path_factory.mktemp("layers")
    (root / "pipelines").mkdir()
    (root / "pipelines" / "interval.json").write_text(pipeline.to_json(), encoding="utf-8")
    person = population.draw(1, 2, seed=5).samples
    (root / "person.json").write_text(json.dumps(person.tolist()), encoding="utf-8")
    return root / "pipelines" / "interval.json", root / "pipelines", root / "person.json"


def test_loading_and_running_a_pipeline_imports_no_evaluation_module(written: tuple[Path, Path, Path]) -> None:
    config, directory, person = written
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(config), str(directory), str(person)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert "sketchauth.features.interval" in modules  # the probe did load the pipeline
    leaked = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert leaked == []


def test_no_core_feature_module_imports_evaluation_code() -> None:
    """Every module of ``sketchauth.features``, imported alone, pulls in no evaluation module."""
    root = Path(__file__).resolve().parents[2] / "sketchauth" / "features"
    names = sorted(p.stem for p in root.glob("*.py") if p.stem != "__init__")
    probe = (
        "import importlib, json, sys\n"
        f"for name in {names!r}: importlib.import_module('sketchauth.features.' + name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('sketchauth'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in modules if m.startswith(("sketchauth.evaluate", "sketchauth.cli"))] == []
