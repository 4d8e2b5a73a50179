"""A second biometric over HTTP (Fang's thesis ch. 7.4), in process: structure, schema, answers.

The enrolment's optional ``second`` is mixed with the first biometric (the two-fuzzy-secret
cascade; with a PIN the chain PIN → second → first); verification needs ``second_sample``
exactly when the enrolment has a second biometric, and every way of getting it wrong is the
same ``200 {"verified": false}``. The real-server tests on both backends are in
``test_second_factor_e2e.py``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.authenticator import FactorRoles, factor_roles, factor_structure
from sketchauth_service.settings import Settings

from sketchauth import IntervalSketch, PinSketch
from sketchauth.client import Client
from sketchauth.evaluate import fitting
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.mixing import Cascade, Chaining, ExactKey, FuzzySecret

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]
FIRST = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}
SECOND_SET = [3, 70, 1000, 2024, 65535]
SECOND_GENUINE = [3, 70, 1001, 2024, 65535]  # one element replaced: a set difference of 2 <= t
SECOND_WRONG = [5, 80, 1100, 3000, 60000]
SECOND = {"scheme": "pinsketch", "params": {"m": 16, "t": 4}, "samples": [SECOND_SET]}
PIN = "pin-7391-secret"
PIN_BITS = 19.93


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The declared PIN entropy (conftest's ``client`` and ``api`` serve these settings)."""
    return test_settings(tmp_path, pin_min_entropy=PIN_BITS)


# -- the structures -------------------------------------------------------------------------------


def test_the_less_important_secret_mixes_the_more_important_ones_sketch() -> None:
    first, second = IntervalSketch(N, 50, features=4), PinSketch(16, 4)
    cascade = factor_structure(first, second, None)
    assert isinstance(cascade, Cascade) and cascade.mixes == ((1, 0),)
    assert [c.importance for c in cascade.components] == [2, 1]  # type: ignore[union-attr]
    assert factor_roles(cascade) == FactorRoles(first=0, second=1, pin=None)

    chain = factor_structure(first, second, ExactKey("test"))
    assert isinstance(chain, Chaining) and chain.mixes == ((0, 1), (1, 2))  # PIN -> second -> first
    assert isinstance(chain.components[0], ExactKey)
    assert [c.sketch for c in chain.components[1:]] == [second, first]  # type: ignore[union-attr]
    roles = factor_roles(chain)
    assert roles == FactorRoles(first=2, second=1, pin=0)
    assert roles.arrange("b1", "b2", "pin") == ["pin", "b2", "b1"]
    # Without a second biometric: the PIN cascade, or the sketch alone.
    assert factor_structure(first, None, None) is first
    assert factor_roles(first) == FactorRoles(0, None, None)
    pin_only = factor_structure(first, None, ExactKey("test"))
    assert isinstance(pin_only, Cascade) and factor_roles(pin_only) == FactorRoles(0, None, 1)
    assert isinstance(pin_only.components[0], FuzzySecret)


