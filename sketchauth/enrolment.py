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
``verify`` does and, only for a genuine one, returns ``HKDF(argon2id(message, key salt), info=context)``,
32 bytes, where ``message`` is the hashed :func:`secret_message` (so a mixed PIN or second
secret is part of the key) and the key salt and argon2 parameters are drawn at enrolment and
kept in :attr:`Enrolment.key_params` (public, like the helper data). The same genuine person
gets the same key for every sample, every process and every restart; different contexts give
independent keys. The key is only as strong as the secret behind it: its guessing entropy is at
most the residual min-entropy of the secret(s) given the helper data (the entropy report's
bounds), whatever its 256-bit length; argon2id makes each offline guess cost one slow hash.

Storing a record: :meth:`Enrolment.to_json` gives the whole record (helper data, hash, report,
key parameters) as one versioned JSON text and :meth:`Enrolment.from_json` reads it back
strictly; the sketch itself is rebuilt from its parameters (``SecureSketch.params()``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import EntropyReport, SecureSketch
from sketchauth.sketches.format import MAX_HELPER_BYTES, canonical_params

if TYPE_CHECKING:
    import argon2
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf import hkdf
else:
    # argon2-cffi loads cffi and its bindings, secrets and cryptography load OpenSSL: paid at the
    # first hash or key release instead of at import (sketchauth._lazy).
    argon2 = LazyModule("argon2")
    hashes = LazyModule("cryptography.hazmat.primitives.hashes")
    hkdf = LazyModule("cryptography.hazmat.primitives.kdf.hkdf")
base64 = LazyModule("base64")
json = LazyModule("json")
secrets = LazyModule("secrets")

__all__ = [
    "DEFAULT_HASH_PROFILE",
    "ENROLMENT_FORMAT",
    "ENROLMENT_VERSION",
    "HASH_PROFILES",
    "KEY_BYTES",
    "MAX_CONTEXT_BYTES",
    "MAX_ENROLMENT_JSON_BYTES",
    "NO_CANDIDATE",
    "Enrolment",
    "KeyCostLimit",
    "candidate_message",
    "derive_key",
    "enrol",
    "hasher",
    "key_cost_limit",
    "key_from_message",
    "new_key_params",
    "parse_key_params",
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

    def to_json(self) -> str:
        """The whole record as one JSON text (format :data:`ENROLMENT_FORMAT`, version :data:`ENROLMENT_VERSION`).

        The helper is base64; the hash, key parameters and report are as stored. Everything in it is
        public in the scheme's model (no sample, secret or key); keep it with the sketch's parameters.

        >>> from sketchauth import PinSketch
        >>> sketch = PinSketch(16, 4)
        >>> record = enrol(sketch, [3, 70, 1000, 2024], password_hasher=hasher("test"))
        >>> Enrolment.from_json(record.to_json()) == record
        True
        """
        body = {
            "format": ENROLMENT_FORMAT,
            "version": ENROLMENT_VERSION,
            "helper": base64.b64encode(self.helper).decode("ascii"),
            "secret_hash": self.secret_hash,
            "key_params": self.key_params,
            "report": self.report.to_dict(),
        }
        return cast("str", json.dumps(body, sort_keys=True, separators=(",", ":")))

    @classmethod
    def from_json(cls, text: str | bytes) -> Enrolment:
        """The record :meth:`to_json` wrote, parsed strictly (:class:`~sketchauth.errors.SketchFormatError`).

        Refused: more than :data:`MAX_ENROLMENT_JSON_BYTES`, another format or version, missing or
        unknown members (a repeated one too), wrong types, a helper that is not strict base64 or
        is over the helper size limit, a hash that is not an argon2id PHC string, key parameters
        out of range (:func:`parse_key_params`) and a report of the wrong shape.
        """
        body = _strict_json(text)
        if body.get("format") != ENROLMENT_FORMAT or body.get("version") != ENROLMENT_VERSION:
            raise SketchFormatError(
                f"not an enrolment record of format {ENROLMENT_FORMAT!r} version {ENROLMENT_VERSION} "
                "(written by Enrolment.to_json)"
            )
        _exact_keys(body, {"format", "version", "helper", "secret_hash", "key_params", "report"}, "record")
        helper = _strict_base64(body["helper"])
        secret_hash = body["secret_hash"]
        if not isinstance(secret_hash, str) or re.fullmatch(_PHC, secret_hash) is None:
            raise SketchFormatError(
                "secret_hash must be an argon2id PHC string ('$argon2id$v=19$m=..,t=..,p=..$..$..')"
            )
        key_params = body["key_params"]
        if key_params is not None:
            parse_key_params(key_params)
        return cls(helper, secret_hash, _report(body["report"]), key_params)


#: The ``format`` member of :meth:`Enrolment.to_json`, and its version.
ENROLMENT_FORMAT = "sketchauth.enrolment"
ENROLMENT_VERSION = 1
#: Longest text :meth:`Enrolment.from_json` reads: the largest helper in base64 plus the rest.
MAX_ENROLMENT_JSON_BYTES = 2 * MAX_HELPER_BYTES + (1 << 16)
#: An argon2id PHC string (compiled by :mod:`re` at its first use, not at import: start-up cost).
_PHC = (
    r"\$argon2id\$v=19\$m=[1-9][0-9]{0,7},t=[1-9][0-9]{0,2},p=[1-9][0-9]{0,2}"
    r"\$[A-Za-z0-9+/]{11,88}\$[A-Za-z0-9+/]{22,172}"
)
_REPORT_KEYS = {"scheme", "sketch_bits", "randomness_bits", "loss_bound_bits", "notes", "extra"}


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SketchFormatError(f"member {key!r} appears twice in the enrolment record")
        out[key] = value
    return out


def _strict_json(text: str | bytes) -> dict[str, Any]:
    if not isinstance(text, (str, bytes, bytearray)):
        raise SketchFormatError(f"an enrolment record is a JSON text, not {type(text).__name__}")
    if len(text) > MAX_ENROLMENT_JSON_BYTES:
        raise SketchFormatError(f"an enrolment record is at most {MAX_ENROLMENT_JSON_BYTES} bytes, got {len(text)}")
    try:
        body = json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, SketchFormatError):
            raise
        raise SketchFormatError(f"an enrolment record is JSON: {exc}") from None
    if not isinstance(body, dict):
        raise SketchFormatError("an enrolment record is a JSON object")
    return body


def _no_constant(name: str) -> None:
    raise SketchFormatError(f"{name} is not a number an enrolment record holds")


def _exact_keys(body: dict[str, Any], expected: set[str], what: str) -> None:
    if set(body) != expected:
        missing, unknown = sorted(expected - set(body)), sorted(set(body) - expected)
        raise SketchFormatError(f"{what}: missing members {missing}, unknown members {unknown}")


def _strict_base64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise SketchFormatError("helper must be a base64 string")
    if len(value) > 4 * (MAX_HELPER_BYTES // 3 + 1):
        raise SketchFormatError(f"helper data is at most {MAX_HELPER_BYTES} bytes")
    try:
        return cast("bytes", base64.b64decode(value.encode("ascii"), validate=True))
    except (ValueError, UnicodeEncodeError):
        raise SketchFormatError("helper must be standard base64 (A-Z, a-z, 0-9, +, /, = padding)") from None


def _report(value: Any) -> EntropyReport:
    if not isinstance(value, dict):
        raise SketchFormatError("report must be an object (EntropyReport.to_dict())")
    _exact_keys(value, _REPORT_KEYS, "report")
    bits = [value[k] for k in ("sketch_bits", "randomness_bits", "loss_bound_bits")]
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) for b in bits):
        raise SketchFormatError("report: sketch_bits, randomness_bits and loss_bound_bits are finite numbers")
    notes, extra = value["notes"], value["extra"]
    if (
        not isinstance(value["scheme"], str)
        or not isinstance(notes, list)
        or not all(isinstance(n, str) for n in notes)
    ):
        raise SketchFormatError("report: scheme is a string and notes a list of strings")
    if not isinstance(extra, dict):
        raise SketchFormatError("report: extra is an object")
    sketch_bits, randomness_bits, loss_bound_bits = (float(b) for b in bits)
    return EntropyReport(value["scheme"], sketch_bits, randomness_bits, loss_bound_bits, tuple(notes), extra)


