"""The repository interface every store implements, and the records it trades in (the service model).

A store keeps, per user, exactly what the service model allows: the scheme name and parameters, the public
helper data, the argon2id hash of the recovered secret, the entropy report, whether a PIN is
mixed in, the feature pipeline's name and configuration hash when one was used (never the
embedding), and the throttling state (consecutive failures, wait-until time, disabled flag). The
audit table holds (time, user id, event, acting client's key name) and nothing else. No method takes a sample or a PIN.

Every method is one transaction. Failure counting is a single atomic
``UPDATE ... SET failures = failures + 1 ... RETURNING`` so that concurrent verifications in
any number of processes or replicas sharing the database never lose a count.

The audit trail is the throttling state's history: every change (an attempt counted, a wait
imposed, the biometric disabled, the state cleared) is written in the transaction that makes
it, and no method takes a change back, so a user's events replayed in order give the stored
state (the event grammar is in :mod:`.sql`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AUDIT_CLIENT",
    "AUDIT_EVENTS",
    "AlreadyEnrolled",
    "Attempt",
    "AttemptRefused",
    "AuditEvent",
    "FailureState",
    "LockoutPolicy",
    "NewEnrolment",
    "Store",
    "StoreError",
    "UserNotFound",
    "UserRecord",
]

#: The name of the API key on whose behalf the current request acts (``None`` outside a
#: request): the service sets it when it authenticates a request, and every audit row the
#: request writes records it in ``audit.client``. A context variable, so it follows the
#: request into the worker thread that runs the store call.
AUDIT_CLIENT: ContextVar[str | None] = ContextVar("sketchauth_audit_client", default=None)

#: Every event the audit table can hold.
AUDIT_EVENTS = frozenset(
    {
        "enrol",
        "re-enrol",
        "attempt",
        "verify-ok",
        "verify-fail",
        "lock",
        "disable",
        "rehash",
        "revoke",
        "reset",
        "pin-change",
        "integrity",
        "seal",
    }
)


class StoreError(Exception):
    """Base of the store's own errors."""


class AlreadyEnrolled(StoreError):
    """The user is enrolled and the caller did not ask to replace the enrolment."""


class UserNotFound(StoreError):
    """No enrolment for this user id."""


class AttemptRefused(StoreError):
    """The user's biometric is waiting out a lockout or is disabled: no attempt may run now."""

    def __init__(self, user_id: str, *, locked_until: float, disabled: bool) -> None:
        super().__init__(user_id)
        self.locked_until = locked_until
        self.disabled = disabled


@dataclass(frozen=True, slots=True)
class LockoutPolicy:
    """NIST SP 800-63B-4 §3.2.3 biometric throttling.

    After ``lockout_threshold`` consecutive failures every further failure imposes a wait of
    ``lockout_seconds``; at ``disable_threshold`` consecutive failures the biometric is disabled
    until re-enrolment or an admin reset. A success resets the count.
    """

    lockout_threshold: int = 5
    lockout_seconds: int = 30
    disable_threshold: int = 50


@dataclass(frozen=True, slots=True)
class NewEnrolment:
    """What enrolment writes: public data and a slow hash only."""

    user_id: str
    scheme: str
    params: dict[str, Any]
    helper: bytes
    secret_hash: str
    report: dict[str, Any]
    has_pin: bool
    #: The server-side feature pipeline enrolled through (name and ``Pipeline.fingerprint``).
    pipeline: str | None = None
    pipeline_sha256: str | None = None
    #: Public key-release parameters (``sketchauth.enrolment.new_key_params``): argon2id costs, salt.
    key_params: str | None = None


@dataclass(frozen=True, slots=True)
class UserRecord:
    """One stored enrolment with its throttling state (times are Unix seconds)."""

    user_id: str
    scheme: str
    params: dict[str, Any]
    helper: bytes
    secret_hash: str
    report: dict[str, Any]
    has_pin: bool
    failures: int
    locked_until: float
    disabled: bool
    enrolled_at: float
    pipeline: str | None = None
    pipeline_sha256: str | None = None
    #: ``None`` for an enrolment made before key release: :meth:`Store.ensure_key_params` sets it.
    key_params: str | None = None
    #: Pepper (:mod:`sketchauth_service.store.records`): which pepper sealed the record and its nonce (``None``: clear).
    pepper_id: str | None = None
    pepper_nonce: bytes | None = None
    #: The per-user record version (raised by every write of the protected part; bound into the seal).
    version: int = 0


@dataclass(frozen=True, slots=True)
class FailureState:
    """The throttling state right after a failure was counted, and the audit events written for it."""

    failures: int
    locked_until: float
    disabled: bool
    events: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Attempt:
    """A claimed verification attempt: the enrolment it runs against and the count it took.

    ``record`` is ``None`` when the id has no enrolment (the attempt was counted on the id's
    probe row instead, :meth:`Store.claim_probe`) or when its stored record failed its integrity
    checks (counted on its own row, with an ``integrity`` audit event). Then ``decoy`` is another
    enrolment of this deployment, opened at the cost of opening the id's own: the attempt must
    be verified against it (outcome ignored), so that its work and time are those of a failure.
    """

    record: UserRecord | None
    claim: FailureState
    decoy: UserRecord | None = None

    @property
    def target(self) -> UserRecord | None:
        """What to verify against: the record, or else the decoy (``None`` only before any enrolment was read)."""
        return self.record if self.record is not None else self.decoy


