"""The deployment's pepper in the service: sealed records, the start-up check, conversion and rotation.

**What.** With ``SKETCHAUTH_PEPPER`` set, every user record the service stores is sealed as a
whole by ChaCha20-Poly1305 (:mod:`sketchauth.pepper`), bound by its associated data to the
deployment (``SKETCHAUTH_DEPLOYMENT_ID``), the user id, the per-user record version and the pepper
id (:mod:`sketchauth_service.store.records`, where the one codec every row goes through lives). The pepper
itself is never written to the database nor logged (the settings log shows its id).

**Start-up** (:func:`check_database`): a database holding records sealed by a pepper no
configured pepper has is refused; so is one whose sealed records do not open under the configured
deployment id (a wrong ``SKETCHAUTH_DEPLOYMENT_ID`` would turn every attempt into a counted
failure); and so is one holding records in clear while a pepper is configured — a configured
pepper never reads an unsealed row, so a row forged offline is refused like any alteration. A
database that was entirely clear is sealed by an explicit, one-time, audited command
(:func:`convert`, ``sketchauth pepper convert``), never as a side effect of anything else; it
refuses a database that already holds sealed records, an earlier conversion, or clear rows it
cannot attribute (no enrolment in the audit trail, a rollback mark): those are forgeries or a
mixed-in restore, and sealing them would make them valid.

**Which key seals.** A pepper (``SKETCHAUTH_PEPPER``, made by ``sketchauth pepper new``; any
other text only with ``SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER``), or a non-extractable key in a
PKCS#11 token (``SKETCHAUTH_PKCS11_MODULE`` and its settings, :mod:`sketchauth_service.keyring`).

**Rotation** (:func:`rotate`): needs no biometric, only the old pepper: every *sealed* record not
yet sealed by the new pepper is opened and sealed again with a fresh nonce, in batches of one
transaction each, in ``user_id`` order; records in clear are left to :func:`convert`. Each record
says which pepper sealed it, so an interrupted rotation resumes where it stopped and, meanwhile,
every record opens with the old *or* the new pepper: run the service with
``SKETCHAUTH_PEPPER=new`` and ``SKETCHAUTH_PEPPER_PREVIOUS=old`` during the rotation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sketchauth.enrolment import hasher, key_cost_limit
from sketchauth.errors import SketchAuthError
from sketchauth.pepper import Pepper, Sealer
from sketchauth_service.keyring import TokenError, TokenSettings, open_token_key
from sketchauth_service.store.base import Store
from sketchauth_service.store.ledger import RollbackLedger
from sketchauth_service.store.records import (
    PepperUnavailable,
    RecordCodec,
    RecordIntegrityError,
    ResealPlan,
    ResealResult,
    RollbackMarks,
)
from sketchauth_service.store.sql import SqlStore

__all__ = [
    "DEFAULT_BATCH",
    "ConversionRefused",
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
#: Sealed records the start-up check opens to test the deployment id.
DEPLOYMENT_PROBE = 16
#: What one rotation (or conversion) run did (the store's result).
RotationResult = ResealResult


class PepperSettingsError(ValueError):
    """The pepper settings are unusable (the message names the variable; it never quotes a pepper)."""


class ConversionRefused(ValueError):
    """``sketchauth pepper convert`` found clear records it must not seal (forgeries or a mixed-in restore)."""


class PepperSources(Protocol):
    """The settings a :class:`PepperRing` is read from (the service's ``Settings`` has them)."""

    @property
    def pepper(self) -> str | None: ...
    @property
    def pepper_file(self) -> str | None: ...
    @property
    def pepper_previous(self) -> Sequence[str]: ...
    @property
    def require_pepper(self) -> bool: ...
    @property
    def allow_unformatted_pepper(self) -> bool: ...
    @property
    def pkcs11_module(self) -> str | None: ...
    @property
    def pkcs11_token_label(self) -> str | None: ...
    @property
    def pkcs11_pin(self) -> str | None: ...
    @property
    def pkcs11_pin_file(self) -> str | None: ...
    @property
    def pkcs11_key_label(self) -> str | None: ...


class CodecSources(Protocol):
    """The settings a deployment's :class:`RecordCodec` is built from."""

    @property
    def deployment_id(self) -> str: ...
    @property
    def rollback_ledger(self) -> str | None: ...
    @property
    def hash_profile(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PepperRing:
    """The current sealer (seals new records) and earlier peppers (read-only, during a rotation).

    ``unformatted``: the current pepper is a text not made by ``sketchauth pepper new``, allowed
    explicitly (``SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER``): the start-up check warns.
    """

    current: Sealer | None = None
    previous: tuple[Sealer, ...] = ()
    unformatted: bool = False

    @classmethod
    def from_settings(cls, settings: PepperSources) -> PepperRing:
        if settings.pepper and settings.pepper_file:
            raise PepperSettingsError("set SKETCHAUTH_PEPPER or SKETCHAUTH_PEPPER_FILE, not both")
        text = settings.pepper
        if settings.pepper_file:
            text = read_pepper_file(settings.pepper_file, "SKETCHAUTH_PEPPER_FILE")
        token = _token_key(settings)
        if token is not None and text:
            raise PepperSettingsError(
                "set SKETCHAUTH_PKCS11_MODULE or SKETCHAUTH_PEPPER, not both: to move records from a pepper to the "
                "token, give the pepper as SKETCHAUTH_PEPPER_PREVIOUS and run 'sketchauth pepper rotate'"
            )
        allow = settings.allow_unformatted_pepper
        current: Sealer | None = token or (parse_pepper(text, "SKETCHAUTH_PEPPER", unformatted=allow) if text else None)
        # Earlier peppers are being retired: any text of 128 bits' length (they must still open records).
        previous = tuple(
            parse_pepper(p, "SKETCHAUTH_PEPPER_PREVIOUS", unformatted=True, judge=False)
            for p in settings.pepper_previous
        )
        if current is None and settings.require_pepper:
            raise PepperSettingsError(
                "SKETCHAUTH_REQUIRE_PEPPER is on but no pepper is configured: set SKETCHAUTH_PEPPER_FILE (or "
                "SKETCHAUTH_PEPPER) to a pepper made by 'sketchauth pepper new', or SKETCHAUTH_PKCS11_MODULE, and "
                "keep it out of the database"
            )
        if previous and current is None:
            raise PepperSettingsError("SKETCHAUTH_PEPPER_PREVIOUS needs a current SKETCHAUTH_PEPPER to rotate to")
        unformatted = bool(text) and token is None and not str(text).strip().startswith("skp1_")
        kept = tuple(p for p in previous if current is None or p.id != current.id)
        return cls(current, kept, unformatted)

    def by_id(self, pepper_id: str) -> Sealer | None:
        for pepper in (self.current, *self.previous):
            legacy = pepper.legacy_id if isinstance(pepper, Pepper) else None
            if pepper is not None and pepper_id in (pepper.id, legacy):
                return pepper
        return None

    @property
    def ids(self) -> frozenset[str]:
        """The ids of the records this ring opens (a pepper's legacy id included)."""
        return frozenset(RecordCodec(self.current, self.previous).peppers) if self.current else frozenset()

    @property
    def legacy_ids(self) -> frozenset[str]:
        return RecordCodec(self.current, self.previous).legacy_ids if self.current else frozenset()


def _token_key(settings: PepperSources) -> Sealer | None:
    """The PKCS#11 record key the settings name, or ``None`` when no module is set."""
    if not settings.pkcs11_module:
        return None
    try:
        token = TokenSettings.of(
            settings.pkcs11_module,
            settings.pkcs11_token_label,
            settings.pkcs11_pin,
            settings.pkcs11_pin_file,
            settings.pkcs11_key_label,
        )
        return open_token_key(token)
    except TokenError as exc:
        raise PepperSettingsError(str(exc)) from None


def parse_pepper(text: str, variable: str, *, unformatted: bool = False, judge: bool = True) -> Pepper:
    """A pepper from configured text (:class:`PepperSettingsError` naming ``variable`` if refused)."""
    try:
        return Pepper.from_text(text, unformatted=unformatted, judge=judge)
    except SketchAuthError as exc:
        hint = "" if unformatted else " (an older deployment's pepper: see SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER)"
        raise PepperSettingsError(f"{variable}: {exc}{hint}") from None


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
def _ledger(path: str, current: Sealer, previous: Sequence[Sealer]) -> RollbackLedger:
    """The rollback ledger at ``path``: marks made under ``current``, read under the earlier peppers too."""
    legacy = [p.legacy() for p in previous if isinstance(p, Pepper)]
    return RollbackLedger(path, current, also_read=[*previous, *legacy])


def record_codec(settings: CodecSources, ring: PepperRing) -> RecordCodec:
    """The codec ``settings`` describe: the ring's sealers, deployment id, rollback ledger and key-cost bound."""
    ledger = None
    if settings.rollback_ledger:
        if ring.current is None:
            raise PepperSettingsError("SKETCHAUTH_ROLLBACK_LEDGER needs a pepper: its marks are keyed by it")
        ledger = _ledger(settings.rollback_ledger, ring.current, ring.previous)
    return RecordCodec(
        ring.current,
        ring.previous,
        deployment=settings.deployment_id,
        ledger=ledger,
        key_limit=key_cost_limit(hasher(settings.hash_profile)),
    )


def peppered(store: Store, ring: PepperRing, settings: CodecSources | None = None) -> Store:
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
    return _sql(store).pepper_census()


def hash_census(store: Store, profile: str, *, batch_size: int = DEFAULT_BATCH) -> dict[str, int]:
    """Records by the state of their hash under the argon2 ``profile``, opened through the store's codec.

    ``current``: made with the profile's costs; ``rehash_pending``: made with other costs, re-made
    at the user's next successful verification (argon2-cffi's ``check_needs_rehash``) as the
    record's next version; ``unreadable``: records the codec refuses (without the pepper, every
    sealed one: a thief's view; and every row with a wrong-typed value).
    """
    return _sql(store).hash_census(hasher(profile).check_needs_rehash, batch_size=batch_size)


def check_database(store: Store, ring: PepperRing, deployment: str | None = None) -> dict[str | None, int]:
    """Refuse (:class:`PepperSettingsError`) a database this deployment must not serve as it is.

    Called at start-up after the migrations: records sealed by pepper ids no configured pepper
    has (started without the pepper, or with a new one before the rotation finished and without
    ``SKETCHAUTH_PEPPER_PREVIOUS``); sealed records none of which opens under ``deployment`` (a
    wrong ``SKETCHAUTH_DEPLOYMENT_ID``); and records in clear while a pepper is configured. Records
    still under a pepper's legacy derivation are served, with a warning to rotate.
    """
    try:
        counts = census(store)
    except TypeError:  # a store of another kind (tests): nothing to check
        return {}
    known = ring.ids
    unknown = sorted(pid for pid in counts if pid is not None and pid not in known)
    if unknown:
        held = sum(counts[pid] for pid in unknown)
        raise PepperSettingsError(
            f"{held} stored records were sealed by pepper ids {', '.join(unknown)}, which no configured pepper "
            "has: set SKETCHAUTH_PEPPER to the deployment's pepper (and SKETCHAUTH_PEPPER_PREVIOUS to the old "
            "one while a rotation runs)"
        )
    if ring.current is not None and counts.get(None):
        raise PepperSettingsError(_clear_rows_refused(counts))
    if ring.current is not None and deployment is not None:
        _probe_deployment(_sql(store), RecordCodec(ring.current, ring.previous, deployment=deployment))
    _warn(ring, counts)
    return counts


def _clear_rows_refused(counts: dict[str | None, int]) -> str:
    clear, sealed = counts[None], sum(n for pid, n in counts.items() if pid is not None)
    if sealed:
        return (
            f"{clear} records are stored in clear beside {sealed} sealed ones: a sealed deployment never writes a "
            "clear row, so they were written into the database by hand (forgeries) or mixed in from a restore; "
            "they are not converted: find them with 'sketchauth pepper status', revoke those users and have them "
            "enrol again (or restore a backup), then start"
        )
    return (
        f"{clear} records are stored in clear, and a configured pepper reads sealed records only: if this database "
        "was never sealed, seal it once with 'sketchauth pepper convert' (service stopped, SKETCHAUTH_PEPPER set), "
        "then start"
    )


def _probe_deployment(sql: SqlStore, codec: RecordCodec) -> None:
    """Refuse when sealed records exist and none of a sample opens under the codec's deployment id."""
    deployment = codec.deployment
    rows = sql.sealed_sample(sorted(codec.peppers), DEPLOYMENT_PROBE)
    if rows and not any(codec.unseals(row) for row in rows):
        raise PepperSettingsError(
            f"SKETCHAUTH_DEPLOYMENT_ID={deployment}: none of the {len(rows)} newest sealed records opens under this "
            "deployment id with the configured pepper, so every attempt would fail and lock its user out: set "
            "SKETCHAUTH_DEPLOYMENT_ID to the id the records were sealed under"
        )


def _warn(ring: PepperRing, counts: dict[str | None, int]) -> None:
    if ring.unformatted:
        log.warning(
            "INSECURE: SKETCHAUTH_PEPPER is not a pepper made by 'sketchauth pepper new' and is accepted only "
            "because SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER is on: a text chosen by a person can be guessed; make one "
            "with 'sketchauth pepper new', give the old one as SKETCHAUTH_PEPPER_PREVIOUS and rotate"
        )
    legacy = sum(n for pid, n in counts.items() if pid in ring.legacy_ids)
    if legacy:
        log.warning(
            "%d records are sealed under a pepper's legacy derivation (HKDF only: its pepper id can be tested "
            "offline at microseconds a guess): re-seal them with 'sketchauth pepper rotate'",
            legacy,
        )


# -- conversion and rotation --------------------------------------------------------------------------
def _batch(batch_size: int) -> int:
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be in [1, {MAX_BATCH}]")
    return batch_size


def rotate(
    store: Store,
    new: Sealer,
    old: Sequence[Sealer] | Iterable[Sealer] = (),
    *,
    batch_size: int = DEFAULT_BATCH,
    max_batches: int | None = None,
) -> RotationResult:
    """Re-seal every sealed record under ``new``, from a sealer of ``old`` (or ``new``'s legacy derivation).

    One transaction per batch of ``batch_size`` records (locked while re-sealed, so a concurrent
    PIN change or re-enrolment waits or is waited for); ``max_batches`` bounds one run (the admin
    endpoint), after which a re-run continues. The record's version is kept (its content does
    not change; the pepper id in the associated data does) and its rollback mark is re-made
    under the new key. Rows sealed by a key in neither ``old`` nor ``new``, or refused by the
    codec (altered, moved, rolled back, wrong-typed values: also audited ``integrity``), are
    skipped and counted ``unreadable``: one damaged row does not stop the rotation of the others.
    Records in clear are left to :func:`convert`.
    """
    sql = _sql(store)
    base = sql.codec
    old = tuple(old)
    reader = base.with_sealers(new, old)
    ledger = _ledger(str(base.ledger.path), new, old) if base.ledger is not None else None
    plan = ResealPlan(
        reader,
        base.with_sealers(new, old, ledger=ledger),
        batch_size=_batch(batch_size),
        max_batches=max_batches,
        mark=ledger.mark if ledger is not None else None,
    )
    try:
        return sql.reseal(plan)
    finally:
        if ledger is not None:
            ledger.close()


def convert(store: Store, pepper: Sealer, *, batch_size: int = DEFAULT_BATCH) -> RotationResult:
    """Seal every record of a database stored entirely in clear under ``pepper``: the explicit, one-time conversion.

    Run once, with the service stopped (it refuses to start on a peppered deployment while
    clear records remain). Refused (:class:`ConversionRefused`, nothing written) when the
    database already holds sealed records or was converted before (a clear row there was written
    by hand or restored: sealing it would make a forgery valid), or when a clear record cannot be
    attributed to an enrolment (none in the audit trail, or the rollback ledger has a mark for
    its user, which only a sealed write makes). Otherwise each record is opened as stored (its
    key-release costs checked against the deployment's bound), sealed as its next version and
    audited (``seal``); a re-run finds nothing left to do.
    """
    sql = _sql(store)
    base = sql.codec
    _refuse_unattributable(sql)
    reader = RecordCodec(deployment=base.deployment, key_limit=base.key_limit)
    plan = ResealPlan(
        reader, base.with_sealers(pepper, ledger=base.ledger), convert=True, batch_size=_batch(batch_size)
    )
    result = sql.reseal(plan)
    log.warning(
        "sketchauth pepper convert: %d records sealed under pepper id %s, %d left in clear (unreadable)",
        result.rewrapped,
        pepper.id,
        result.unreadable,
    )
    return result


def _refuse_unattributable(sql: SqlStore) -> None:
    check = sql.conversion_check()
    if not check.clear:
        return  # nothing to seal (a re-run after a conversion)
    reasons = []
    if check.sealed:
        reasons.append(f"it already holds {check.sealed} sealed records")
    if check.seal_events:
        reasons.append(f"its audit trail shows an earlier conversion ({check.seal_events} 'seal' events)")
    if check.unattributed:
        reasons.append(f"clear records without an enrolment in the audit trail (users {', '.join(check.unattributed)})")
    ledger = sql.codec.ledger
    if ledger is not None:
        marked = [uid for uid in sql.clear_user_ids() if _has_mark(ledger, uid)][:5]
        if marked:
            reasons.append(f"clear records of users the rollback ledger saw sealed ({', '.join(marked)})")
    if reasons:
        raise ConversionRefused(
            f"convert refused, nothing was sealed: {'; '.join(reasons)}. A sealed deployment never writes a clear "
            "row, so these were written into the database by hand or mixed in from a restore, and sealing them "
            "would make them valid: revoke those users and have them enrol again (or restore a backup)"
        )


def _has_mark(ledger: RollbackMarks, user_id: str) -> bool:
    try:
        return ledger.mark(user_id) > 0
    except RecordIntegrityError:
        return True