def secret_message(sketch: SecureSketch[Any, Any], secret: Any) -> bytes:
    """The exact bytes hashed for ``secret``: domain tag, scheme, parameters, canonical secret."""
    return _message_header(sketch) + sketch.secret_bytes(secret)


def _message_header(sketch: SecureSketch[Any, Any]) -> bytes:
    """The part of :func:`secret_message` before the secret: domain tag, scheme, parameters.

    Computed once per sketch and kept while its scheme name and :meth:`params` stay the same (as
    the sketch's helper-record header is): the two canonical JSON encodings were most of the
    cost of a message, paid at every verification by a service that shares its sketch objects.
    """
    key = (sketch.scheme_name, sketch.params())
    store = getattr(sketch, "__dict__", None)  # None: a subclass with __slots__ only, no cache
    cached = store.get("_message_header_cache") if store is not None else None
    if cached is not None and cached[0] == key:
        header: bytes = cached[1]
        return header
    scheme = json.dumps({"scheme": key[0]}, sort_keys=True).encode()
    header = b"sketchauth/v1\x00" + scheme + b"\x00" + canonical_params(key[1]) + b"\x00"
    if store is not None:
        store["_message_header_cache"] = (key, header)
    return header


#: What is hashed when the sample does not decode: never a secret message (those start with the
#: domain tag), so it never matches, and it costs the same argon2id evaluation as a wrong secret.
NO_CANDIDATE = b"\x00sketchauth/no-candidate"


