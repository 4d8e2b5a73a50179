"""Hostile request bodies, with and without a key: never a 5xx, and the key is decided first.

A JSON integer literal over 4,300 digits made Python's JSON decoder raise a ``ValueError`` that
was not a decode error: ``500 internal-error`` on every JSON endpoint, with no key at all. And
FastAPI decodes a body before it checks the key, so malformed JSON answered ``400`` to anyone.
Now every JSON route checks the key and its scope before the body is decoded
(``sketchauth_service.api.deps.KeyedRoute``), and every body the decoder refuses is ``400``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_testing import ADMIN, AUTH, test_settings
from sketchauth_service.app import create_app

INTERVAL = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
GENUINE = [123, 30, 205, 71]
#: 4,301 digits: one past what ``int()`` converts from a string by default (CPython 3.11+).
LONG_INTEGER = "9" * 4301
#: Below that limit, but far outside any number a sample or parameter can hold.
BIG_INTEGER = "9" * 4000

ROUTES = [
    ("/v1/users/alice/enrolment", AUTH),
    ("/v1/users/alice/verification", AUTH),
    ("/v1/users/alice/key", AUTH),
    ("/v1/users/alice/pin", AUTH),
    ("/v1/admin/pepper/rotation", ADMIN),
]

BODIES: dict[str, bytes] = {
    "long-integer-sample": ('{"sample": [' + LONG_INTEGER + ', 1, 2, 3], "pin": "1234-abcd"}').encode(),
    "long-integer-alone": LONG_INTEGER.encode(),
    "long-integer-param": (
        '{"scheme": "interval", "params": {"n": ' + LONG_INTEGER + ', "v": 8, "features": 4}, "samples": [[1]]}'
    ).encode(),
    "big-integer-sample": ('{"sample": [' + BIG_INTEGER + ", 1, 2, 3]}").encode(),
    "big-integer-enrolment": (
        '{"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, '
        '"samples": [[' + BIG_INTEGER + ", 1, 2, 3]]}"
    ).encode(),
    "big-float-sample": b'{"sample": [1e308, -1e308, 1e-320, 5]}',
    "infinite-float": b'{"sample": [1e999, 1, 2, 3]}',
    "nan": b'{"sample": [NaN, 1, 2, 3]}',
    "malformed": b'{"sample": [1, 2',
    "not-utf8": b'{"sample": [1, 2, 3, 4], "pin": "\xff\xfe"}',
    "deep-nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "duplicate-member": b'{"sample": [1, 2, 3, 4], "sample": [5, 6, 7, 8]}',
    "wrong-types": b'{"sample": "AAECAw==", "pin": 1234, "context": [], "new_pin": {}}',
    "empty-object": b"{}",
    "null": b"null",
    "context-and-pins": json.dumps(
        {"sample": GENUINE, "pin": "x" * 10_000, "new_pin": "y", "context": "\u0000" * 200}
    ).encode(),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("hostile")
    settings = test_settings(tmp, auth_failure_burst=10_000, lockout_seconds=0, disable_threshold=10**9)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        assert c.post("/v1/users/alice/enrolment", headers=AUTH, json=INTERVAL).status_code == 201
        yield c


def _post(client: TestClient, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    response = client.post(path, content=body, headers={**headers, "Content-Type": "application/json"})
    return response.status_code, response.json()


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize(("path", "key"), ROUTES, ids=[path for path, _ in ROUTES])
def test_no_key_is_401_before_the_body_is_read(client: TestClient, path: str, key: dict[str, str], name: str) -> None:
    status, body = _post(client, path, BODIES[name], {})
    assert status == 401, body
    status, body = _post(client, path, BODIES[name], {"Authorization": "Bearer not-a-key-0123456789abcdef"})
    assert status == 401, body


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize(("path", "key"), ROUTES, ids=[path for path, _ in ROUTES])
def test_no_body_gets_a_5xx_with_a_key(client: TestClient, path: str, key: dict[str, str], name: str) -> None:
    status, body = _post(client, path, BODIES[name], key)
    assert status < 500, body
    if status >= 400:
        assert str(body["type"]).startswith("https://sketchauth.invalid/problems/")
    assert LONG_INTEGER[:50] not in json.dumps(body)  # no value is echoed


def test_the_long_integer_is_malformed_json_and_the_key_still_decides_first(client: TestClient) -> None:
    path = "/v1/users/alice/verification"
    status, body = _post(client, path, BODIES["long-integer-sample"], AUTH)
    assert (status, body["type"]) == (400, "https://sketchauth.invalid/problems/malformed-json")
    assert "too many digits" in str(body["detail"])
    # A valid key without the route's scope: 403, not 400.
    status, body = _post(client, "/v1/admin/pepper/rotation", BODIES["malformed"], AUTH)
    assert status == 403, body
    # A genuine attempt still works afterwards.
    assert client.post(path, headers=AUTH, json={"sample": GENUINE}).json() == {"verified": True}
