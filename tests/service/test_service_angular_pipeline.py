"""The angular pipeline served by name (in-process, temp SQLite): raw float vectors over HTTP.

A centre transform is fitted on a small synthetic background (34 features), the angular pipeline
calibrated on it with each code in turn — the polar code of 24 bits (the default code) and
IronMask's sparse code of 30 bits — and written as ``angular.json`` into the directory the app is
configured with, as ``sketchauth features fit --pipelines DIR`` does. Genuine probes are the
enrolled capture moved by 0.1 % (cos ≈ 0.9999 after the transform: inside the code whatever the
helper's rotation); the stranger is another person of the population (cos ≈ 0).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.pipelines import enrolment_request, verification_request
from sketchauth_service.settings import Settings

from sketchauth.client import Client
from sketchauth.evaluate import fitting
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.angular import AngularPipeline

CODES = ("polar", "sparse")
SECURITY = {"polar": 24, "sparse": 30}
SCHEMES = {"polar": "angular-polar", "sparse": "angular"}
POP = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.1, between_decay=1.0, seed=5)
PIN = "2718-2818"
PEPPER = "skp1_VXBdPxgyu28GYtw64MStNmKHFL2m31yUzMdjU21ariz-gY3I"


@dataclass(frozen=True)
class Fitted:
    code: str
    directory: Path
    pipeline: AngularPipeline
    person: np.ndarray  # three captures of one person (34 features)
    stranger: np.ndarray  # one capture of someone else


def _close(x: np.ndarray, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return x + 1e-3 * np.linalg.norm(x) / math.sqrt(x.size) * rng.normal(size=x.size)


def _write(directory: Path, name: str, pipeline: AngularPipeline) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(pipeline.to_json() + "\n")
    return directory


@pytest.fixture(scope="module", params=CODES)
def fitted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Fitted:
    code = request.param
    background = POP.draw(60, 4, seed=1)
    transform = fit_transform(background, projection="centre", normalise=True)
    pipeline = fitting.angular.for_target_fmr(
        transform,
        background,
        CalibrationOptions(target_fmr=0.01, enrol_samples=1, security_bits=SECURITY[code], code=code, refit=True),
    )
    directory = _write(tmp_path_factory.mktemp("pipelines"), "angular", pipeline)
    return Fitted(code, directory, pipeline, POP.draw(1, 3, seed=3).samples, POP.draw(1, 1, seed=4).samples[0])


@pytest.fixture
def settings(tmp_path: Path, fitted: Fitted) -> Settings:
    """The fitted pipeline offered, with a pepper (conftest's ``client`` and ``api`` serve these)."""
    return test_settings(tmp_path, pipelines_dir=str(fitted.directory), pepper=PEPPER)


def test_the_angular_pipeline_is_listed(client: TestClient, fitted: Fitted) -> None:
    listed = {p["name"]: p for p in client.get("/v1/schemes", headers=AUTH).json()["pipelines"]}
    assert listed["angular"]["kind"] == "angular" and listed["angular"]["scheme"] == SCHEMES[fitted.code]
    assert listed["angular"]["params"] == fitted.pipeline.sketch.params()
    assert listed["angular"]["input_dimension"] == 34
    assert listed["angular"]["fingerprint"] == fitted.pipeline.fingerprint


def test_a_raw_float_vector_enrols_with_a_pin_and_a_pepper(api: Client, fitted: Fitted, settings: Settings) -> None:
    r = api.raw.enrol("ada", "pipeline:angular", fitted.person[:1], pin=PIN)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["pin"] is True and body["scheme"] == "pipeline:angular" and body["pipeline"] == "angular"
    assert body["pipeline_sha256"] == fitted.pipeline.fingerprint and body["params"] == fitted.pipeline.sketch.params()
    close = _close(fitted.person[0])
    assert api.verify("ada", close, pin=PIN)
    assert api.verify("ada", close.astype(np.float32), pin=PIN)
    assert not api.verify("ada", close, pin="2718-2819")
    assert not api.verify("ada", fitted.stranger, pin=PIN)
    assert not api.verify("ada", _close(fitted.stranger), pin=PIN)
    # Nothing of the vector is stored: the database holds helper data and a hash, sealed by the pepper.
    stored = Path(settings.database_url.removeprefix("sqlite:///")).read_bytes()
    for value in fitted.person[0][:4]:
        assert json.dumps(float(value))[:8].encode() not in stored


def test_several_captures_enrol_without_a_pin(api: Client, fitted: Fitted) -> None:
    r = api.raw.enrol("grace", "pipeline:angular", fitted.person)
    assert r.status_code == 201, r.text
    assert r.json()["pin"] is False
    assert api.verify("grace", _close(fitted.person.mean(axis=0)))
    assert not api.verify("grace", fitted.stranger)


def test_samples_without_a_direction_or_of_the_wrong_length_are_refused(api: Client, fitted: Fitted) -> None:
    for sample, words in (([0.0] * 34, "zero vector"), ([1.0] * 33, "34")):
        r = api.raw.enrol("bob", "pipeline:angular", [sample])
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json") and words in r.text
    assert api.raw.enrol("ada", "pipeline:angular", fitted.person[:1]).status_code == 201
    # At verification a sample the pipeline refuses is a failed attempt like any other.
    assert not api.verify("ada", [0.0] * 34)
    assert not api.verify("ada", [1.0] * 33)
    assert api.verify("ada", _close(fitted.person[0]))


def test_the_service_starts_with_an_angular_pipeline_on_a_transform_that_does_not_normalise(
    tmp_path: Path, fitted: Fitted
) -> None:
    """Such a transform maps the background mean onto the origin, which has no direction: the
    warm-up must not enrol the mean (create_app used to raise SampleError)."""
    transform = fit_transform(POP.draw(60, 4, seed=1), projection="centre")
    shape = {"bits": 8} if fitted.code == "polar" else {"alpha": 4}
    raw = AngularPipeline(transform, np.arange(transform.dimensions), min_cos=0.9, **shape)
    settings = test_settings(tmp_path, pipelines_dir=str(_write(tmp_path / "pipelines", "raw", raw)))
    with TestClient(create_app(settings)) as client:
        api = service_client(client)
        listed = {p["name"] for p in client.get("/v1/schemes", headers=AUTH).json()["pipelines"]}
        assert listed == {"raw"}
        assert api.raw.enrol("ada", "pipeline:raw", fitted.person[:1], pin=PIN).status_code == 201
        assert api.verify("ada", _close(fitted.person[0]), pin=PIN)
        assert not api.verify("ada", fitted.stranger, pin=PIN)
        assert not api.verify("ada", transform.mean, pin=PIN)  # no direction: a failed attempt
        r = api.raw.enrol("bob", "pipeline:raw", [transform.mean])
        assert r.status_code == 422, r.text
        assert "no direction" in r.text
        step = np.zeros(transform.features)
        step[0] = 1.0
        r = api.raw.enrol("bob", "pipeline:raw", [transform.mean + step, transform.mean - step])
        assert r.status_code == 422, r.text
        assert "directions cancel out" in r.text and "enrol from other captures" in r.text


def test_the_client_side_requests_of_the_angular_pipeline(api: Client, fitted: Fitted) -> None:
    """The transform applied by the client: the projected template and probes go as floats."""
    pipeline = fitted.pipeline
    body = enrolment_request(pipeline, fitted.person[:1])
    assert body["scheme"] == SCHEMES[fitted.code] and body["params"] == pipeline.sketch.params()
    (template,) = body["samples"]
    assert len(template) == 34 and all(isinstance(v, float) for v in template)
    np.testing.assert_allclose(np.linalg.norm(template), 1.0)
    api.enrol("ada", **body)
    for sample, expected in ((_close(fitted.person[0]), True), (fitted.stranger, False)):
        request = verification_request(pipeline, sample)
        assert all(isinstance(v, float) for v in request["sample"])
        assert api.verify("ada", **request) is expected


def _verified_captures(client: TestClient, captures: Any, user: str = "ada", **extra: Any) -> Any:
    """Several captures in one verification (``samples``): a request :class:`Client` does not make."""
    body = {"samples": np.asarray(captures).tolist(), **extra}
    return client.post(f"/v1/users/{user}/verification", headers=AUTH, json=body)


def test_a_verification_may_average_one_to_three_captures(client: TestClient, api: Client, fitted: Fitted) -> None:
    assert api.raw.enrol("lin", "pipeline:angular", fitted.person[:1]).status_code == 201
    close = [_close(fitted.person[0], seed) for seed in range(3)]
    for k in (1, 2, 3):
        r = _verified_captures(client, close[:k], user="lin")
        assert r.status_code == 200 and r.json()["verified"] is True, r.text
    r = _verified_captures(client, [fitted.stranger, _close(fitted.stranger)], user="lin")
    assert r.status_code == 200 and r.json()["verified"] is False
    bad: list[dict[str, Any]] = [
        {"samples": [c.tolist() for c in close] * 2},  # more than 3 captures
        {"samples": []},
        {"sample": close[0].tolist(), "samples": [close[0].tolist()]},  # both
        {},  # neither
    ]
    for body in bad:
        r = client.post("/v1/users/lin/verification", headers=AUTH, json=body)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")


def test_several_captures_are_a_failed_attempt_for_a_scheme_enrolment(client: TestClient, api: Client) -> None:
    from sketchauth_service.requests import MAX_VERIFY_CAPTURES

    from sketchauth.features.angular import MAX_VERIFY_CAPTURES as LIBRARY_MAX

    assert MAX_VERIFY_CAPTURES == LIBRARY_MAX
    body = {"scheme": "angular", "params": {"dimension": 8, "alpha": 2}, "samples": [[1.0] * 8]}
    assert api.raw.enrol("kim", **body).status_code == 201
    r = _verified_captures(client, [[1.0] * 8, [1.0] * 8], user="kim")
    assert r.status_code == 200 and r.json()["verified"] is False
    assert api.verify("kim", [1.0] * 8)
