"""The store's logic written once in SQL that SQLite (3.35+) and PostgreSQL both run.

:class:`SqlStore` implements :class:`~sketchauth_service.store.base.Store` on top of two hooks a dialect
provides: ``_transaction()`` (a context manager yielding a cursor; commits on success, rolls back
on any exception), optionally ``_read()`` (the same for read-only work) and ``_locked_migration()``
(the same, additionally serialising concurrent migrators). Queries use ``?`` placeholders;
PostgreSQL's store rewrites them to ``%s``.

Atomicity: each public method is one transaction. The failure counter is incremented and the
lockout policy applied by one ``UPDATE ... RETURNING`` statement, so the database, not the
process, decides the new count: concurrent verifications in several workers or replicas cannot
lose an increment. Verification uses the conditional form, :meth:`SqlStore.claim_attempt`, which
checks the wait and the disabled flag in the same statement before any decode or hash work.

Audit truth: every change of a user's throttling state is written to ``audit`` in the same
transaction that makes it, after the statement that locks the user's row, so one user's
state-changing rows are numbered (``audit.id``) in the order the changes took effect, on
PostgreSQL as on SQLite. No method takes back a count, a wait or a disabled flag it or another
attempt set (there is no "hand back"); only a success, an admin reset or a new enrolment clears
them, each with its own row. Replaying a user's rows therefore reproduces the stored state:

* ``attempt``: ``failures + 1`` (a claimed verification, a failure unless a success follows);
* ``lock``: a wait of ``lockout_seconds`` from the row's time (only when that is positive);
* ``disable``: the biometric is disabled (at exactly ``disable_threshold`` failures);
* ``verify-ok``, ``reset``, ``enrol``, ``re-enrol``: failures, wait and disabled flag cleared;
* ``verify-fail`` (the outcome of a claimed attempt), ``rehash``: no throttling change;
* ``revoke``: the enrolment and every throttling state of the id are gone;
* ``pin-change``: right after the ``verify-ok`` of the attempt that authorised it, the helper data
  and hash were replaced by those under the new PIN (no throttling change).
* ``integrity``: right after an attempt's ``attempt``, its record failed the record codec's
  checks (:mod:`.records`); ``seal``: the one-time conversion sealed a clear record (neither
  changes the throttling state).

User ids with no enrolment: a verification against one is claimed and counted like any other
(:meth:`SqlStore.claim_probe`), on the id's row of ``probes`` instead of ``users``, with the same
audit rows (``attempt``, ``lock``, ``disable``, ``verify-fail``): an unknown id is throttled and
answered exactly like an enrolled one, after the same store round trips. Enrolling the id
deletes its ``probes`` row (the ``enrol`` row clears the state, as the grammar says).

Round trips: a verification makes two store transactions, whoever the id is and whatever the
outcome (``tests/service/test_store_round_trips.py`` counts them, on both dialects).
:meth:`SqlStore.begin_attempt` reads the enrolment and claims the attempt in one transaction
(three statements: the read, the claim on ``users`` or on ``probes``, the audit row), so the
attempt is counted before any decode or hash work and a request that dies afterwards has still
spent it. The second transaction records the outcome, and it cannot be folded into the first:

* a success must reset the counter (``verify-ok``), which is only known after the argon2 check;
* a failure needs no throttling change (the claim counted it), but its ``verify-fail`` row is
  part of the audit contract: every answered failure has one, so an attempt row without an
  outcome marks a request that died mid-way. Writing it in the claim would audit an outcome
  before it happened, and a success could not take it back.

Measured (``benchmarks/bench_service.py``, ``docs/service/performance.md``): before this a
verification made three transactions (read, claim, outcome). Merging the read into the claim
saves one lock acquisition and commit on SQLite and a pool checkout and commit on PostgreSQL;
the statements stay the same. On PostgreSQL a write commit waits for the WAL flush, 3.7 ms
per commit on the benchmark machine against well under 1 ms for everything else the store does
in a request, so the two commits of a verification were what bounded its throughput. The
outcome transaction therefore commits asynchronously there (``synchronous_commit = off``, only
for that transaction: :meth:`SqlStore._outcome_transaction`) while the claim stays synchronous:
the count is on disk before any decode or hash work starts, as before, and a server crash can
lose only a whole outcome transaction (PostgreSQL never applies part of one), which leaves the
attempt counted as a failure with no ``verify-fail`` row, exactly what a request that died
mid-way leaves. SQLite's ``synchronous = NORMAL`` already gives every commit that durability.

Remnants: after a change that removes or overwrites helper data or a hash (revocation, a
replacing enrolment, a re-hash) :meth:`SqlStore._erase_remnants` runs; SQLite uses it to
checkpoint and truncate its write-ahead log (see :mod:`.sqlite`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sketchauth_service.observability import METRICS
from sketchauth_service.store.base import (
    AUDIT_CLIENT,
    AlreadyEnrolled,
    Attempt,
    AttemptRefused,
    AuditEvent,
    FailureState,
    LockoutPolicy,
    NewEnrolment,
    Store,
    StoreError,
    UserNotFound,
    UserRecord,
)
from sketchauth_service.store.migrations import LATEST_VERSION, MIGRATIONS, statements, tracking_table
from sketchauth_service.store.records import (
    Content,
    ConversionCheck,
    PepperUnavailable,
    RecordCodec,
    RecordIntegrityError,
    ResealPlan,
    ResealResult,
)

__all__ = ["MAX_RECORD_VERSION", "SchemaTooNew", "SqlStore", "UnreadableRow", "checked_row"]

log = logging.getLogger("sketchauth.service")


class SchemaTooNew(StoreError):
    """The database was migrated by a newer release than this code: refuse it rather than misread it."""


#: Whether the migration tracking table exists (the store's schema on PostgreSQL: its search_path).
_HAS_TRACKING_TABLE = {
    "sqlite": "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
    "postgres": "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() "
    "AND tablename = 'schema_migrations'",
}

_USER_COLUMNS = (
    "user_id, scheme, params, helper, secret_hash, report, has_pin, failures, locked_until, disabled, enrolled_at, "
    "pipeline, pipeline_sha256, key_params, pepper_id, pepper_nonce, record_version"  # the order RecordCodec.open reads
)
#: The columns a write of the protected part sets, in :class:`~sketchauth_service.store.records.Columns` order.
_PROTECTED_SET = (
    "scheme = ?, params = ?, helper = ?, secret_hash = ?, report = ?, has_pin = ?, pipeline = ?, pipeline_sha256 = ?, "
    "key_params = ?, pepper_id = ?, pepper_nonce = ?, record_version = ?"
)

_COUNT_FAILURE = """
UPDATE users SET
    failures = failures + 1,
    locked_until = CASE WHEN ? AND failures + 1 >= ? THEN ? ELSE locked_until END,
    disabled = CASE WHEN failures + 1 >= ? THEN TRUE ELSE disabled END
