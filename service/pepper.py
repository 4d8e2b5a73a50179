"""The deployment's pepper in the service: helpers sealed at the storage boundary, and rotation.

**What.** With ``SKETCHAUTH_PEPPER`` set, every helper record the service stores is sealed as a
whole (encrypt-then-MAC, :mod:`sketchauth.pepper`) under keys of the pepper and a fresh
per-enrolment nonce; the nonce and the pepper's public id are stored with the record
(``users.pepper_nonce``, ``users.pepper_id``, migration 6). Two deployments enrolling the same
people therefore store unrelated records (no equal bytes, no common difference, no clear
tolerances or partition structure, whatever the scheme or mixed structure), and a thief of the
database alone learns nothing from the helpers about the templates. A sealed record that was
altered, or read with the wrong pepper, is refused (:class:`~sketchauth.errors.SketchFormatError`).
The pepper itself is never written to the database nor logged (the settings log shows its id).

**Where.** :class:`PepperedStore` wraps the store: ``enrol`` and ``change_pin`` wrap the helper
they are given, ``get`` unwraps what it reads. Everything above the store (the routes, the
authenticator, the decoy) sees clear helpers only, exactly as without a pepper. A record whose
``pepper_id`` is ``NULL`` was stored in clear (before the pepper, or by a deployment without
one) and is read as it is; ``sketchauth pepper rotate`` wraps it.

**Rotation** (:func:`rotate`): needs no biometric, only the old pepper: every record not yet
wrapped by the new pepper is unwrapped (old pepper, or clear) and wrapped again with a fresh
nonce, in batches of one transaction each, in ``user_id`` order. Each record says which pepper
wrapped it, so an interrupted rotation resumes where it stopped (a re-run skips the records
already wrapped by the new pepper) and, meanwhile, every record is readable with the old *or*
the new pepper: run the service with ``SKETCHAUTH_PEPPER=new`` and
``SKETCHAUTH_PEPPER_PREVIOUS=old`` during the rotation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.store.base import (
    Attempt,
    AuditEvent,
    FailureState,
    LockoutPolicy,
    NewEnrolment,
    Store,
    StoreError,
    UserRecord,
)
from service.store.sql import SqlStore
from sketchauth.errors import SketchAuthError, SketchFormatError
from sketchauth.pepper import Pepper, new_nonce, unwrap, wrap

if TYPE_CHECKING:
    from service.settings import Settings

__all__ = [
    "DEFAULT_BATCH",
    "PepperRing",
    "PepperSettingsError",
    "PepperUnavailable",
    "PepperedStore",
    "RotationResult",
    "census",
    "check_database",
    "rotate",
]

log = logging.getLogger("sketchauth.service")

#: Records re-wrapped per transaction by a rotation.
DEFAULT_BATCH = 200
#: Largest batch a rotation accepts.
MAX_BATCH = 10_000


class PepperSettingsError(ValueError):
    """The pepper settings are unusable (the message names the variable; it never quotes a pepper)."""


class PepperUnavailable(StoreError):
    """A record was wrapped by a pepper this process does not have."""


@dataclass(frozen=True, slots=True)
class PepperRing:
    """The current pepper (wraps new helpers) and earlier ones (read-only, during a rotation)."""

    current: Pepper | None = None
    previous: tuple[Pepper, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> PepperRing:
        if settings.pepper and settings.pepper_file:
            raise PepperSettingsError("set SKETCHAUTH_PEPPER or SKETCHAUTH_PEPPER_FILE, not both")
        text = settings.pepper
        if settings.pepper_file:
            text = read_pepper_file(settings.pepper_file, "SKETCHAUTH_PEPPER_FILE")
        current = parse_pepper(text, "SKETCHAUTH_PEPPER") if text else None
        previous = tuple(parse_pepper(p, "SKETCHAUTH_PEPPER_PREVIOUS") for p in settings.pepper_previous)
        if current is None and settings.require_pepper:
            raise PepperSettingsError(
                "SKETCHAUTH_REQUIRE_PEPPER is on but no pepper is configured: set SKETCHAUTH_PEPPER (or "
                "SKETCHAUTH_PEPPER_FILE) to a secret of at least 128 bits, e.g. "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))', and keep it out of the database"
            )
        if previous and current is None:
            raise PepperSettingsError("SKETCHAUTH_PEPPER_PREVIOUS needs a current SKETCHAUTH_PEPPER to rotate to")
        return cls(current, tuple(p for p in previous if current is None or p.id != current.id))

    def by_id(self, pepper_id: str) -> Pepper | None:
        for pepper in (self.current, *self.previous):
            if pepper is not None and pepper.id == pepper_id:
                return pepper
        return None

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(p.id for p in (self.current, *self.previous) if p is not None)


def parse_pepper(text: str, variable: str) -> Pepper:
    """A pepper from configured text (:class:`PepperSettingsError` naming ``variable`` if too weak)."""
    try:
        return Pepper.from_text(text)
    except SketchAuthError as exc:
        raise PepperSettingsError(f"{variable}: {exc}") from None


def read_pepper_file(path: str, variable: str) -> str:
    """The first line of a pepper file (:class:`PepperSettingsError` if unreadable or empty)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PepperSettingsError(f"{variable}: cannot read {path}: {type(exc).__name__}") from None
    if not lines or not lines[0].strip():
        raise PepperSettingsError(f"{variable}: {path} is empty")
    return lines[0].strip()


