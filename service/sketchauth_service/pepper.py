"""The deployment's pepper in the service: sealed records, the start-up check, conversion and rotation.

**What.** With ``SKETCHAUTH_PEPPER`` set, every user record the service stores is sealed as a
whole by ChaCha20-Poly1305 (:mod:`sketchauth.pepper`), bound by its associated data to the
deployment (``SKETCHAUTH_DEPLOYMENT_ID``), the user id, the per-user record version and the pepper
id (:mod:`sketchauth_service.store.records`, where the one codec every row goes through lives). The pepper
itself is never written to the database nor logged (the settings log shows its id).

**Start-up** (:func:`check_database`): a database holding records sealed by a pepper no
configured pepper has is refused, and so is one holding records in clear while a pepper is
configured — a configured pepper never reads an unsealed row, so a row forged offline is refused
like any alteration. A clear database is sealed by an explicit, one-time, audited command
(:func:`convert`, ``sketchauth pepper convert``), never as a side effect of anything else.

**Rotation** (:func:`rotate`): needs no biometric, only the old pepper: every *sealed* record not
yet sealed by the new pepper is opened and sealed again with a fresh nonce, in batches of one
transaction each, in ``user_id`` order; records in clear are left to :func:`convert`. Each record
says which pepper sealed it, so an interrupted rotation resumes where it stopped and, meanwhile,
every record opens with the old *or* the new pepper: run the service with
``SKETCHAUTH_PEPPER=new`` and ``SKETCHAUTH_PEPPER_PREVIOUS=old`` during the rotation.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sketchauth.enrolment import hasher, key_cost_limit
from sketchauth.errors import SketchAuthError
from sketchauth.pepper import Pepper
from sketchauth_service.store.base import Store
from sketchauth_service.store.ledger import RollbackLedger
from sketchauth_service.store.records import Content, PepperUnavailable, RecordCodec, RecordIntegrityError
from sketchauth_service.store.sql import _PROTECTED_SET, _USER_COLUMNS, SqlStore

if TYPE_CHECKING:
    from sketchauth_service.settings import Settings

__all__ = [
    "DEFAULT_BATCH",
    "PepperRing",
    "PepperSettingsError",
    "PepperUnavailable",
    "RotationResult",
    "census",
    "check_database",
    "convert",
    "hash_census",
    "peppered",
    "record_codec",
    "rotate",
]

log = logging.getLogger("sketchauth.service")

#: Records re-sealed per transaction by a rotation.
DEFAULT_BATCH = 200
#: Largest batch a rotation accepts.
MAX_BATCH = 10_000


class PepperSettingsError(ValueError):
    """The pepper settings are unusable (the message names the variable; it never quotes a pepper)."""


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
        # Earlier peppers are being retired: only their length is checked (they must still open records).
        previous = tuple(parse_pepper(p, "SKETCHAUTH_PEPPER_PREVIOUS", judge=False) for p in settings.pepper_previous)
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


def parse_pepper(text: str, variable: str, *, judge: bool = True) -> Pepper:
    """A pepper from configured text (:class:`PepperSettingsError` naming ``variable`` if too weak)."""
    try:
        return Pepper.from_text(text, judge=judge)
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


# -- the codec of a deployment --------------------------------------------------------------------------
def record_codec(settings: Settings, ring: PepperRing | None = None) -> RecordCodec:
    """The codec ``settings`` describe: the ring's peppers, deployment id, rollback ledger and key-cost bound."""
    ring = ring if ring is not None else settings.pepper_ring()
    ledger = None
    if settings.rollback_ledger:
        if ring.current is None:
            raise PepperSettingsError("SKETCHAUTH_ROLLBACK_LEDGER needs a pepper: its marks are keyed by it")
        ledger = RollbackLedger(settings.rollback_ledger, ring.current)
    return RecordCodec(
        ring.current,
        ring.previous,
        deployment=settings.deployment_id,
        ledger=ledger,
        key_limit=key_cost_limit(hasher(settings.hash_profile)),
    )


def peppered(store: Store, ring: PepperRing, settings: Settings | None = None) -> Store:
    """``store`` reading and writing every record through the deployment's codec (sealed when a pepper is set).

    Not a wrapper: the SQL store itself holds the codec, so no method can bypass it.
    """
    sql = _sql(store)
    if settings is not None:
        sql.use_codec(record_codec(settings, ring))
    else:
        sql.use_codec(RecordCodec(ring.current, ring.previous))
    return store