def candidate_message(sketch: SecureSketch[Any, Any], enrolment: Enrolment, sample: Any) -> bytes:
    """The message to check against the stored hash: the decoded candidate's, or :data:`NO_CANDIDATE`.

    A sample that does not decode is hashed all the same, so a far sample costs the same time as
    a wrong one. A malformed sample raises ``SampleError`` (a caller bug, not a wrong person).
    """
    try:
        candidate = sketch.decode(enrolment.helper, sample)
    except DecodeError:
        return NO_CANDIDATE
    return secret_message(sketch, candidate)


def enrol(
    sketch: SecureSketch[Any, Any], secret: Any, *, password_hasher: argon2.PasswordHasher | None = None
) -> Enrolment:
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
    sketch: SecureSketch[Any, Any],
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
_KEY_TAG = b"sketchauth/key/v2\x00"
#: ``$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt, unpadded base64>``: a PHC string without a hash.
_KEY_PARAMS = (  # compiled by re at its first use
    r"\$argon2id\$v=19\$m=([1-9][0-9]{0,7}),t=([1-9][0-9]{0,2}),p=([1-9][0-9]{0,2})\$([A-Za-z0-9+/]{22})"
)


@dataclass(frozen=True, slots=True)
class KeyCostLimit:
    """The largest argon2id costs stored key parameters may ask for (memory KiB, passes, lanes).

    Key parameters are read back from storage: without a bound, an altered record could make one
    derivation ask for gigabytes and minutes. The bound is the deployment's own: the costs of the
    strongest profile it could have enrolled with (:func:`key_cost_limit`).
    """

    memory_kib: int
    time_cost: int
    parallelism: int


def key_cost_limit(password_hasher: argon2.PasswordHasher | None = None) -> KeyCostLimit:
    """The component-wise largest costs of :data:`HASH_PROFILES` and ``password_hasher``.

    Every profile is included, not only the current one, so that a deployment moving to a
    cheaper profile still releases the keys of people enrolled under a dearer one.

    >>> key_cost_limit()
    KeyCostLimit(memory_kib=65536, time_cost=3, parallelism=4)
    """
    costs = [(p.memory_cost, p.time_cost, p.parallelism) for p in HASH_PROFILES.values()]
    if password_hasher is not None:
        costs.append((password_hasher.memory_cost, password_hasher.time_cost, password_hasher.parallelism))
    memory, passes, lanes = (max(c[i] for c in costs) for i in range(3))
    return KeyCostLimit(memory, passes, lanes)


def new_key_params(password_hasher: argon2.PasswordHasher | None = None) -> str:
    """Fresh key-release parameters: the hasher's argon2id costs and a 16-byte salt from :mod:`secrets`.

    Stored with the enrolment, so a key stays the same after the deployment's argon2 profile
    changes (only a new enrolment takes the new costs).
    """
    ph = password_hasher or hasher()
    salt = base64.b64encode(secrets.token_bytes(KEY_SALT_BYTES)).rstrip(b"=").decode()
    return f"$argon2id$v=19$m={ph.memory_cost},t={ph.time_cost},p={ph.parallelism}${salt}"


