"""Security review regressions for the service (the service model): throttling under concurrency,
no value echo or traceback leak on errors, the SQLite file's permissions, API-key checks.
"""

from __future__ import annotations

import logging
import stat
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import AUTH, test_settings
from sketchauth_service import credentials
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings, SettingsError
from sketchauth_service.store import AttemptRefused, LockoutPolicy, NewEnrolment, Store, UserNotFound, open_store
from sketchauth_service.store.sqlite import SQLiteStore

INTERVAL = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
GENUINE = [123, 30, 205, 71]
IMPOSTOR = [20, 130, 5, 250]
NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _record(user_id: str = "alice") -> NewEnrolment:
    return NewEnrolment(user_id, "interval", {"n": 256}, b"helper", "$argon2id$h1", {"scheme": "interval"}, False)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated store on each backend (PostgreSQL for real, in its own schema)."""
    if request.param == "sqlite":
        opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    else:
        opened = open_store(
            request.getfixturevalue("postgres_available"), postgres_schema=request.getfixturevalue("postgres_schema")
        )
    opened.migrate()
    yield opened
    opened.close()


# -- throttling: the attempt is counted before the work ------------------------------------------------


def test_concurrent_attempts_cannot_outrun_the_lockout(tmp_path: Path) -> None:
    """12 impostor attempts at once: exactly 5 are compared, the other 7 wait (429) uncounted.

    Before the fix every attempt read ``failures == 0`` and passed the check before any was
    counted, so an attacker got as many guesses as requests he could send at once.
    """
    clock = Clock()
    with TestClient(create_app(test_settings(tmp_path), clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        state = client.app.state.service  # type: ignore[attr-defined]
        real_verify = state.authenticator.verify
        compared = []

        def slow_verify(*args: Any, **kwargs: Any) -> Any:
            compared.append(1)
            time.sleep(0.3)  # hold the attempt open so the others arrive meanwhile
            return real_verify(*args, **kwargs)

        state.authenticator.verify = slow_verify
        with ThreadPoolExecutor(12) as pool:
            responses = list(pool.map(lambda _: api.raw.verify("alice", IMPOSTOR), range(12)))
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * 5 + [429] * 7
        assert len(compared) == 5
        assert state.store.get("alice").failures == 5
        events = [e.event for e in state.store.audit_events("alice")]
        assert events.count("verify-fail") == 5 and events.count("lock") == 1


def test_claim_counts_before_the_work_and_refuses_while_waiting(store: Store) -> None:
    policy = LockoutPolicy(lockout_threshold=2, lockout_seconds=30, disable_threshold=3)
    store.enrol(_record(), replace=False, now=NOW)
    first = store.claim_attempt("alice", policy, NOW)
    # A client that dies now has still spent the attempt: the count is in the store already.
    assert store.get("alice").failures == 1 and first.events == ("attempt",)
    second = store.claim_attempt("alice", policy, NOW + 1)
    assert (second.failures, second.locked_until, second.events) == (2, NOW + 31, ("attempt", "lock"))
    with pytest.raises(AttemptRefused) as refused:
        store.claim_attempt("alice", policy, NOW + 30.9)
    assert refused.value.locked_until == NOW + 31 and not refused.value.disabled
    assert store.get("alice").failures == 2  # a refused attempt is not counted
    third = store.claim_attempt("alice", policy, NOW + 31)
    assert third.disabled and third.events == ("attempt", "lock", "disable")
    with pytest.raises(AttemptRefused) as refused:
        store.claim_attempt("alice", policy, NOW + 10**6)
    assert refused.value.disabled
    with pytest.raises(UserNotFound):
        store.claim_attempt("nobody", policy, NOW)
    # Each claim audits the changes it made, in the same transaction; settling adds the outcome.
    assert [e.event for e in store.audit_events("alice")] == [
        "enrol",
        "attempt",
        "attempt",
        "lock",
        "attempt",
        "lock",
        "disable",
    ]
    store.settle_failure("alice", third, NOW + 32)
    assert [e.event for e in store.audit_events("alice")][-1] == "verify-fail"


def test_malformed_sample_counts_as_a_failure(tmp_path: Path) -> None:
    clock = Clock()
    with TestClient(create_app(test_settings(tmp_path), clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        for _ in range(4):
            assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
        assert api.raw.verify("alice", [1, 2, 3]).json() == {"verified": False}  # the 5th failure: a wait starts
        record = client.app.state.service.store.get("alice")  # type: ignore[attr-defined]
        assert (record.failures, record.locked_until) == (5, NOW + 30)
        assert api.raw.verify("alice", GENUINE).status_code == 429
        clock.now += 30
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}


def test_a_malformed_attempt_cannot_undo_a_concurrent_disable(tmp_path: Path) -> None:
    """A malformed sample's attempt used to be handed back when it ended: the hand-back cleared
    the disabled flag that concurrent wrong samples had set (and audited) meanwhile, so 423s
    had been answered for a user who ended enabled, the ``disable`` row silently undone.

    Here the malformed attempt is held open while wrong samples disable the biometric.
    """
    clock = Clock()
    settings = test_settings(tmp_path, lockout_threshold=3, lockout_seconds=0, disable_threshold=3)
    with TestClient(create_app(settings, clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        state = client.app.state.service  # type: ignore[attr-defined]
        real_verify = state.authenticator.verify
        held, go = threading.Event(), threading.Event()

        def verify(record: Any, probe: Any) -> Any:
            if len(probe.sample) == 3:  # the malformed one waits until the others are done
                held.set()
                go.wait(10)
            return real_verify(record, probe)

        state.authenticator.verify = verify
        with ThreadPoolExecutor(1) as pool:
            malformed = pool.submit(api.raw.verify, "alice", [1, 2, 3])
            assert held.wait(10)
            assert [api.raw.verify("alice", IMPOSTOR).json() for _ in range(2)] == [{"verified": False}] * 2
            assert api.raw.verify("alice", GENUINE).status_code == 423
            go.set()
            assert malformed.result().json() == {"verified": False}
        assert api.raw.verify("alice", GENUINE).status_code == 423  # still disabled
        record = state.store.get("alice")
        assert (record.failures, record.disabled) == (3, True)
        events = [e.event for e in state.store.audit_events("alice")]
        assert events == [
            "enrol",
            "attempt",
            "attempt",
            "verify-fail",
            "attempt",
            "disable",
            "verify-fail",
            "verify-fail",
        ]


def test_success_on_the_disabling_attempt_resets_everything(tmp_path: Path) -> None:
    """The attempt claimed at the disable threshold succeeds: a success resets the count."""
    clock = Clock()
    settings = test_settings(tmp_path, lockout_threshold=2, lockout_seconds=30, disable_threshold=3)
    with TestClient(create_app(settings, clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        for _ in range(2):
            assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
        clock.now += 30
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}
        record = client.app.state.service.store.get("alice")  # type: ignore[attr-defined]
        assert (record.failures, record.locked_until, record.disabled) == (0, 0.0, False)


def test_refused_attempts_do_no_decode_or_hash_work(tmp_path: Path) -> None:
    clock = Clock()
    with TestClient(create_app(test_settings(tmp_path, disable_threshold=5), clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        for _ in range(5):
            api.raw.verify("alice", IMPOSTOR)
        state = client.app.state.service  # type: ignore[attr-defined]
        calls = []
        state.authenticator.verify = lambda *a, **k: calls.append(1)
        assert api.raw.verify("alice", GENUINE).status_code == 423
        assert calls == []


def test_concurrent_claims_grant_exactly_the_threshold(store: Store) -> None:
    """Threads claiming at once on one store: the check and the count are one statement."""
    policy = LockoutPolicy(lockout_threshold=4, lockout_seconds=30, disable_threshold=50)
    store.enrol(_record(), replace=False, now=NOW)
    outcomes: list[str] = []

    def claim() -> None:
        try:
            store.claim_attempt("alice", policy, NOW)
            outcomes.append("granted")
        except AttemptRefused:
            outcomes.append("refused")

    with ThreadPoolExecutor(8) as pool:
        for _ in range(24):
            pool.submit(claim)
    assert sorted(outcomes) == ["granted"] * 4 + ["refused"] * 20
    assert store.get("alice").failures == 4  # type: ignore[union-attr]


# -- nothing echoed or logged -------------------------------------------------------------------------


def test_unhandled_error_is_a_500_problem_and_its_message_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Starlette re-raises after its 500 handler so the server logs the traceback, message and
    all; the service contains the error instead and logs only its type and the path."""
    app = create_app(test_settings(tmp_path))

    @app.post("/boom")
    async def boom() -> None:
        raise RuntimeError("sample=[120, 33, 200, 71] pin=493817")

    with caplog.at_level(logging.DEBUG), TestClient(app) as client:  # raise_server_exceptions=True
        r = client.post("/boom", headers=AUTH, json={})
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"] == "the service failed to handle this request"
    assert "493817" not in r.text and "493817" not in caplog.text and "120, 33" not in caplog.text
    assert "unhandled RuntimeError on POST /boom" in caplog.text