WHERE user_id = ?
RETURNING failures, locked_until, disabled"""

# The same update, only while no wait runs and the biometric is enabled: the check and the count
# are one statement, so no number of concurrent attempts can pass the check before being counted.
_CLAIM_ATTEMPT = _COUNT_FAILURE.replace(
    "WHERE user_id = ?", "WHERE user_id = ? AND disabled = FALSE AND locked_until <= ?"
)

# The claim of an attempt against a user id with no enrolment: the same counting and the same
# policy on the id's row of ``probes`` (created at its first attempt), so that such an id is
# throttled exactly like an enrolled one and the request makes the same store round trips.
_CLAIM_PROBE = """
INSERT INTO probes (user_id, failures, locked_until, disabled)
VALUES (?, 1, CASE WHEN ? AND 1 >= ? THEN ? ELSE 0 END, 1 >= ?)
ON CONFLICT (user_id) DO UPDATE SET
    failures = probes.failures + 1,
    locked_until = CASE WHEN ? AND probes.failures + 1 >= ? THEN ? ELSE probes.locked_until END,
    disabled = CASE WHEN probes.failures + 1 >= ? THEN TRUE ELSE probes.disabled END
WHERE probes.disabled = FALSE AND probes.locked_until <= ?
RETURNING failures, locked_until, disabled"""

_INSERT_USER = """
INSERT INTO users (scheme, params, helper, secret_hash, report, has_pin, pipeline, pipeline_sha256, key_params,
    pepper_id, pepper_nonce, record_version, enrolled_at, user_id, failures, locked_until, disabled)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, FALSE)
