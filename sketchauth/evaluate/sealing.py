"""Sealed records for the evaluation's experiments: what a deployment stores, without a pepper's memory-hard step.

A deployment seals each stored record with ChaCha20-Poly1305 under its seal key
(:meth:`sketchauth.pepper.Pepper.seal`, which :func:`sketchauth.pepper.wrap` calls): 16 bytes of
tag appended, a fresh 96-bit nonce per enrolment. The seal key is HKDF-SHA256 of one argon2id
evaluation of the pepper's secret (:data:`sketchauth.pepper.PEPPER_KDF`: t=3, **m=128 MiB**), or
a key held in a token (the service's PKCS#11 sealer). To a thief of the database, who sees only
the sealed records, the key is a uniformly random 256-bit key in every case: how it was derived
changes nothing in what the records reveal.

The renewability and unlinkability experiments draw peppers that never leave one run, so
:class:`DrawnSealer` seals under a key drawn from :mod:`secrets` directly: the same AEAD
(pyca/cryptography), the same bytes a :class:`~sketchauth.pepper.Pepper` with that seal key
stores, without the argon2id evaluation each ``Pepper(secret)`` costs. That evaluation's
128 MiB, allocated twice per report outside Python's heap, had become the whole peak memory of
``sketchauth evaluate report`` at 1,000 people (``docs/evaluation.md``, scale).

Example::

    >>> from sketchauth.pepper import SEAL_TAG_BYTES, new_nonce
    >>> sealer, nonce = DrawnSealer(), new_nonce()
    >>> stored = sealer.seal(b"helper record", nonce, b"")
    >>> len(stored) == len(b"helper record") + SEAL_TAG_BYTES and sealer.open(stored, nonce, b"") == b"helper record"
    True
"""

from __future__ import annotations

import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from sketchauth.errors import SketchFormatError
from sketchauth.pepper import ID_BYTES, PEPPER_NONCE_BYTES, kdf

__all__ = ["DrawnSealer"]

_KEY_BYTES = 32


class DrawnSealer:
    """A :class:`~sketchauth.pepper.Sealer` under a seal key drawn from :mod:`secrets`, for one run's experiments.

    The key and its derivation key never leave the object; ``id`` is random and public like a
    pepper's. Not for a deployment: a deployment's key must be recoverable from its pepper
    (:class:`~sketchauth.pepper.Pepper`) or its token.
    """

    __slots__ = ("_aead", "_derive_key", "id")

    def __init__(self) -> None:
        self._aead = ChaCha20Poly1305(secrets.token_bytes(_KEY_BYTES))
        self._derive_key = secrets.token_bytes(_KEY_BYTES)
        self.id = secrets.token_bytes(ID_BYTES).hex()

    def __repr__(self) -> str:
        return f"DrawnSealer(id={self.id!r})"

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """ChaCha20-Poly1305 of ``record`` under this sealer's key: ``len(record) + 16`` bytes, as a pepper seals."""
        sealed: bytes = self._aead.encrypt(_nonce(nonce), bytes(record), bytes(associated_data))
        return sealed

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        """The record sealed in ``stored``; :class:`~sketchauth.errors.SketchFormatError` if it was not sealed here."""
        try:
            plain: bytes = self._aead.decrypt(_nonce(nonce), bytes(stored), bytes(associated_data))
        except InvalidTag:
            raise SketchFormatError("record was not sealed by this sealer, or was altered") from None
        return plain

    def derive(self, info: bytes, length: int = 32) -> bytes:
        """An independent key for ``info`` (HKDF-SHA256), as :meth:`Pepper.derive <sketchauth.pepper.Pepper.derive>`."""
        return kdf(self._derive_key, info=b"sketchauth/evaluate/sealer\x00" + info, length=length)


def _nonce(nonce: bytes) -> bytes:
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != PEPPER_NONCE_BYTES:
        raise SketchFormatError(f"a pepper nonce is {PEPPER_NONCE_BYTES} bytes (new_nonce())")
    return bytes(nonce)
