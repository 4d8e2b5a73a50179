"""The store contract, run against SQLiteStore and PostgresStore alike (PostgreSQL for real)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sketchauth_service.store import (
    AlreadyEnrolled,
    LockoutPolicy,
    NewEnrolment,
    Store,
    UserNotFound,
    open_store,
)
from sketchauth_service.store.migrations import LATEST_VERSION

NOW = 1_800_000_000.0
POLICY = LockoutPolicy(lockout_threshold=3, lockout_seconds=30, disable_threshold=6)


def _record(user_id: str = "alice", secret_hash: str = "$argon2id$h1", helper: bytes = b"\x01helper") -> NewEnrolment:
    return NewEnrolment(
        user_id=user_id,
        scheme="interval",
        params={"n": 256, "v": 8, "features": 4, "step": None},
        helper=helper,
        secret_hash=secret_hash,
        report={"scheme": "interval", "loss_bound_bits": 15.6},
        has_pin=True,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(database URL, schema) for each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}", "public"
    else:
        yield request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")


@pytest.fixture
def store(store_url: tuple[str, str]) -> Iterator[Store]:
    url, schema = store_url
    s = open_store(url, postgres_schema=schema)
    s.migrate()
    yield s
    s.close()


def _events(store: Store, user_id: str = "alice") -> list[str]:
    return [e.event for e in store.audit_events(user_id)]


def test_migrations_are_versioned_and_idempotent(store_url: tuple[str, str]) -> None:
    url, schema = store_url
    first = open_store(url, postgres_schema=schema)
    assert first.migrate() == LATEST_VERSION
    second = open_store(url, postgres_schema=schema)
    assert second.migrate() == LATEST_VERSION  # a second replica starting up changes nothing
    assert second.schema_version() == LATEST_VERSION
    first.ping()
    first.close()
    second.close()


def test_a_schema_newer_than_the_code_is_refused(store: Store, tmp_path: Path) -> None:
    """A database migrated by a newer release is refused, at migration and at service start, not misread."""
    from fastapi.testclient import TestClient
    from service_testing import test_settings
    from sketchauth_service.app import create_app
    from sketchauth_service.store.sql import SchemaTooNew

    with store._transaction() as cur:  # type: ignore[attr-defined]
        store._run(  # type: ignore[attr-defined]
            cur,
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
            (LATEST_VERSION + 1, "from a newer release", NOW),
        )
    with pytest.raises(SchemaTooNew, match=f"version {LATEST_VERSION + 1}, newer than this release's"):
        store.migrate()
    with pytest.raises(SchemaTooNew), TestClient(create_app(test_settings(tmp_path), store=store)):
        pass


def test_enrol_get_roundtrip(store: Store) -> None:
    assert store.get("alice") is None
    assert store.enrol(_record(), replace=False, now=NOW) is False
    got = store.get("alice")
    assert got is not None
    assert (got.scheme, got.helper, got.secret_hash, got.has_pin) == ("interval", b"\x01helper", "$argon2id$h1", True)
    assert got.params == {"n": 256, "v": 8, "features": 4, "step": None}
    assert got.report == {"scheme": "interval", "loss_bound_bits": 15.6}
    assert (got.failures, got.locked_until, got.disabled, got.enrolled_at) == (0, 0.0, False, NOW)
    assert _events(store) == ["enrol"]


def test_duplicate_enrolment_conflicts_unless_replace(store: Store) -> None:
    store.enrol(_record(), replace=False, now=NOW)
    with pytest.raises(AlreadyEnrolled):
        store.enrol(_record(secret_hash="$argon2id$other"), replace=False, now=NOW + 1)
    assert store.get("alice").secret_hash == "$argon2id$h1"  # type: ignore[union-attr]
    for _ in range(POLICY.disable_threshold):
        store.record_failure("alice", POLICY, NOW + 2)
    assert store.enrol(_record(secret_hash="$argon2id$h2", helper=b"\x02"), replace=True, now=NOW + 3) is True
    got = store.get("alice")
    assert got is not None
    assert (got.secret_hash, got.helper, got.failures, got.locked_until, got.disabled) == (
        "$argon2id$h2",
        b"\x02",
        0,
        0.0,
        False,
    )
    assert store.enrol(_record("bob"), replace=True, now=NOW) is False
    assert _events(store)[-1] == "re-enrol" and _events(store, "bob") == ["enrol"]


def test_lockout_policy_exact_thresholds(store: Store) -> None:
    store.enrol(_record(), replace=False, now=NOW)
    states = [store.record_failure("alice", POLICY, NOW + i) for i in range(7)]
    assert [s.failures for s in states] == [1, 2, 3, 4, 5, 6, 7]
    # No wait before the third failure; from then on each failure waits 30 s from its own time.
    assert [s.locked_until for s in states] == [0.0, 0.0, NOW + 32, NOW + 33, NOW + 34, NOW + 35, NOW + 36]
    assert [s.disabled for s in states] == [False] * 5 + [True, True]
    assert states[0].events == ("attempt", "verify-fail")
    assert states[2].events == ("attempt", "lock", "verify-fail")
    assert states[5].events == ("attempt", "lock", "disable", "verify-fail")
    assert states[6].events == ("attempt", "lock", "verify-fail")  # disabled once, not again
    assert _events(store) == ["enrol", *(event for s in states for event in s.events)]


def test_zero_lockout_seconds_imposes_no_wait(store: Store) -> None:
    """A zero wait left ``locked_until = now``: an attempt that read the clock a moment earlier
    saw a running wait and was refused (a spurious 429), and the audit said ``lock``."""
    policy = LockoutPolicy(lockout_threshold=2, lockout_seconds=0, disable_threshold=4)
    store.enrol(_record(), replace=False, now=NOW)
    for i in range(3):
        assert store.claim_attempt("alice", policy, NOW + i).locked_until == 0.0
    store.claim_attempt("alice", policy, NOW + 1)  # an earlier clock reading: still allowed; disables
    assert _events(store) == ["enrol", "attempt", "attempt", "attempt", "attempt", "disable"]


def test_success_resets_and_rehash_is_guarded(store: Store) -> None:
    store.enrol(_record(), replace=False, now=NOW)
    store.record_failure("alice", POLICY, NOW)
    store.record_failure("alice", POLICY, NOW)
    read = store.get("alice")
    assert read is not None and read.version == 1
    store.record_success("alice", NOW + 1, version=read.version, new_hash="$argon2id$rehashed")
    got = store.get("alice")
    assert got is not None and (got.failures, got.secret_hash, got.version) == (0, "$argon2id$rehashed", 2)
    assert _events(store)[-2:] == ["verify-ok", "rehash"]
    # A verification that read the old record must not overwrite a newer one.
    store.record_success("alice", NOW + 2, version=read.version, new_hash="$argon2id$stale")
    assert store.get("alice").secret_hash == "$argon2id$rehashed"  # type: ignore[union-attr]


def test_revoke_and_reset(store: Store) -> None:
    with pytest.raises(UserNotFound):
        store.revoke("nobody", NOW)
    with pytest.raises(UserNotFound):
        store.reset("nobody", NOW)
    with pytest.raises(UserNotFound):
        store.record_failure("nobody", POLICY, NOW)
    store.enrol(_record(), replace=False, now=NOW)
    for _ in range(POLICY.disable_threshold):
        store.record_failure("alice", POLICY, NOW)
    store.reset("alice", NOW + 1)
    got = store.get("alice")
    assert got is not None and (got.failures, got.locked_until, got.disabled) == (0, 0.0, False)
    store.revoke("alice", NOW + 2)
    assert store.get("alice") is None
    assert _events(store)[-2:] == ["reset", "revoke"]


def test_audit_holds_time_user_and_event_only(store: Store) -> None:
    store.enrol(_record(), replace=False, now=NOW)
    store.record_failure("alice", POLICY, NOW + 1)
    events = store.audit_events()
    assert [(e.at, e.user_id, e.event) for e in events] == [
        (NOW, "alice", "enrol"),
        (NOW + 1, "alice", "attempt"),
        (NOW + 1, "alice", "verify-fail"),
    ]


def test_concurrent_failures_are_all_counted(store_url: tuple[str, str]) -> None:
    """Several handles (as several processes would have) count failures without losing any."""
    url, schema = store_url
    handles = [open_store(url, postgres_schema=schema) for _ in range(4)]
    handles[0].migrate()
    handles[0].enrol(_record(), replace=False, now=NOW)
    policy = LockoutPolicy(lockout_threshold=10_000, lockout_seconds=30, disable_threshold=10_000)
    per_thread = 25
    errors: list[Any] = []

    def hammer(handle: Store) -> None:
        try:
            for _ in range(per_thread):
                handle.record_failure("alice", policy, NOW)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(h,)) for h in handles for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert handles[0].get("alice").failures == len(threads) * per_thread  # type: ignore[union-attr]
    assert _events(handles[1]).count("verify-fail") == len(threads) * per_thread
    for h in handles:
        h.close()


def test_open_store_rejects_unknown_urls() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        open_store("mysql://x")