def _sql(store: Store) -> SqlStore:
    if not isinstance(store, SqlStore):
        raise TypeError(f"sealed records need an SQL store, not {type(store).__name__}")
    return store


# -- census and start-up check -------------------------------------------------------------------------
def census(store: Store) -> dict[str | None, int]:
    """How many records each pepper id sealed (``None``: stored in clear)."""
    sql = _sql(store)
    with sql._read() as cur:
        rows = sql._run(cur, "SELECT pepper_id, COUNT(*) FROM users GROUP BY pepper_id").fetchall()
    return {row[0]: int(row[1]) for row in rows}


def hash_census(store: Store, profile: str, *, batch_size: int = DEFAULT_BATCH) -> dict[str, int]:
    """Records by the state of their hash under the argon2 ``profile``, opened through the store's codec.

    ``current``: made with the profile's costs; ``rehash_pending``: made with other costs, re-made
    at the user's next successful verification (argon2-cffi's ``check_needs_rehash``) as the
    record's next version; ``unreadable``: records the codec refuses (without the pepper, every
    sealed one: a thief's view).
    """
    sql, ph = _sql(store), hasher(profile)
    counts = {"current": 0, "rehash_pending": 0, "unreadable": 0}
    after = ""
    while True:
        with sql._read() as cur:
            query = f"SELECT {_USER_COLUMNS} FROM users WHERE user_id > ? ORDER BY user_id LIMIT ?"
            rows = sql._run(cur, query, (after, batch_size)).fetchall()
        if not rows:
            return counts
        for row in rows:
            try:
                record = sql.codec.open(row)
            except RecordIntegrityError:
                counts["unreadable"] += 1
                continue
            counts["rehash_pending" if ph.check_needs_rehash(record.secret_hash) else "current"] += 1
        after = rows[-1][0]


def check_database(store: Store, ring: PepperRing) -> dict[str | None, int]:
    """Refuse (:class:`PepperSettingsError`) a database this deployment must not serve as it is.

    Called at start-up after the migrations: records sealed by pepper ids no configured pepper
    has (started without the pepper, or with a new one before the rotation finished and without
    ``SKETCHAUTH_PEPPER_PREVIOUS``; or records of the pre-release seal), and records in clear
    while a pepper is configured (convert them once: ``sketchauth pepper convert``).
    """
    try:
        counts = census(store)
    except TypeError:  # a store of another kind (tests): nothing to check
        return {}
    unknown = sorted(pid for pid in counts if pid is not None and pid not in ring.ids)
    if unknown:
        held = sum(counts[pid] for pid in unknown)
        raise PepperSettingsError(
            f"{held} stored records were sealed by pepper ids {', '.join(unknown)}, which no configured pepper "
            "has: set SKETCHAUTH_PEPPER to the deployment's pepper (and SKETCHAUTH_PEPPER_PREVIOUS to the old "
            "one while a rotation runs)"
        )
    if ring.current is not None and counts.get(None):
        raise PepperSettingsError(
            f"{counts[None]} records are stored in clear, and a configured pepper reads sealed records only: "
            "seal them once with 'sketchauth pepper convert' (service stopped, SKETCHAUTH_PEPPER set), then start"
        )
    return counts


