"""How a user's record is kept in its row: sealed as a whole by the deployment's pepper, or in clear.

Every row the store reads or writes goes through one :class:`RecordCodec` (the store holds it;
no wrapper store, no per-method delegation): a new store method that reads users gets the same
opening, checks and costs as the others, because ``SqlStore`` has no other way to turn a row
into a :class:`~sketchauth_service.store.base.UserRecord`.

**Sealed** (a pepper is configured). The protected part of the record — scheme, parameters,
helper data, argon2id hash, entropy report, PIN flag, feature pipeline, key-release parameters:
the whole factor structure — is one plaintext (:func:`pack`) sealed by ChaCha20-Poly1305
(:func:`sketchauth.pepper.wrap`) under a fresh nonce, with **associated data**::

    AD = associated_data("sketchauth/record", format 2, deployment id, user id,
                         record version (8 bytes), pepper id)

and stored in the ``helper`` column; the other protected columns hold placeholders. The row
keeps in clear only what SQL must update atomically (the throttling state), the pepper id, the
nonce and the **record version**, a per-user counter raised by every write of the protected part.
So a sealed record copied into another user's row, written under another version or pepper id,
or altered by one bit does not open; a row with no seal (``pepper_id`` NULL, a clear record or a
forgery made offline) is refused outright while a pepper is configured; and nothing in the row
lets a thief without the pepper test a guess: the hash is inside the seal.

**Clear** (no pepper). The columns hold the record as they always did; opening still checks
the key-release costs against the deployment's bound, so that a record written into the database
cannot make one derivation cost gigabytes.

**Rollback.** The version in the associated data stops a sealed body from being combined with
another version number, but a whole old row (body, nonce and version together) opens: only a
mark kept *outside* the database can tell that a row went back in time. With a
:class:`~sketchauth_service.store.ledger.RollbackLedger` configured, every write raises the user's mark
after it commits (and a revocation raises it past the deleted version), and opening a row whose
version is below its mark is refused.

Refusals raise :class:`RecordIntegrityError`; the store turns one met by a verification into a
counted failure plus an ``integrity`` audit event and an error log line (never a 500).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sketchauth.enrolment import KeyCostLimit, parse_key_params
from sketchauth.errors import SketchFormatError
from sketchauth.pepper import Pepper, Sealer, associated_data, new_nonce
from sketchauth_service.store.base import StoreError, UserRecord

__all__ = [
    "RECORD_FORMAT",
    "Columns",
    "Content",
    "ConversionCheck",
    "PepperUnavailable",
    "RecordCodec",
    "RecordIntegrityError",
    "ResealPlan",
    "ResealResult",
    "RollbackMarks",
    "pack",
    "unpack",
]

#: Version of the sealed record's layout and associated data (1 was the pre-release helper-only seal).
RECORD_FORMAT = 2
_MAGIC = b"SKR\x02"
_HEADER_KEYS = frozenset(
    {"scheme", "params", "secret_hash", "report", "has_pin", "pipeline", "pipeline_sha256", "key_params"}
)
#: Largest JSON header of a sealed record (parameters and report): far above any real one.
MAX_HEADER_BYTES = 1 << 20


class RecordIntegrityError(StoreError):
    """A stored record that must not be used: altered, moved, rolled back, unsealed under a pepper, out of bounds."""


class PepperUnavailable(RecordIntegrityError):
    """A record was sealed by a pepper this process does not have."""


class RollbackMarks(Protocol):
    """Per-user high-water marks of record versions kept outside the database (:mod:`.ledger`)."""

    @property
    def path(self) -> Path: ...

    def mark(self, user_id: str) -> int: ...

    def advance(self, user_id: str, version: int) -> None: ...

    def close(self) -> None: ...


#: Largest record version a row may hold (the associated data encodes it in 8 bytes, unsigned; SQL's BIGINT is signed).
MAX_RECORD_VERSION = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Content:
    """The protected part of a record: what the seal covers (the whole factor structure)."""

    scheme: str
    params: dict[str, Any]
    helper: bytes
    secret_hash: str
    report: dict[str, Any]
    has_pin: bool
    pipeline: str | None = None
    pipeline_sha256: str | None = None
    key_params: str | None = None

    @classmethod
    def of(cls, record: Any) -> Content:
        """The protected fields of a :class:`UserRecord` or :class:`NewEnrolment`."""
        return cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(cls)})


#: :class:`Content`'s field names, in order (read once: ``dataclasses.fields`` builds a tuple per call).
_CONTENT_FIELDS = tuple(f.name for f in dataclasses.fields(Content))


@dataclass(frozen=True, slots=True)
class Columns:
    """What a write stores in the protected columns (placeholders when sealed) and the seal's columns."""

    scheme: str
    params: str
    helper: bytes
    secret_hash: str
    report: str
    has_pin: bool
    pipeline: str | None
    pipeline_sha256: str | None
    key_params: str | None
    pepper_id: str | None
    pepper_nonce: bytes | None
    record_version: int

    def values(self) -> tuple[Any, ...]:
        return dataclasses.astuple(self)

    def row(
        self, user_id: str, *, failures: int = 0, locked_until: float = 0.0, enrolled_at: float = 0.0
    ) -> tuple[Any, ...]:
        """The row ``SqlStore`` reads for these columns (in ``_USER_COLUMNS`` order), for :meth:`RecordCodec.open`."""
        v = self.values()
        return (user_id, *v[:6], failures, locked_until, False, enrolled_at, *v[6:])


