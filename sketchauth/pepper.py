"""Pepper-diversified storage: a per-deployment secret seals every stored helper record.

**Why.** A deterministic sketch (the interval sketch, PinSketch, s1) stores the same helper data
for the same template in every database, and the linear ones store helpers whose difference is
a sketch of the captures' difference (Fang's thesis, ch. 6; the linkage attacks of
:mod:`sketchauth.evaluate.unlinkability`); the asymmetric sketches publish tolerances (s1) or
partition structure (s2, s3) that link as well. Two deployments that enrol the same people can
join their databases. A **pepper** — a high-entropy secret of the deployment, kept out of the
database — seals what is stored: the *whole* helper record, header, parameters and payload, of
every scheme and every mixed structure (PIN cascades, two biometrics).

**Why a seal and not a format-preserving pad.** Format preservation is what the cascaded mixing
of Fang's thesis (ch. 7, :mod:`sketchauth.mixing`) needs for a *guessable* secret: a PIN is
guessed, and a wrong guess must still give a valid-looking sketch so that the sketch cannot
confirm guesses. A pepper is a machine-drawn key of at least 128 bits that nobody guesses, so
format preservation gains nothing — a wrong pepper may as well be *recognised* — while it only
covers a helper's symbols: s1's tolerances and an s2/s3 partition's structure stayed in clear and
linked, a PinSketch with dependent syndromes had no pad, and a structure mixing symbol groups
(interval + PinSketch) could not be padded at all. A seal of the whole record hides everything a
helper carries, for every scheme, mixed structures included.

**The seal** (encrypt-then-MAC, keys from HKDF-SHA256 (RFC 5869) of the pepper, distinct infos)::

    K_enc = HKDF(pepper, salt="sketchauth/pepper/v1", info="seal encryption key")   (32 bytes)
    K_mac = HKDF(pepper, salt="sketchauth/pepper/v1", info="seal mac key")          (32 bytes)
    body  = helper XOR SHAKE-256("sketchauth/pepper/seal/v1" ‖ K_enc ‖ N)[:len(helper)]
    tag   = BLAKE2b(key=K_mac, digest_size=16)(N ‖ body)
    stored = body ‖ tag                                              (len(helper) + 16 bytes)

``N`` is a fresh 16-byte **per-enrolment nonce** from :mod:`secrets` (new at every enrolment,
PIN change and rotation), stored with the record. SHAKE-256 keyed by ``K_enc`` and ``N`` is a
stream cipher: the keystream is pseudorandom for a secret key and never reused (the nonce is
fresh), so ``body`` is computationally independent of the helper. The nonce is essential: a
keystream from the pepper alone would be one fixed mask per deployment, and for every person the
two databases' records would differ by the *same* ``mask_A ⊕ mask_B`` (for a deterministic
scheme), which one matched pair reveals. The keyed BLAKE2b tag authenticates ``N ‖ body``:
:func:`unwrap` refuses (:class:`~sketchauth.errors.SketchFormatError`) a record altered by a bit
or sealed by another pepper, before anything is parsed. Only the length of the helper remains
visible, which every helper of one scheme and parameter set shares.

**Why HKDF and not argon2.** The pepper is not a password: it must carry at least
:data:`MIN_PEPPER_BYTES` bytes (128 bits) drawn by a machine (``secrets.token_urlsafe(32)``).
Against ``2^128`` candidates a slow hash adds ``log2(cost) ≈ 20`` bits that nobody needs, and
would be paid at every start. HKDF is a PRF-based extractor-and-expander suited to a uniformly
random input key; it also gives the **pepper id** (:attr:`Pepper.id`, a separate 64-bit HKDF
output, stored in clear with each record) so a record says which pepper generation sealed it.
The id is a keyed hash: it lets someone *holding a candidate pepper* check it, which is harmless
at 128 bits of entropy, and it says nothing about the seal keys (independent HKDF outputs).

**Accounting, per secret.** The pepper is a *key*, not part of what is verified; it changes
what the stored data reveals, not what the argon2id hash protects. The accounting is the same as
with a format-preserving pad:

* a thief with the **database alone** sees sealed records, computationally independent of the
  templates: the helper reveals nothing, a guess of the biometric can only be checked against
  the argon2id hash of the exact enrolled secret, about ``2^H∞(d)`` evaluations instead of
  ``2^(H∞(d) − loss)``, and two databases cannot be linked (for every scheme);
* a thief with the **database and the pepper** unseals every helper: the single-helper bound
  of the scheme applies unchanged (``loss ≤ |S| − H∞(R)``, :meth:`SecureSketch.report`), and
  the linkage attacks work as without a pepper. The pepper never *weakens* anything.

So the bound on the biometric improves only while the pepper is secret; keep it outside the
database (environment, secret manager), and rotate it (:func:`rewrap`) when it may have leaked.
Rotation needs no biometric: unsealing takes only the old pepper.

Example::

    >>> from sketchauth import PinSketch
    >>> sketch = PinSketch(16, 4)
    >>> helper = sketch.encode([3, 70, 1000, 2024])
    >>> pepper = Pepper(bytes(range(32)))
    >>> nonce = new_nonce()
    >>> stored = wrap(helper, pepper, nonce)
    >>> len(stored) == len(helper) + SEAL_TAG_BYTES and helper not in stored
    True
    >>> unwrap(stored, pepper, nonce) == helper
    True
    >>> sorted(sketch.decode(unwrap(stored, pepper, nonce), [3, 70, 1001, 2024]).tolist())
    [3, 70, 1000, 2024]
    >>> unwrap(stored, Pepper(bytes(32)), nonce)
    Traceback (most recent call last):
    ...
    sketchauth.errors.SketchFormatError: helper data was not sealed by this pepper, or was altered
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _secrets
from dataclasses import dataclass, field

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.sketches.format import MAX_HELPER_BYTES

__all__ = [
    "MIN_PEPPER_BYTES",
    "PEPPER_NONCE_BYTES",
    "SEAL_TAG_BYTES",
    "Pepper",
    "hkdf_sha256",
    "new_nonce",
    "rewrap",
    "unwrap",
    "wrap",
]

#: Shortest pepper accepted: 128 bits (a pepper is machine-drawn, never a password).
MIN_PEPPER_BYTES = 16
#: Longest pepper accepted (bounds the work of deriving its keys).
MAX_PEPPER_BYTES = 1024
#: Length of the per-enrolment nonce.
PEPPER_NONCE_BYTES = 16
#: Length of the seal's authentication tag (BLAKE2b-128): a stored record is the helper's length plus this.
SEAL_TAG_BYTES = 16
_SALT = b"sketchauth/pepper/v1"
_ENC_INFO = b"seal encryption key"
_MAC_INFO = b"seal mac key"
_ID_INFO = b"pepper id"
#: Domain of the keystream: SHAKE-256 of this, the encryption key and the nonce.
_STREAM_DOMAIN = b"sketchauth/pepper/seal/v1"
#: Bytes of the pepper id (shown as hex): 64 bits, so two generations never collide by chance.
ID_BYTES = 8
_NOT_SEALED = "helper data was not sealed by this pepper, or was altered"


def hkdf_sha256(key: bytes, *, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 (RFC 5869): ``PRK = HMAC(salt, key)``, then ``T(i) = HMAC(PRK, T(i−1) ‖ info ‖ i)``."""
    if not 1 <= length <= 255 * 32:
        raise ParameterError("HKDF-SHA256 gives 1 to 8160 bytes")
    prk = hmac.new(salt, key, hashlib.sha256).digest()
    out, block = b"", b""
    for counter in range(1, -(-length // 32) + 1):
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
    return out[:length]


@dataclass(frozen=True, slots=True)
class Pepper:
    """A deployment's pepper: its seal keys and its public id, derived once from the secret bytes.

    The secret itself is not kept; ``repr`` shows only the id. ``Pepper(secret)`` with at least
    :data:`MIN_PEPPER_BYTES` bytes; :meth:`from_text` for a configured string.
    """

    secret: bytes = field(repr=False)
    #: Keystream key ``K_enc`` (HKDF info "seal encryption key").
    enc_key: bytes = field(init=False, repr=False, compare=False)
    #: Tag key ``K_mac`` (HKDF info "seal mac key").
    mac_key: bytes = field(init=False, repr=False, compare=False)
    #: Short keyed hash of the pepper (16 hex digits): which generation sealed a record.
    id: str = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, (bytes, bytearray)):
            raise ParameterError(f"a pepper is bytes, not {type(self.secret).__name__} (Pepper.from_text for a string)")
        if not MIN_PEPPER_BYTES <= len(self.secret) <= MAX_PEPPER_BYTES:
            raise ParameterError(
                f"a pepper needs {MIN_PEPPER_BYTES} to {MAX_PEPPER_BYTES} bytes (at least 128 bits from a "
                f"machine: secrets.token_urlsafe(32)), got {len(self.secret)}"
            )
        secret = bytes(self.secret)
        object.__setattr__(self, "enc_key", hkdf_sha256(secret, salt=_SALT, info=_ENC_INFO))
        object.__setattr__(self, "mac_key", hkdf_sha256(secret, salt=_SALT, info=_MAC_INFO))
        object.__setattr__(self, "id", hkdf_sha256(secret, salt=_SALT, info=_ID_INFO, length=ID_BYTES).hex())
        # Only the derived values are needed from now on.
        object.__setattr__(self, "secret", b"")

    @classmethod
    def from_text(cls, text: str) -> Pepper:
        """A pepper from a configured string (its UTF-8 bytes), e.g. ``secrets.token_urlsafe(32)``.

        The string must carry at least 128 bits: 22 base64url characters or 32 hexadecimal
        digits at least (a hex string is taken at 4 bits per digit).
        """
        if not isinstance(text, str):
            raise ParameterError("a pepper string is a str")
        text = text.strip()
        hexadecimal = all(c in "0123456789abcdefABCDEF" for c in text)
        if (hexadecimal and len(text) < 32) or len(text) < 22:
            raise ParameterError(
                "a pepper needs at least 128 bits: 22 base64url characters or 32 hexadecimal digits "
                "(generate one with python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        return cls(text.encode("utf-8"))


def new_nonce() -> bytes:
    """A fresh per-enrolment nonce (16 bytes from :mod:`secrets`)."""
    return _secrets.token_bytes(PEPPER_NONCE_BYTES)


def _check(pepper: Pepper, nonce: bytes) -> bytes:
    if not isinstance(pepper, Pepper):
        raise ParameterError("pepper must be a sketchauth.pepper.Pepper (Pepper(secret) or Pepper.from_text(text))")
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")
    return bytes(nonce)


def _xor_stream(data: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    """``data`` XOR the keystream ``SHAKE-256(domain ‖ K_enc ‖ N)`` of the same length (an involution)."""
    if not data:
        return b""
    stream = hashlib.shake_256(_STREAM_DOMAIN + pepper.enc_key + nonce).digest(len(data))
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def _tag(body: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    return hashlib.blake2b(nonce + body, key=pepper.mac_key, digest_size=SEAL_TAG_BYTES).digest()


def wrap(helper: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    """The stored form of ``helper``: ``body ‖ tag``, the whole record sealed by ``pepper`` and ``nonce``.

    ``body`` is the helper XOR a keystream of the pepper's encryption key and the nonce, ``tag``
    a keyed BLAKE2b-128 of ``nonce ‖ body`` (encrypt-then-MAC). Any helper record is accepted —
    every scheme, PIN cascades, structures of two biometrics — as bytes of at most
    :data:`~sketchauth.sketches.format.MAX_HELPER_BYTES`; the result is 16 bytes longer.
    """
    nonce = _check(pepper, nonce)
    if not isinstance(helper, (bytes, bytearray)):
        raise ParameterError(f"helper data is bytes, not {type(helper).__name__}")
    if len(helper) > MAX_HELPER_BYTES:
        raise SketchFormatError(f"helper data is at most {MAX_HELPER_BYTES} bytes, got {len(helper)}")
    body = _xor_stream(bytes(helper), pepper, nonce)
    return body + _tag(body, pepper, nonce)


def unwrap(stored: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    """The helper sealed in ``stored`` (the inverse of :func:`wrap`).

    The length is bounded before any work, the tag is checked in constant time
    (:func:`hmac.compare_digest`) before anything is decrypted: a record sealed by another
    pepper or altered anywhere (body, tag or nonce) raises
    :class:`~sketchauth.errors.SketchFormatError`. What comes out is still untrusted helper data
    for the sketch's own strict parser.
    """
    nonce = _check(pepper, nonce)
    if not isinstance(stored, (bytes, bytearray)):
        raise SketchFormatError(f"sealed helper data is bytes, not {type(stored).__name__}")
    if not SEAL_TAG_BYTES <= len(stored) <= MAX_HELPER_BYTES + SEAL_TAG_BYTES:
        raise SketchFormatError(
            f"sealed helper data is {SEAL_TAG_BYTES} to {MAX_HELPER_BYTES + SEAL_TAG_BYTES} bytes, got {len(stored)}"
        )
    stored = bytes(stored)
    body, tag = stored[:-SEAL_TAG_BYTES], stored[-SEAL_TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(body, pepper, nonce)):
        raise SketchFormatError(_NOT_SEALED)
    return _xor_stream(body, pepper, nonce)


def rewrap(stored: bytes, old: Pepper | None, old_nonce: bytes | None, new: Pepper) -> tuple[bytes, bytes]:
    """``(helper sealed by new, its fresh nonce)`` from a record sealed by ``old`` (``None``: clear).

    Needs no biometric: unsealing takes only the old pepper. A fresh nonce is drawn, so the
    record's old and new stored forms are sealed under independent keystreams.
    """
    if old is None:
        clear = stored
    else:
        if old_nonce is None:
            raise ParameterError("a sealed record needs its nonce to be unsealed")
        clear = unwrap(stored, old, old_nonce)
    nonce = new_nonce()
    return wrap(clear, new, nonce), nonce
