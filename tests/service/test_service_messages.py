"""The HTTP API in its users' words: 422 details that say what to change, clean operationIds, a
schema written in JSON Schema's own keywords, integers as JSON Schema means them, strict admin
bodies, and the pepper rotation without a body.

Before: ``body/pinsketch/samples/0/0/constrained-int: Input should be a valid integer``,
``Unable to extract tag using discriminator 'scheme'`` (no scheme named), ``Input should be a
valid list`` for a base64 string, operationIds like ``enrol_user_v1_users_user_id_enrolment_post``,
``"gt": 0`` in the published ``step``, ``"v": 8.0`` published as valid but refused, ``true`` and
``"5"`` taken for integers by the admin body, and the rotation refused without ``{}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import ADMIN, AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.schemes import available_schemes

from sketchauth.client import Client
from sketchauth.pepper import new_pepper_text

#: Machine-drawn, as a pepper must be.
PEPPER = new_pepper_text()
PINSKETCH = {"scheme": "pinsketch", "params": {"m": 16, "t": 2}, "samples": [[3, 70, 1000, 2024]]}
INTERVAL = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
#: Keywords of JSON Schema 2020-12 and OpenAPI 3.1's schema object (plus ``x-`` extensions).
SCHEMA_KEYWORDS = frozenset(
    {
        "$ref", "$defs", "type", "enum", "const", "title", "description", "default", "examples", "format",
        "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
        "uniqueItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not", "discriminator", "deprecated",
        "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "propertyNames",
    }
)  # fmt: skip


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(create_app(test_settings(tmp_path_factory.mktemp("messages")))) as c:
        yield c


# -- 422 details ------------------------------------------------------------------------------------


def test_a_wrong_element_is_named_as_the_caller_wrote_it(api: Client) -> None:
    r = api.raw.enrol("words", **{**PINSKETCH, "samples": [[3, "x", 1000, 2024]]})
    problem = r.json()
    assert r.status_code == 422 and problem["type"].endswith("invalid-request")
    assert problem["detail"] == "samples[0][1]: must be a whole number, not a string"
    assert problem["errors"] == [{"loc": "body/samples/0/1", "msg": "must be a whole number, not a string"}]
    assert "constrained" not in r.text and "Input should" not in r.text and "pinsketch/samples" not in r.text


@pytest.mark.parametrize("body", [{"params": {}, "samples": [[1]]}, {**INTERVAL, "scheme": "fingerprint-x"}])
def test_a_missing_or_unknown_scheme_lists_the_schemes(client: TestClient, body: dict[str, Any]) -> None:
    r = client.post("/v1/users/words/enrolment", headers=AUTH, json=body)
    detail = r.json()["detail"]
    assert r.status_code == 422 and r.json()["type"].endswith("unknown-scheme")
    assert all(spec.name in detail for spec in available_schemes()), detail
    assert "discriminator" not in detail and "tag" not in detail


def test_a_base64_string_where_numbers_are_expected_says_so(client: TestClient) -> None:
    r = client.post("/v1/users/words/verification", headers=AUTH, json={"sample": "AAECAwQ="})
    detail = r.json()["detail"]
    assert r.status_code == 422 and detail.startswith("sample: must be a JSON array of numbers, not a string")
    assert "base64" in detail and "AAECAwQ" not in r.text  # the value is never echoed


@pytest.mark.parametrize(
    ("sample", "said"),
    [
        ([1, 2, True, 4], "must be a number, not true or false"),
        ([1, 2, None, 4], "must be a number, not null"),
        ([1, 2, [3], 4], "must be a number, not an array"),
    ],
)
def test_one_message_per_place_in_a_union(client: TestClient, sample: list[Any], said: str) -> None:
    r = client.post("/v1/users/words/verification", headers=AUTH, json={"sample": sample})
    assert r.json()["errors"] == [{"loc": "body/sample/2", "msg": said}]
    assert r.json()["detail"] == f"sample[2]: {said}"


def test_parameters_and_fields_are_named_by_their_path(api: Client, client: TestClient) -> None:
    r = api.raw.enrol("words", **{**INTERVAL, "params": {"n": 256, "v": 8, "features": True}})
    assert (
        r.json()["detail"]
        == "invalid parameters for interval: params.features: must be a whole number, not true or false"
    )
    r = client.post("/v1/users/words/enrolment", headers=AUTH, json={**INTERVAL, "colour": "blue"})
    assert r.json()["detail"] == "colour: is not a field of this request: remove it"
    r = client.post("/v1/users/words/verification", headers=AUTH, json={})
    assert r.json()["detail"] == "the body: give exactly one of 'sample' and 'samples'"


def test_malformed_json_says_where(client: TestClient) -> None:
    r = client.post(
        "/v1/users/words/verification", headers={**AUTH, "content-type": "application/json"}, content=b'{"sample": [1,'
    )
    assert r.status_code == 400 and r.json()["type"].endswith("malformed-json")
    assert r.json()["detail"].startswith("the request body is not valid JSON (")


def test_model_errors_come_after_the_key_checks(client: TestClient) -> None:
    """A body that does not validate is 401 without a key: the 422 would describe the model."""
    r = client.post("/v1/users/words/enrolment", json={"scheme": "nothing"})
    assert r.status_code == 401


# -- operationIds ------------------------------------------------------------------------------------


def test_operation_ids_are_the_endpoint_names(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    ids = [op["operationId"] for operations in document["paths"].values() for op in operations.values()]
    assert len(ids) == len(set(ids))
    assert {"enrol_user", "verify_user", "release_key", "change_pin", "revoke_user", "pepper_rotation"} <= set(ids)
    assert all(identifier.isidentifier() and "_v1_" not in identifier for identifier in ids), ids


# -- the schema's own words -----------------------------------------------------------------------------


def _schemas(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object of the document (under components/schemas, and inline ones)."""
    if isinstance(node, dict):
        if "type" in node or "anyOf" in node or "$ref" in node or "oneOf" in node:
            yield path, node
        for key, value in node.items():
            if key not in ("properties", "$defs") or not isinstance(value, dict):
                yield from _schemas(value, f"{path}/{key}")
            else:
                for name, sub in value.items():
                    yield from _schemas(sub, f"{path}/{key}/{name}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _schemas(value, f"{path}/{i}")


def test_every_schema_uses_json_schema_keywords_only(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    listing = client.get("/v1/schemes", headers=AUTH).json()
    found = []
    for source in (document["components"]["schemas"], [s["params_schema"] for s in listing["schemes"]]):
        for path, schema in _schemas(source):
            unknown = {k for k in schema if k not in SCHEMA_KEYWORDS and not k.startswith("x-")}
            if unknown:
                found.append(f"{path}: {sorted(unknown)}")
    assert not found, found
    step = listing["schemes"][0]["params_schema"]["properties"]["step"]
    assert step["anyOf"][0] == {"exclusiveMinimum": 0, "type": "integer"}


# -- integers as JSON Schema means them ------------------------------------------------------------------


def test_integral_numbers_are_integers(api: Client) -> None:
    """JSON Schema's "integer" is any number without a fraction: 8.0 is 8 wherever one is published."""
    body = {**INTERVAL, "params": {"n": 256.0, "v": 8.0, "features": 4.0}}
    assert api.raw.enrol("integral", **body).status_code == 201
    code = {"scheme": "code-offset", "params": {"n": 7, "t": 1}, "samples": [[1.0, 2, 3, 4, 5, 6, 7]]}
    assert api.raw.enrol("integral-bytes", **code).status_code == 201
    for bad in (8.5, "8", True, None):
        r = api.raw.enrol("integral-bad", **{**INTERVAL, "params": {"n": 256, "v": bad, "features": 4}})
        assert r.status_code == 422 and r.json()["type"].endswith("invalid-parameters"), bad


# -- the admin body -------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, "5", 2.5, None, -1, 0])
def test_the_rotation_body_is_strict(tmp_path: Path, bad: Any) -> None:
    with TestClient(create_app(test_settings(tmp_path, pepper=PEPPER))) as c:
        r = c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={"batch_size": bad})
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["loc"] == "body/batch_size"


def test_the_rotation_needs_no_body(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path, pepper=PEPPER))) as c:
        api = service_client(c)
        assert api.raw.enrol("words", **INTERVAL).status_code == 201
        bare = c.post("/v1/admin/pepper/rotation", headers=ADMIN)
        assert bare.status_code == 200 and bare.json()["complete"] is True
        assert c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={"batch_size": 5.0}).status_code == 200
        document = c.get("/openapi.json").json()
        assert not document["paths"]["/v1/admin/pepper/rotation"]["post"]["requestBody"].get("required", False)


