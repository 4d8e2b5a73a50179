"""Enrol and verify with any sketch: helper data plus an argon2id hash of the secret (SPEC §5).

``enrol(sketch, secret)`` returns an :class:`Enrolment` holding only public helper data, the
argon2id hash of the canonically encoded secret and the entropy report. ``verify(sketch,
enrolment, sample)`` recovers a candidate secret from the helper data, hashes it and compares in
constant time (argon2-cffi's verify); every cause of failure — sample too far, malformed sample,
wrong secret recovered — is the same ``False``.

The hashed message is domain-separated by scheme and parameters, so a secret recovered under one
configuration never verifies under another.

Argon2 profiles (:data:`HASH_PROFILES`):

* ``"rfc9106-low-memory"``: RFC 9106 §4 second recommendation (t=3, m=64 MiB, p=4), argon2-cffi's
  default; about 0.2 s per hash on a 2-core machine;
* ``"owasp"``: OWASP Password Storage Cheat Sheet minimum for argon2id (t=2, m=19 MiB, p=1);
  about 25 ms;
* ``"test"``: the cheapest valid setting, for tests and simulations only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import argon2

from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.sketches.base import EntropyReport, SecureSketch
from sketchauth.sketches.format import canonical_params

__all__ = ["HASH_PROFILES", "DEFAULT_HASH_PROFILE", "hasher", "Enrolment", "secret_message", "enrol", "verify"]

HASH_PROFILES: dict[str, argon2.Parameters] = {
    "rfc9106-low-memory": argon2.profiles.RFC_9106_LOW_MEMORY,
    "owasp": argon2.Parameters(
        type=argon2.Type.ID, version=19, salt_len=16, hash_len=32, time_cost=2, memory_cost=19456, parallelism=1
    ),
    "test": argon2.Parameters(
        type=argon2.Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
    ),
}
#: The profile used wherever none is named: the library's ``hasher()`` and ``enrol``/``verify``,
#: the service (``SKETCHAUTH_HASH_PROFILE``) and every command-line ``--profile``.
DEFAULT_HASH_PROFILE = "owasp"


def hasher(profile: str = DEFAULT_HASH_PROFILE) -> argon2.PasswordHasher:
    """An argon2id ``PasswordHasher`` for one of :data:`HASH_PROFILES` (default :data:`DEFAULT_HASH_PROFILE`).

    ``owasp`` by default, as in the service and the command line: one hash costs about 25 ms, so
    a server verifies dozens of people a second. ``"rfc9106-low-memory"`` makes every offline
    guess (and every verification) about six times dearer.
    """
    try:
        return argon2.PasswordHasher.from_parameters(HASH_PROFILES[profile])
    except KeyError:
        raise ParameterError(f"unknown argon2 profile {profile!r}; known: {', '.join(HASH_PROFILES)}") from None


@dataclass(frozen=True, slots=True)
class Enrolment:
    """What is stored for one enrolled person: nothing but public helper data and a slow hash."""

    helper: bytes
    secret_hash: str
    report: EntropyReport


def secret_message(sketch: SecureSketch, secret: Any) -> bytes:
    """The exact bytes hashed for ``secret``: domain tag, scheme, parameters, canonical secret."""
    header = json.dumps({"scheme": sketch.scheme_name}, sort_keys=True).encode()
    return b"sketchauth/v1\x00" + header + b"\x00" + canonical_params(sketch.params()) + b"\x00" + sketch.secret_bytes(secret)


def enrol(sketch: SecureSketch, secret: Any, *, password_hasher: argon2.PasswordHasher | None = None) -> Enrolment:
    """Sketch ``secret`` with fresh randomness and hash it; the secret itself is not kept."""
    ph = password_hasher or hasher()
    secret = sketch.check_secret(secret)
    helper = sketch.encode(secret)
    return Enrolment(helper=helper, secret_hash=ph.hash(secret_message(sketch, secret)), report=sketch.report())


def verify(
    sketch: SecureSketch,
    enrolment: Enrolment,
    sample: Any,
    *,
    password_hasher: argon2.PasswordHasher | None = None,
) -> bool:
    """True iff ``sample`` recovers the enrolled secret. One outcome for every cause of failure.

    A malformed sample still raises ``SampleError`` (that is a caller bug, not a wrong person).
    """
    ph = password_hasher or hasher()
    try:
        candidate = sketch.decode(enrolment.helper, sample)
    except DecodeError:
        # Hash something anyway so a far sample costs the same time as a wrong one.
        candidate = None
    message = secret_message(sketch, candidate) if candidate is not None else b"\x00sketchauth/no-candidate"
    try:
        return ph.verify(enrolment.secret_hash, message)
    except argon2.exceptions.VerificationError:
        return False
    except argon2.exceptions.InvalidHashError:
        raise SampleError("stored hash is not an argon2 hash") from None