ON CONFLICT (user_id) DO NOTHING
RETURNING user_id"""

# A replacing enrolment: the new record, throttling state cleared (same value order).
_REPLACE_USER = f"""
UPDATE users SET {_PROTECTED_SET}, enrolled_at = ?, failures = 0, locked_until = 0, disabled = FALSE
WHERE user_id = ?
RETURNING user_id"""

#: How often :meth:`SqlStore.enrol` with ``replace`` retries when concurrent enrolments and
#: revocations of the same user keep changing whether a row exists between its two statements.
_ENROL_ROUNDS = 3


class SqlStore(Store):
    """Shared implementation; subclasses supply the connection handling and the dialect name."""

    dialect: str
    #: Appended to a ``SELECT`` to lock the rows it reads until the transaction ends (PostgreSQL's
    #: ``FOR UPDATE``); empty where a write transaction already excludes every other writer.
    _row_lock: str = ""
    #: The last enrolled row an attempt opened: an unknown id's attempt opens it as its decoy.
    _last_row: tuple[Any, ...] | None = None
    #: How rows become records and back (sealed by the pepper, or clear): :meth:`use_codec`.
    codec: RecordCodec = RecordCodec()

    def use_codec(self, codec: RecordCodec) -> None:
        """Read and write every record through ``codec`` from now on (the service sets it at start-up)."""
        self.codec = codec
        self._last_row = None

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Any]:
        """A cursor inside one write transaction."""

    @abstractmethod
    def _locked_migration(self) -> AbstractContextManager[Any]:
        """A cursor inside one transaction that no other migrator runs concurrently."""

    def _lock_user(self, cur: Any, user_id: str) -> None:
        """Serialise this transaction with other enrolments and revocations of ``user_id``.

        Nothing by default: a write transaction already excludes every other writer.
        """

    def _read(self) -> AbstractContextManager[Any]:
        """A cursor inside one read-only transaction (by default the same as a write one)."""
        return self._transaction()

    def _outcome_transaction(self) -> AbstractContextManager[Any]:
        """The write transaction that records a verification's outcome (by default a write one).

        A dialect may let it commit without waiting for the disk (see the module's "Round
        trips"): losing it in a machine crash loses a whole transaction, never part of one.
        """
        return self._transaction()

    def _sql(self, query: str) -> str:
        return query

    def _run(self, cur: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
        cur.execute(self._sql(query), params)
        return cur

    def _audit(self, cur: Any, user_id: str, events: Sequence[str], now: float) -> None:
        """Append ``events`` in order, in one statement (one round trip however many)."""
        if not events:
            return
        client = AUDIT_CLIENT.get()
        rows = ", ".join(["(?, ?, ?, ?)"] * len(events))
        values = tuple(value for event in events for value in (now, user_id, event, client))
        self._run(cur, f"INSERT INTO audit (at, user_id, event, client) VALUES {rows}", values)
        METRICS.audit_written(events)

    def _erase_remnants(self) -> None:
        """Called after a committed change removed or overwrote helper data or a hash.

        Erase what the database keeps of the old values outside its live pages, where the
        engine allows it from a connection. Nothing by default: PostgreSQL keeps dead row
        versions until an operator's ``VACUUM FULL`` (documented for operators), and no
        statement a request could afford removes them.
        """

    # -- schema --------------------------------------------------------------------------------------
    def migrate(self) -> int:
        with self._locked_migration() as cur:
            self._run(cur, tracking_table(self.dialect))
            current = self._version(cur)
            if current > LATEST_VERSION:
                raise SchemaTooNew(
                    f"the database schema is at version {current}, newer than this release's {LATEST_VERSION}: "
                    "it was migrated by a newer sketchauth; run that release (or restore a backup made before it)"
                )
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

    def applied_migrations(self) -> list[tuple[int, str, float]]:
        """``(version, description, applied_at)`` of each applied migration, oldest first; ``[]`` if none.

        Read-only, unlike :meth:`migrate`: it creates nothing, so an operator can look at a
        database (``sketchauth db status``) without changing it.
        """
        with self._read() as cur:
            if not self._run(cur, _HAS_TRACKING_TABLE[self.dialect]).fetchone()[0]:
                return []
            rows = self._run(cur, "SELECT version, description, applied_at FROM schema_migrations ORDER BY version")
            return [(int(version), str(text), float(at)) for version, text, at in rows.fetchall()]

    def enrolment_count(self) -> int:
        """How many users are enrolled (``sketchauth db restore`` asks before replacing a database)."""
        with self._read() as cur:
            return int(self._run(cur, "SELECT COUNT(*) FROM users").fetchone()[0])

    def ping(self) -> None:
        with self._read() as cur:
            self._run(cur, "SELECT 1 FROM schema_migrations LIMIT 1").fetchall()

    # -- reads ---------------------------------------------------------------------------------------
    def get(self, user_id: str) -> UserRecord | None:
        """The user's record, or ``None`` when there is none *or it fails its integrity checks* (alerted)."""
        with self._read() as cur:
            row = self._run(cur, f"SELECT {_USER_COLUMNS} FROM users WHERE user_id = ?", (user_id,)).fetchone()
        if row is None:
            return None
        try:
            return self._open_row(row)
        except RecordIntegrityError as exc:
            with self._transaction() as cur:
                self._integrity_alert(cur, user_id, exc, time.time())
            return None

    def _integrity_alert(self, cur: Any, user_id: str, exc: RecordIntegrityError, now: float) -> None:
        """An ``integrity`` audit event (counted in the metrics) and an error log line: the cause, not the user."""
        self._audit(cur, user_id, ["integrity"], now)
        log.error("integrity alert: a stored record was refused (%s); see the audit trail's 'integrity' events", exc)

    def _open_row(self, row: Sequence[Any]) -> UserRecord:
        """The record of a ``users`` row: its columns checked (:func:`checked_row`), then opened by the codec.

        Whatever is wrong with a row (a column of the wrong type or out of range, a seal that does
        not open) is a :class:`~sketchauth_service.store.records.RecordIntegrityError`, never another
        exception: the callers count it as a failed attempt with an ``integrity`` audit event.
        """
        checked = checked_row(row)
        try:
            return self.codec.open(checked)
        except RecordIntegrityError:
            raise
        except (ValueError, TypeError, OverflowError, KeyError, IndexError) as exc:  # a clear record's JSON
            raise RecordIntegrityError(f"the stored record does not parse ({type(exc).__name__})") from None

    def _decoy(self) -> UserRecord | None:
        """The last enrolment opened, opened again: the cost and the target of an attempt without a usable record."""
        row = self._last_row
        if row is None:
            return None
        try:
            return self._open_row(row)
        except RecordIntegrityError:  # altered since, or a rotation ran: the cost was paid all the same
            return None

    def audit_events(self, user_id: str | None = None, limit: int = 1000) -> list[AuditEvent]:
        where, params = ("WHERE user_id = ?", (user_id,)) if user_id is not None else ("", ())
        with self._read() as cur:
            rows = self._run(
                cur, f"SELECT at, user_id, event, client FROM audit {where} ORDER BY id DESC LIMIT ?", (*params, limit)
            ).fetchall()
        return [AuditEvent(float(at), uid, event, client) for at, uid, event, client in reversed(rows)]

    # -- writes --------------------------------------------------------------------------------------
    def enrol(self, record: NewEnrolment, *, replace: bool, now: float) -> bool:
        with self._transaction() as cur:
            if replace:
                self._lock_user(cur, record.user_id)
            version = self._next_version(cur, record.user_id)
            values = (*self.codec.columns(record.user_id, Content.of(record), version).values(), now, record.user_id)
            replaced = self._write_enrolment(cur, values, values, replace)
            self._run(cur, "DELETE FROM probes WHERE user_id = ?", (record.user_id,))
            self._audit(cur, record.user_id, ["re-enrol" if replaced else "enrol"], now)
        self._marked(record.user_id, version)
        if replaced:
            self._erase_remnants()
        return replaced

    def _next_version(self, cur: Any, user_id: str) -> int:
        """The version a new record of ``user_id`` takes: above the stored one and above its rollback mark."""
        row = self._run(cur, "SELECT record_version FROM users WHERE user_id = ?", (user_id,)).fetchone()
        mark = self.codec.ledger.mark(user_id) if self.codec.ledger is not None else 0
        return max(0 if row is None else _version_or_zero(row[0]), mark) + 1

    def _marked(self, user_id: str, version: int) -> None:
        """After a commit: raise the user's rollback mark to ``version`` (when a ledger is configured)."""
        if self.codec.ledger is not None:
            self.codec.ledger.advance(user_id, version)

    def _rewrite(self, cur: Any, user_id: str, version: int, **changes: Any) -> int | None:
        """Replace protected fields of ``user_id``'s record at ``version`` with ``changes``, as version + 1.

        Reads the row locked, opens it through the codec, seals the changed record anew (fresh
        nonce, the next version in its associated data). ``None`` (nothing written) if the record
        is gone or no longer at ``version``, or does not open any more (alerted).
        """
        row = self._run(
            cur,
            f"SELECT {_USER_COLUMNS} FROM users WHERE user_id = ? AND record_version = ?{self._row_lock}",
            (user_id, version),
        ).fetchone()
        if row is None:
            return None
        try:
            record = self._open_row(row)
        except RecordIntegrityError as exc:  # altered since the attempt read it: nothing is written
            self._integrity_alert(cur, user_id, exc, time.time())
            return None
        content = dataclasses.replace(Content.of(record), **changes)
        columns = self.codec.columns(user_id, content, version + 1)
        self._run(cur, f"UPDATE users SET {_PROTECTED_SET} WHERE user_id = ?", (*columns.values(), user_id))
        return version + 1

    def _write_enrolment(self, cur: Any, insert: tuple[Any, ...], update: tuple[Any, ...], replace: bool) -> bool:
        """Insert the row, or with ``replace`` overwrite an existing one; True if one was replaced.

        Whether a row existed is what the statement that wrote it found (the update matched, or
        the insert did not conflict), never an earlier read: a revocation or another enrolment
        committing in between (possible under PostgreSQL's read committed) cannot make the audit
        say ``enrol`` for a replacement or ``re-enrol`` for a first enrolment. The caller holds
        :meth:`_lock_user`, so the second round is only needed against writers that do not
        (a replica of an older version during a rolling upgrade).
        """
        if not replace:
            if self._run(cur, _INSERT_USER, insert).fetchone() is None:
                raise AlreadyEnrolled(insert[-1])
            return False
        for _ in range(_ENROL_ROUNDS):
            if self._run(cur, _REPLACE_USER, update).fetchone() is not None:
                return True
            if self._run(cur, _INSERT_USER, insert).fetchone() is not None:
                return False
        raise StoreError("concurrent enrolments and revocations of this user kept conflicting; retry")

    def record_failure(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        with self._transaction() as cur:
            row = self._run(cur, _COUNT_FAILURE, (*_count_parameters(policy, now), user_id)).fetchone()
            if row is None:
                raise UserNotFound(user_id)
            state = _failure_state(row, policy)
            events = (*state.events, "verify-fail")
            self._audit(cur, user_id, events, now)
        return FailureState(state.failures, state.locked_until, state.disabled, events)

    def claim_attempt(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        with self._transaction() as cur:
            state = self._claim_enrolled(cur, user_id, policy, now)
            if state is None:
                raise UserNotFound(user_id)
        return state

    def claim_probe(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        with self._transaction() as cur:
            return self._claim_probe(cur, user_id, policy, now)

    def begin_attempt(
        self, user_id: str, policy: LockoutPolicy, now: float, *, admit: Callable[[UserRecord], None] | None = None
    ) -> Attempt:
        """Read and claim in one transaction (see the module's "Round trips").

        Three statements whoever the id is, so that the store's time does not tell enrolled ids
        from unknown ones: the read, the claim (``users`` or ``probes``) and the audit row; a
        refusal is the read, the claim that matched nothing and the locked read of the state
        that refused it. Only a revocation committing between the read and the claim adds
        statements (the attempt then becomes one against an unknown id, as it would have been
        a moment later).
        """
        with self._transaction() as cur:
            row = self._run(cur, f"SELECT {_USER_COLUMNS} FROM users WHERE user_id = ?", (user_id,)).fetchone()
            if row is not None:
                try:
                    record = self._open_row(row)
                except RecordIntegrityError as exc:
                    # Altered, moved, rolled back, unsealed or unreadable: a counted failure, an
                    # alert, and the work of a failure against the decoy.
                    state = self._claim_unusable(cur, user_id, policy, now, exc)
                    if state is not None:
                        return Attempt(None, state, self._decoy())
                else:
                    self._last_row = row  # one reference assignment: atomic across threads
                    if admit is not None:
                        admit(record)  # raising rolls back a transaction that has written nothing
                    state = self._claim_enrolled(cur, user_id, policy, now)
                    if state is not None:
                        return Attempt(record, state)
            # An unknown id opens the last enrolled row (parsing, unsealing, the rollback mark's
            # look-up: what an enrolled id's own row costs) and is verified against it.
            return Attempt(None, self._claim_probe(cur, user_id, policy, now), self._decoy())

    def _claim_unusable(
        self, cur: Any, user_id: str, policy: LockoutPolicy, now: float, exc: RecordIntegrityError
    ) -> FailureState | None:
        """Claim an attempt against a record that failed its checks, and alert (``integrity``).

        Counted on the record's own row, or, when that row's throttling columns are themselves
        unreadable (a wait that is not a finite time, a count that is not a number), on the id's
        ``probes`` row, whose state SQL can count: either way the attempt is throttled, counted and
        answered as any failure. ``None``: the row is gone (the attempt is then an unknown id's).
        """
        if isinstance(exc, UnreadableRow) and exc.throttling:
            state: FailureState | None = self._claim_probe(cur, user_id, policy, now)
        else:
            state = self._claim_enrolled(cur, user_id, policy, now)
        if state is not None:
            self._integrity_alert(cur, user_id, exc, now)
        return state

    def _claim_enrolled(self, cur: Any, user_id: str, policy: LockoutPolicy, now: float) -> FailureState | None:
        """Claim on ``users`` and audit it; ``None`` if the id has no enrolment, refusals raised."""
        row = self._claim(cur, user_id, policy, now)
        if row is None:
            # Refused: read the state that refused it, locked so that it is current. Under
            # read committed a success or reset may have committed since the update looked;
            # then the attempt is allowed after all, and claimed under the lock.
            current = self._run(
                cur, f"SELECT locked_until, disabled FROM users WHERE user_id = ?{self._row_lock}", (user_id,)
            ).fetchone()
            if current is None:
                return None
            locked_until, disabled = float(current[0]), bool(current[1])
            if disabled or locked_until > now:
                raise AttemptRefused(user_id, locked_until=locked_until, disabled=disabled)
            row = self._claim(cur, user_id, policy, now)
            if row is None:  # only a dialect without row locks could get here
                raise AttemptRefused(user_id, locked_until=locked_until, disabled=disabled)
        state = _failure_state(row, policy)
        self._audit(cur, user_id, state.events, now)
        return state

    def _claim_probe(self, cur: Any, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        """Claim on the id's ``probes`` row and audit it; refusals raised."""
        parameters = _count_parameters(policy, now)
        for _ in range(_ENROL_ROUNDS):
            row = self._run(cur, _CLAIM_PROBE, (user_id, *parameters, *parameters, now)).fetchone()
            if row is not None:
                break
            # The id's row exists and refuses (a running wait, disabled): report its state,
            # read locked so that it is current. Gone meanwhile (enrolled or revoked): again.
            current = self._run(
                cur, f"SELECT locked_until, disabled FROM probes WHERE user_id = ?{self._row_lock}", (user_id,)
            ).fetchone()
            if current is not None:
                raise AttemptRefused(user_id, locked_until=float(current[0]), disabled=bool(current[1]))
        else:
            raise StoreError("concurrent enrolments and revocations of this user kept conflicting; retry")
        state = _failure_state(row, policy)
        self._audit(cur, user_id, state.events, now)
        return state

    def _claim(self, cur: Any, user_id: str, policy: LockoutPolicy, now: float) -> Any:
        return self._run(cur, _CLAIM_ATTEMPT, (*_count_parameters(policy, now), user_id, now)).fetchone()

    def settle_failure(self, user_id: str, claim: FailureState, now: float) -> None:
        with self._outcome_transaction() as cur:
            self._audit(cur, user_id, ["verify-fail"], now)

    def record_success(self, user_id: str, now: float, *, version: int, new_hash: str | None = None) -> None:
        written = version
        with self._outcome_transaction() as cur:
            if new_hash is not None:
                rewritten = self._rewrite(cur, user_id, version, secret_hash=new_hash)
                if rewritten is None:
                    return  # revoked or changed meanwhile: the answer stands, the state is the new record's
                written = rewritten
            row = self._run(
                cur,
                "UPDATE users SET failures = 0, locked_until = 0, disabled = FALSE "
                "WHERE user_id = ? AND record_version = ? RETURNING user_id",
                (user_id, written),
            ).fetchone()
            if row is None:
                # Revoked or re-enrolled while this verification ran: the answer stands, the
                # state belongs to the new enrolment.
                return
            self._audit(cur, user_id, ["verify-ok"] if new_hash is None else ["verify-ok", "rehash"], now)
        if new_hash is not None:
            self._marked(user_id, written)
            self._erase_remnants()

    def change_pin(
        self,
        user_id: str,
        now: float,
        *,
        version: int,
        helper: bytes,
        secret_hash: str,
    ) -> bool:
        with self._transaction() as cur:
            written = self._rewrite(cur, user_id, version, helper=helper, secret_hash=secret_hash)
            if written is None:
                return False
            self._run(
                cur, "UPDATE users SET failures = 0, locked_until = 0, disabled = FALSE WHERE user_id = ?", (user_id,)
            )
            self._audit(cur, user_id, ["verify-ok", "pin-change"], now)
        self._marked(user_id, written)
        self._erase_remnants()
        return True

    def ensure_key_params(self, user_id: str, key_params: str) -> str | None:
        """Set once under the record's own version (re-sealed with a fresh nonce): no verification in
        flight loses its claim on the record, and a record rolled back to before it only draws a new salt."""
        with self._transaction() as cur:
            row = self._run(
                cur, f"SELECT {_USER_COLUMNS} FROM users WHERE user_id = ?{self._row_lock}", (user_id,)
            ).fetchone()
            if row is None:
                return None
            try:
                record = self._open_row(row)
            except RecordIntegrityError as exc:  # altered since the attempt read it: no key
                self._integrity_alert(cur, user_id, exc, time.time())
                return None
            if record.key_params is not None:
                return record.key_params
            content = dataclasses.replace(Content.of(record), key_params=key_params)
            columns = self.codec.columns(user_id, content, record.version)
            self._run(cur, f"UPDATE users SET {_PROTECTED_SET} WHERE user_id = ?", (*columns.values(), user_id))
        return key_params

    def revoke(self, user_id: str, now: float) -> None:
        with self._transaction() as cur:
            self._lock_user(cur, user_id)
            row = self._run(cur, "DELETE FROM users WHERE user_id = ? RETURNING record_version", (user_id,)).fetchone()
            if row is None:
                raise UserNotFound(user_id)
            self._run(cur, "DELETE FROM probes WHERE user_id = ?", (user_id,))
            self._audit(cur, user_id, ["revoke"], now)
        mark = self.codec.ledger.mark(user_id) if self.codec.ledger is not None else 0
        # A restored copy of the deleted row is below its mark (an unreadable version: above the old mark).
        self._marked(user_id, max(_version_or_zero(row[0]), mark) + 1)
        self._erase_remnants()

    def reset(self, user_id: str, now: float) -> None:
        with self._transaction() as cur:
            row = self._run(
                cur,
                "UPDATE users SET failures = 0, locked_until = 0, disabled = FALSE WHERE user_id = ? RETURNING user_id",
                (user_id,),
            ).fetchone()
            if row is None:
                raise UserNotFound(user_id)
            self._audit(cur, user_id, ["reset"], now)

    # -- pepper maintenance: census, start-up probe, conversion, rotation ---------------------------------------
    # Store operations (the service's pepper module decides what to run; only the store runs SQL).
    def pepper_census(self) -> dict[str | None, int]:
        """How many records each pepper id sealed (``None``: stored in clear; a non-text id as its ``str``)."""
        with self._read() as cur:
            rows = self._run(cur, "SELECT pepper_id, COUNT(*) FROM users GROUP BY pepper_id").fetchall()
        counts: dict[str | None, int] = {}
        for pepper_id, n in rows:
            key = None if pepper_id is None else str(pepper_id)
            counts[key] = counts.get(key, 0) + int(n)
        return counts

    def hash_census(self, needs_rehash: Callable[[str], bool], *, batch_size: int) -> dict[str, int]:
        """Records by the state of their hash, opened through the codec (``unreadable``: refused by it)."""
        counts = {"current": 0, "rehash_pending": 0, "unreadable": 0}
        for row in self._user_rows(batch_size):
            try:
                record = self.codec.open(row)
                pending = needs_rehash(record.secret_hash)
            except (RecordIntegrityError, ValueError):  # argon2's InvalidHashError is a ValueError
                counts["unreadable"] += 1
                continue
            counts["rehash_pending" if pending else "current"] += 1
        return counts

    def _user_rows(self, batch_size: int) -> Iterator[tuple[Any, ...]]:
        """Every user row in ``user_id`` order, one read transaction per batch (text ids; others sort apart)."""
        after: Any = ""
        while True:
            with self._read() as cur:
                query = f"SELECT {_USER_COLUMNS} FROM users WHERE user_id > ? ORDER BY user_id LIMIT ?"
                rows = self._run(cur, query, (after, batch_size)).fetchall()
            if not rows:
                return
            yield from rows
            after = rows[-1][0]

    def sealed_sample(self, pepper_ids: Sequence[str], limit: int) -> list[tuple[Any, ...]]:
        """Up to ``limit`` rows sealed by one of ``pepper_ids`` (newest enrolments first): the start-up probe."""
        if not pepper_ids:
            return []
        marks = ", ".join("?" * len(pepper_ids))
        with self._read() as cur:
            query = f"SELECT {_USER_COLUMNS} FROM users WHERE pepper_id IN ({marks}) ORDER BY enrolled_at DESC LIMIT ?"
            return list(self._run(cur, query, (*pepper_ids, limit)).fetchall())

    def conversion_check(self, *, show: int = 5) -> ConversionCheck:
        """What stands against sealing this database's clear records (:class:`ConversionCheck`)."""
        with self._read() as cur:
            clear = int(self._run(cur, "SELECT COUNT(*) FROM users WHERE pepper_id IS NULL").fetchone()[0])
            sealed = int(self._run(cur, "SELECT COUNT(*) FROM users WHERE pepper_id IS NOT NULL").fetchone()[0])
            events = int(self._run(cur, "SELECT COUNT(*) FROM audit WHERE event = 'seal'").fetchone()[0])
            rows = self._run(cur, _UNATTRIBUTED, (show,)).fetchall()
        return ConversionCheck(clear, sealed, events, tuple(str(row[0]) for row in rows))

    def clear_user_ids(self) -> list[str]:
        """The ids of the records stored in clear (a conversion checks each against the rollback ledger)."""
        with self._read() as cur:
            rows = self._run(cur, "SELECT user_id FROM users WHERE pepper_id IS NULL ORDER BY user_id").fetchall()
        return [str(row[0]) for row in rows]

    def reseal(self, plan: ResealPlan) -> ResealResult:
        """Open the rows ``plan`` selects with its reader, write them with its writer, one transaction per batch.

        A row the reader refuses is skipped and counted ``unreadable``; unless it was only sealed
        by a pepper not given, it also gets an ``integrity`` audit event and an error log line
        (altered, moved, rolled back, wrong-typed values): one damaged row never stops the run.
        """
        writer = plan.writer
        if writer.current is None:
            raise ValueError("a re-sealing job needs a sealer to write with")
        which, args = (_CLEAR, ()) if plan.convert else (_SEALED_ELSEWHERE, (writer.current.id,))
        query = _PENDING.format(which=which) + self._row_lock
        after: Any = ""
        done = _ResealTally()
        while plan.max_batches is None or done.batches < plan.max_batches:
            with self._transaction() as cur:
                rows = self._run(cur, query, (*args, after, plan.batch_size)).fetchall()
                if not rows:
                    done.complete = True
                    break
                for row in rows:
                    self._reseal_row(cur, row, plan, done)
                after = rows[-1][0]
            done.batches += 1
            for user_id, version in done.written:
                if writer.ledger is not None:
                    writer.ledger.advance(user_id, version)
            done.written.clear()
            self._erase_remnants()  # the old stored forms leave the write-ahead log too
        remaining = sum(n for pid, n in self.pepper_census().items() if pid != writer.current.id)
        return ResealResult(writer.current.id, done.rewrapped, done.unreadable, done.batches, remaining, done.complete)

    def _reseal_row(self, cur: Any, row: tuple[Any, ...], plan: ResealPlan, done: _ResealTally) -> None:
        user_id = row[0]
        try:
            record = plan.reader.open(row)
            if plan.mark is not None and record.version < plan.mark(record.user_id):
                raise RecordIntegrityError("the record is older than its rollback mark")
        except RecordIntegrityError as exc:
            done.unreadable += 1
            if not isinstance(exc, PepperUnavailable):
                self._integrity_alert(cur, str(user_id), exc, time.time())
            return
        version = record.version + 1 if plan.convert else record.version
        columns = plan.writer.columns(record.user_id, Content.of(record), version)
        self._run(cur, f"UPDATE users SET {_PROTECTED_SET} WHERE user_id = ?", (*columns.values(), record.user_id))
        if plan.convert:
            self._audit(cur, record.user_id, ["seal"], time.time())
        done.written.append((record.user_id, version))
        done.rewrapped += 1


@dataclasses.dataclass
class _ResealTally:
    """The running counts of :meth:`SqlStore.reseal`."""

    rewrapped: int = 0
    unreadable: int = 0
    batches: int = 0
    complete: bool = False
    written: list[tuple[str, int]] = dataclasses.field(default_factory=list)


_PENDING = f"SELECT {_USER_COLUMNS} FROM users WHERE {{which}} AND user_id > ? ORDER BY user_id LIMIT ?"
_SEALED_ELSEWHERE = "pepper_id IS NOT NULL AND pepper_id <> ?"
_CLEAR = "pepper_id IS NULL"
#: Clear records whose user never enrolled according to the audit trail: written into the database by hand.
_UNATTRIBUTED = """
SELECT user_id FROM users WHERE pepper_id IS NULL AND NOT EXISTS (
    SELECT 1 FROM audit WHERE audit.user_id = users.user_id AND audit.event IN ('enrol', 're-enrol'))
ORDER BY user_id LIMIT ?"""


def _count_parameters(policy: LockoutPolicy, now: float) -> tuple[bool, int, float, int]:
    """The policy's values for the ``SET`` placeholders of ``_COUNT_FAILURE`` and ``_CLAIM_ATTEMPT``.

    A zero ``lockout_seconds`` imposes no wait at all: ``locked_until`` is left alone rather
    than set to ``now``, which a concurrent attempt that read the clock a moment earlier would
    see as a running wait (a spurious 429).
    """
    return (
        policy.lockout_seconds > 0,
        policy.lockout_threshold,
        now + policy.lockout_seconds,
        policy.disable_threshold,
    )


def _failure_state(row: tuple[Any, ...], policy: LockoutPolicy) -> FailureState:
    """The state a counted attempt left, with the audit events of the changes it made."""
    failures, locked_until, disabled = int(row[0]), float(row[1]), bool(row[2])
    events = ["attempt"]
    if policy.lockout_seconds > 0 and failures >= policy.lockout_threshold:
        events.append("lock")
    if failures == policy.disable_threshold:
        events.append("disable")
    return FailureState(failures, locked_until, disabled, tuple(events))


# -- reading rows ----------------------------------------------------------------------------------------
#: Largest record version a row may hold (a signed 64-bit column; the seal encodes it in 8 bytes).
MAX_RECORD_VERSION = (1 << 63) - 1


class UnreadableRow(RecordIntegrityError):
    """A ``users`` row whose columns do not have their types or ranges (written around the store).

    ``throttling``: among them are the throttling columns (``failures``, ``locked_until``,
    ``disabled``), which SQL then cannot count on.
    """

    def __init__(self, columns: Sequence[str]) -> None:
        super().__init__(f"stored columns of the wrong type or out of range: {', '.join(columns)}")
        self.columns = tuple(columns)
        self.throttling = bool(set(columns) & {"failures", "locked_until", "disabled"})


_TEXT = (1, 2, 4, 5)
_OPTIONAL_TEXT = (11, 12, 13, 14)
_COLUMN_NAMES = tuple(name.strip() for name in _USER_COLUMNS.split(","))


def _is_bytes(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview))


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_time(value: Any, *, low: float = -math.inf) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value < math.inf


def checked_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """A ``users`` row (``_USER_COLUMNS`` order) with every column of its type and range:
    :class:`UnreadableRow` naming the columns that are not (never their values).

    SQLite stores whatever a writer puts in a column (``'abc'`` as a record version, text as
    helper data, ``inf`` as a wait); PostgreSQL's types stop most of it but not every range
    (a negative version, an infinite time). Checked here, before any of it is used.
    """
    if len(row) != len(_COLUMN_NAMES):
        raise UnreadableRow(["the row's column count"])
    bad = [i for i in _TEXT if not isinstance(row[i], str)]
    bad += [i for i in _OPTIONAL_TEXT if row[i] is not None and not isinstance(row[i], str)]
    bad += [i for i in (6, 9) if not _is_flag(row[i])]
    if not isinstance(row[0], str):
        bad.append(0)
    if not _is_bytes(row[3]):
        bad.append(3)
    if row[15] is not None and not _is_bytes(row[15]):
        bad.append(15)
    if not _is_int(row[7], 0, MAX_RECORD_VERSION):
        bad.append(7)
    if not _is_time(row[8], low=0.0):
        bad.append(8)
    if not _is_time(row[10]):
        bad.append(10)
    if not _is_int(row[16], 0, MAX_RECORD_VERSION):
        bad.append(16)
    if bad:
        raise UnreadableRow([_COLUMN_NAMES[i] for i in sorted(bad)])
    return tuple(row)


def _version_or_zero(value: Any) -> int:
    """A stored record version, or 0 when it is not one (the row is being replaced or deleted)."""
    return value if _is_int(value, 0, MAX_RECORD_VERSION) else 0
