"""Enrol and verify with any sketch: helper data plus an argon2id hash of the secret (the service model).

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

Key release (Fang's thesis §7.1: the recovered secret "can be used in standard cryptographic
applications"): ``derive_key(sketch, enrolment, sample, context=b"...")`` verifies the sample as
``verify`` does and, only for a genuine one, returns ``argon2id(message, key salt, ad=context)``,
32 bytes, where ``message`` is the hashed :func:`secret_message` (so a mixed PIN or second
secret is part of the key) and the key salt and argon2 parameters are drawn at enrolment and
kept in :attr:`Enrolment.key_params` (public, like the helper data). The same genuine person
gets the same key for every sample, every process and every restart; different contexts give
independent keys. The key is only as strong as the secret behind it: its guessing entropy is at
most the residual min-entropy of the secret(s) given the helper data (the entropy report's
bounds), whatever its 256-bit length; argon2id makes each offline guess cost one slow hash.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import EntropyReport, SecureSketch
from sketchauth.sketches.format import canonical_params

if TYPE_CHECKING:
    import argon2
else:
    # argon2-cffi loads cffi and its bindings, secrets loads OpenSSL: ~8 ms of CPU on import
    # together, paid at the first hash instead (sketchauth._lazy).
    argon2 = LazyModule("argon2")
base64 = LazyModule("base64")
json = LazyModule("json")
secrets = LazyModule("secrets")

__all__ = [
    "DEFAULT_HASH_PROFILE",
    "HASH_PROFILES",
    "KEY_BYTES",
    "MAX_CONTEXT_BYTES",
    "NO_CANDIDATE",
    "Enrolment",
    "candidate_message",
    "derive_key",
    "enrol",
    "hasher",
    "key_from_message",
    "new_key_params",
    "secret_message",
    "verify",
]


def _profiles() -> dict[str, argon2.Parameters]:
    return {
        "rfc9106-low-memory": argon2.profiles.RFC_9106_LOW_MEMORY,
        "owasp": argon2.Parameters(
            type=argon2.Type.ID, version=19, salt_len=16, hash_len=32, time_cost=2, memory_cost=19456, parallelism=1
        ),
        "test": argon2.Parameters(
            type=argon2.Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
        ),
    }


class _HashProfiles(Mapping[str, "argon2.Parameters"]):
    """The argon2id profiles by name; names are known at once, parameters built at the first read."""

    _NAMES = ("rfc9106-low-memory", "owasp", "test")

    def __init__(self) -> None:
        self._built: dict[str, argon2.Parameters] | None = None

    def __getitem__(self, name: str) -> argon2.Parameters:
        if self._built is None:
            self._built = _profiles()
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)


#: The argon2id profiles by name (a read-only mapping).
HASH_PROFILES: Mapping[str, argon2.Parameters] = _HashProfiles()
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
    #: Public parameters of key release (:func:`new_key_params`): argon2id costs and a per-enrolment
    #: salt. ``None`` for an enrolment made before key release existed: no key can be derived.
    key_params: str | None = None


def secret_message(sketch: SecureSketch, secret: Any) -> bytes:
    """The exact bytes hashed for ``secret``: domain tag, scheme, parameters, canonical secret."""
    header = json.dumps({"scheme": sketch.scheme_name}, sort_keys=True).encode()
    return (
        b"sketchauth/v1\x00"
        + header
        + b"\x00"
        + canonical_params(sketch.params())
        + b"\x00"
        + sketch.secret_bytes(secret)
    )


#: What is hashed when the sample does not decode: never a secret message (those start with the
#: domain tag), so it never matches, and it costs the same argon2id evaluation as a wrong secret.
NO_CANDIDATE = b"\x00sketchauth/no-candidate"


def candidate_message(sketch: SecureSketch, enrolment: Enrolment, sample: Any) -> bytes:
    """The message to check against the stored hash: the decoded candidate's, or :data:`NO_CANDIDATE`.

    A sample that does not decode is hashed all the same, so a far sample costs the same time as
    a wrong one. A malformed sample raises ``SampleError`` (a caller bug, not a wrong person).
    """
    try:
        candidate = sketch.decode(enrolment.helper, sample)
    except DecodeError:
        return NO_CANDIDATE
    return secret_message(sketch, candidate)


def enrol(sketch: SecureSketch, secret: Any, *, password_hasher: argon2.PasswordHasher | None = None) -> Enrolment:
    """Sketch ``secret`` with fresh randomness and hash it; the secret itself is not kept."""
    ph = password_hasher or hasher()
    secret = sketch.check_secret(secret)
    helper = sketch.encode(secret)
    return Enrolment(
        helper=helper,
        secret_hash=ph.hash(secret_message(sketch, secret)),
        report=sketch.report(),
        key_params=new_key_params(ph),
    )


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
    message = candidate_message(sketch, enrolment, sample)
    try:
        return ph.verify(enrolment.secret_hash, message)
    except argon2.exceptions.VerificationError:
        return False
    except argon2.exceptions.InvalidHashError:
        raise SampleError("stored hash is not an argon2 hash") from None


# -- key release ----------------------------------------------------------------------------------
#: Length of every released key (bytes).
KEY_BYTES = 32
#: Longest ``context`` (bytes): it names an application, not data.
MAX_CONTEXT_BYTES = 256
#: Bytes of the per-enrolment key salt.
KEY_SALT_BYTES = 16
_KEY_TAG = b"sketchauth/key/v1\x00"
#: ``$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt, unpadded base64>``: a PHC string without a hash.
_KEY_PARAMS = re.compile(
    r"\$argon2id\$v=19\$m=([1-9][0-9]{0,7}),t=([1-9][0-9]{0,2}),p=([1-9][0-9]{0,2})\$([A-Za-z0-9+/]{22})"
)
#: Bounds on stored key parameters, so a tampered record cannot make one derivation unboundedly dear.
_MAX_KEY_MEMORY_KIB = 1 << 21
_MAX_KEY_TIME = 16
_MAX_KEY_LANES = 16


def new_key_params(password_hasher: argon2.PasswordHasher | None = None) -> str:
    """Fresh key-release parameters: the hasher's argon2id costs and a 16-byte salt from :mod:`secrets`.

    Stored with the enrolment, so a key stays the same after the deployment's argon2 profile
    changes (only a new enrolment takes the new costs).
    """
    ph = password_hasher or hasher()
    salt = base64.b64encode(secrets.token_bytes(KEY_SALT_BYTES)).rstrip(b"=").decode()
    return f"$argon2id$v=19$m={ph.memory_cost},t={ph.time_cost},p={ph.parallelism}${salt}"


def _parse_key_params(key_params: str) -> tuple[int, int, int, bytes]:
    """``(memory KiB, passes, lanes, salt)`` of stored key parameters (``SketchFormatError`` if malformed)."""
    match = _KEY_PARAMS.fullmatch(key_params) if isinstance(key_params, str) else None
    if match is None:
        raise SketchFormatError("key parameters must be '$argon2id$v=19$m=..,t=..,p=..$<22-character base64 salt>'")
    memory, passes, lanes = (int(match.group(i)) for i in (1, 2, 3))
    if not (8 * lanes <= memory <= _MAX_KEY_MEMORY_KIB and passes <= _MAX_KEY_TIME and lanes <= _MAX_KEY_LANES):
        raise SketchFormatError(
            f"key parameters out of range: need 8·p <= m <= {_MAX_KEY_MEMORY_KIB} KiB, "
            f"t <= {_MAX_KEY_TIME}, p <= {_MAX_KEY_LANES}"
        )
    salt = base64.b64decode(match.group(4) + "==")
    return memory, passes, lanes, salt


def _check_context(context: Any) -> bytes:
    if not isinstance(context, (bytes, bytearray)):
        raise ParameterError("context must be bytes naming the key's use, e.g. b'disk-encryption'")
    if not 1 <= len(context) <= MAX_CONTEXT_BYTES:
        raise ParameterError(f"context must be 1 to {MAX_CONTEXT_BYTES} bytes long, got {len(context)}")
    return bytes(context)


def key_from_message(message: bytes, key_params: str, context: bytes) -> bytes:
    """``argon2id(tag ‖ message, salt, associated data = context)`` with the stored costs: 32 bytes.

    ``message`` is the :func:`secret_message` of a secret already recovered *and* checked
    against the enrolment's hash (:func:`derive_key` does both). Argon2 binds the associated
    data into its first block (RFC 9106 §3.2), so each context yields an independent key.
    """
    context = _check_context(context)
    memory, passes, lanes, salt = _parse_key_params(key_params)
    # argon2-cffi documents low_level.lib for use with core() but leaves it out of __all__.
    ffi, lib = argon2.low_level.ffi, argon2.low_level.lib  # type: ignore[attr-defined]
    password = _KEY_TAG + message
    out = ffi.new("uint8_t[]", KEY_BYTES)
    pwd = ffi.new("uint8_t[]", password)
    salt_buf = ffi.new("uint8_t[]", salt)
    ad = ffi.new("uint8_t[]", context)
    ctx = ffi.new(
        "argon2_context *",
        {
            "out": out,
            "outlen": KEY_BYTES,
            "pwd": pwd,
            "pwdlen": len(password),
            "salt": salt_buf,
            "saltlen": len(salt),
            "secret": ffi.NULL,
            "secretlen": 0,
            "ad": ad,
            "adlen": len(context),
            "t_cost": passes,
            "m_cost": memory,
            "lanes": lanes,
            "threads": lanes,
            "version": 19,
            "allocate_cbk": ffi.NULL,
            "free_cbk": ffi.NULL,
            "flags": lib.ARGON2_DEFAULT_FLAGS,
        },
    )
    try:
        rc = argon2.low_level.core(ctx, argon2.low_level.Type.ID.value)
        if rc != lib.ARGON2_OK:
            raise ParameterError(f"argon2id failed: {argon2.low_level.error_to_str(rc)}")
        return bytes(ffi.buffer(out, KEY_BYTES))
    finally:
        ffi.memmove(pwd, bytes(len(password)), len(password))  # do not leave the secret in freed memory
        ffi.memmove(out, bytes(KEY_BYTES), KEY_BYTES)


def derive_key(
    sketch: SecureSketch,
    enrolment: Enrolment,
    sample: Any,
    *,
    context: bytes,
    password_hasher: argon2.PasswordHasher | None = None,
) -> bytes | None:
    """The enrolment's 32-byte key for ``context`` if ``sample`` is genuine, else ``None``.

    Recovers a candidate from the helper data, checks it against the stored argon2id hash as
    :func:`verify` does (one outcome, ``None``, for every cause of failure) and only then runs
    :func:`key_from_message`. A wrong sample cannot yield a key: a sample that decodes to
    another secret fails the hash check first. ``ParameterError`` for a bad ``context`` or an
    enrolment without :attr:`Enrolment.key_params` (re-enrol to get one); ``SampleError`` for a
    malformed sample.
    """
    context = _check_context(context)
    if enrolment.key_params is None:
        raise ParameterError("this enrolment has no key parameters (made before key release): re-enrol to derive keys")
    _parse_key_params(enrolment.key_params)
    ph = password_hasher or hasher()
    message = candidate_message(sketch, enrolment, sample)
    try:
        ph.verify(enrolment.secret_hash, message)
    except argon2.exceptions.VerificationError:
        return None
    except argon2.exceptions.InvalidHashError:
        raise SampleError("stored hash is not an argon2 hash") from None
    return key_from_message(message, enrolment.key_params, context)
