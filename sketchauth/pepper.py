"""Pepper-diversified storage: a per-deployment secret mixed over every stored sketch.

**Why.** A deterministic sketch (the interval sketch, PinSketch, s1) stores the same helper data
for the same template in every database, and the linear ones store helpers whose difference is
a sketch of the captures' difference (Fang's thesis, ch. 6; the linkage attacks of
:mod:`sketchauth.evaluate.unlinkability`): two deployments that enrol the same people can join
their databases. A **pepper** — a high-entropy secret of the deployment, kept out of the
database — diversifies what is stored: every helper is mixed with a format-preserving pad, the
cascaded-mixing function of :mod:`sketchauth.mixing` (Fang's thesis, ch. 7) with the pepper as
the less important secret.

**The pad.** ``Q' = f(Q, K_p, N)``: the helper's symbols (:meth:`SecureSketch.symbols`, each
in its own group ``Z_m`` or ``GF(2)^bits``) plus ``derive_pad(K_p, N)`` symbol by symbol, where

* ``K_p = HKDF-SHA256(pepper, salt="sketchauth/pepper/v1", info="pad key")`` (RFC 5869), and
* ``N`` is a fresh 16-byte **per-enrolment nonce** from :mod:`secrets`, stored with the record.

The nonce is essential. A pad depending on the pepper alone is one fixed vector per deployment:
for every person the two databases' helpers would differ by the *same* vector
``pad_A − pad_B`` (in the group), so one matched pair reveals it and then links everyone (and a
linear scheme's difference decoding works again after subtracting it). With a nonce per
enrolment, each stored helper carries an independent pad, exactly uniform per symbol (rejection
sampling in :func:`~sketchauth.mixing.derive_pad`): to anyone without the pepper, a stored
helper is a uniformly random element of its scheme's symbol space, independent of the template.

**Why HKDF and not argon2.** The pepper is not a password: it must carry at least
:data:`MIN_PEPPER_BYTES` bytes (128 bits) drawn by a machine (``secrets.token_urlsafe(32)``).
Against ``2^128`` candidates a slow hash adds ``log2(cost) ≈ 20`` bits that nobody needs, and
would be paid at every start. HKDF is a PRF-based extractor-and-expander suited to a uniformly
random input key; it also gives the **pepper id** (:attr:`Pepper.id`, a separate 64-bit HKDF
output, stored in clear with each record) so a record says which pepper generation wrapped it.
The id is a keyed hash: it lets someone *holding a candidate pepper* check it, which is harmless
at 128 bits of entropy, and it says nothing about the pad key (independent HKDF outputs).

**Accounting, per secret.** The pepper is a *key*, not part of what is verified; it changes
what the stored data reveals, not what the argon2id hash protects:

* a thief with the **database alone** sees ``Q' = Q + pad`` with a pad uniform and unknown to
  them: where the symbols are the whole helper (interval, PinSketch, code-offset, the vaults),
  ``Q'`` is independent of the template, so the helper reveals nothing — a guess of the
  biometric can only be checked against the argon2id hash of the exact enrolled secret, about
  ``2^H∞(d)`` evaluations instead of ``2^(H∞(d) − loss)`` — and two databases cannot be linked.
  What the symbols do not cover stays in clear (s1's tolerances, the structure of s2/s3
  partitions) and still links;
* a thief with the **database and the pepper** unwraps every helper: the single-helper bound
  of the scheme applies unchanged (``loss ≤ |S| − H∞(R)``, :meth:`SecureSketch.report`), and
  the linkage attacks work as without a pepper. The pepper never *weakens* anything.

So the bound on the biometric improves only while the pepper is secret; keep it outside the
database (environment, secret manager), and rotate it (:func:`rewrap`) when it may have leaked.
Rotation needs no biometric: unwrapping takes only the old pepper.

Example::

    >>> from sketchauth import PinSketch
    >>> sketch = PinSketch(16, 4)
    >>> helper = sketch.encode([3, 70, 1000, 2024])
    >>> pepper = Pepper(bytes(range(32)))
    >>> nonce = new_nonce()
    >>> stored = wrap(sketch, helper, pepper, nonce)
    >>> len(stored) == len(helper) and stored != helper
    True
    >>> unwrap(sketch, stored, pepper, nonce) == helper
    True
    >>> sorted(sketch.decode(unwrap(sketch, stored, pepper, nonce), [3, 70, 1001, 2024]).tolist())
    [3, 70, 1000, 2024]
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _secrets
from dataclasses import dataclass, field

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.mixing import mix_helper, unmix_helper
from sketchauth.sketches.base import SecureSketch, load_sketch

__all__ = [
    "MIN_PEPPER_BYTES",
    "PEPPER_DOMAIN",
    "PEPPER_NONCE_BYTES",
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
#: Pad domain of the pepper layer (``"pepp"``): never a component index of a mixed structure,
#: so the pepper's pad and a cascade's PIN pad are derived under different domains as well as
#: different keys.
PEPPER_DOMAIN = 0x70657070
_SALT = b"sketchauth/pepper/v1"
_PAD_INFO = b"pad key"
_ID_INFO = b"pepper id"
#: Bytes of the pepper id (shown as hex): 64 bits, so two generations never collide by chance.
ID_BYTES = 8


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
    """A deployment's pepper: its pad key and its public id, derived once from the secret bytes.

    The secret itself is not kept; ``repr`` shows only the id. ``Pepper(secret)`` with at least
    :data:`MIN_PEPPER_BYTES` bytes; :meth:`from_text` for a configured string.
    """

    secret: bytes = field(repr=False)
    key: bytes = field(init=False, repr=False, compare=False)
    #: Short keyed hash of the pepper (16 hex digits): which generation wrapped a record.
    id: str = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, (bytes, bytearray)):
            raise ParameterError(f"a pepper is bytes, not {type(self.secret).__name__} (Pepper.from_text for a string)")
        if not MIN_PEPPER_BYTES <= len(self.secret) <= MAX_PEPPER_BYTES:
            raise ParameterError(
                f"a pepper needs {MIN_PEPPER_BYTES} to {MAX_PEPPER_BYTES} bytes (at least 128 bits from a "
                "machine: secrets.token_urlsafe(32)), got {len(self.secret)}"
            )
        secret = bytes(self.secret)
        object.__setattr__(self, "key", hkdf_sha256(secret, salt=_SALT, info=_PAD_INFO))
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


def _check(pepper: Pepper, nonce: bytes) -> None:
    if not isinstance(pepper, Pepper):
        raise ParameterError("pepper must be a sketchauth.pepper.Pepper (Pepper(secret) or Pepper.from_text(text))")
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")


def _sketch(sketch: SecureSketch | None, helper: bytes) -> SecureSketch:
    """The given sketch, or the one the (self-describing) helper names."""
    return load_sketch(helper) if sketch is None else sketch


def wrap(sketch: SecureSketch | None, helper: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    """The stored form of ``helper``: its symbols plus the pepper's pad for ``nonce``.

    The result is a valid helper of the same scheme and parameters (same length), so any
    pepper, right or wrong, unwraps to a valid helper: a wrong pepper is never recognisable by a
    malformed result. ``sketch=None`` rebuilds the sketch from the helper (:func:`load_sketch`).
    A mixed structure (a PIN cascade) is wrapped over its stored sketches' symbols; the PIN's
    own pad stays inside (the two pads add in the same group, in either order).
    """
    _check(pepper, nonce)
    return mix_helper(_sketch(sketch, helper), helper, pepper.key, bytes(nonce), domain=PEPPER_DOMAIN)


def unwrap(sketch: SecureSketch | None, stored: bytes, pepper: Pepper, nonce: bytes) -> bytes:
    """The inverse of :func:`wrap` (symbols minus the pad)."""
    _check(pepper, nonce)
    return unmix_helper(_sketch(sketch, stored), stored, pepper.key, bytes(nonce), domain=PEPPER_DOMAIN)


def rewrap(
    sketch: SecureSketch | None, stored: bytes, old: Pepper | None, old_nonce: bytes | None, new: Pepper
) -> tuple[bytes, bytes]:
    """``(helper wrapped by new, its fresh nonce)`` from a record wrapped by ``old`` (``None``: clear).

    Needs no biometric: unwrapping takes only the old pepper. A fresh nonce is drawn so that
    the record's old and new stored forms differ by an independent pad.
    """
    sketch = _sketch(sketch, stored)
    if old is None:
        clear = stored
    else:
        if old_nonce is None:
            raise ParameterError("a wrapped record needs its nonce to be unwrapped")
        clear = unwrap(sketch, stored, old, old_nonce)
    nonce = new_nonce()
    return wrap(sketch, clear, new, nonce), nonce