def parse_key_params(key_params: str, limit: KeyCostLimit | None = None) -> tuple[int, int, int, bytes]:
    """``(memory KiB, passes, lanes, salt)`` of stored key parameters, within ``limit``.

    ``limit`` defaults to :func:`key_cost_limit` (the strongest known profile: 64 MiB, t = 3,
    p = 4). :class:`~sketchauth.errors.SketchFormatError` if malformed or over the limit.
    """
    limit = limit or key_cost_limit()
    match = re.fullmatch(_KEY_PARAMS, key_params) if isinstance(key_params, str) else None
    if match is None:
        raise SketchFormatError("key parameters must be '$argon2id$v=19$m=..,t=..,p=..$<22-character base64 salt>'")
    memory, passes, lanes = (int(match.group(i)) for i in (1, 2, 3))
    if not (8 * lanes <= memory <= limit.memory_kib and passes <= limit.time_cost and lanes <= limit.parallelism):
        raise SketchFormatError(
            f"key parameters out of range: need 8·p <= m <= {limit.memory_kib} KiB, t <= {limit.time_cost}, "
            f"p <= {limit.parallelism} (the deployment's strongest argon2 profile)"
        )
    salt = base64.b64decode(match.group(4) + "==")
    return memory, passes, lanes, salt


def _check_context(context: Any) -> bytes:
    if not isinstance(context, (bytes, bytearray)):
        raise ParameterError("context must be bytes naming the key's use, e.g. b'disk-encryption'")
    if not 1 <= len(context) <= MAX_CONTEXT_BYTES:
        raise ParameterError(f"context must be 1 to {MAX_CONTEXT_BYTES} bytes long, got {len(context)}")
    return bytes(context)


def key_from_message(message: bytes, key_params: str, context: bytes, *, limit: KeyCostLimit | None = None) -> bytes:
    """The released key: an HKDF-SHA256 expansion, for ``context``, of one argon2id of the message.

    ``root = argon2id(tag ‖ message, salt, stored costs)`` through argon2-cffi's public
    ``low_level.hash_secret_raw``, then ``key = HKDF-SHA256(root, salt = tag, info = context)``
    (RFC 5869, pyca/cryptography): the slow hash is paid once per release, and each context is
    an independent expansion of it. ``message`` is the :func:`secret_message` of a secret
    already recovered *and* checked against the enrolment's hash (:func:`derive_key` does both).
    Stored costs beyond ``limit`` are refused before any work (:func:`parse_key_params`).
    """
    context = _check_context(context)
    memory, passes, lanes, salt = parse_key_params(key_params, limit)
    root = argon2.low_level.hash_secret_raw(
        _KEY_TAG + message,
        salt,
        time_cost=passes,
        memory_cost=memory,
        parallelism=lanes,
        hash_len=KEY_BYTES,
        type=argon2.low_level.Type.ID,
    )
    return hkdf.HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=_KEY_TAG, info=context).derive(root)


def derive_key(
    sketch: SecureSketch[Any, Any],
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
    enrolment without :attr:`Enrolment.key_params`; ``SampleError`` for a malformed sample.
    """
    context = _check_context(context)
    if enrolment.key_params is None:
        raise ParameterError(
            "this Enrolment has no key_params: enrol() puts them in Enrolment.key_params, so store the whole "
            "record (Enrolment.to_json() / Enrolment.from_json()) rather than helper and hash alone; a record "
            "made before key release has none: re-enrol to derive keys"
        )
    ph = password_hasher or hasher()
    limit = key_cost_limit(ph)
    parse_key_params(enrolment.key_params, limit)
    message = candidate_message(sketch, enrolment, sample)
    try:
        ph.verify(enrolment.secret_hash, message)
    except argon2.exceptions.VerificationError:
        return None
    except argon2.exceptions.InvalidHashError:
        raise SampleError("stored hash is not an argon2 hash") from None
    return key_from_message(message, enrolment.key_params, context, limit=limit)