def test_a_ragged_second_biometric_is_a_422_not_a_500(tmp_path: Path) -> None:
    """Found by schemathesis: an asymmetric second biometric whose captures differ in length."""
    body = {
        "scheme": "pinsketch",
        "params": {"m": 16, "t": 4},
        "samples": [[3, 17, 42, 99]],
        "second": {
            "scheme": "asymmetric-interval",
            "params": {"n": 256, "q": 8, "scheme": "s2", "features": 3},
            "samples": [[1, 2, 3], [1, 2], [4, 5, 6, 7]],
        },
    }
    with TestClient(create_app(test_settings(tmp_path))) as client:
        answer = client.post("/v1/users/ragged/enrolment", json=body, headers=AUTH)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("samples", "field"),
    [
        ([[120, 33, 300, 71]], "samples[0][2]"),
        ([[120, 33, 200, 71, 9999]], "samples[0][4]"),
    ],
)
def test_a_value_out_of_the_schemes_range_is_named_as_sent(api: Client, samples: Any, field: str) -> None:
    # The library says "secret feature 2 is outside the levels [0, 256)": the answer names the
    # field as the client wrote it, the sample and its element.
    params = {**INTERVAL["params"], "features": len(samples[0])}
    refused = api.raw.enrol("ranges", **{**INTERVAL, "params": params, "samples": samples})
    assert refused.status_code == 422 and refused.json()["type"].endswith("/invalid-sample"), refused.text
    detail = refused.json()["detail"]
    assert detail.startswith(f"{field}: ") and "outside the levels [0, 256)" in detail, detail


def test_a_byte_out_of_range_is_named_as_sent(api: Client) -> None:
    body = {"scheme": "code-offset", "params": {"n": 8, "t": 1}, "samples": [[1, 2, 3, 4, 5, 6, 256, 8]]}
    refused = api.raw.enrol("bytes", **body)
    if refused.status_code == 422 and "unknown-scheme" in refused.json()["type"]:
        pytest.skip("no byte scheme offered")
    assert refused.status_code == 422 and refused.json()["detail"].startswith("samples[0][6] "), refused.text