# -- wrapping at the storage boundary ------------------------------------------------------------------
def unwrap_record(ring: PepperRing, record: UserRecord) -> UserRecord:
    """``record`` with its helper in clear (a clear record is returned as it is)."""
    if record.pepper_id is None:
        return record
    pepper = ring.by_id(record.pepper_id)
    if pepper is None or record.pepper_nonce is None:
        raise PepperUnavailable(
            f"the helper of this record was wrapped by pepper id {record.pepper_id}, which is not configured: "
            "set SKETCHAUTH_PEPPER (or SKETCHAUTH_PEPPER_PREVIOUS during a rotation)"
        )
    return dataclasses.replace(record, helper=unwrap(record.helper, pepper, record.pepper_nonce))


def wrap_new(pepper: Pepper, helper: bytes) -> tuple[bytes, str, bytes]:
    """``(stored helper, pepper id, nonce)`` for a helper about to be stored."""
    nonce = new_nonce()
    return wrap(helper, pepper, nonce), pepper.id, nonce


class PepperedStore(Store):
    """A store whose helpers are wrapped by the current pepper (:mod:`sketchauth.pepper`).

    Every method of :class:`Store` is delegated; the three that carry helper data convert it:
    ``enrol`` and ``change_pin`` wrap with a fresh nonce, ``get`` unwraps. Any new method that
    reads or writes helper data must be added here as well (an abstract method left out makes
    this class impossible to instantiate, so it cannot be forgotten silently).
    """

    def __init__(self, inner: Store, ring: PepperRing) -> None:
        if ring.current is None:
            raise ValueError("a PepperedStore needs a current pepper")
        self.inner = inner
        self.ring = ring
        self.current: Pepper = ring.current
        #: The last wrapped record read (see :meth:`get`).
        self._last: UserRecord | None = None

    # -- helper data ---------------------------------------------------------------------------------
    def get(self, user_id: str) -> UserRecord | None:
        """The record with its helper unwrapped; every call costs one unwrap, whatever it finds.

        Unsealing costs a few microseconds (a keyed BLAKE2b tag and a SHAKE-256 keystream over
        the record); small, but an unknown id would otherwise cost nothing. So a miss, or a
        record stored in clear, unseals the last sealed record read instead (result discarded),
        as :attr:`service.authenticator.Authenticator.decoy` does for decoding.
        """
        return self._unwrapped(self.inner.get(user_id))

    def begin_attempt(
        self, user_id: str, policy: LockoutPolicy, now: float, *, admit: Callable[[UserRecord], None] | None = None
    ) -> Attempt:
        """The store's one-transaction read and claim, with the record's helper unwrapped as :meth:`get` does."""
        attempt = self.inner.begin_attempt(user_id, policy, now, admit=admit)
        return dataclasses.replace(attempt, record=self._unwrapped(attempt.record))

    def _unwrapped(self, record: UserRecord | None) -> UserRecord | None:
        """``record`` with its helper in clear, at the cost of exactly one unwrap whatever it is."""
        if record is not None and record.pepper_id is not None:
            self._last = record  # one reference assignment: atomic across threads
            return unwrap_record(self.ring, record)
        decoy = self._last
        if decoy is not None:
            with contextlib.suppress(PepperUnavailable, SketchFormatError):
                unwrap_record(self.ring, decoy)
        return record

    def enrol(self, record: NewEnrolment, *, replace: bool, now: float) -> bool:
        helper, pepper_id, nonce = wrap_new(self.current, record.helper)
        wrapped = dataclasses.replace(record, helper=helper, pepper_id=pepper_id, pepper_nonce=nonce)
        return self.inner.enrol(wrapped, replace=replace, now=now)

    def change_pin(
        self,
        user_id: str,
        now: float,
        *,
        old_hash: str,
        helper: bytes,
        secret_hash: str,
        pepper_id: str | None = None,
        pepper_nonce: bytes | None = None,
    ) -> bool:
        stored, pepper_id, nonce = wrap_new(self.current, helper)
        return self.inner.change_pin(
            user_id,
            now,
            old_hash=old_hash,
            helper=stored,
            secret_hash=secret_hash,
            pepper_id=pepper_id,
            pepper_nonce=nonce,
        )

    # -- delegated as they are -------------------------------------------------------------------------
    def migrate(self) -> int:
        return self.inner.migrate()

    def schema_version(self) -> int:
        return self.inner.schema_version()

    def ping(self) -> None:
        self.inner.ping()

    def record_failure(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        return self.inner.record_failure(user_id, policy, now)

    def claim_attempt(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        return self.inner.claim_attempt(user_id, policy, now)

    def claim_probe(self, user_id: str, policy: LockoutPolicy, now: float) -> FailureState:
        return self.inner.claim_probe(user_id, policy, now)

    def settle_failure(self, user_id: str, claim: FailureState, now: float) -> None:
        self.inner.settle_failure(user_id, claim, now)

    def record_success(self, user_id: str, now: float, *, old_hash: str, new_hash: str | None = None) -> None:
        self.inner.record_success(user_id, now, old_hash=old_hash, new_hash=new_hash)

    def ensure_key_params(self, user_id: str, key_params: str) -> str | None:
        return self.inner.ensure_key_params(user_id, key_params)

    def revoke(self, user_id: str, now: float) -> None:
        self.inner.revoke(user_id, now)

    def reset(self, user_id: str, now: float) -> None:
        self.inner.reset(user_id, now)

    def audit_events(self, user_id: str | None = None, limit: int = 1000) -> list[AuditEvent]:
        return self.inner.audit_events(user_id, limit)

    def close(self) -> None:
        self.inner.close()


def peppered(store: Store, ring: PepperRing) -> Store:
    """``store`` behind a :class:`PepperedStore` when a pepper is configured, else as it is."""
    return store if ring.current is None else PepperedStore(store, ring)


def _sql(store: Store) -> Any:
    """The SQL store under any wrappers (rotation and the census run SQL of their own)."""
    while isinstance(store, PepperedStore):
        store = store.inner
    if not isinstance(store, SqlStore):
        raise TypeError(f"pepper rotation needs an SQL store, not {type(store).__name__}")
    return store


# -- census and start-up check -------------------------------------------------------------------------
def census(store: Store) -> dict[str | None, int]:
    """How many records each pepper id wrapped (``None``: stored in clear)."""
    sql = _sql(store)
    with sql._read() as cur:
        rows = sql._run(cur, "SELECT pepper_id, COUNT(*) FROM users GROUP BY pepper_id").fetchall()
    return {row[0]: int(row[1]) for row in rows}


def check_database(store: Store, ring: PepperRing) -> dict[str | None, int]:
    """Refuse (:class:`PepperSettingsError`) a database holding records no configured pepper reads.

    Called at start-up after the migrations: a deployment started without its pepper, or with a
    new one before the rotation finished and without ``SKETCHAUTH_PEPPER_PREVIOUS``, would
    otherwise fail every verification of those users. Records stored in clear are readable, and
    counted (a warning says to rotate when a pepper is set).
    """
    try:
        counts = census(store)
    except TypeError:  # a store of another kind (tests): nothing to check
        return {}
    unknown = sorted(pid for pid in counts if pid is not None and pid not in ring.ids)
    if unknown:
        held = sum(counts[pid] for pid in unknown)
        raise PepperSettingsError(
            f"{held} stored helpers were wrapped by pepper ids {', '.join(unknown)}, which no configured pepper "
            "has: set SKETCHAUTH_PEPPER to the deployment's pepper (and SKETCHAUTH_PEPPER_PREVIOUS to the old "
            "one while a rotation runs)"
        )
    if ring.current is not None and counts.get(None):
        log.warning(
            "%d helpers are stored in clear (enrolled before the pepper): run 'sketchauth pepper rotate' to wrap them",
            counts[None],
        )
    return counts


# -- rotation ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RotationResult:
    """What one rotation run did.

    ``remaining``: records not wrapped by the new pepper after the run (unreadable ones
    included); ``complete``: the run went through every record (not stopped by ``max_batches``).
    """

    new_id: str
    rewrapped: int
    unreadable: int
    batches: int
    remaining: int
    complete: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_PENDING = (
    "SELECT user_id, helper, pepper_id, pepper_nonce FROM users "
    "WHERE (pepper_id IS NULL OR pepper_id <> ?) AND user_id > ? ORDER BY user_id LIMIT ?"
)
_REWRAP = "UPDATE users SET helper = ?, pepper_id = ?, pepper_nonce = ? WHERE user_id = ?"


def rotate(
    store: Store,
    new: Pepper,
    old: Sequence[Pepper] | Iterable[Pepper] = (),
    *,
    batch_size: int = DEFAULT_BATCH,
    max_batches: int | None = None,
) -> RotationResult:
    """Re-wrap every record under ``new``: from a pepper of ``old``, or from clear.

    One transaction per batch of ``batch_size`` records (locked while re-wrapped, so a
    concurrent PIN change or re-enrolment waits or is waited for); ``max_batches`` bounds one
    run (the admin endpoint), after which a re-run continues. Records sealed by a pepper in
    neither ``old`` nor ``new``, or whose seal does not verify (altered in the database), are left
    alone and counted ``unreadable``: one damaged record does not stop the rotation of the others.
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be in [1, {MAX_BATCH}]")
    ring = PepperRing(new, tuple(old))
    sql = _sql(store)
    after, rewrapped, unreadable, batches, complete = "", 0, 0, 0, False
    while max_batches is None or batches < max_batches:
        with sql._transaction() as cur:
            rows = sql._run(cur, _PENDING + sql._row_lock, (new.id, after, batch_size)).fetchall()
            if not rows:
                complete = True
                break
            for user_id, helper, pepper_id, nonce in rows:
                record = _stub(user_id, bytes(helper), pepper_id, None if nonce is None else bytes(nonce))
                try:
                    clear = unwrap_record(ring, record).helper
                except (PepperUnavailable, SketchFormatError):
                    unreadable += 1
                    continue
                stored, new_id, new_nonce_ = wrap_new(new, clear)
                sql._run(cur, _REWRAP, (stored, new_id, new_nonce_, user_id))
                rewrapped += 1
            after = rows[-1][0]
        batches += 1
        sql._erase_remnants()  # the old stored forms leave the write-ahead log too
    remaining = sum(n for pid, n in census(store).items() if pid != new.id)
    return RotationResult(new.id, rewrapped, unreadable, batches, remaining, complete)


def _stub(user_id: str, helper: bytes, pepper_id: str | None, nonce: bytes | None) -> UserRecord:
    return UserRecord(
        user_id, "", {}, helper, "", {}, False, 0, 0.0, False, 0.0, pepper_id=pepper_id, pepper_nonce=nonce
    )
