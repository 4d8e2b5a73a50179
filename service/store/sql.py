"""The store's logic written once in SQL that SQLite (3.35+) and PostgreSQL both run.

:class:`SqlStore` implements :class:`~service.store.base.Store` on top of two hooks a dialect
provides: ``_transaction()`` (a context manager yielding a cursor; commits on success, rolls back
on any exception), optionally ``_read()`` (the same for read-only work) and ``_locked_migration()`` (the same, additionally serialising concurrent
migrators). Queries use ``?`` placeholders; PostgreSQL's store rewrites them to ``%s``.

Atomicity: each public method is one transaction. The failure counter is incremented and the
lockout policy applied by one ``UPDATE ... RETURNING`` statement, so the database, not the
process, decides the new count: concurrent verifications in several workers or replicas cannot
lose an increment. Verification uses the conditional form, :meth:`SqlStore.claim_attempt`, which
checks the wait and the disabled flag in the same statement before any decode or hash work.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import Any

from service.store.base import (
    AlreadyEnrolled,
    AttemptRefused,
    AuditEvent,
    FailureState,
    LockoutPolicy,
    NewEnrolment,
    Store,
    UserNotFound,
    UserRecord,
)
from service.store.migrations import MIGRATIONS, statements, tracking_table

__all__ = ["SqlStore"]

_USER_COLUMNS = (
    "user_id, scheme, params, helper, secret_hash, report, has_pin, failures, locked_until, disabled, enrolled_at, "
    "pipeline, pipeline_sha256"
)

_COUNT_FAILURE = """
UPDATE users SET
    failures = failures + 1,
    locked_until = CASE WHEN failures + 1 >= ? THEN ? ELSE locked_until END,
    disabled = CASE WHEN failures + 1 >= ? THEN TRUE ELSE disabled END
WHERE user_id = ?
RETURNING failures, locked_until, disabled"""

# The same update, only while no wait runs and the biometric is enabled: the check and the count
# are one statement, so no number of concurrent attempts can pass the check before being counted.
_CLAIM_ATTEMPT = _COUNT_FAILURE.replace(
    "WHERE user_id = ?", "WHERE user_id = ? AND disabled = FALSE AND locked_until <= ?"
)

# Undo one claim: the count, and the wait or disabled flag when the claim set them (a wait the
# claim overwrote had expired, else the claim would have been refused, so 0 is equivalent).
_RELEASE_ATTEMPT = """
UPDATE users SET
    failures = failures - 1,
    locked_until = CASE WHEN locked_until = ? THEN 0 ELSE locked_until END,
    disabled = CASE WHEN failures - 1 >= ? THEN disabled ELSE FALSE END
