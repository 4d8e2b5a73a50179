"""The integrator's path of docs/embeddings.md: a model's 512-D float vectors to a running service.

The commands of the walk-through, run for real (``sketchauth features fit`` in-process on an NPZ
export written the way a model's is: ``numpy.savez(path, X=embeddings, labels=labels)``), then the
service configured with the written pipeline directory and a pepper, then enrolment of one raw
512-D float vector over HTTP with a PIN, and verification. The "model" is a seeded simulation of
a deep embedding (unit vectors around a per-person direction); real sets are measured in
``benchmarks/bench_calibration.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings

from sketchauth.cli import main
from sketchauth.evaluate.data import load_vectors
from sketchauth.features import load_pipelines

DIMENSIONS = 512
PIN = "2718-2818"
PEPPER = "skp1_VXBdPxgyu28GYtw64MStNmKHFL2m31yUzMdjU21ariz-gY3I"


def _embeddings(people: int, captures: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm 512-D float32 vectors: each person's direction plus per-capture noise (a cosine model)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(people, DIMENSIONS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, captures, axis=0) + rng.normal(scale=0.01, size=(people * captures, DIMENSIONS))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels = np.repeat([f"p{seed}-{i}" for i in range(people)], captures)
    return x.astype(np.float32), labels


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sketchauth features fit --data background.npz --projection whiten --normalise --pipelines DIR``."""
    root = tmp_path_factory.mktemp("integrator")
    x, labels = _embeddings(60, 3, seed=1)
    np.savez(root / "background.npz", X=x, labels=labels)
    background = load_vectors(root / "background.npz")
    assert background.samples.shape == (180, DIMENSIONS) and background.samples.dtype.kind == "f"
    argv = ["features", "fit", "--data", str(root / "background.npz"), "--out", str(root / "transform.json")]
    argv += ["--pipelines", str(root / "pipelines"), "--projection", "whiten", "--normalise", "--levels", "16"]
    argv += ["--folds", "3", "--kinds", "interval,thermometer,angular", "--quiet"]
    assert main(argv) == 0
    return root


def test_fit_writes_calibrated_pipelines_for_raw_float_embeddings(deployed: Path, capsys) -> None:
    # 60 people × 3 captures of 512-D cosine embeddings: the quantising pipelines would reject most
    # genuine attempts (predicted FNMR above 0.5), so they are reported and not written; the angular one is.
    pipelines = load_pipelines(deployed / "pipelines")
    assert set(pipelines) == {"angular"}
    transform = pipelines["angular"].transform
    assert transform.features == DIMENSIONS and transform.normalises and transform.projection_kind == "whiten"
    # No LDA: more whitened axes than the background has identities minus one.
    assert transform.dimensions > 59
    assert pipelines["angular"].calibration is None  # configuration only; the prediction is in the summary
    assert pipelines["angular"].unusable is None
    x, _ = _embeddings(1, 2, seed=9)
    assert pipelines["angular"].sample_transform(x[1]).dtype.kind == "f"  # float32 vectors straight from the model


def test_enrol_a_512_dimensional_float_vector_over_http_with_pin_and_pepper(deployed: Path, tmp_path: Path) -> None:
    from sketchauth_service.app import create_app

    settings = test_settings(tmp_path, pipelines_dir=str(deployed / "pipelines"), pepper=PEPPER)
    pipeline = load_pipelines(deployed / "pipelines")["angular"]
    # Which simulated person the calibrated box accepts depends on float algebra (eigh, BLAS): the
    # test takes the first seeded person it accepts and a stranger it rejects, decided by real decodes.
    person = next(
        x
        for x, _ in (_embeddings(1, 3, seed=s) for s in range(100, 200))
        if all(pipeline.accepts(x[:1], p) for p in x[1:])
    )
    stranger = next(
        x for x, _ in (_embeddings(1, 1, seed=s) for s in range(200, 300)) if not pipeline.accepts(person[:1], x[0])
    )
    headers = AUTH
    with TestClient(create_app(settings)) as api:
        listed = {p["name"]: p for p in api.get("/v1/schemes", headers=headers).json()["pipelines"]}
        assert listed["angular"]["input_dimension"] == DIMENSIONS
        body = {"scheme": "pipeline:angular", "samples": person[:1].tolist(), "pin": PIN}
        r = api.post("/v1/users/ada/enrolment", headers=headers, json=body)
        assert r.status_code == 201, r.text
        assert r.json()["pin"] is True

        def verify(sample: np.ndarray, pin: str) -> bool:
            answer = api.post(
                "/v1/users/ada/verification", headers=headers, json={"sample": sample.tolist(), "pin": pin}
            )
            assert answer.status_code == 200, answer.text
            return bool(answer.json()["verified"])

        assert verify(person[1], PIN) and verify(person[2], PIN)
        assert not verify(person[1], "2718-2819")
        assert not verify(stranger[0], PIN)
    # Nothing of the vector is stored: the database holds helper data and a hash, sealed by the pepper.
    stored = Path(settings.database_url.removeprefix("sqlite:///")).read_bytes()
    assert json.dumps(float(person[0][0]))[:8].encode() not in stored