def pack(content: Content) -> bytes:
    """The sealed plaintext: magic, header length (4 bytes), canonical JSON header, helper bytes."""
    header = {k: getattr(content, k) for k in sorted(_HEADER_KEYS)}
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return _MAGIC + len(text).to_bytes(4, "big") + text + bytes(content.helper)


def unpack(plain: bytes) -> Content:
    """The inverse of :func:`pack`, strict (:class:`RecordIntegrityError` on any deviation)."""
    if plain[:4] != _MAGIC or len(plain) < 8:
        raise RecordIntegrityError(f"a sealed record starts with {_MAGIC!r} and a header length")
    size = int.from_bytes(plain[4:8], "big")
    if size > min(MAX_HEADER_BYTES, len(plain) - 8):
        raise RecordIntegrityError("the sealed record's header length is out of range")
    try:
        header = _strict_json(plain[8 : 8 + size])
    except ValueError:
        raise RecordIntegrityError("the sealed record's header is not JSON") from None
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        raise RecordIntegrityError("the sealed record's header does not have the record's fields")
    content = Content(helper=plain[8 + size :], **header)
    _check_types(content)
    return content


def _no_constant(name: str) -> None:
    raise ValueError(name)


#: Built once: ``json.loads`` with an argument builds a new decoder (and its scanner) per call.
_STRICT_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _strict_json(text: str | bytes) -> Any:
    """``json.loads(text, parse_constant=_no_constant)`` (``NaN``, ``Infinity`` refused), same errors."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT_DECODER.decode(text)


def _check_types(content: Content) -> None:
    strings = (content.scheme, content.secret_hash)
    optional = (content.pipeline, content.pipeline_sha256, content.key_params)
    if not (
        all(isinstance(s, str) for s in strings)
        and all(s is None or isinstance(s, str) for s in optional)
        and isinstance(content.params, dict)
        and isinstance(content.report, dict)
        and isinstance(content.has_pin, bool)
    ):
        raise RecordIntegrityError("the sealed record's fields have the wrong types")


class RecordCodec:
    """Rows to records and back, sealed under ``current`` (and opened by ``readable``) or in clear.

    ``current`` and ``readable`` are :class:`~sketchauth.pepper.Sealer` s: peppers, or a key held in
    a PKCS#11 token. A pepper also opens, read-only, the records sealed under its legacy id (the
    derivation before the memory-hard step) until a rotation re-seals them.
    ``deployment``: the deployment id bound into every seal (``SKETCHAUTH_DEPLOYMENT_ID``);
    ``ledger``: the optional rollback check; ``key_limit``: the costs stored key parameters may
    ask for (:func:`sketchauth.enrolment.key_cost_limit` of the deployment's profile).
    """

    def __init__(
        self,
        current: Sealer | None = None,
        readable: Sequence[Sealer] = (),
        *,
        deployment: str = "default",
        ledger: RollbackMarks | None = None,
        key_limit: KeyCostLimit | None = None,
    ) -> None:
        if readable and current is None:
            raise ValueError("earlier peppers are read only beside a current one")
        self.current = current
        self.readable = tuple(readable)
        self.peppers: dict[str, Sealer] = {}
        for sealer in (*readable, *([current] if current else [])):
            if isinstance(sealer, Pepper):
                self.peppers[sealer.legacy_id] = sealer.legacy()
            self.peppers[sealer.id] = sealer
        self.deployment = deployment
        self.ledger = ledger
        self.key_limit = key_limit

    @property
    def sealing(self) -> bool:
        return self.current is not None

    @property
    def legacy_ids(self) -> frozenset[str]:
        """Ids this codec opens that are the legacy derivation of one of its peppers (a rotation re-seals them)."""
        return frozenset(s.legacy_id for s in (*self.readable, self.current) if isinstance(s, Pepper))

    def with_sealers(
        self, current: Sealer, readable: Sequence[Sealer] = (), *, ledger: RollbackMarks | None = None
    ) -> RecordCodec:
        """This deployment's codec (id, key bound) with other sealers and ledger: a rotation's reader and writer."""
        return RecordCodec(current, readable, deployment=self.deployment, ledger=ledger, key_limit=self.key_limit)

    def _ad(self, user_id: str, version: int, pepper_id: str) -> bytes:
        return associated_data(
            b"sketchauth/record",
            bytes([RECORD_FORMAT]),
            self.deployment.encode(),
            user_id.encode(),
            version.to_bytes(8, "big", signed=False),
            pepper_id.encode(),
        )

    # -- writing --------------------------------------------------------------------------------
    def columns(self, user_id: str, content: Content, version: int, *, pepper: Sealer | None = None) -> Columns:
        """The columns of ``content`` written as version ``version`` of ``user_id``'s record.

        Sealed under ``pepper`` (default: the current one) when the codec seals; in clear otherwise.
        """
        pepper = pepper or self.current
        if pepper is None:
            return Columns(
                content.scheme,
                json.dumps(content.params, sort_keys=True),
                bytes(content.helper),
                content.secret_hash,
                json.dumps(content.report, sort_keys=True),
                content.has_pin,
                content.pipeline,
                content.pipeline_sha256,
                content.key_params,
                None,
                None,
                version,
            )
        nonce = new_nonce()
        sealed = pepper.seal(pack(content), nonce, self._ad(user_id, version, pepper.id))
        return Columns("", "{}", sealed, "", "{}", False, None, None, None, pepper.id, nonce, version)

    # -- reading --------------------------------------------------------------------------------
    def open(self, row: Sequence[Any]) -> UserRecord:
        """The record of a row (``SqlStore``'s column order), checked: :class:`RecordIntegrityError` if unusable.

        Every stored value is checked for its type and range before use (a number where text
        belongs, a version of -1 or 1e30, a nonce that is text): a row written into the database
        by hand is refused like an altered seal, never a ``TypeError``.
        """
        user_id, pepper_id, nonce, version = _identity(row)
        if pepper_id is None:
            if self.sealing:
                raise RecordIntegrityError(
                    "a record without a seal, while a pepper is configured: a forgery, or a record stored in clear "
                    "(see 'sketchauth pepper status')"
                )
            content = _clear_content(row)
        else:
            content = self._unseal(user_id, pepper_id, nonce, version, _blob(row[3], "helper"))
        if content.key_params is not None:
            try:
                parse_key_params(content.key_params, self.key_limit)
            except SketchFormatError as exc:
                raise RecordIntegrityError(f"stored key parameters refused: {exc}") from None
        if self.ledger is not None and version < self.ledger.mark(user_id):
            raise RecordIntegrityError("the record is older than its rollback mark: the row was restored or replayed")
        return UserRecord(
            user_id=user_id,
            **{name: getattr(content, name) for name in _CONTENT_FIELDS},
            failures=_count(row[7], "failures"),
            locked_until=_time(row[8], "locked_until"),
            disabled=_flag(row[9], "disabled"),
            enrolled_at=_time(row[10], "enrolled_at"),
            pepper_id=pepper_id,
            pepper_nonce=nonce,
            version=version,
        )

    def unseals(self, row: Sequence[Any]) -> bool:
        """Whether the row's seal opens under this codec (deployment, user, version, pepper): no other check."""
        try:
            user_id, pepper_id, nonce, version = _identity(row)
            if pepper_id is None:
                return False
            self._unseal(user_id, pepper_id, nonce, version, _blob(row[3], "helper"))
        except RecordIntegrityError:
            return False
        return True

    def _unseal(self, user_id: str, pepper_id: str, nonce: bytes | None, version: int, sealed: bytes) -> Content:
        pepper = self.peppers.get(pepper_id)
        if pepper is None:
            raise PepperUnavailable(
                f"this record was sealed by pepper id {pepper_id}, which is not configured: set SKETCHAUTH_PEPPER "
                "(or SKETCHAUTH_PEPPER_PREVIOUS during a rotation)"
            )
        try:
            plain = pepper.open(sealed, nonce or b"", self._ad(user_id, version, pepper_id))
        except SketchFormatError:
            raise RecordIntegrityError(
                "the seal does not open: the record was altered, moved from another user, version or deployment"
            ) from None
        return unpack(plain)


# -- stored values, checked ---------------------------------------------------------------------------------
def _wrong(column: str) -> RecordIntegrityError:
    return RecordIntegrityError(f"the stored {column} has the wrong type or is out of range")


def _identity(row: Sequence[Any]) -> tuple[str, str | None, bytes | None, int]:
    """``(user id, pepper id, nonce, record version)`` of a row, each checked."""
    user_id, pepper_id, nonce, version = row[0], row[14], row[15], row[16]
    if not isinstance(user_id, str):
        raise _wrong("user_id")
    if pepper_id is not None and not isinstance(pepper_id, str):
        raise _wrong("pepper_id")
    if nonce is not None:
        nonce = _blob(nonce, "pepper_nonce")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_RECORD_VERSION:
        raise _wrong("record_version")
    return user_id, pepper_id, nonce, version


def _blob(value: Any, column: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _wrong(column)
    return bytes(value)


def _count(value: Any, column: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _wrong(column)
    return value


def _time(value: Any, column: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _wrong(column)
    return float(value)


def _flag(value: Any, column: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _wrong(column)


def _json_object(value: Any, column: str) -> dict[str, Any]:
    if not isinstance(value, str):
        raise _wrong(column)
    try:
        parsed = _strict_json(value)
    except (ValueError, RecursionError):
        raise _wrong(column) from None
    if not isinstance(parsed, dict):
        raise _wrong(column)
    return parsed


def _clear_content(row: Sequence[Any]) -> Content:
    """The protected fields of a row stored in clear, checked."""
    content = Content(
        row[1],
        _json_object(row[2], "params"),
        _blob(row[3], "helper"),
        row[4],
        _json_object(row[5], "report"),
        _flag(row[6], "has_pin"),
        *row[11:14],
    )
    _check_types(content)
    return content


# -- maintenance jobs (the store runs them: SqlStore.reseal) --------------------------------------------------
@dataclass(frozen=True, slots=True)
class ResealPlan:
    """One re-sealing job: which rows, how they are opened and written, in what batches.

    ``convert``: seal the records stored in clear (each becomes its next version, audited ``seal``);
    otherwise re-seal the sealed records not yet under ``writer.current`` (version kept).
    ``mark``: the rollback mark a record must not be below (it is then skipped as rolled back).
    """

    reader: RecordCodec
    writer: RecordCodec
    convert: bool = False
    batch_size: int = 200
    max_batches: int | None = None
    mark: Callable[[str], int] | None = None


@dataclass(frozen=True, slots=True)
class ResealResult:
    """What one rotation (or conversion) run did.

    ``unreadable``: rows skipped (sealed by a pepper not given, or refused by the codec: altered,
    moved, rolled back, wrong-typed values — each of those also audited ``integrity``);
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


@dataclass(frozen=True, slots=True)
class ConversionCheck:
    """What a database holds that a one-time conversion of clear records must not seal.

    ``sealed``: records already sealed (a sealed deployment never writes a clear row, so a clear
    row beside them is a forgery or a mixed-in restore); ``seal_events``: audit events of an
    earlier conversion; ``unattributed``: clear records whose user has no enrolment in the audit
    trail (ids, at most a few).
    """

    clear: int
    sealed: int
    seal_events: int
    unattributed: tuple[str, ...]
