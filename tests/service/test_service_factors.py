"""Key release and PIN change over HTTP, against real ``sketchauth serve`` processes.

Each test runs on SQLite and on PostgreSQL: ``POST /v1/users/{id}/key`` gives the same 32-byte key
for every genuine sample and after a restart, another per context, nothing for a wrong sample,
PIN or unknown user, and never stores or logs it; ``POST /v1/users/{id}/pin`` re-mixes the
enrolment under the new PIN (old PIN fails, new one works, audited ``pin-change``, old record
erased from SQLite's files); both count toward throttling like verifications.
"""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_testing import ADMIN, Backend, ServerProcess
from sketchauth_service.store import open_store

pytestmark = pytest.mark.slow

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [[987_640, 876_560, 765_400, 654_300], [987_700, 876_500, 765_470, 654_280]]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
PIN, NEW_PIN = "pin-7391-secret", "new-pin-2468"
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path, servers: list[ServerProcess]) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'factors.db'}", {}, servers)
    else:
        url, schema = request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")
        yield Backend("postgres", tmp_path, url, {"SKETCHAUTH_SCHEMA": schema}, servers)


def _key(
    c: httpx.Client, user: str, sample: list[int], pin: str | None = PIN, context: str = "com.example.backup/v1"
) -> httpx.Response:
    body: dict[str, Any] = {"sample": sample, "context": context}
    if pin is not None:
        body["pin"] = pin
    return c.post(f"/v1/users/{user}/key", json=body)


def _released(response: httpx.Response) -> bytes:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verified"] is True and set(body) == {"verified", "key"}
    assert response.headers["cache-control"] == "no-store"
    key = base64.urlsafe_b64decode(body["key"] + "=")
    assert len(key) == 32 and "=" not in body["key"]
    return key


def _verify(c: httpx.Client, user: str, sample: list[int], pin: str | None) -> bool:
    body: dict[str, Any] = {"sample": sample}
    if pin is not None:
        body["pin"] = pin
    response = c.post(f"/v1/users/{user}/verification", json=body)
    assert response.status_code == 200, response.text
    return bool(response.json()["verified"])


