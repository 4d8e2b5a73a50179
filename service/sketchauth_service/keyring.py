"""The record key held in a PKCS#11 token: generated inside it, never extractable, every seal done by it.

**Why.** A pepper in the environment or a file is on the application server: a thief with the
database *and* a copy of that server's disk and environment has the pepper, and every record
opens. With ``SKETCHAUTH_PKCS11_MODULE`` set, the key that seals every record is an AES-256 key
generated inside a token (a hardware security module, a cloud KMS with a PKCS#11 interface, or
SoftHSM2 in tests) with ``CKA_EXTRACTABLE`` false and ``CKA_SENSITIVE`` true: the token seals and
opens (AES-GCM, ``CKM_AES_GCM``, 96-bit nonce from :mod:`secrets`, 128-bit tag, the record's
associated data as GCM's AAD) and the key's value never reaches the process. What the server
holds is the token's module path, label and PIN: with them and the token, records open; without
the token there is nothing to guess offline (the key is 256 random bits that exist only inside it).

**How it is reached.** python-pkcs11 (PyPI ``python-pkcs11``, the ``pkcs11`` extra) over the
module ``SKETCHAUTH_PKCS11_MODULE`` names; the token by ``SKETCHAUTH_PKCS11_TOKEN_LABEL``, logged
in as its user with the PIN from ``SKETCHAUTH_PKCS11_PIN_FILE`` (or ``SKETCHAUTH_PKCS11_PIN``); the
key by ``SKETCHAUTH_PKCS11_KEY_LABEL``. ``sketchauth pepper token-key`` generates it once
(:func:`generate_token_key`); the service refuses a key that is extractable or not sensitive.

**Its id** (stored beside each record, like a pepper id) is ``p11-`` and the hex of the key's
``CKA_ID``, 8 random bytes drawn when it is generated: it names the key, and says nothing of it.
**Other keys** (the rollback ledger's MAC key, :meth:`TokenKey.derive`) are HKDF-SHA256 of an
AES-CMAC (``CKM_AES_CMAC``, NIST SP 800-38B) the token computes over a label: a PRF of the token key.

One session per process, opened at first use and kept; operations on it are serialised by a lock
(a PKCS#11 session runs one operation at a time). ``benchmarks/bench_seal.py`` measures the
token's seal and open next to the in-process seal, same run.
"""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.pepper import MAX_SEALED_BYTES, PEPPER_NONCE_BYTES, SEAL_TAG_BYTES, kdf

__all__ = [
    "DEFAULT_KEY_LABEL",
    "TOKEN_ID_PREFIX",
    "TokenError",
    "TokenKey",
    "TokenSettings",
    "generate_token_key",
    "open_token_key",
]

#: How a token key's id starts (a pepper id is 16 hex digits: the two never collide).
TOKEN_ID_PREFIX = "p11-"
#: The key label used when ``SKETCHAUTH_PKCS11_KEY_LABEL`` is not set.
DEFAULT_KEY_LABEL = "sketchauth-records"
_KEY_ID_BYTES = 8
_NOT_SEALED = "record was not sealed by this token key for this place, or was altered"
_DERIVE_LABEL = b"sketchauth/token/derive\x00"