@pytest.mark.parametrize(
    "body",
    [
        b'{"sample": [123, 30, 205, "pin-like-493817"]}',
        b'{"sample": [123, 30, 205, 71], "pin": 493817}',
        b'{"sample": [123, 30, 205, 71], "pin": "49"}',
        b'{"sample": [123, 30, 205, NaN], "pin": "493817"}',
        b'{"sample": [123, 30, 205, 71], "pin": "493817", "extra": "7777777"}',
        b'{"sample": [123, 30, 205, 71], "pin": "493817"',
    ],
)
def test_validation_problems_never_echo_values(client: TestClient, body: bytes) -> None:
    r = client.post("/v1/users/alice/verification", headers={**AUTH, "Content-Type": "application/json"}, content=body)
    assert r.status_code in (400, 422) and r.headers["content-type"] == "application/problem+json"
    for value in ("493817", "7777777", "205", "NaN", "pin-like"):
        assert value not in r.text
    assert all(set(err) == {"loc", "msg"} for err in r.json()["errors"])


def test_sqlite_file_is_created_owner_only(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path))) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
    files = sorted(p for p in tmp_path.iterdir() if p.name.startswith("service.db"))
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files), [
        (p.name, oct(p.stat().st_mode)) for p in files
    ]


# -- input bounds ---------------------------------------------------------------------------------------


