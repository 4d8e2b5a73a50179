"""Request bodies: duplicate members, encodings, framing and a slow body, on real servers too.

A repeated member (``"replace": false, "replace": true``) used to be read as its last value and
re-enrolled a user; a UTF-16 body was accepted; a client announcing more bytes than it sent held
its connection for as long as it liked. Raw-socket tests talk to a real ``sketchauth serve``
(SQLite and PostgreSQL) to see what reaches the client, framing errors included.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from http_testing import problem
from service_testing import ADMIN_KEY, API_KEY, AUTH, ServerProcess
from sketchauth_service.bodies import DuplicateKey, reject_duplicates

ENROL = {"scheme": "interval", "params": {"n": 1 << 20, "v": 50, "features": 4}, "samples": [[9, 8, 7, 6]]}
JSON = {**AUTH, "content-type": "application/json"}


def test_reject_duplicates_hook() -> None:
    assert json.loads('{"a": {"b": 1}, "c": [{"b": 2}]}', object_pairs_hook=reject_duplicates) == {
        "a": {"b": 1},
        "c": [{"b": 2}],
    }
    with pytest.raises(DuplicateKey) as raised:
        json.loads('{"a": {"b": 1, "b": 2}}', object_pairs_hook=reject_duplicates)
    assert raised.value.name == "b"


def test_duplicate_replace_does_not_re_enrol(client: TestClient) -> None:
    assert client.post("/v1/users/alice/enrolment", json=ENROL, headers=AUTH).status_code == 201
    text = json.dumps(ENROL)[:-1] + ', "replace": false, "replace": true}'
    body = problem(client.post("/v1/users/alice/enrolment", content=text, headers=JSON), 422, "duplicate-key")
    assert "'replace'" in body["detail"]
    # Nested, and in a verification body too; a name that is not plain is not quoted back.
    text = '{"sample": [1, 2, 3, 4], "pin": "123456", "pin": "654321"}'
    problem(client.post("/v1/users/alice/verification", content=text, headers=JSON), 422, "duplicate-key")
    text = json.dumps(ENROL).replace('"v": 50', '"v": 50, "v": 1')
    problem(client.post("/v1/users/bob/enrolment", content=text, headers=JSON), 422, "duplicate-key")
    text = '{"sample": [1, 2, 3, 4], "x\\u0000y": 1, "x\\u0000y": 2}'
    body = problem(client.post("/v1/users/alice/verification", content=text, headers=JSON), 422, "duplicate-key")
    assert "a member name" in body["detail"]
    assert client.get("/v1/users/bob/report", headers=AUTH).status_code == 404


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "latin-1"])
def test_non_utf8_json_is_400(client: TestClient, encoding: str) -> None:
    text = json.dumps({**ENROL, "pin": "pässwörd-1"}, ensure_ascii=False)
    r = client.post("/v1/users/alice/enrolment", content=text.encode(encoding), headers=JSON)
    assert "UTF-8" in problem(r, 400, "invalid-encoding")["detail"]
    assert client.get("/v1/users/alice/report", headers=AUTH).status_code == 404
    # The same body in UTF-8 enrols.
    r = client.post("/v1/users/alice/enrolment", content=text.encode("utf-8"), headers=JSON)
    assert r.status_code == 201


def test_malformed_json_still_reaches_the_app(client: TestClient) -> None:
    r = client.post("/v1/users/alice/verification", content=b'{"sample": [1, 2', headers=JSON)
    problem(r, 400, "malformed-json")


# -- real servers, raw sockets -------------------------------------------------------------------


def _server(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str
) -> ServerProcess:
    env = {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        "SKETCHAUTH_BODY_TIMEOUT_SECONDS": "1.5",
    }
    db = "sqlite:///service.db"
    if backend == "postgres":
        db = request.getfixturevalue("postgres_available")
        env["SKETCHAUTH_SCHEMA"] = request.getfixturevalue("postgres_schema")
    server = ServerProcess(tmp_path, env, db=db)
    servers.append(server)
    return server.wait_ready()


def _raw(server: ServerProcess, head: bytes, body: bytes = b"", *, wait: float = 10.0) -> tuple[bytes, float]:
    """Send ``head`` + ``body`` on a fresh connection; everything read until the server closes it
    (or ``wait`` passes), and the seconds that took."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=wait) as sock:
        started = time.monotonic()
        sock.sendall(head + body)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        return received, time.monotonic() - started


def _head(content_length: str, extra: str = "") -> bytes:
    return (
        "POST /v1/users/alice/verification HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {content_length}\r\n{extra}\r\n"
    ).encode()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_partial_body_is_answered_408_and_closed_within_the_timeout(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str
) -> None:
    server = _server(request, servers, tmp_path, backend)
    received, elapsed = _raw(server, _head("100"), b'{"sample": [1, 2')
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b"application/problem+json" in received and b"body-timeout" in received
    assert 1.4 <= elapsed < 5.0  # answered and closed at the 1.5 s deadline, not held open
    # The server is free for the next client.
    received, _ = _raw(server, _head("29", "Connection: close\r\n"), b'{"sample": [1, 2, 3, 4, 5, 6]}'[:29])
    assert received.startswith(b"HTTP/1.1 "), received


@pytest.mark.slow
def test_framing_errors(request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path) -> None:
    """Bad ``Content-Length`` framing: uvicorn's parser rejects these before any ASGI code runs
    (it used to answer a plain-text 400); the service's protocol makes that answer problem+json."""
    server = _server(request, servers, tmp_path, "sqlite")
    body = b'{"sample": [1, 2, 3, 4]}'
    for length in ("abc", "-1", "1e3", f"{len(body)}, {len(body) + 1}"):
        received, _ = _raw(server, _head(length), body, wait=5.0)
        status = received.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.1 400 "), (length, received)
        _framing_problem(received)
    received, _ = _raw(server, _head(str(len(body)), f"Content-Length: {len(body) + 1}\r\n"), body, wait=5.0)
    _framing_problem(received)


def _framing_problem(received: bytes) -> None:
    head, _, content = received.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 400 Bad Request", received
    assert b"content-type: application/problem+json" in lines and b"connection: close" in lines
    problem = json.loads(content)
    assert (
        problem["type"].endswith("/bad-framing") and problem["status"] == 400 and "Content-Length" in problem["detail"]
    )
