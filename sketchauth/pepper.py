"""Pepper-sealed storage: a per-deployment secret seals every stored record with a standard AEAD.

**Why.** A deterministic sketch (the interval sketch, PinSketch, s1) stores the same helper data
for the same template in every database, and the linear ones store helpers whose difference is
a sketch of the captures' difference (Fang's thesis, ch. 6; the linkage attacks of
:mod:`sketchauth.evaluate.unlinkability`); the asymmetric sketches publish tolerances (s1) or
partition structure (s2, s3) that link as well. Two deployments that enrol the same people can
join their databases, and a thief of one database can test guesses against its hashes. A
**pepper** — a high-entropy secret of the deployment, kept out of the database — seals what is
stored.

**The seal** is ChaCha20-Poly1305 (RFC 8439) from pyca/cryptography, under a key from
HKDF-SHA256 (RFC 5869, also pyca) of the pepper::

    K_seal = HKDF-SHA256(pepper, salt="sketchauth/pepper/v2", info="record seal key")   (32 bytes)
    stored = ChaCha20-Poly1305(K_seal).encrypt(N, record, associated_data)     (len + 16 bytes)

``N`` is a fresh 12-byte **nonce per seal** from :mod:`secrets` (new at every enrolment, PIN
change, re-hash and rotation), stored with the record; random 96-bit nonces stay collision-free
(probability below ``2^-32``) for up to ``2^32`` seals under one pepper. The **associated data**
binds the record to where it belongs: the caller passes the canonical bytes of whatever must not
be moved (the service binds the record format, deployment, user id, per-user record version and
pepper id; :func:`associated_data`), so a record copied to another user, another version or
another deployment does not open. :func:`unwrap` refuses
(:class:`~sketchauth.errors.SketchFormatError`) a record altered by one bit, sealed by another
pepper or opened under other associated data, before anything is parsed.

**Why HKDF and not argon2 for the keys.** The pepper is not a password: :meth:`Pepper.from_text`
refuses a text unless it carries at least :data:`MIN_PEPPER_BITS` bits as *judged by an entropy
estimator* (zxcvbn's pattern matching — dictionary words, sequences, repeats, dates — with the
brute-forced parts credited at the bits per character of the text's own alphabet), so human
phrases such as "correct horse battery staple" are refused whatever their length. Against
``2^128`` candidates a slow hash adds nothing anyone needs. The **pepper id** (:attr:`Pepper.id`),
stored in clear with each record to say which pepper generation sealed it, is the
ChaCha20-Poly1305 tag of a 1 KiB block of zeros under a key of its own (HKDF info "pepper id
key"): testing a candidate pepper against the id costs one HKDF and one AEAD over 1 KiB, no less
than opening the smallest record the service seals (``benchmarks/bench_seal.py`` measures both),
so the id makes no guess cheaper than the seals already do.

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

import functools
import math
import secrets as _secrets
import string
from dataclasses import dataclass, field
from typing import Any, cast

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
    "PEPPER_NONCE_BYTES",
    "SEAL_TAG_BYTES",
    "Pepper",
    "associated_data",
    "kdf",
    "new_nonce",
    "pepper_text_bits",
    "rewrap",
    "unwrap",
    "wrap",
]

#: Shortest pepper accepted as bytes: 128 bits (a pepper is machine-drawn, never a password).
MIN_PEPPER_BYTES = 16
#: Longest pepper accepted (bounds the work of deriving its keys).
MAX_PEPPER_BYTES = 1024
#: Least entropy a pepper *text* must carry, as judged by :func:`pepper_text_bits`.
MIN_PEPPER_BITS = 128
#: Length of the per-seal nonce (ChaCha20-Poly1305's 96 bits).
PEPPER_NONCE_BYTES = 12
#: Length of the seal's authentication tag (Poly1305): a stored record is its plaintext's length plus this.
SEAL_TAG_BYTES = 16
#: Longest plaintext sealed: a helper of the largest accepted size plus room for its record's fields.
MAX_SEALED_BYTES = MAX_HELPER_BYTES + (1 << 20)
_SALT = b"sketchauth/pepper/v2"
_SEAL_INFO = b"record seal key"
_ID_INFO = b"pepper id key"
_ID_NONCE = bytes(PEPPER_NONCE_BYTES)
_ID_AD = b"sketchauth/pepper-id/v2"
#: The id is the tag of a block this long: testing a candidate pepper against it costs one HKDF and
#: one AEAD over 1 KiB, more than opening the smallest record the service seals (about 700 bytes).
_ID_BLOCK = 1024
#: Bytes of the pepper id (shown as hex): 64 bits, so two generations never collide by chance.
ID_BYTES = 8
_NOT_SEALED = "record was not sealed by this pepper for this place, or was altered"
_GENERATE = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"


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


@dataclass(frozen=True, slots=True)
class Pepper:
    """A deployment's pepper: its seal key and its public id, derived once from the secret bytes.

    The secret itself is not kept; ``repr`` shows only the id. ``Pepper(secret)`` with at least
    :data:`MIN_PEPPER_BYTES` machine-drawn bytes; :meth:`from_text` for a configured string.
    """

    secret: bytes = field(repr=False)
    #: Short public tag of the pepper (16 hex digits): which generation sealed a record.
    id: str = field(init=False)
    _aead: Any = field(init=False, repr=False, compare=False)
    _secret_key: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, (bytes, bytearray)):
            raise ParameterError(f"a pepper is bytes, not {type(self.secret).__name__} (Pepper.from_text for a string)")
        if not MIN_PEPPER_BYTES <= len(self.secret) <= MAX_PEPPER_BYTES:
            raise ParameterError(
                f"a pepper needs {MIN_PEPPER_BYTES} to {MAX_PEPPER_BYTES} bytes (at least 128 bits from a "
                f"machine: secrets.token_bytes(32)), got {len(self.secret)}"
            )
        secret = bytes(self.secret)
        id_tag = ChaCha20Poly1305(kdf(secret, info=_ID_INFO)).encrypt(_ID_NONCE, bytes(_ID_BLOCK), _ID_AD)
        object.__setattr__(self, "id", id_tag[-SEAL_TAG_BYTES:][:ID_BYTES].hex())
        object.__setattr__(self, "_aead", ChaCha20Poly1305(kdf(secret, info=_SEAL_INFO)))
        # A key for other uses of the deployment's secret (derive_key); the secret itself is dropped.
        object.__setattr__(self, "_secret_key", kdf(secret, info=b"derivation key"))
        object.__setattr__(self, "secret", b"")

    def derive(self, info: bytes, length: int = 32) -> bytes:
        """An independent key of this pepper for ``info`` (HKDF-SHA256), e.g. a rollback ledger's MAC key."""
        return kdf(self._secret_key, info=b"sketchauth/pepper/derive\x00" + info, length=length)

    @classmethod
    def from_text(cls, text: str, *, judge: bool = True) -> Pepper:
        """A pepper from a configured string (its UTF-8 bytes), e.g. ``secrets.token_urlsafe(32)``.

        With ``judge`` (the default) the string must carry :data:`MIN_PEPPER_BITS` bits as
        :func:`pepper_text_bits` credits them: a human phrase, a word with digits or a repeated
        pattern is refused however long. ``judge=False`` checks the length only (at least 22
        characters: 128 bits of base64url), for peppers being retired by a rotation.
        """
        if not isinstance(text, str):
            raise ParameterError("a pepper string is a str")
        text = text.strip()
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
    nonce = _check(pepper, nonce, associated_data)
    if not isinstance(record, (bytes, bytearray)):
        raise ParameterError(f"a record to seal is bytes, not {type(record).__name__}")
    if len(record) > MAX_SEALED_BYTES:
        raise SketchFormatError(f"a sealed record is at most {MAX_SEALED_BYTES} bytes, got {len(record)}")
    return cast("bytes", pepper._aead.encrypt(nonce, bytes(record), bytes(associated_data)))