# -- rotation ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RotationResult:
    """What one rotation (or conversion) run did.

    ``remaining``: records not sealed by the new pepper after the run (unreadable and clear ones
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


_PENDING = f"SELECT {_USER_COLUMNS} FROM users WHERE {{which}} AND user_id > ? ORDER BY user_id LIMIT ?"
_SEALED_ELSEWHERE = "pepper_id IS NOT NULL AND pepper_id <> ?"
_CLEAR = "pepper_id IS NULL"
_RESEAL = f"UPDATE users SET {_PROTECTED_SET} WHERE user_id = ?"


def rotate(
    store: Store,
    new: Pepper,
    old: Sequence[Pepper] | Iterable[Pepper] = (),
    *,
    batch_size: int = DEFAULT_BATCH,
    max_batches: int | None = None,
) -> RotationResult:
    """Re-seal every sealed record under ``new``, from a pepper of ``old``; records in clear are left alone.

    One transaction per batch of ``batch_size`` records (locked while re-sealed, so a concurrent
    PIN change or re-enrolment waits or is waited for); ``max_batches`` bounds one run (the admin
    endpoint), after which a re-run continues. The record's version is kept (its content does
    not change; the pepper id in the associated data does) and its rollback mark is re-made
    under the new pepper. Records sealed by a pepper in neither ``old`` nor ``new``, or whose seal
    does not open (altered in the database), are left alone and counted ``unreadable``: one
    damaged record does not stop the rotation of the others.
    """
    sql = _sql(store)
    base = sql.codec
    old = tuple(old)
    reader = RecordCodec(new, old, deployment=base.deployment, key_limit=base.key_limit)
    if base.ledger is None:
        codec = RecordCodec(new, old, deployment=base.deployment, key_limit=base.key_limit)
        return _reseal(sql, reader, codec, _SEALED_ELSEWHERE, (new.id,), batch_size, max_batches)
    # Marks made under any of the peppers count (a rolled-back record is not laundered by a rotation);
    # they are re-made under the new one.
    ledgers = [RollbackLedger(base.ledger.path, p) for p in (new, *old)]
    codec = RecordCodec(new, old, deployment=base.deployment, ledger=ledgers[0], key_limit=base.key_limit)
    try:
        return _reseal(
            sql,
            reader,
            codec,
            _SEALED_ELSEWHERE,
            (new.id,),
            batch_size,
            max_batches,
            mark=lambda user_id: max(ledger.mark(user_id) for ledger in ledgers),
        )
    finally:
        for ledger in ledgers:
            ledger.close()


def convert(store: Store, pepper: Pepper, *, batch_size: int = DEFAULT_BATCH) -> RotationResult:
    """Seal every record stored in clear under ``pepper``: the explicit, one-time conversion of a clear database.

    Run once, with the service stopped (it refuses to start on a peppered deployment while
    clear records remain). Each record is opened as stored (its key-release costs checked
    against the deployment's bound), sealed as its next version and audited (``seal``); the
    clear columns are emptied in the same transaction and their remnants erased. A re-run finds
    nothing left to do. Rows whose key parameters are out of bounds are left alone and counted
    ``unreadable``.
    """
    sql = _sql(store)
    base = sql.codec
    reader = RecordCodec(deployment=base.deployment, key_limit=base.key_limit)
    codec = RecordCodec(pepper, deployment=base.deployment, ledger=base.ledger, key_limit=base.key_limit)
    result = _reseal(sql, reader, codec, _CLEAR, (), batch_size, None, audit=True)
    log.warning(
        "sketchauth pepper convert: %d records sealed under pepper id %s, %d left in clear (unreadable)",
        result.rewrapped,
        pepper.id,
        result.unreadable,
    )
    return result


def _reseal(
    sql: SqlStore,
    reader: RecordCodec,
    codec: RecordCodec,
    which: str,
    args: tuple[Any, ...],
    batch_size: int,
    max_batches: int | None,
    *,
    audit: bool = False,
    mark: Callable[[str], int] | None = None,
) -> RotationResult:
    """Open the records ``which`` selects with ``reader`` and write them with ``codec``, batch by batch.

    ``audit``: a conversion (each record becomes its next version, audited ``seal``); ``mark``:
    the rollback mark a record must not be below (it is then counted unreadable and left alone).
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be in [1, {MAX_BATCH}]")
    assert codec.current is not None
    after, rewrapped, unreadable, batches, complete = "", 0, 0, 0, False
    written: list[tuple[str, int]] = []
    query = _PENDING.format(which=which) + sql._row_lock
    while max_batches is None or batches < max_batches:
        with sql._transaction() as cur:
            rows = sql._run(cur, query, (*args, after, batch_size)).fetchall()
            if not rows:
                complete = True
                break
            for row in rows:
                user_id = row[0]
                try:
                    record = reader.open(row)
                    if mark is not None and record.version < mark(user_id):
                        raise RecordIntegrityError("rolled back")
                except RecordIntegrityError:
                    unreadable += 1
                    continue
                version = record.version + 1 if audit else record.version
                columns = codec.columns(user_id, Content.of(record), version)
                sql._run(cur, _RESEAL, (*columns.values(), user_id))
                if audit:
                    sql._audit(cur, user_id, ["seal"], time.time())
                written.append((user_id, version))
                rewrapped += 1
            after = rows[-1][0]
        batches += 1
        for user_id, version in written:
            if codec.ledger is not None:
                codec.ledger.advance(user_id, version)
        written.clear()
        sql._erase_remnants()  # the old stored forms leave the write-ahead log too
    remaining = sum(n for pid, n in census(sql).items() if pid != codec.current.id)
    return RotationResult(codec.current.id, rewrapped, unreadable, batches, remaining, complete)
