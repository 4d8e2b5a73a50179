"""The typed client (:mod:`sketchauth.client`) against a real ``sketchauth serve`` process.

Every call a relying party or an operator makes, through both clients, with the inputs a user
holds (numpy vectors, a Python set, ``bytes``); errors come back as the library's classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient

pytest.importorskip("httpx")

from service_testing import ADMIN_KEY, API_KEY, ServerProcess

from sketchauth.client import (
    AsyncClient,
    Client,
    Conflict,
    Enrolment,
    Forbidden,
    InvalidParameters,
    InvalidSample,
    NotFound,
    ServiceError,
    Unauthorized,
)
from sketchauth.errors import ParameterError, SampleError, SketchAuthError

INTERVAL = {"n": 256, "v": 8, "features": 4}
PEPPER = "skp1_9pf_eaHmZGUZcPoYVAfsU0wEAUaKNcoFBOQF7RhfJHWkF3lY"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("client")
    env = {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        "SKETCHAUTH_PEPPER": PEPPER,
    }
    proc = ServerProcess(workdir, env, db=f"sqlite:///{workdir / 'client.db'}").wait_ready()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture()
def api(server: ServerProcess) -> Iterator[Client]:
    with Client(server.url, api_key=API_KEY) as client:
        yield client


def test_enrol_verify_report_delete_with_numpy_inputs(api: Client) -> None:
    template = np.array([120, 33, 200, 71])
    enrolment = api.enrol("alice", "interval", [template], params=INTERVAL)
    assert isinstance(enrolment, Enrolment)
    assert (enrolment.user_id, enrolment.scheme, enrolment.pin, enrolment.replaced) == (
        "alice",
        "interval",
        False,
        False,
    )
    assert enrolment.report["loss_bound_bits"] > 0
    assert api.verify("alice", np.array([123, 30, 205, 71], dtype=np.int64)) is True
    assert api.verify("alice", [20, 130, 5, 250]) is False
    assert api.report("alice")["scheme"] == "interval"
    with pytest.raises(Conflict):
        api.enrol("alice", "interval", [template], params=INTERVAL)
    assert api.enrol("alice", "interval", [template], params=INTERVAL, replace=True).replaced is True
    api.delete("alice")
    with pytest.raises(NotFound):
        api.report("alice")
    assert api.verify("alice", template) is False  # unknown and wrong answer alike


def test_a_set_and_a_pin_key_release_and_pin_change(api: Client) -> None:
    elements = {3, 17, 42, 99, 1000, 2048, 4001, 7}
    api.enrol("bob", "pinsketch", [elements], params={"m": 16, "t": 4}, pin="2468-open")
    near = (elements - {7}) | {5}
    assert api.verify("bob", near, pin="2468-open") is True
    assert api.verify("bob", near, pin="1357-shut") is False
    key = api.release_key("bob", near, "com.example.backup/v1", pin="2468-open")
    assert isinstance(key, bytes) and len(key) == 32
    assert api.release_key("bob", near, "com.example.backup/v1", pin="1357-shut") is None
    assert api.release_key("bob", near, "com.example.backup/v1", pin="2468-open") == key
    assert api.change_pin("bob", near, "2468-open", "9999-new") is True
    assert api.verify("bob", near, pin="9999-new") is True
    # The PIN is part of the key (docs: re-wrap what old keys protected after a PIN change).
    new_key = api.release_key("bob", near, "com.example.backup/v1", pin="9999-new")
    assert isinstance(new_key, bytes) and new_key != key
    assert api.release_key("bob", near, "com.example.backup/v1", pin="9999-new") == new_key


def test_bytes_sample_on_code_offset(api: Client) -> None:
    secret = bytes(range(40, 72))
    api.enrol("carol", "code-offset", [secret], params={"n": 32, "t": 2})
    probe = bytearray(secret)
    probe[3] ^= 0xFF
    assert api.verify("carol", bytes(probe)) is True


def test_problems_are_the_library_classes(api: Client, server: ServerProcess) -> None:
    with pytest.raises(InvalidParameters) as bad:
        api.enrol("dave", "interval", [[1, 2, 3, 4]], params={"n": 256, "v": 0, "features": 4})
    assert isinstance(bad.value, ParameterError) and isinstance(bad.value, SketchAuthError)
    assert bad.value.status == 422 and bad.value.detail
    with pytest.raises(InvalidParameters) as unknown:
        api.enrol("dave", "no-such-scheme", [[1, 2, 3, 4]])
    assert "interval" in unknown.value.detail  # the offered schemes are named
    with pytest.raises(InvalidSample) as sample:
        api.enrol("dave", "interval", [[1, 2, 3]], params=INTERVAL)
    assert isinstance(sample.value, SampleError)
    with Client(server.url, api_key="wrong-key-0123456789abcdef") as stranger, pytest.raises(Unauthorized):
        stranger.verify("dave", [1, 2, 3, 4])
    with pytest.raises(Forbidden):
        api.pepper_status()  # an enrol/verify key has no admin scope
    with pytest.raises(ParameterError):
        Client(server.url)  # no key


def test_admin_calls(server: ServerProcess) -> None:
    with Client(server.url, api_key=API_KEY) as api, Client(server.url, api_key=ADMIN_KEY) as admin:
        api.enrol("erin", "interval", [[10, 20, 30, 40]], params=INTERVAL)
        for _ in range(2):
            assert api.verify("erin", [200, 200, 200, 200]) is False
        events = [row["event"] for row in admin.audit("erin")]
        assert events[0] == "enrol" and "attempt" in events
        admin.reset("erin")
        status = admin.pepper_status()
        assert status["current_id"] and sum(status["records"].values()) >= 1
        rotation = admin.rotate_pepper()
        assert rotation["complete"] is True
        with pytest.raises(NotFound):
            admin.reset("nobody-here")
        assert admin.live() and admin.ready()


def test_async_client(server: ServerProcess) -> None:
    async def scenario() -> tuple[bool, bool, bytes | None]:
        async with AsyncClient(server.url, api_key=API_KEY) as api:
            await api.enrol("frank", "interval", [np.array([50.0, 60.0, 70.0, 80.0])], params={**INTERVAL, "step": 1})
            near = await api.verify("frank", np.array([52.5, 58.0, 71.0, 80.0]))
            far = await api.verify("frank", [150.0, 160.0, 170.0, 180.0])
            key = await api.release_key("frank", [52.5, 58.0, 71.0, 80.0], "com.example.vault/v1")
            with pytest.raises(ServiceError):
                await api.report("nobody")
            return near, far, key

    near, far, key = asyncio.run(scenario())
    assert (near, far) == (True, False)
    assert isinstance(key, bytes) and len(key) == 32


def test_a_callers_http_client_carries_the_key_and_raw_answers_unread(client: TestClient) -> None:
    """``api_key`` with ``http_client``: the key goes with every request; ``raw`` sends the same requests."""
    api = Client(api_key=API_KEY, http_client=client)
    template, genuine = [120, 33, 200, 71], [123, 30, 205, 71]
    assert api.enrol("alice", "interval", [template], params=INTERVAL, pin="4711").user_id == "alice"
    failed = api.raw.verify("alice", genuine, pin="0000")
    assert (failed.status_code, failed.json()) == (200, {"verified": False})
    key = api.release_key("alice", genuine, "ctx", pin="4711")
    answer = api.raw.release_key("alice", genuine, "ctx", pin="4711")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    assert key is not None and len(key) == 32 and answer.json()["key"].rstrip("=") == answer.json()["key"]
    missing = api.raw.report("nobody")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
    with pytest.raises(NotFound):
        api.report("nobody")
    # Without api_key the caller's own headers go: the test client has none, so the service answers 401.
    keyless = Client(http_client=client)
    assert keyless.raw.verify("alice", genuine, pin="4711").status_code == 401
    with pytest.raises(Unauthorized):
        keyless.verify("alice", genuine, pin="4711")
    assert api.change_pin("alice", genuine, "4711", "4712") is True
    assert api.raw.delete("alice").status_code == 204