def test_weighted_vault_slots_are_capped_at_enrolment(client: TestClient) -> None:
    """p*q = 2^21 slots was accepted: an 8 MiB helper record stored per enrolment."""
    sets = [[3, 17, 40, 66, 101], [3, 17, 40, 66, 101]]
    body = {"scheme": "weighted-vault", "params": {"p": 32768, "q": 64, "g": 9, "t": 3}, "samples": sets}
    r = client.post("/v1/users/alice/enrolment", headers=AUTH, json=body)
    assert r.status_code == 422 and r.json()["type"].endswith("/invalid-parameters")
    assert "p*q <= 131072 must hold" in r.json()["detail"]
    assert client.get("/v1/users/alice/report", headers=AUTH).status_code == 404
    body["params"] = {"p": 2048, "q": 64, "g": 9, "t": 3}  # exactly 2^17 slots
    r = client.post("/v1/users/alice/enrolment", headers=AUTH, json=body)
    assert r.status_code == 201, r.text


# -- API keys ---------------------------------------------------------------------------------------------


def test_key_check_compares_equal_length_digests_against_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int]] = []
    real = credentials.hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        seen.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(credentials.hmac, "compare_digest", recording)
    ring = credentials.KeySource(("first-key", "a-much-longer-second-key", "third")).ring
    assert ring.match("first-key").name == "api-key-1"  # type: ignore[union-attr]  # matched first: still compares all
    assert seen == [(32, 32)] * 3
    seen.clear()
    assert ring.match("first-ke") is None and ring.match("") is None
    assert seen == [(32, 32)] * 6


