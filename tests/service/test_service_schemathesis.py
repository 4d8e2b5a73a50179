"""Property-based conformance: schemathesis generates requests from the OpenAPI schema.

Bounded and deterministic (a few derandomized examples per operation) so it stays fast; every
response must be documented (status code, content type, body schema) and none may be a 5xx.

The schema is the running service's own (a union of per-scheme request models with typed,
bounded parameters), so generated bodies reach the schemes. One check is left out:
"schema-valid data is accepted". JSON Schema cannot say that an interval sample must have
exactly ``features`` numbers, that a fuzzy-vault sample must be a set of ``m`` elements below
``p``, or that ``2t < n``, so schema-valid bodies can still be semantically wrong and rightly get
a documented 422 problem.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app

schemathesis = pytest.importorskip("schemathesis")

# The schema is loaded eagerly (schemathesis' lazy fixture loader does not follow pytest's
# internals across versions), which runs the app once, so its temporary directory exists from
# import on; the fixture below removes it after the module.
_DB = Path(tempfile.mkdtemp(prefix="sketchauth-schemathesis-"))
APP = create_app(test_settings(_DB))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def running_app() -> Iterator[None]:
    try:
        with TestClient(APP) as client:  # runs the lifespan: store, argon2 dummy hash, warm-up
            enrolled = client.post(
                "/v1/users/alice/enrolment",
                headers=AUTH,
                json={
                    "scheme": "interval",
                    "params": {"n": 256, "v": 8, "features": 4},
                    "samples": [[120, 33, 200, 71]],
                },
            )
            assert enrolled.status_code == 201
            yield
    finally:
        shutil.rmtree(_DB, ignore_errors=True)


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