WHERE user_id = ? AND failures > 0"""

_INSERT_USER = f"""
INSERT INTO users ({_USER_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, FALSE, ?, ?, ?)
ON CONFLICT (user_id) DO {{action}}
RETURNING user_id"""

_REPLACE_ACTION = """UPDATE SET scheme = excluded.scheme, params = excluded.params, helper = excluded.helper,
    secret_hash = excluded.secret_hash, report = excluded.report, has_pin = excluded.has_pin,
    failures = 0, locked_until = 0, disabled = FALSE, enrolled_at = excluded.enrolled_at,
    pipeline = excluded.pipeline, pipeline_sha256 = excluded.pipeline_sha256"""


class SqlStore(Store):
    """Shared implementation; subclasses supply the connection handling and the dialect name."""

    dialect: str

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Any]:
        """A cursor inside one write transaction."""

    @abstractmethod
    def _locked_migration(self) -> AbstractContextManager[Any]:
        """A cursor inside one transaction that no other migrator runs concurrently."""

    def _read(self) -> AbstractContextManager[Any]:
        """A cursor inside one read-only transaction (by default the same as a write one)."""
        return self._transaction()

    def _sql(self, query: str) -> str:
        return query

    def _run(self, cur: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
        cur.execute(self._sql(query), params)
        return cur

    def _audit(self, cur: Any, user_id: str, event: str, now: float) -> None:
        self._run(cur, "INSERT INTO audit (at, user_id, event) VALUES (?, ?, ?)", (now, user_id, event))

    # -- schema --------------------------------------------------------------------------------------
    def migrate(self) -> int:
        with self._locked_migration() as cur:
            self._run(cur, tracking_table(self.dialect))
            current = self._version(cur)
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                for statement in statements(migration, self.dialect):
                    self._run(cur, statement)
                self._run(
                    cur,
                    "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.description, time.time()),
                )
                current = migration.version
        return current

    def _version(self, cur: Any) -> int:
        row = self._run(cur, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        return int(row[0])

    def schema_version(self) -> int:
        with self._read() as cur:
            return self._version(cur)

    def ping(self) -> None:
        with self._read() as cur:
            self._run(cur, "SELECT 1 FROM schema_migrations LIMIT 1").fetchall()

    # -- reads ---------------------------------------------------------------------------------------
    def get(self, user_id: str) -> UserRecord | None:
        with self._read() as cur:
            row = self._run(cur, f"SELECT {_USER_COLUMNS} FROM users WHERE user_id = ?", (user_id,)).fetchone()
        return None if row is None else _user(row)

    def audit_events(self, user_id: str | None = None, limit: int = 1000) -> list[AuditEvent]:
        where, params = ("WHERE user_id = ?", (user_id,)) if user_id is not None else ("", ())
        with self._read() as cur:
            rows = self._run(
                cur, f"SELECT at, user_id, event FROM audit {where} ORDER BY id DESC LIMIT ?", (*params, limit)
            ).fetchall()
        return [AuditEvent(float(at), uid, event) for at, uid, event in reversed(rows)]

    # -- writes --------------------------------------------------------------------------------------
    def enrol(self, record: NewEnrolment, *, replace: bool, now: float) -> bool:
        values = (
            record.user_id,
            record.scheme,
            json.dumps(record.params, sort_keys=True),
            record.helper,
            record.secret_hash,
            json.dumps(record.report, sort_keys=True),
            record.has_pin,
            now,
            record.pipeline,
            record.pipeline_sha256,
        )
        with self._transaction() as cur:
            if replace:
                existed = self._run(cur, "SELECT 1 FROM users WHERE user_id = ?", (record.user_id,)).fetchone()
                self._run(cur, _INSERT_USER.format(action=_REPLACE_ACTION), values).fetchone()
                self._audit(cur, record.user_id, "re-enrol" if existed else "enrol", now)
                return existed is not None
            inserted = self._run(cur, _INSERT_USER.format(action="NOTHING"), values).fetchone()
            if inserted is None:
                raise AlreadyEnrolled(record.user_id)
            self._audit(cur, record.user_id, "enrol", now)
            return False

    def record_failure(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        with self._transaction() as cur:
            row = self._run(cur, _COUNT_FAILURE, (*_count_parameters(policy, now), user_id)).fetchone()
            if row is None:
                raise UserNotFound(user_id)
            state = _failure_state(row, policy)
            for event in state.events:
                self._audit(cur, user_id, event, now)
        return state

    def claim_attempt(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        with self._transaction() as cur:
            row = self._run(cur, _CLAIM_ATTEMPT, (*_count_parameters(policy, now), user_id, now)).fetchone()
            if row is not None:
                return _failure_state(row, policy)
            current = self._run(cur, "SELECT locked_until, disabled FROM users WHERE user_id = ?", (user_id,)).fetchone()
        if current is None:
            raise UserNotFound(user_id)
        raise AttemptRefused(user_id, locked_until=float(current[0]), disabled=bool(current[1]))

    def settle_failure(self, user_id: str, claim: FailureState, now: float) -> None:
        with self._transaction() as cur:
            for event in claim.events:
                self._audit(cur, user_id, event, now)

    def release_attempt(self, user_id: str, claim: FailureState, policy: LockoutPolicy) -> None:
        with self._transaction() as cur:
            self._run(cur, _RELEASE_ATTEMPT, (claim.locked_until, policy.disable_threshold, user_id))

    def record_success(self, user_id: str, now: float, *, old_hash: str, new_hash: str | None = None) -> None:
        with self._transaction() as cur:
            row = self._run(
                cur,
                "UPDATE users SET failures = 0, locked_until = 0, disabled = FALSE "
                "WHERE user_id = ? AND secret_hash = ? RETURNING user_id",
                (user_id, old_hash),
            ).fetchone()
            if row is None:
                # Revoked or re-enrolled while this verification ran: the answer stands, the
                # state belongs to the new enrolment.
                return
            self._audit(cur, user_id, "verify-ok", now)
            if new_hash is not None:
                self._run(cur, "UPDATE users SET secret_hash = ? WHERE user_id = ?", (new_hash, user_id))
                self._audit(cur, user_id, "rehash", now)

    def revoke(self, user_id: str, now: float) -> None:
        with self._transaction() as cur:
            if self._run(cur, "DELETE FROM users WHERE user_id = ? RETURNING user_id", (user_id,)).fetchone() is None:
                raise UserNotFound(user_id)
            self._audit(cur, user_id, "revoke", now)

    def reset(self, user_id: str, now: float) -> None:
        with self._transaction() as cur:
            row = self._run(
                cur,
                "UPDATE users SET failures = 0, locked_until = 0, disabled = FALSE WHERE user_id = ? RETURNING user_id",
                (user_id,),
            ).fetchone()
            if row is None:
                raise UserNotFound(user_id)
            self._audit(cur, user_id, "reset", now)


def _count_parameters(policy: LockoutPolicy, now: float) -> tuple[int, float, int]:
    """The policy's values for the ``SET`` placeholders of ``_COUNT_FAILURE`` and ``_CLAIM_ATTEMPT``."""
    return (policy.lockout_threshold, now + policy.lockout_seconds, policy.disable_threshold)


def _failure_state(row: tuple[Any, ...], policy: LockoutPolicy) -> FailureState:
    """The state a counted failure left, with the audit events it calls for."""
    failures, locked_until, disabled = int(row[0]), float(row[1]), bool(row[2])
    events = ["verify-fail"]
    if failures >= policy.lockout_threshold:
        events.append("lock")
    if failures == policy.disable_threshold:
        events.append("disable")
    return FailureState(failures, locked_until, disabled, tuple(events))


def _user(row: tuple[Any, ...]) -> UserRecord:
    return UserRecord(
        user_id=row[0],
        scheme=row[1],
        params=json.loads(row[2]),
        helper=bytes(row[3]),
        secret_hash=row[4],
        report=json.loads(row[5]),
        has_pin=bool(row[6]),
        failures=int(row[7]),
        locked_until=float(row[8]),
        disabled=bool(row[9]),
        enrolled_at=float(row[10]),
        pipeline=row[11],
        pipeline_sha256=row[12],
    )
