"""The OpenAPI document says what the service does: media types, examples, version, bodies.

Defects this guards against: problem responses were declared under ``application/json`` while
the service sends ``application/problem+json``; ``params`` was a free object, so most
schema-valid requests failed; the documented example named a pipeline that need not exist; the
document said version 1.0.0 of a 0.1.0 package; ``curl -d`` (form encoding) got a message about
dictionaries instead of being told to send JSON.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.schemes import available_schemes

ENROLMENT = "/v1/users/{user_id}/enrolment"


def _variants(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    schema = document["paths"][ENROLMENT]["post"]["requestBody"]["content"]["application/json"]["schema"]
    components = document["components"]["schemas"]
    found = {}
    for ref in schema["oneOf"]:
        variant = components[ref["$ref"].rsplit("/", 1)[1]]
        found[variant["properties"]["scheme"]["const"]] = variant
    return found


def test_every_error_response_is_declared_as_problem_json(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    errors = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status[0] in "45":
                    errors += 1
                    assert response["content"] == {
                        "application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}
                    }, (method, path, status)
    assert errors > 20
    assert "HTTPValidationError" not in document["components"]["schemas"]
    # ... and that is what is sent.
    r = client.post("/v1/users/alice/enrolment", headers=AUTH, json={"scheme": "interval"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


def test_the_document_version_is_the_package_version(client: TestClient) -> None:
    import sketchauth

    assert client.get("/openapi.json").json()["info"]["version"] == version("sketchauth") == sketchauth.__version__


def test_the_enrolment_body_is_a_union_of_the_offered_schemes(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schema = document["paths"][ENROLMENT]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema["discriminator"]["propertyName"] == "scheme"
    variants = _variants(document)
    assert set(variants) == {spec.name for spec in available_schemes()}
    interval = variants["interval"]
    assert set(interval["required"]) == {"scheme", "params", "samples"}
    params = document["components"]["schemas"][interval["properties"]["params"]["$ref"].rsplit("/", 1)[1]]
    assert params["required"] == ["n", "v"] and params["additionalProperties"] is False
    assert params["properties"]["n"]["type"] == "integer"


def test_every_documented_example_enrols(client: TestClient) -> None:
    """Each variant carries one example request, and it works as it is."""
    variants = _variants(client.get("/openapi.json").json())
    for i, (name, variant) in enumerate(sorted(variants.items())):
        (example,) = variant["examples"]
        assert example["scheme"] == name
        r = client.post(f"/v1/users/example-{i}/enrolment", headers=AUTH, json=example)
        assert r.status_code == 201, (name, r.text)


def test_pipeline_examples_name_configured_pipelines_only(tmp_path: Any) -> None:
    """Without SKETCHAUTH_PIPELINES no pipeline is offered, so none is named in the document."""
    with TestClient(create_app(test_settings(tmp_path))) as client:
        document = client.get("/openapi.json").json()
        assert not [name for name in _variants(document) if name.startswith("pipeline:")]
        assert not [
            name
            for name in document["components"]["schemas"]
            if name.endswith("Enrolment") and name.startswith("Pipeline")
        ]


@pytest.mark.parametrize("path", ["/v1/users/alice/enrolment", "/v1/users/alice/verification"])
@pytest.mark.parametrize(
    "media", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"]
)
def test_a_body_not_sent_as_json_is_415_saying_what_to_send(client: TestClient, path: str, media: str) -> None:
    # What `curl -d '{"sample": [1, 2, 3, 4]}' URL` sends: the JSON text, labelled as a form.
    r = client.post(path, headers={**AUTH, "content-type": media}, content=b'{"sample": [1, 2, 3, 4]}')
    assert r.status_code == 415 and r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"].endswith("/unsupported-media-type")
    assert "Content-Type: application/json" in body["detail"]
    assert "dictionar" not in body["detail"]


def test_a_body_without_a_content_type_is_415_too(client: TestClient) -> None:
    r = client.post("/v1/users/alice/verification", headers=AUTH, content=b'{"sample": [1, 2, 3, 4]}')
    assert r.status_code == 415 and "without a Content-Type" in r.json()["detail"]


def test_json_bodies_with_a_charset_or_a_json_suffix_are_read(client: TestClient) -> None:
    enrol = b'{"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}'
    labelled = {**AUTH, "content-type": "application/json; charset=utf-8"}
    assert client.post("/v1/users/alice/enrolment", headers=labelled, content=enrol).status_code == 201
    sample = b'{"sample": [123, 30, 205, 71]}'
    r = client.post(
        "/v1/users/alice/verification", headers={**AUTH, "content-type": "application/vnd.x+json"}, content=sample
    )
    assert r.json() == {"verified": True}


def test_415_is_documented(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in (ENROLMENT, "/v1/users/{user_id}/verification"):
        assert "415" in paths[path]["post"]["responses"]


def test_schema_valid_requests_from_the_published_schema_enrol(client: TestClient) -> None:
    """The parameter schema is tight enough that its bounds describe working requests: the
    smallest and largest published value of every pinsketch parameter enrols."""
    listing = {s["name"]: s for s in client.get("/v1/schemes", headers=AUTH).json()["schemes"]}
    m = listing["pinsketch"]["params_schema"]["properties"]["m"]
    t = listing["pinsketch"]["params_schema"]["properties"]["t"]
    for i, (mm, tt) in enumerate([(m["minimum"], 1), (m["maximum"], 1), (16, t["minimum"]), (16, t["maximum"])]):
        body = {"scheme": "pinsketch", "params": {"m": mm, "t": tt}, "samples": [[1, 2, 3]]}
        assert client.post(f"/v1/users/p{i}/enrolment", headers=AUTH, json=body).status_code == 201, (mm, tt)
