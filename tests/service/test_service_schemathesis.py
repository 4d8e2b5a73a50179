"""Property-based conformance: schemathesis generates requests from the OpenAPI schema.

Bounded and deterministic (a few derandomized examples per operation) so it stays fast; every
response must be documented (status code, content type, body schema) and none may be a 5xx.

One check is left out: "schema-valid data is accepted". OpenAPI cannot say that an interval
sample must have exactly ``features`` numbers or that a fuzzy-vault sample must be a set of
``m`` field elements, so schema-valid bodies are often semantically wrong and rightly get a
documented 422 problem.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from service_testing import AUTH, test_settings
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from service.app import create_app

schemathesis = pytest.importorskip("schemathesis")


@pytest.fixture
def api_schema(tmp_path: Path) -> Iterator[object]:
    app = create_app(test_settings(tmp_path))
    with TestClient(app) as client:  # runs the lifespan: store, argon2 dummy hash, warm-up
        enrolled = client.post(
            "/v1/users/alice/enrolment",
            headers=AUTH,
            json={"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]},
        )
        assert enrolled.status_code == 201
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=8,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case: object) -> None:
    case.call_and_validate(  # type: ignore[attr-defined]
        headers=AUTH, excluded_checks=[schemathesis.checks.positive_data_acceptance]
    )
