"""Pepper-sealed storage: a per-deployment secret seals every stored record with a standard AEAD.

**Why.** A deterministic sketch (the interval sketch, PinSketch, s1) stores the same helper data
for the same template in every database, and the linear ones store helpers whose difference is
a sketch of the captures' difference (Fang's thesis, ch. 6; the linkage attacks of
:mod:`sketchauth.evaluate.unlinkability`); the asymmetric sketches publish tolerances (s1) or
partition structure (s2, s3) that link as well. Two deployments that enrol the same people can
join their databases, and a thief of one database can test guesses against its hashes. A
**pepper** — a high-entropy secret of the deployment, kept out of the database — seals what is
stored.

**The keys** come from the pepper through one memory-hard step, then HKDF-SHA256 (RFC 5869,
pyca/cryptography)::

    M      = argon2id(pepper, salt="sketchauth/pepper/v3", t=3, m=128 MiB, p=1)   (RFC 9106, 32 bytes)
    K_seal = HKDF-SHA256(M, salt="sketchauth/pepper/v3", info="record seal key")
    id     = HKDF-SHA256(M, salt="sketchauth/pepper/v3", info="pepper id")[:8]          (16 hex digits)
    stored = ChaCha20-Poly1305(K_seal).encrypt(N, record, associated_data)        (len + 16 bytes)

:data:`PEPPER_KDF` holds the argon2id parameters (argon2-cffi's ``low_level.hash_secret_raw``).
Every way to test a candidate pepper against the database — its public **pepper id**, stored in
clear with each record to say which pepper generation sealed it, or any sealed record — starts
with that argon2id evaluation: ``benchmarks/bench_seal.py`` measures its cost (at least 0.25 s a
guess on the benchmark machine, single-threaded, in its JSON's ``pepper_guess``), where the
earlier derivation (HKDF only) let the id be tested in about 85 µs. The process pays it once per
configured pepper (the derived keys are cached by a digest of the secret).

``N`` is a fresh 12-byte **nonce per seal** from :mod:`secrets` (new at every enrolment, PIN
change, re-hash and rotation), stored with the record; random 96-bit nonces stay collision-free
(probability below ``2^-32``) for up to ``2^32`` seals under one pepper. The **associated data**
binds the record to where it belongs: the caller passes the canonical bytes of whatever must not
be moved (the service binds the record format, deployment, user id, per-user record version and
pepper id; :func:`associated_data`), so a record copied to another user, another version or
another deployment does not open. :func:`unwrap` refuses
(:class:`~sketchauth.errors.SketchFormatError`) a record altered by one bit, sealed by another
pepper or opened under other associated data, before anything is parsed.

**Which peppers are accepted.** A pepper is a key, drawn by a machine: :func:`new_pepper_text`
(``sketchauth pepper new``) writes 32 bytes from :mod:`secrets` as ``skp1_`` followed by base64url
of the bytes and a 4-byte checksum (SHA-256 of a label and the bytes), and :meth:`Pepper.from_text`
accepts that format only. Any other text — a phrase, a hash of a password, base64 of a word —
cannot be told apart from a random string by its looks, so it is refused unless the caller
explicitly allows an *unformatted* text (``unformatted=True``; the service's
``SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER``, logged as a warning), and then it must still carry
:data:`MIN_PEPPER_BITS` bits as judged by an entropy estimator (:func:`pepper_text_bits`).

**Earlier peppers.** Records sealed before the memory-hard step carry the pepper's *legacy* id
(:attr:`Pepper.legacy_id`, HKDF of the pepper alone, ``salt="sketchauth/pepper/v2"``); a pepper
still opens them (:meth:`Pepper.legacy`, read-only) so that a deployment keeps working, and a
rotation re-seals them under the current derivation, after which the database holds nothing a
fast guess can be tested against.

**Accounting.** The pepper is a *key*, not part of what is verified:

* a thief with the **database alone** sees sealed records, computationally independent of the
  templates and of the hashes inside them: not a single guess can be tested offline, and two
  databases cannot be linked;
* a thief with the **database and the pepper** opens every record: the single-helper bound of
  the scheme applies unchanged (``loss ≤ |S| − H∞(R)``, :meth:`SecureSketch.report`) and each
  guess costs one argon2id, as without a pepper. The pepper never *weakens* anything.

Keep it outside the database (environment, secret manager), and rotate it (:func:`rewrap`) when
it may have leaked: opening takes only the old pepper, no biometric.

Example::

    >>> from sketchauth import PinSketch
    >>> sketch = PinSketch(16, 4)
    >>> helper = sketch.encode([3, 70, 1000, 2024])
    >>> pepper = Pepper(bytes(range(32)))
    >>> nonce = new_nonce()
    >>> ad = associated_data(b"user-1", b"v1")
    >>> stored = wrap(helper, pepper, nonce, ad)
    >>> len(stored) == len(helper) + SEAL_TAG_BYTES and helper not in stored
    True
    >>> unwrap(stored, pepper, nonce, ad) == helper
    True
    >>> unwrap(stored, pepper, nonce, associated_data(b"user-2", b"v1"))
    Traceback (most recent call last):
    ...
    sketchauth.errors.SketchFormatError: record was not sealed by this pepper for this place, or was altered
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import math
import secrets as _secrets
import string
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from argon2.low_level import Type, hash_secret_raw
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.sketches.format import MAX_HELPER_BYTES

__all__ = [
    "MAX_SEALED_BYTES",
    "MIN_PEPPER_BITS",
    "MIN_PEPPER_BYTES",
    "PEPPER_KDF",
    "PEPPER_NONCE_BYTES",
    "PEPPER_TEXT_PREFIX",
    "SEAL_TAG_BYTES",
    "Pepper",
    "PepperKdf",
    "Sealer",
    "associated_data",
    "kdf",
    "new_nonce",
    "new_pepper_text",
    "pepper_text_bits",
    "rewrap",
    "unwrap",
    "wrap",
]

#: Shortest pepper accepted as bytes: 128 bits (a pepper is machine-drawn, never a password).
MIN_PEPPER_BYTES = 16
#: Longest pepper accepted (bounds the work of deriving its keys).
MAX_PEPPER_BYTES = 1024
#: Least entropy an *unformatted* pepper text must carry, as judged by :func:`pepper_text_bits`.
MIN_PEPPER_BITS = 128
#: Length of the per-seal nonce (ChaCha20-Poly1305's 96 bits).
PEPPER_NONCE_BYTES = 12
#: Length of the seal's authentication tag (Poly1305): a stored record is its plaintext's length plus this.
SEAL_TAG_BYTES = 16
#: Longest plaintext sealed: a helper of the largest accepted size plus room for its record's fields.
MAX_SEALED_BYTES = MAX_HELPER_BYTES + (1 << 20)
#: How a pepper text made by :func:`new_pepper_text` starts (format version 1).
PEPPER_TEXT_PREFIX = "skp1_"
#: Random bytes in a pepper text, and the bytes of its checksum.
_TEXT_SECRET_BYTES = 32
_TEXT_CHECK_BYTES = 4
_TEXT_CHECK_LABEL = b"sketchauth pepper text v1\x00"
_SALT = b"sketchauth/pepper/v3"
_SEAL_INFO = b"record seal key"
_ID_INFO = b"pepper id"
_DERIVE_INFO = b"derivation key"
#: Bytes of the pepper id (shown as hex): 64 bits, so two generations never collide by chance.
ID_BYTES = 8
_NOT_SEALED = "record was not sealed by this pepper for this place, or was altered"
_GENERATE = "make one with: sketchauth pepper new"


@dataclass(frozen=True, slots=True)
class PepperKdf:
    """The memory-hard step from a pepper to its keys: argon2id (RFC 9106) through argon2-cffi's low-level API.

    ``time_cost`` passes over ``memory_kib`` KiB in ``parallelism`` lanes, 32 bytes out. One lane:
    an attacker's guess costs the whole evaluation's time on one core, which is what the benchmark
    measures. The values are part of the format: changing them changes every pepper id.
    """

    time_cost: int = 3
    memory_kib: int = 128 * 1024
    parallelism: int = 1
    salt: bytes = _SALT

    def stretch(self, secret: bytes) -> bytes:
        """The 32-byte master key of ``secret`` (one full argon2id evaluation, uncached)."""
        return hash_secret_raw(secret, self.salt, self.time_cost, self.memory_kib, self.parallelism, 32, Type.ID)


#: The parameters every pepper's keys are derived with: t=3, m=128 MiB, p=1 (``bench_seal.py`` times one).
PEPPER_KDF = PepperKdf()


def kdf(key: bytes, *, info: bytes, length: int = 32, salt: bytes = _SALT) -> bytes:
    """HKDF-SHA256 (RFC 5869) from pyca/cryptography: ``length`` bytes of ``key`` for ``info``.

    >>> kdf(bytes([0x0B] * 22), salt=bytes(range(13)), info=bytes(range(0xF0, 0xFA)), length=42).hex()[:16]
    '3cb25f25faacd57a'
    """
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(bytes(key))


def associated_data(*parts: bytes) -> bytes:
    """Canonical bytes of ``parts``: each prefixed by its length (4 bytes, big-endian), so no two lists collide.

    >>> associated_data(b"ab", b"c") != associated_data(b"a", b"bc")
    True
    """
    out = bytearray()
    for part in parts:
        if not isinstance(part, (bytes, bytearray)):
            raise ParameterError(f"associated data parts are bytes, not {type(part).__name__}")
        out += len(part).to_bytes(4, "big") + part
    return bytes(out)


# -- the pepper text format ------------------------------------------------------------------------------
def _text_check(secret: bytes) -> bytes:
    return hashlib.sha256(_TEXT_CHECK_LABEL + secret).digest()[:_TEXT_CHECK_BYTES]


def new_pepper_text() -> str:
    """A new pepper as text: ``skp1_`` and base64url (no padding) of 32 bytes from :mod:`secrets` and a checksum.

    >>> text = new_pepper_text()
    >>> text.startswith(PEPPER_TEXT_PREFIX) and len(text) == 53
    True
    """
    secret = _secrets.token_bytes(_TEXT_SECRET_BYTES)
    body = base64.urlsafe_b64encode(secret + _text_check(secret)).decode("ascii").rstrip("=")
    return PEPPER_TEXT_PREFIX + body


def _parse_pepper_text(text: str) -> bytes:
    """The 32 secret bytes of a text made by :func:`new_pepper_text` (:class:`ParameterError` if mistyped)."""
    body = text[len(PEPPER_TEXT_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    well_formed = all(c in string.ascii_letters + string.digits + "-_" for c in body)
    if not well_formed or len(raw) != _TEXT_SECRET_BYTES + _TEXT_CHECK_BYTES:
        raise ParameterError(f"a {PEPPER_TEXT_PREFIX} pepper text is malformed (cut or mistyped): {_GENERATE}")
    secret, check = raw[:_TEXT_SECRET_BYTES], raw[_TEXT_SECRET_BYTES:]
    if not _secrets.compare_digest(check, _text_check(secret)):
        raise ParameterError(f"a {PEPPER_TEXT_PREFIX} pepper text fails its checksum (mistyped): {_GENERATE}")
    return secret


# -- judging a pepper text ---------------------------------------------------------------------------------
#: zxcvbn judges at most this many characters; the rest is credited as brute force.
_JUDGED = 72
_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits)


def _bits_per_character(text: str) -> float:
    """log2 of the alphabet ``text`` is drawn from: hex digits, else the union of the character classes used."""
    if all(c in string.digits for c in text):
        return math.log2(10)
    if all(c in string.hexdigits for c in text) and (text == text.lower() or text == text.upper()):
        return 4.0
    size = sum(len(cls) for cls in _CLASSES if any(c in cls for c in text))
    other = {c for c in text if not any(c in cls for cls in _CLASSES)}
    if other:
        size += 33 if all(c.isascii() for c in other) else 1000
    return math.log2(max(size, 2))


@functools.lru_cache(maxsize=16)
def pepper_text_bits(text: str) -> float:
    """The entropy credited to a pepper text, in bits: zxcvbn's decomposition, brute force at the text's alphabet.

    zxcvbn (Wheeler, USENIX Security 2016) splits the text into the cheapest sequence of guessable
    patterns — dictionary words (plain, reversed, l33t), keyboard walks, sequences, repeats,
    dates — and brute-forced runs. Each pattern is credited ``log2`` of its guesses; each
    brute-forced run its length times the bits per character of the text's alphabet (4 for hex,
    about 5.95 for base64url), not zxcvbn's flat 3.3 bits, which would refuse a genuinely random
    128-bit token. A random ``secrets.token_urlsafe(32)`` gets about 250 bits; "correct horse
    battery staple" gets under 70.
    """
    try:
        from zxcvbn import zxcvbn  # optional dependency: the service extra (judges configured texts only)
    except ImportError:
        raise ParameterError(
            "judging a pepper text needs zxcvbn: pip install 'sketchauth[service]' (or give Pepper(bytes) "
            "drawn by secrets.token_bytes(32), which needs no judging)"
        ) from None

    per_char = _bits_per_character(text)
    bits = 0.0
    for match in zxcvbn(text[:_JUDGED])["sequence"]:
        if match["pattern"] == "bruteforce":
            bits += len(match["token"]) * per_char
        else:
            bits += math.log2(max(float(match["guesses"]), 1.0))
    return bits + len(text[_JUDGED:]) * per_char


# -- the keys of a pepper ----------------------------------------------------------------------------------
_MASTER_CACHE: dict[bytes, bytes] = {}
_MASTER_LOCK = threading.Lock()
_MASTER_CACHE_SIZE = 64


def _master(secret: bytes, params: PepperKdf) -> bytes:
    """``params.stretch(secret)``, cached in this process by a digest of the secret (never the secret)."""
    digest = hashlib.sha256(
        repr((params.time_cost, params.memory_kib, params.parallelism, params.salt)).encode() + b"\x00" + secret
    ).digest()
    with _MASTER_LOCK:
        master = _MASTER_CACHE.get(digest)
    if master is None:
        master = params.stretch(secret)
        with _MASTER_LOCK:
            if len(_MASTER_CACHE) >= _MASTER_CACHE_SIZE:
                _MASTER_CACHE.pop(next(iter(_MASTER_CACHE)))
            _MASTER_CACHE[digest] = master
    return master


class Sealer(Protocol):
    """What seals and opens records: a :class:`Pepper`, or a key held in a token (the service's PKCS#11 key).

    ``id`` is public and stored beside each record; ``seal``/``open`` are an AEAD under a key the
    caller never sees; ``open`` raises :class:`~sketchauth.errors.SketchFormatError` on any mismatch.
    """

    @property
    def id(self) -> str: ...

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes: ...

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes: ...

    def derive(self, info: bytes, length: int = 32) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Pepper:
    """A deployment's pepper: its seal key and its public id, derived once from the secret bytes.

    The secret itself is not kept; ``repr`` shows only the id. ``Pepper(secret)`` with at least
    :data:`MIN_PEPPER_BYTES` machine-drawn bytes; :meth:`from_text` for a configured string.
    Construction costs one argon2id evaluation (:data:`PEPPER_KDF`) the first time a secret is seen.
    """

    secret: bytes = field(repr=False)
    #: Short public tag of the pepper (16 hex digits): which generation sealed a record.
    id: str = field(init=False)
    #: The id the same secret had before the memory-hard step (records sealed then carry it).
    legacy_id: str = field(init=False, repr=False)
    _aead: Any = field(init=False, repr=False, compare=False)
    _secret_key: bytes = field(init=False, repr=False, compare=False)
    _legacy: _LegacyKeys = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, (bytes, bytearray)):
            raise ParameterError(f"a pepper is bytes, not {type(self.secret).__name__} (Pepper.from_text for a string)")
        if not MIN_PEPPER_BYTES <= len(self.secret) <= MAX_PEPPER_BYTES:
            raise ParameterError(
                f"a pepper needs {MIN_PEPPER_BYTES} to {MAX_PEPPER_BYTES} bytes (at least 128 bits from a "
                f"machine: secrets.token_bytes(32)), got {len(self.secret)}"
            )
        secret = bytes(self.secret)
        master = _master(secret, PEPPER_KDF)
        legacy = _LegacyKeys.of(secret)
        object.__setattr__(self, "id", kdf(master, info=_ID_INFO, length=ID_BYTES).hex())
        object.__setattr__(self, "legacy_id", legacy.id)
        object.__setattr__(self, "_aead", ChaCha20Poly1305(kdf(master, info=_SEAL_INFO)))
        # A key for other uses of the deployment's secret (derive); the secret itself is dropped.
        object.__setattr__(self, "_secret_key", kdf(master, info=_DERIVE_INFO))
        object.__setattr__(self, "_legacy", legacy)
        object.__setattr__(self, "secret", b"")

    def derive(self, info: bytes, length: int = 32) -> bytes:
        """An independent key of this pepper for ``info`` (HKDF-SHA256), e.g. a rollback ledger's MAC key."""
        return kdf(self._secret_key, info=b"sketchauth/pepper/derive\x00" + info, length=length)

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """ChaCha20-Poly1305 of ``record`` under this pepper's seal key (:func:`wrap`; :class:`Sealer`)."""
        if not isinstance(associated_data, (bytes, bytearray)):
            raise ParameterError(f"associated data is bytes, not {type(associated_data).__name__}")
        if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
            raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")
        if not isinstance(record, (bytes, bytearray)):
            raise ParameterError(f"a record to seal is bytes, not {type(record).__name__}")
        if len(record) > MAX_SEALED_BYTES:
            raise SketchFormatError(f"a sealed record is at most {MAX_SEALED_BYTES} bytes, got {len(record)}")
        sealed: bytes = self._aead.encrypt(bytes(nonce), bytes(record), bytes(associated_data))
        return sealed

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """The record sealed in ``stored`` under this pepper (:func:`unwrap`; the :class:`Sealer` interface)."""
        nonce = _check_sealed(stored, nonce, associated_data)
        try:
            plain: bytes = self._aead.decrypt(nonce, bytes(stored), bytes(associated_data))
        except InvalidTag:
            raise SketchFormatError(_NOT_SEALED) from None
        return plain

    def legacy(self) -> _LegacyKeys:
        """The read-only keys this secret had before the memory-hard step (records sealed under :attr:`legacy_id`)."""
        return self._legacy

    @classmethod
    def from_text(cls, text: str, *, unformatted: bool = False, judge: bool = True) -> Pepper:
        """A pepper from a configured string: a text made by :func:`new_pepper_text` (``sketchauth pepper new``).

        Any other text is refused unless ``unformatted`` (an explicit override: a deployment's
        older pepper, or a rotation's old ones), and then it must be at least 22 characters
        (128 bits of base64url) and, with ``judge``, carry :data:`MIN_PEPPER_BITS` bits as
        :func:`pepper_text_bits` credits them; its UTF-8 bytes are the secret.
        """
        if not isinstance(text, str):
            raise ParameterError("a pepper string is a str")
        text = text.strip()
        if text.startswith(PEPPER_TEXT_PREFIX):
            return cls(_parse_pepper_text(text))
        if not unformatted:
            raise ParameterError(
                f"a pepper must be made by a machine, and this text is not in the format of one ({PEPPER_TEXT_PREFIX}"
                f"...): {_GENERATE}"
            )
        if len(text) < 22:
            raise ParameterError(f"a pepper needs at least 128 bits, and has {len(text)} characters: {_GENERATE}")
        if judge:
            bits = pepper_text_bits(text)
            if bits < MIN_PEPPER_BITS:
                raise ParameterError(
                    f"a pepper needs at least {MIN_PEPPER_BITS} bits of entropy; this one is judged to carry "
                    f"{bits:.0f} (words, sequences, repeats and dates are guessed, not brute-forced): {_GENERATE}"
                )
        return cls(text.encode("utf-8"))


_LEGACY_SALT = b"sketchauth/pepper/v2"
_LEGACY_ID_NONCE = bytes(PEPPER_NONCE_BYTES)
_LEGACY_ID_AD = b"sketchauth/pepper-id/v2"
_LEGACY_ID_BLOCK = 1024


@dataclass(frozen=True, slots=True)
class _LegacyKeys:
    """The keys of a secret under the derivation before :data:`PEPPER_KDF` (HKDF only): read-only.

    They open records a deployment sealed before the memory-hard step, until a rotation re-seals
    them; nothing is ever sealed under them again.
    """

    id: str
    _aead: Any = field(repr=False, compare=False)
    _secret_key: bytes = field(repr=False, compare=False)

    @classmethod
    def of(cls, secret: bytes) -> _LegacyKeys:
        id_key = kdf(secret, info=b"pepper id key", salt=_LEGACY_SALT)
        tag = ChaCha20Poly1305(id_key).encrypt(_LEGACY_ID_NONCE, bytes(_LEGACY_ID_BLOCK), _LEGACY_ID_AD)
        return cls(
            tag[-SEAL_TAG_BYTES:][:ID_BYTES].hex(),
            ChaCha20Poly1305(kdf(secret, info=_SEAL_INFO, salt=_LEGACY_SALT)),
            kdf(secret, info=_DERIVE_INFO, salt=_LEGACY_SALT),
        )

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        raise ParameterError("a legacy pepper derivation only opens records; seal under the pepper itself")

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        nonce = _check_sealed(stored, nonce, associated_data)
        try:
            plain: bytes = self._aead.decrypt(nonce, bytes(stored), bytes(associated_data))
        except InvalidTag:
            raise SketchFormatError(_NOT_SEALED) from None
        return plain

    def derive(self, info: bytes, length: int = 32) -> bytes:
        return kdf(self._secret_key, info=b"sketchauth/pepper/derive\x00" + info, length=length, salt=_LEGACY_SALT)


def new_nonce() -> bytes:
    """A fresh nonce (12 bytes from :mod:`secrets`)."""
    return _secrets.token_bytes(PEPPER_NONCE_BYTES)


def _check(pepper: Pepper, nonce: bytes, ad: bytes) -> bytes:
    if not isinstance(pepper, Pepper):
        raise ParameterError("pepper must be a sketchauth.pepper.Pepper (Pepper(secret) or Pepper.from_text(text))")
    if not isinstance(ad, (bytes, bytearray)):
        raise ParameterError(f"associated data is bytes, not {type(ad).__name__}")
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")
    return bytes(nonce)


def wrap(record: bytes, pepper: Pepper, nonce: bytes, associated_data: bytes = b"") -> bytes:
    """The stored form of ``record``: ChaCha20-Poly1305 under the pepper's seal key, 16 bytes longer.

    ``associated_data`` is authenticated, not stored: the same bytes must be given to :func:`unwrap`.
    Any record of at most :data:`MAX_SEALED_BYTES` is accepted (every scheme's helper, PIN
    cascades, structures of two biometrics, the service's whole stored records).
    """
    _check(pepper, nonce, associated_data)
    return pepper.seal(record, nonce, associated_data)


def unwrap(stored: bytes, pepper: Pepper, nonce: bytes, associated_data: bytes = b"") -> bytes:
    """The record sealed in ``stored`` (the inverse of :func:`wrap`, under the same associated data).

    The length is bounded before any work; the tag is checked (in constant time, by the AEAD)
    before anything is decrypted: a record sealed by another pepper, under other associated data,
    or altered anywhere (ciphertext, tag or nonce) raises :class:`~sketchauth.errors.SketchFormatError`.
    What comes out is still untrusted data for its own strict parser.
    """
    _check(pepper, nonce, associated_data)
    return pepper.open(stored, nonce, associated_data)


def _check_sealed(stored: bytes, nonce: bytes, ad: bytes) -> bytes:
    """The nonce as bytes, after checking the nonce, the associated data and the stored length (before any work)."""
    if not isinstance(ad, (bytes, bytearray)):
        raise ParameterError(f"associated data is bytes, not {type(ad).__name__}")
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")
    if not isinstance(stored, (bytes, bytearray)):
        raise SketchFormatError(f"a sealed record is bytes, not {type(stored).__name__}")
    if not SEAL_TAG_BYTES <= len(stored) <= MAX_SEALED_BYTES + SEAL_TAG_BYTES:
        raise SketchFormatError(
            f"a sealed record is {SEAL_TAG_BYTES} to {MAX_SEALED_BYTES + SEAL_TAG_BYTES} bytes, got {len(stored)}"
        )
    return bytes(nonce)


def rewrap(
    stored: bytes, old: Pepper | None, old_nonce: bytes | None, new: Pepper, associated_data: bytes = b""
) -> tuple[bytes, bytes]:
    """``(record sealed by new, its fresh nonce)`` from a record sealed by ``old`` (``None``: clear).

    Needs no biometric: opening takes only the old pepper. A fresh nonce is drawn. The same
    associated data is used on both sides (a caller whose associated data names the pepper
    generation opens and seals itself with :func:`unwrap` and :func:`wrap`).
    """
    if old is None:
        clear = stored
    else:
        if old_nonce is None:
            raise ParameterError("a sealed record needs its nonce to be opened")
        clear = unwrap(stored, old, old_nonce, associated_data)
    nonce = new_nonce()
    return wrap(clear, new, nonce, associated_data), nonce