def test_admin_key_is_separate_and_api_keys_are_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with TestClient(create_app(test_settings(tmp_path))) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        assert client.post("/v1/admin/users/alice/reset", headers=AUTH).status_code == 403
        bad = {"Authorization": "Bearer test-api-key-but-longer"}
        assert client.get("/v1/users/alice/report", headers=bad).status_code == 401
        assert client.get("/v1/users/alice/report", headers={"Authorization": "Basic dGVzdA=="}).status_code == 401
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", " , ")
    monkeypatch.setenv("SKETCHAUTH_DATABASE_URL", f"sqlite:///{tmp_path}/x.db")
    with pytest.raises(SettingsError, match="no API key"):
        create_app(Settings.from_env())


# -- store --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", ["MySchema", "schéma", "x\u0661", "1abc", "a-b", 'a"b', "a" * 64, ""])
def test_postgres_schema_names_are_plain_lower_case_identifiers(tmp_path: Path, schema: str) -> None:
    """The name is spliced into SQL (identifiers cannot be parameters): ``isalnum`` let Unicode
    letters and digits through, and upper case broke ``search_path``."""
    settings = test_settings(tmp_path, postgres_schema=schema)
    with pytest.raises(SettingsError, match="SKETCHAUTH_SCHEMA"):
        settings.validate()
    from sketchauth_service.store.postgres import PostgresStore

    with pytest.raises(ValueError, match="lower-case identifier"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", schema=schema)
    assert test_settings(tmp_path, postgres_schema="tenant_2").validate()


def test_revoked_and_replaced_enrolments_leave_no_trace_in_the_sqlite_file(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    store.migrate()
    assert store._conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    old = "$argon2id$v=19$m=65536,t=3,p=4$OLDHASHMARKER0123456789"
    gone = "$argon2id$v=19$m=65536,t=3,p=4$REVOKEDMARKER0123456789"
    store.enrol(NewEnrolment("alice", "interval", {}, b"OLDHELPER" * 8, old, {}, False), replace=False, now=NOW)
    store.enrol(NewEnrolment("bob", "interval", {}, b"GONEHELPER" * 8, gone, {}, False), replace=False, now=NOW)
    store.enrol(NewEnrolment("carol", "interval", {}, b"kept", "$argon2id$kept", {}, False), replace=False, now=NOW)
    store.enrol(NewEnrolment("alice", "interval", {}, b"NEWHELPER", "$argon2id$new", {}, False), replace=True, now=NOW)
    store.revoke("bob", NOW)
    # Scanned with the store still open: closing the last connection checkpoints and deletes
    # the WAL anyway, which once hid that a running server kept the old records in it.
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    store.close()
    for marker in (b"OLDHASHMARKER", b"OLDHELPER", b"REVOKEDMARKER", b"GONEHELPER"):
        assert marker not in data, marker
    assert b"NEWHELPER" in data and b"$argon2id$kept" in data


def test_an_attempt_that_dies_mid_work_is_still_counted(tmp_path: Path) -> None:
    """Whatever ends the attempt after the claim (a crash, a killed worker) leaves it counted."""
    with TestClient(create_app(test_settings(tmp_path))) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        state = client.app.state.service  # type: ignore[attr-defined]

        def dies(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("worker killed mid-decode")

        state.authenticator.verify = dies
        assert api.raw.verify("alice", GENUINE).status_code == 500
        assert state.store.get("alice").failures == 1