@dataclass(frozen=True, slots=True)
class AuditEvent:
    at: float
    user_id: str
    event: str
    #: The name of the API key that acted (``None`` for rows written before keys were named).
    client: str | None = None


class Store(ABC):
    """One small repository interface; :mod:`.sqlite` and :mod:`.postgres` implement it."""

    @abstractmethod
    def migrate(self) -> int:
        """Bring the schema to the newest version (idempotent); return that version."""

    @abstractmethod
    def schema_version(self) -> int:
        """The newest migration applied to this database (0 for an empty one)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise if the database cannot answer a trivial query (readiness)."""

    @abstractmethod
    def get(self, user_id: str) -> UserRecord | None:
        """The user's enrolment, or ``None`` when there is none."""

    @abstractmethod
    def enrol(self, record: NewEnrolment, *, replace: bool, now: float) -> bool:
        """Write an enrolment and its audit event in one transaction.

        Returns True when an existing enrolment was replaced (which also clears the throttling
        state, and erases the old record's remnants as :meth:`revoke` does); raises
        :class:`AlreadyEnrolled` if one exists and ``replace`` is false.
        """

    @abstractmethod
    def record_failure(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        """Count one failed verification atomically and apply the lockout policy (whatever the
        current wait or disabled flag); audit it as an ``attempt`` and its ``verify-fail``."""

    @abstractmethod
    def claim_attempt(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        """Count a verification attempt as a failure *before* any decode or hash work runs.

        One atomic conditional update: refused with :class:`AttemptRefused` (nothing counted)
        while the user waits out a lockout or is disabled, :class:`UserNotFound` if not enrolled.
        Counting first means concurrent attempts cannot all pass the lockout check before any of
        them is counted, and a client (or process) that dies mid-attempt still spent the attempt.
        The claim's changes are audited with it (``attempt``, and ``lock``/``disable`` when it
        imposed them) and are never taken back: a success clears them with
        :meth:`record_success`; a failure, malformed samples included, records its outcome with
        :meth:`settle_failure`. A refusal reports the state that refused it, which is current: a
        wait still running at ``now`` or a disabled biometric.
        """

    @abstractmethod
    def begin_attempt(
        self, user_id: str, policy: LockoutPolicy, now: float, *, admit: Callable[[UserRecord], None] | None = None
    ) -> Attempt:
        """Read the enrolment and claim the attempt (:meth:`claim_attempt`, or :meth:`claim_probe`
        for an id with no enrolment) in ONE transaction: a verification's only store round trip
        before its decode and hash work. :class:`AttemptRefused` as the claims raise it.

        ``admit`` sees the enrolment before the claim; an exception it raises propagates and
        nothing is counted (a request the enrolment cannot serve at all, such as one whose
        feature pipeline changed since).
        """

    @abstractmethod
    def claim_probe(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        """:meth:`claim_attempt` for a user id with no enrolment: the same count, policy, refusals
        and audit rows, kept on the id's own throttling row (created at its first attempt).

        An unknown id must be indistinguishable from an enrolled one whose sample is wrong:
        the same answers (``429`` and ``423`` included, at the same counts) after the same store
        round trips. The row is deleted when the id is enrolled or revoked.
        """

    @abstractmethod
    def settle_failure(self, user_id: str, claim: FailureState, now: float) -> None:
        """Audit that a claimed attempt failed (``verify-fail``); its count was taken by the claim."""

    @abstractmethod
    def record_success(self, user_id: str, now: float, *, version: int, new_hash: str | None = None) -> None:
        """Reset the failure count, wait and disabled flag if the record is still at ``version`` (the
        enrolment the attempt verified against); with ``new_hash``, also replace the hash (a new
        version) and erase the old one's remnants."""

    @abstractmethod
    def change_pin(
        self,
        user_id: str,
        now: float,
        *,
        version: int,
        helper: bytes,
        secret_hash: str,
    ) -> bool:
        """After a successful verification: clear the throttling state (``verify-ok``) and replace
        the helper data and hash with those of the new PIN (``pin-change``, a new record version),
        in one transaction, if the record is still at ``version``; then erase the old record's
        remnants. False (nothing written) if the enrolment was revoked or changed meanwhile."""

    @abstractmethod
    def ensure_key_params(self, user_id: str, key_params: str) -> str | None:
        """The user's key-release parameters, setting them to ``key_params`` if there are none
        yet (an enrolment made before key release); ``None`` if the user is not enrolled. Of
        concurrent first uses, the first to commit wins and every caller gets its value."""

    @abstractmethod
    def revoke(self, user_id: str, now: float) -> None:
        """Delete the enrolment (:class:`UserNotFound` if there is none), and erase what the
        database engine keeps of it outside its live pages where a connection can (SQLite's WAL)."""

    @abstractmethod
    def reset(self, user_id: str, now: float) -> None:
        """Admin reset: clear failures, wait and disabled flag (:class:`UserNotFound` if none)."""

    @abstractmethod
    def audit_events(self, user_id: str | None = None, limit: int = 1000) -> list[AuditEvent]:
        """The newest audit events, oldest first, optionally for one user."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""