# -- the published schema ---------------------------------------------------------------------------


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = document["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _body_schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    body = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return _resolve(document, body)


def test_openapi_shows_the_second_biometric_and_second_sample(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    variants = _body_schema(document, "/v1/users/{user_id}/enrolment")["oneOf"]
    seconds = [_resolve(document, ref)["properties"]["second"] for ref in variants]
    assert len(seconds) == len(variants) and all(s == seconds[0] for s in seconds)
    union = next(b for b in _resolve(document, seconds[0])["anyOf"] if b.get("type") != "null")
    offered = {_resolve(document, ref)["properties"]["scheme"]["const"] for ref in _resolve(document, union)["oneOf"]}
    schemes = {s["name"] for s in client.get("/v1/schemes", headers=AUTH).json()["schemes"]}
    assert offered == schemes
    answer = document["components"]["schemas"]["EnrolmentResponse"]["properties"]
    assert {"user_id", "scheme", "params", "pin", "report", "second"} <= set(answer)  # the fields, not "object"
    limits = client.get("/v1/schemes", headers=AUTH).json()["limits"]
    for path in ("verification", "key", "pin"):
        field = _body_schema(document, f"/v1/users/{{user_id}}/{path}")["properties"]["second_sample"]
        array = next(b for b in field["anyOf"] if b.get("type") == "array")
        assert (array["minItems"], array["maxItems"]) == (1, limits["max_sample_length"]), path


# -- enrolment and verification ---------------------------------------------------------------------


def test_first_and_second_verify_and_every_wrong_second_fails(api: Client) -> None:
    response = api.raw.enrol("duo", **FIRST, second=SECOND)
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["scheme"], body["params"]["features"], body["pin"]) == ("interval", 4, False)
    assert body["second"] == {"scheme": "pinsketch", "params": {"m": 16, "t": 4}}
    assert api.raw.verify("duo", GENUINE, second_sample=SECOND_GENUINE).json() == {"verified": True}
    for wrong in ({"second_sample": SECOND_WRONG}, {}, {"second_sample": SECOND_GENUINE, "pin": PIN}):
        response = api.raw.verify("duo", GENUINE, **wrong)
        assert (response.status_code, response.json()) == (200, {"verified": False}), wrong
    # An enrolment without a second biometric refuses a second sample, as it refuses a PIN.
    assert api.raw.enrol("solo", **FIRST).json().get("second") is None
    assert api.raw.verify("solo", GENUINE).json() == {"verified": True}
    assert api.raw.verify("solo", GENUINE, second_sample=SECOND_GENUINE).json() == {"verified": False}


def test_first_second_and_pin_verify_and_the_pin_still_counts(api: Client) -> None:
    response = api.raw.enrol("trio", **FIRST, second=SECOND, pin=PIN)
    assert response.status_code == 201, response.text
    assert response.json()["pin"] is True
    assert api.raw.verify("trio", GENUINE, second_sample=SECOND_GENUINE, pin=PIN).json() == {"verified": True}
    assert api.raw.verify("trio", GENUINE, second_sample=SECOND_GENUINE, pin=PIN + "x").json() == {"verified": False}
    assert api.raw.verify("trio", GENUINE, second_sample=SECOND_GENUINE).json() == {"verified": False}
    assert api.raw.verify("trio", GENUINE, second_sample=SECOND_WRONG, pin=PIN).json() == {"verified": False}
    assert api.raw.verify("trio", GENUINE, pin=PIN).json() == {"verified": False}


def test_report_gives_per_secret_bounds(api: Client) -> None:
    api.raw.enrol("trio", **FIRST, second=SECOND, pin=PIN)
    report = api.raw.report("trio").json()
    assert report["scheme"] == "mixed" and report["extra"]["structure"] == "chaining"
    mixing = report["extra"]["mixing"]
    secrets = {s["name"]: s for s in mixing["secrets"]}
    assert list(secrets) == ["0:exact", "1:pinsketch", "2:interval"]
    assert secrets["0:exact"]["min_entropy"] == PIN_BITS  # SKETCHAUTH_PIN_MIN_ENTROPY, declared
    assert secrets["1:pinsketch"]["concatenation_loss_bits"] == 64.0  # t·m = 4·16 syndrome bits
    assert secrets["2:interval"]["concatenation_loss_bits"] == pytest.approx(4 * math.log2(99), rel=1e-12)
    assert [(m["key_index"], m["sketch_index"]) for m in mixing["mixes"]] == [(0, 1), (1, 2)]
    assert all("bounds" in s for s in secrets.values())
    assert report["sketch_bits"] == pytest.approx(64 + 4 * math.log2(99), rel=1e-12)


def test_second_sample_that_does_not_fit_is_a_failure_like_an_unknown_user(api: Client) -> None:
    """A second sample of the wrong shape is not a 422 that only an enrolled user could earn."""
    assert api.raw.enrol("duo", **FIRST, second=SECOND).status_code == 201
    for second_sample in ([1, 2, 3, 4, 5, 6, 7, 8, 9], [1.5, 2.5], [1 << 40], [7, 7, 7]):
        enrolled = api.raw.verify("duo", GENUINE, second_sample=second_sample)
        unknown = api.raw.verify("ghost", GENUINE, second_sample=second_sample)
        assert (
            (enrolled.status_code, enrolled.json())
            == (unknown.status_code, unknown.json())
            == (
                200,
                {"verified": False},
            )
        ), second_sample


@pytest.mark.parametrize(
    ("second", "kind"),
    [
        ({**SECOND, "scheme": "no-such-scheme"}, "invalid-request"),
        ({**SECOND, "params": {"m": 16}}, "invalid-request"),
        ({**SECOND, "samples": [[1, 1, 2]]}, "invalid-sample"),  # a set with a repeated element
        ({**SECOND, "samples": []}, "invalid-request"),
        ({**SECOND, "extra": 1}, "invalid-request"),
        ({"scheme": "interval", "params": {"n": 256, "v": 1, "features": 2}, "samples": [[1]]}, "invalid-sample"),
    ],
    ids=["unknown-scheme", "missing-param", "bad-sample", "no-samples", "unknown-field", "wrong-dimension"],
)
def test_a_bad_second_biometric_is_refused_at_enrolment(api: Client, second: dict[str, Any], kind: str) -> None:
    response = api.raw.enrol("duo", **FIRST, second=second)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith(kind), response.json()
    assert api.raw.report("duo").status_code == 404  # nothing stored


def test_key_release_and_pin_change_take_second_sample(api: Client) -> None:
    api.raw.enrol("trio", **FIRST, second=SECOND, pin=PIN)

    def key(second_sample: list[int]) -> httpx.Response:
        return api.raw.release_key("trio", GENUINE, "com.example/v1", pin=PIN, second_sample=second_sample)

    first = key(SECOND_GENUINE).json()
    assert first["verified"] is True and key(SECOND_GENUINE).json() == first
    assert key(SECOND_WRONG).json() == {"verified": False}
    change = api.raw.change_pin("trio", GENUINE, PIN, "0000-new", second_sample=SECOND_GENUINE)
    assert change.json() == {"verified": True}
    assert api.raw.verify("trio", GENUINE, second_sample=SECOND_GENUINE, pin="0000-new").json() == {"verified": True}


def test_a_pipeline_enrolment_takes_a_plain_second_biometric(tmp_path: Path) -> None:
    from sketchauth.evaluate.embeddings import EmbeddingPopulation

    population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    transform = fit_transform(population.draw(150, 4, seed=1), levels=16)
    pipeline = fitting.interval.for_target_fmr(
        transform, population.draw(80, 4, seed=2), CalibrationOptions(target_fmr=0.01)
    )
    directory = tmp_path / "pipelines"
    directory.mkdir()
    (directory / "voice.json").write_text(pipeline.to_json())
    enrolment = [row.tolist() for row in population.draw(1, 2, seed=7).samples]  # two captures of one person
    settings = test_settings(tmp_path, pipelines_dir=str(directory))
    with TestClient(create_app(settings)) as client:
        api = service_client(client)
        response = api.raw.enrol("duo", "pipeline:voice", enrolment, second=SECOND)
        assert response.status_code == 201, response.text
        assert response.json()["pipeline"] == "voice" and response.json()["second"]["scheme"] == "pinsketch"
        report = api.report("duo")
        assert report["extra"]["structure"] == "cascade" and report["extra"]["pipeline_name"] == "voice"
        genuine = api.raw.verify("duo", enrolment[0], second_sample=SECOND_GENUINE)
        assert genuine.json() == {"verified": True}
        for second_sample in (SECOND_WRONG, None):
            attempt = api.raw.verify("duo", enrolment[0], second_sample=second_sample)
            assert attempt.json() == {"verified": False}