class TokenError(ValueError):
    """The token or its key is unusable (one line naming the setting; never the PIN)."""


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """Where the record key lives: the PKCS#11 module, the token's label, its user PIN, the key's label."""

    module: str
    token_label: str
    pin: str = field(repr=False)
    key_label: str = DEFAULT_KEY_LABEL

    @classmethod
    def of(
        cls, module: str, token_label: str | None, pin: str | None, pin_file: str | None, key_label: str | None
    ) -> TokenSettings:
        """The token settings (:class:`TokenError` if the label or the PIN is missing, or both PIN sources are set)."""
        if not token_label:
            raise TokenError("SKETCHAUTH_PKCS11_MODULE is set: also set SKETCHAUTH_PKCS11_TOKEN_LABEL")
        if pin and pin_file:
            raise TokenError("set SKETCHAUTH_PKCS11_PIN or SKETCHAUTH_PKCS11_PIN_FILE, not both")
        if pin_file:
            try:
                lines = Path(pin_file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise TokenError(f"SKETCHAUTH_PKCS11_PIN_FILE: cannot read {pin_file}: {type(exc).__name__}") from None
            pin = lines[0].strip() if lines else ""
        if not pin:
            raise TokenError(
                "the token's user PIN is missing: set SKETCHAUTH_PKCS11_PIN_FILE (or SKETCHAUTH_PKCS11_PIN)"
            )
        return cls(module, token_label, pin, key_label or DEFAULT_KEY_LABEL)


class TokenKey:
    """A non-extractable AES-256 key in a PKCS#11 token: a :class:`~sketchauth.pepper.Sealer` whose seal runs there."""

    def __init__(self, key: Any, key_id: bytes, session: Any) -> None:
        self._key = key
        self._session = session  # kept open: the key handle lives as long as its session
        self._lock = threading.Lock()
        self.id = TOKEN_ID_PREFIX + key_id.hex()

    def __repr__(self) -> str:
        return f"TokenKey(id={self.id!r})"

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """AES-GCM of ``record`` under the token key: ciphertext and 16-byte tag (the same length as the pepper's)."""
        _check(nonce, associated_data)
        if not isinstance(record, (bytes, bytearray)):
            raise ParameterError(f"a record to seal is bytes, not {type(record).__name__}")
        if len(record) > MAX_SEALED_BYTES:
            raise SketchFormatError(f"a sealed record is at most {MAX_SEALED_BYTES} bytes, got {len(record)}")
        sealed = self._run("encrypt", bytes(record), bytes(nonce), bytes(associated_data))
        if sealed is None:
            raise TokenError("the token refused to seal a record")
        return sealed

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """The record sealed in ``stored`` (:class:`~sketchauth.errors.SketchFormatError` if the token refuses it)."""
        _check(nonce, associated_data)
        if not isinstance(stored, (bytes, bytearray)) or not (
            SEAL_TAG_BYTES <= len(stored) <= MAX_SEALED_BYTES + SEAL_TAG_BYTES
        ):
            raise SketchFormatError(_NOT_SEALED)
        plain = self._run("decrypt", bytes(stored), bytes(nonce), bytes(associated_data))
        if plain is None:
            raise SketchFormatError(_NOT_SEALED)
        return plain

    def _run(self, operation: str, data: bytes, nonce: bytes, ad: bytes) -> bytes | None:
        """One GCM operation through the token; ``None`` if the token refused it (a failed tag)."""
        # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
        from pkcs11 import Mechanism, PKCS11Error
        from pkcs11.mechanisms import GCMParams

        param = GCMParams(nonce, ad, SEAL_TAG_BYTES * 8)
        try:
            with self._lock:
                out: bytes = getattr(self._key, operation)(data, mechanism=Mechanism.AES_GCM, mechanism_param=param)
        except PKCS11Error:
            return None
        return out

    def derive(self, info: bytes, length: int = 32) -> bytes:
        """A key for ``info``: HKDF-SHA256 of the token's AES-CMAC of a label and ``info`` (a PRF of the token key)."""
        # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
        from pkcs11 import Mechanism

        with self._lock:
            tag: bytes = self._key.sign(_DERIVE_LABEL + bytes(info), mechanism=Mechanism.AES_CMAC)
        return kdf(tag, info=b"sketchauth/token/derive\x00" + bytes(info), length=length)


def _check(nonce: bytes, ad: bytes) -> None:
    if not isinstance(ad, (bytes, bytearray)):
        raise ParameterError(f"associated data is bytes, not {type(ad).__name__}")
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a nonce is {PEPPER_NONCE_BYTES} bytes")


# -- opening the token -------------------------------------------------------------------------------------
_OPEN: dict[tuple[int, str, str, str], TokenKey] = {}
_OPEN_LOCK = threading.Lock()


def _session(settings: TokenSettings, *, rw: bool = False) -> Any:
    """A logged-in session on the token (:class:`TokenError` naming the setting if anything is missing)."""
    try:
        # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
        import pkcs11
    except ImportError:
        raise TokenError(
            "SKETCHAUTH_PKCS11_MODULE is set but python-pkcs11 is not installed: pip install 'sketchauth[pkcs11]'"
        ) from None
    if not Path(settings.module).is_file():
        raise TokenError(f"SKETCHAUTH_PKCS11_MODULE: no PKCS#11 module at {settings.module}")
    try:
        lib = pkcs11.lib(settings.module)
        token = lib.get_token(token_label=settings.token_label)
    except pkcs11.NoSuchToken:
        raise TokenError(f"SKETCHAUTH_PKCS11_TOKEN_LABEL: no token labelled {settings.token_label!r}") from None
    except pkcs11.PKCS11Error as exc:
        raise TokenError(f"SKETCHAUTH_PKCS11_MODULE: the module cannot be used ({type(exc).__name__})") from None
    try:
        return token.open(rw=rw, user_pin=settings.pin)
    except (pkcs11.PinIncorrect, pkcs11.PinLenRange):
        raise TokenError("the token refused the PIN (SKETCHAUTH_PKCS11_PIN_FILE / SKETCHAUTH_PKCS11_PIN)") from None
    except pkcs11.PKCS11Error as exc:
        raise TokenError(f"the token cannot be opened ({type(exc).__name__})") from None


def _find(session: Any, label: str) -> Any | None:
    # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
    from pkcs11 import KeyType, MultipleObjectsReturned, NoSuchKey, ObjectClass

    try:
        return session.get_key(object_class=ObjectClass.SECRET_KEY, key_type=KeyType.AES, label=label)
    except NoSuchKey:
        return None
    except MultipleObjectsReturned:
        raise TokenError(f"SKETCHAUTH_PKCS11_KEY_LABEL: several keys are labelled {label!r} in the token") from None


def open_token_key(settings: TokenSettings) -> TokenKey:
    """The record key of ``settings`` (opened once per process; :class:`TokenError` if absent or extractable)."""
    # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
    from pkcs11 import Attribute

    cache = (os.getpid(), settings.module, settings.token_label, settings.key_label)
    with _OPEN_LOCK:
        if cache in _OPEN:
            return _OPEN[cache]
        session = _session(settings)
        key = _find(session, settings.key_label)
        if key is None:
            session.close()
            raise TokenError(
                f"SKETCHAUTH_PKCS11_KEY_LABEL: the token holds no AES key labelled {settings.key_label!r}: "
                "generate it once with 'sketchauth pepper token-key'"
            )
        if key[Attribute.EXTRACTABLE] or not key[Attribute.SENSITIVE]:
            session.close()
            raise TokenError(
                f"the token key {settings.key_label!r} can leave the token (extractable or not sensitive): "
                "generate a new one with 'sketchauth pepper token-key' and rotate to it"
            )
        key_id = bytes(key[Attribute.ID] or b"")
        if len(key_id) < _KEY_ID_BYTES:
            session.close()
            raise TokenError(f"the token key {settings.key_label!r} has no id of {_KEY_ID_BYTES} bytes (CKA_ID)")
        _OPEN[cache] = TokenKey(key, key_id, session)
        return _OPEN[cache]


def generate_token_key(settings: TokenSettings) -> str:
    """Generate the record key inside the token (AES-256, not extractable, sensitive, not modifiable); its id.

    Refuses (:class:`TokenError`) when a key with the label exists: a second key would leave the
    records sealed by the first unreadable.
    """
    # optional dependency: python-pkcs11, the pkcs11 extra (loaded only where a token is configured)
    from pkcs11 import Attribute, KeyType

    session = _session(settings, rw=True)
    try:
        if _find(session, settings.key_label) is not None:
            raise TokenError(f"the token already holds a key labelled {settings.key_label!r}: it was not replaced")
        key_id = secrets.token_bytes(_KEY_ID_BYTES)
        template = {
            Attribute.EXTRACTABLE: False,
            Attribute.SENSITIVE: True,
            Attribute.MODIFIABLE: False,
            Attribute.ENCRYPT: True,
            Attribute.DECRYPT: True,
            Attribute.SIGN: True,
            Attribute.VERIFY: True,
            Attribute.WRAP: False,
            Attribute.UNWRAP: False,
            Attribute.DERIVE: False,
        }
        session.generate_key(KeyType.AES, 256, id=key_id, label=settings.key_label, store=True, template=template)
    finally:
        session.close()
    return TOKEN_ID_PREFIX + key_id.hex()