def _sqlite_bytes(backend: Backend) -> bytes:
    path = Path(backend.url[len("sqlite:///") :])
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def test_key_release_is_stable_per_context_and_only_for_genuine_attempts(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        assert c.post("/v1/users/alice/enrolment", json={**ENROL, "pin": PIN}).status_code == 201
        assert c.post("/v1/users/bob/enrolment", json=ENROL).status_code == 201
        keys = [_released(_key(c, "alice", s)) for s in GENUINE]
        mail = _released(_key(c, "alice", GENUINE[0], context="com.example.mail/v1"))
        bob = _released(_key(c, "bob", GENUINE[0], pin=None))
        assert keys[0] == keys[1] and len({keys[0], mail, bob}) == 3
        failures = [
            _key(c, "alice", IMPOSTOR),
            _key(c, "alice", GENUINE[0], pin="wrong-pin"),
            _key(c, "alice", GENUINE[0], pin=None),
            _key(c, "bob", GENUINE[0], pin=PIN),
            _key(c, "nobody", GENUINE[0]),
        ]
        for response in failures:
            assert response.status_code == 200 and response.json() == {"verified": False}, response.text
    events = backend.audit("alice")
    assert events[0] == "enrol"
    assert events.count("attempt") == 6 and events.count("verify-ok") == 3 and events.count("verify-fail") == 3
    server.stop()
    restarted = backend.start()
    with restarted.client() as c:
        assert _released(_key(c, "alice", GENUINE[1])) == keys[0]
        assert _released(_key(c, "bob", TEMPLATE, pin=None)) == bob
    # Never stored, never logged (raw bytes or the base64url text the client got).
    for key in (keys[0], mail, bob):
        text = base64.urlsafe_b64encode(key).rstrip(b"=")
        for log in (server.log_path.read_text(errors="replace"), restarted.log()):
            assert text.decode() not in log and key.hex() not in log
        if backend.kind == "sqlite":
            assert key not in _sqlite_bytes(backend) and text not in _sqlite_bytes(backend)


def test_key_release_counts_toward_throttling(backend: Backend) -> None:
    server = backend.start(
        SKETCHAUTH_LOCKOUT_THRESHOLD="3", SKETCHAUTH_LOCKOUT_SECONDS="600", SKETCHAUTH_DISABLE_THRESHOLD="10"
    )
    with server.client() as c:
        assert c.post("/v1/users/carol/enrolment", json={**ENROL, "pin": PIN}).status_code == 201
        for _ in range(2):
            assert _key(c, "carol", IMPOSTOR).json() == {"verified": False}
        # A sample that does not fit the enrolment is a counted failure like any other (answered
        # as one, so that it reveals nothing of the enrolment), here the third: the wait starts.
        assert _key(c, "carol", [1, 2, 3]).json() == {"verified": False}
        refused = [
            _key(c, "carol", GENUINE[0]),
            c.post("/v1/users/carol/pin", json={"sample": GENUINE[0], "pin": PIN, "new_pin": NEW_PIN}),
        ]
        for response in refused:
            assert response.status_code == 429 and int(response.headers["retry-after"]) > 500
        with server.client() as admin:
            assert admin.post("/v1/admin/users/carol/reset", headers=ADMIN).status_code == 204
        assert len(_released(_key(c, "carol", GENUINE[0]))) == 32
    assert backend.audit("carol") == [
        "enrol",
        "attempt",
        "verify-fail",
        "attempt",
        "verify-fail",
        "attempt",
        "lock",
        "verify-fail",
        "reset",
        "attempt",
        "verify-ok",
    ]


def test_pin_change_remixes_under_the_new_pin(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        assert c.post("/v1/users/dave/enrolment", json={**ENROL, "pin": PIN}).status_code == 201
        key_before = _released(_key(c, "dave", GENUINE[0]))
        report = c.get("/v1/users/dave/report").json()
        store = open_store(backend.url, postgres_schema=backend.env.get("SKETCHAUTH_SCHEMA", "public"), pool_size=1)
        try:
            old = store.get("dave")
            change = {"sample": GENUINE[0], "pin": PIN, "new_pin": NEW_PIN}
            # A wrong PIN or sample changes nothing.
            for bad in ({**change, "pin": "wrong-pin"}, {**change, "sample": IMPOSTOR}):
                response = c.post("/v1/users/dave/pin", json=bad)
                assert response.status_code == 200 and response.json() == {"verified": False}
            assert store.get("dave").helper == old.helper  # type: ignore[union-attr]
            response = c.post("/v1/users/dave/pin", json=change)
            assert response.status_code == 200 and response.json() == {"verified": True}
            new = store.get("dave")
        finally:
            store.close()
        assert new is not None and old is not None
        assert new.helper != old.helper and new.secret_hash != old.secret_hash and new.params == old.params
        assert new.key_params == old.key_params and new.failures == 0
        assert not _verify(c, "dave", GENUINE[0], PIN)
        assert _verify(c, "dave", GENUINE[1], NEW_PIN)
        assert c.get("/v1/users/dave/report").json() == report
        key_after = _released(_key(c, "dave", GENUINE[1], pin=NEW_PIN))
        assert key_after != key_before  # the PIN is part of the secret the key comes from
        assert _key(c, "dave", GENUINE[1]).json() == {"verified": False}
    assert backend.audit("dave") == [
        "enrol",
        "attempt",
        "verify-ok",
        "attempt",
        "verify-fail",
        "attempt",
        "verify-fail",
        "attempt",
        "verify-ok",
        "pin-change",
        "attempt",
        "verify-fail",
        "attempt",
        "verify-ok",
        "attempt",
        "verify-ok",
        "attempt",
        "verify-fail",
    ]
    if backend.kind == "sqlite":  # the old helper data and hash are erased from every file
        data = _sqlite_bytes(backend)
        assert old.secret_hash.encode() not in data and old.helper not in data
        assert new.secret_hash.encode() in data


def test_pin_change_of_an_enrolment_without_pin_is_a_failure(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        assert c.post("/v1/users/erin/enrolment", json=ENROL).status_code == 201
        response = c.post("/v1/users/erin/pin", json={"sample": GENUINE[0], "pin": PIN, "new_pin": NEW_PIN})
        assert response.status_code == 200 and response.json() == {"verified": False}
        unknown = c.post("/v1/users/nobody/pin", json={"sample": GENUINE[0], "pin": PIN, "new_pin": NEW_PIN})
        assert unknown.status_code == 200 and unknown.json() == {"verified": False}
        assert _verify(c, "erin", GENUINE[0], None)
    assert backend.audit("erin") == ["enrol", "attempt", "verify-fail", "attempt", "verify-ok"]


def test_enrolment_from_before_key_release_gets_its_key_salt_at_first_use(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    backend = Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'old.db'}", {}, servers)
    server = backend.start()
    with server.client() as c:
        assert c.post("/v1/users/fay/enrolment", json=ENROL).status_code == 201
    server.stop()
    with sqlite3.connect(tmp_path / "old.db") as db:  # what migration 3 leaves for older rows
        db.execute("UPDATE users SET key_params = NULL")
    server = backend.start()
    with server.client() as c:
        first = _released(_key(c, "fay", GENUINE[0], pin=None))
        assert _released(_key(c, "fay", GENUINE[1], pin=None)) == first
    with sqlite3.connect(tmp_path / "old.db") as db:
        (params,) = db.execute("SELECT key_params FROM users WHERE user_id = 'fay'").fetchone()
    assert params.startswith("$argon2id$v=19$m=8,t=1,p=1$")


@pytest.mark.parametrize(
    "body",
    [
        {"sample": GENUINE[0], "context": ""},
        {"sample": GENUINE[0], "context": "has space"},
        {"sample": GENUINE[0], "context": "x" * 129},
        {"sample": GENUINE[0]},
        {"sample": GENUINE[0], "context": "ok", "extra": 1},
        # A second sample is taken now (a second biometric); it is still validated like a sample.
        {"sample": GENUINE[0], "context": "ok", "second_sample": ["x"]},
        {"sample": GENUINE[0], "context": "ok", "second_sample": []},
    ],
)
def test_key_request_is_validated(body: dict[str, Any], tmp_path: Path, servers: list[ServerProcess]) -> None:
    from fastapi.testclient import TestClient
    from service_testing import AUTH, test_settings
    from sketchauth_service.app import create_app

    with TestClient(create_app(test_settings(tmp_path))) as c:
        response = c.post("/v1/users/zed/key", json=body, headers=AUTH)
    assert response.status_code == 422 and response.headers["content-type"].startswith("application/problem+json")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        handle = open_store(f"sqlite:///{tmp_path / 'store.db'}", pool_size=1)
    else:
        url, schema = request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")
        handle = open_store(url, postgres_schema=schema, pool_size=1)
    handle.migrate()
    yield handle
    handle.close()


def _record(user: str, secret_hash: str, key_params: str | None) -> Any:
    from sketchauth_service.store import NewEnrolment

    return NewEnrolment(
        user, "interval", {"n": 8}, b"helper-" + user.encode(), secret_hash, {}, True, key_params=key_params
    )


def test_store_key_params_first_writer_wins_and_unknown_is_none(store: Any) -> None:
    store.enrol(_record("old", "$h1", None), replace=False, now=1.0)
    store.enrol(_record("new", "$h2", "$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA"), replace=False, now=1.0)
    first = "$argon2id$v=19$m=8,t=1,p=1$BBBBBBBBBBBBBBBBBBBBBB"
    assert store.ensure_key_params("old", first) == first
    assert store.ensure_key_params("old", "$argon2id$v=19$m=8,t=1,p=1$CCCCCCCCCCCCCCCCCCCCCC") == first
    assert store.ensure_key_params("new", first) == "$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA"
    assert store.ensure_key_params("nobody", first) is None
    assert store.get("old").key_params == first


def test_store_change_pin_only_over_the_verified_record_version(store: Any) -> None:
    from sketchauth_service.store import LockoutPolicy

    store.enrol(_record("u", "$old", None), replace=False, now=1.0)
    store.claim_attempt("u", LockoutPolicy(), 2.0)
    assert not store.change_pin("u", 3.0, version=7, helper=b"new-helper", secret_hash="$new")
    assert store.get("u").helper == b"helper-u"
    assert store.change_pin("u", 4.0, version=1, helper=b"new-helper", secret_hash="$new")
    record = store.get("u")
    assert (record.helper, record.secret_hash, record.failures, record.version) == (b"new-helper", "$new", 0, 2)
    assert not store.change_pin("gone", 5.0, version=1, helper=b"x", secret_hash="$y")
    assert [e.event for e in store.audit_events("u")] == ["enrol", "attempt", "verify-ok", "pin-change"]
