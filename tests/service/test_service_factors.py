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

import pytest
from http_testing import released, service_client
from service_testing import ADMIN, Backend, ServerProcess
from sketchauth_service.store import open_store

pytestmark = pytest.mark.slow

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [[987_640, 876_560, 765_400, 654_300], [987_700, 876_500, 765_470, 654_280]]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
PIN, NEW_PIN = "pin-7391-secret", "new-pin-2468"
BACKUP = "com.example.backup/v1"  # the context of the keys these tests release
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path, servers: list[ServerProcess]) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'factors.db'}", {}, servers)
    else:
        url, schema = request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")
        yield Backend("postgres", tmp_path, url, {"SKETCHAUTH_SCHEMA": schema}, servers)


def _sqlite_bytes(backend: Backend) -> bytes:
    path = Path(backend.url[len("sqlite:///") :])
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def test_key_release_is_stable_per_context_and_only_for_genuine_attempts(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        assert api.raw.enrol("alice", **ENROL, pin=PIN).status_code == 201
        assert api.raw.enrol("bob", **ENROL).status_code == 201
        keys = [released(api.raw.release_key("alice", s, BACKUP, pin=PIN)) for s in GENUINE]
        mail = released(api.raw.release_key("alice", GENUINE[0], "com.example.mail/v1", pin=PIN))
        bob = released(api.raw.release_key("bob", GENUINE[0], BACKUP))
        assert keys[0] == keys[1] and len({keys[0], mail, bob}) == 3
        failures = [
            api.raw.release_key("alice", IMPOSTOR, BACKUP, pin=PIN),
            api.raw.release_key("alice", GENUINE[0], BACKUP, pin="wrong-pin"),
            api.raw.release_key("alice", GENUINE[0], BACKUP),
            api.raw.release_key("bob", GENUINE[0], BACKUP, pin=PIN),
            api.raw.release_key("nobody", GENUINE[0], BACKUP, pin=PIN),
        ]
        for response in failures:
            assert response.status_code == 200 and response.json() == {"verified": False}, response.text
    events = backend.audit("alice")
    assert events[0] == "enrol"
    assert events.count("attempt") == 6 and events.count("verify-ok") == 3 and events.count("verify-fail") == 3
    server.stop()
    restarted = backend.start()
    with restarted.client() as c:
        api = service_client(c)
        assert released(api.raw.release_key("alice", GENUINE[1], BACKUP, pin=PIN)) == keys[0]
        assert released(api.raw.release_key("bob", TEMPLATE, BACKUP)) == bob
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
        api = service_client(c)
        assert api.raw.enrol("carol", **ENROL, pin=PIN).status_code == 201
        for _ in range(2):
            assert api.raw.release_key("carol", IMPOSTOR, BACKUP, pin=PIN).json() == {"verified": False}
        # A sample that does not fit the enrolment is a counted failure like any other (answered
        # as one, so that it reveals nothing of the enrolment), here the third: the wait starts.
        assert api.raw.release_key("carol", [1, 2, 3], BACKUP, pin=PIN).json() == {"verified": False}
        refused = [
            api.raw.release_key("carol", GENUINE[0], BACKUP, pin=PIN),
            api.raw.change_pin("carol", GENUINE[0], PIN, NEW_PIN),
        ]
        for response in refused:
            assert response.status_code == 429 and int(response.headers["retry-after"]) > 500
        with server.client() as admin:
            assert admin.post("/v1/admin/users/carol/reset", headers=ADMIN).status_code == 204
        assert len(released(api.raw.release_key("carol", GENUINE[0], BACKUP, pin=PIN))) == 32
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
        api = service_client(c)
        assert api.raw.enrol("dave", **ENROL, pin=PIN).status_code == 201
        key_before = released(api.raw.release_key("dave", GENUINE[0], BACKUP, pin=PIN))
        report = api.raw.report("dave").json()
        store = open_store(backend.url, postgres_schema=backend.env.get("SKETCHAUTH_SCHEMA", "public"), pool_size=1)
        try:
            old = store.get("dave")
            # A wrong PIN or sample changes nothing.
            for sample, pin in ((GENUINE[0], "wrong-pin"), (IMPOSTOR, PIN)):
                response = api.raw.change_pin("dave", sample, pin, NEW_PIN)
                assert response.status_code == 200 and response.json() == {"verified": False}
            assert store.get("dave").helper == old.helper  # type: ignore[union-attr]
            response = api.raw.change_pin("dave", GENUINE[0], PIN, NEW_PIN)
            assert response.status_code == 200 and response.json() == {"verified": True}
            new = store.get("dave")
        finally:
            store.close()
        assert new is not None and old is not None
        assert new.helper != old.helper and new.secret_hash != old.secret_hash and new.params == old.params
        assert new.key_params == old.key_params and new.failures == 0
        assert not api.verify("dave", GENUINE[0], pin=PIN)
        assert api.verify("dave", GENUINE[1], pin=NEW_PIN)
        assert api.raw.report("dave").json() == report
        key_after = released(api.raw.release_key("dave", GENUINE[1], BACKUP, pin=NEW_PIN))
        assert key_after != key_before  # the PIN is part of the secret the key comes from
        assert api.raw.release_key("dave", GENUINE[1], BACKUP, pin=PIN).json() == {"verified": False}
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
        api = service_client(c)
        assert api.raw.enrol("erin", **ENROL).status_code == 201
        response = api.raw.change_pin("erin", GENUINE[0], PIN, NEW_PIN)
        assert response.status_code == 200 and response.json() == {"verified": False}
        unknown = api.raw.change_pin("nobody", GENUINE[0], PIN, NEW_PIN)
        assert unknown.status_code == 200 and unknown.json() == {"verified": False}
        assert api.verify("erin", GENUINE[0])
    assert backend.audit("erin") == ["enrol", "attempt", "verify-fail", "attempt", "verify-ok"]


def test_enrolment_from_before_key_release_gets_its_key_salt_at_first_use(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    backend = Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'old.db'}", {}, servers)
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        assert api.raw.enrol("fay", **ENROL).status_code == 201
    server.stop()
    with sqlite3.connect(tmp_path / "old.db") as db:  # what migration 3 leaves for older rows
        db.execute("UPDATE users SET key_params = NULL")
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        first = released(api.raw.release_key("fay", GENUINE[0], BACKUP))
        assert released(api.raw.release_key("fay", GENUINE[1], BACKUP)) == first
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