def unwrap(stored: bytes, pepper: Pepper, nonce: bytes, associated_data: bytes = b"") -> bytes:
    """The record sealed in ``stored`` (the inverse of :func:`wrap`, under the same associated data).

    The length is bounded before any work; the tag is checked (in constant time, by the AEAD)
    before anything is decrypted: a record sealed by another pepper, under other associated data,
    or altered anywhere (ciphertext, tag or nonce) raises :class:`~sketchauth.errors.SketchFormatError`.
    What comes out is still untrusted data for its own strict parser.
    """
    nonce = _check(pepper, nonce, associated_data)
    if not isinstance(stored, (bytes, bytearray)):
        raise SketchFormatError(f"a sealed record is bytes, not {type(stored).__name__}")
    if not SEAL_TAG_BYTES <= len(stored) <= MAX_SEALED_BYTES + SEAL_TAG_BYTES:
        raise SketchFormatError(
            f"a sealed record is {SEAL_TAG_BYTES} to {MAX_SEALED_BYTES + SEAL_TAG_BYTES} bytes, got {len(stored)}"
        )
    try:
        return cast("bytes", pepper._aead.decrypt(nonce, bytes(stored), bytes(associated_data)))
    except InvalidTag:
        raise SketchFormatError(_NOT_SEALED) from None


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
