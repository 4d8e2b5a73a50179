"""The secrets of a mixed sketch: what each one stores and how its key is derived (Fang's thesis, ch. 7).

Every component of a structure is a :class:`SecretKey`: :class:`ExactKey` (PIN/password → argon2id
with its own 16-byte salt and a profile of :data:`sketchauth.enrolment.HASH_PROFILES`, so each
offline guess costs a slow hash; nothing about it is stored but the salt) or :class:`FuzzySecret`
(a second biometric with its own sketch; its key is a Toeplitz-matrix universal hash over GF(2) of
its recovered canonical bytes, seeded by a public random seed stored in the helper). The
structures (:mod:`sketchauth.mixing.structures`) talk to either through the protocol only.
"""

from __future__ import annotations

import math
import secrets as _secrets
import struct
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import argon2
import numpy as np

from sketchauth.enrolment import HASH_PROFILES
from sketchauth.errors import ParameterError, SampleError, SketchFormatError
from sketchauth.mixing.bounds import ComponentFacts
from sketchauth.mixing.pads import extractor_seed_bytes, toeplitz_extract
from sketchauth.sketches.base import SecureSketch, scheme_class
from sketchauth.sketches.params import ParameterSpec, check_int

__all__ = [
    "MAX_EXTRACTOR_INPUT_BYTES",
    "MAX_PIN_BYTES",
    "SALT_BYTES",
    "ExactKey",
    "FuzzySecret",
    "SecretKey",
    "component",
    "component_from_params",
]

#: Length of the argon2id salt stored for each exact key.
SALT_BYTES = 16
#: Longest PIN/password accepted (bytes of its UTF-8 NFKC form).
MAX_PIN_BYTES = 4096
#: Longest canonical second-biometric encoding the extractor accepts.
MAX_EXTRACTOR_INPUT_BYTES = 1 << 16
_U32 = struct.Struct(">I")


class SecretKey(Protocol):
    """One secret of a mixed sketch, as the structures see it.

    ``sketch`` is what the helper stores for it (``None``: an exact key, of which only the public
    key material — a salt — is stored). ``derive_key(secret, material)`` is the key it gives when
    it mixes another sketch, from its (recovered) secret and its public key material (a salt or
    an extractor seed, drawn by ``draw_key_material`` and checked by ``check_key_material`` when
    read from an untrusted helper). ``facts(index)`` is what the entropy accounting needs.
    """

    @property
    def sketch(self) -> SecureSketch[Any, Any] | None: ...

    @property
    def min_entropy(self) -> float | None: ...

    @property
    def importance(self) -> int | None: ...

    @property
    def role(self) -> str: ...

    def check_secret(self, secret: Any) -> Any: ...

    def secret_bytes(self, secret: Any) -> bytes: ...

    def draw_key_material(self, secret: Any) -> bytes: ...

    def check_key_material(self, material: bytes) -> None: ...

    def derive_key(self, secret: Any, material: bytes) -> bytes: ...

    def params(self) -> dict[str, Any]: ...

    def facts(self, index: int) -> ComponentFacts: ...


def _check_entropy(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number of bits or None")
    if not math.isfinite(value) or value < 0:
        raise ParameterError(f"{name} must be finite and non-negative, got {value!r}")
    return float(value)


def _check_importance(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError("importance must be an integer or None")
    return int(value)


@dataclass(frozen=True, slots=True)
class ExactKey:
    """An exact, replaceable second secret (PIN, password, smartcard key).

    Its key is ``argon2id(secret, salt)`` with the named profile of
    :data:`sketchauth.enrolment.HASH_PROFILES` and a fresh 16-byte salt stored in the helper.
    ``min_entropy`` is the declared ``H∞`` (``None``: unknown); ``space_bits`` log2 of the number
    of possible secrets, for ``β`` (defaults to ``min_entropy``). A secret is a ``str``
    (normalised to Unicode NFKC, as NIST SP 800-63B asks) or ``bytes``.
    """

    profile: str = "owasp"
    min_entropy: float | None = None
    space_bits: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or self.profile not in HASH_PROFILES:
            raise ParameterError(f"unknown argon2 profile {self.profile!r}; known: {', '.join(HASH_PROFILES)}")
        object.__setattr__(self, "min_entropy", _check_entropy("min_entropy", self.min_entropy))
        object.__setattr__(self, "space_bits", _check_entropy("space_bits", self.space_bits))

    @classmethod
    def pin(cls, digits: int = 6, profile: str = "owasp") -> ExactKey:
        """A uniformly chosen PIN of ``digits`` decimal digits: ``H∞ = digits·log2 10``."""
        bits = check_int("digits", digits, 1, 64) * math.log2(10)
        return cls(profile, min_entropy=bits, space_bits=bits)

    @property
    def sketch(self) -> None:
        """Nothing of an exact key is stored but its salt."""
        return None

    @property
    def importance(self) -> None:
        """Exact keys are never mixed, so their importance is never compared."""
        return None

    @property
    def role(self) -> str:
        return "pin"

    def check_secret(self, secret: Any) -> str | bytes:
        if isinstance(secret, str):
            secret = unicodedata.normalize("NFKC", secret)
            size = len(secret.encode("utf-8"))
        elif isinstance(secret, (bytes, bytearray, memoryview)):
            secret = bytes(secret)
            size = len(secret)
        elif isinstance(secret, (int, np.integer)) and not isinstance(secret, (bool, np.bool_)):
            raise SampleError('a PIN must be given as a str (e.g. "012345"): a number loses its leading zeros')
        else:
            raise SampleError(f"a PIN or password must be str or bytes, not {type(secret).__name__}")
        if not 1 <= size <= MAX_PIN_BYTES:
            raise SampleError(f"a PIN or password must be 1 to {MAX_PIN_BYTES} bytes long")
        return cast("str | bytes", secret)

    def secret_bytes(self, secret: Any) -> bytes:
        secret = self.check_secret(secret)
        return secret.encode("utf-8") if isinstance(secret, str) else secret

    def draw_key_material(self, secret: Any) -> bytes:
        """A fresh argon2 salt (from :mod:`secrets`), independent of the secret."""
        return _secrets.token_bytes(SALT_BYTES)

    def check_key_material(self, material: bytes) -> None:
        if len(material) != SALT_BYTES:
            raise SketchFormatError(f"an argon2 salt must be {SALT_BYTES} bytes")

    def derive_key(self, secret: Any, material: bytes) -> bytes:
        """``argon2id(secret, salt)``, 32 bytes, with this key's profile (``material`` is the salt)."""
        p = HASH_PROFILES[self.profile]
        return argon2.low_level.hash_secret_raw(
            self.secret_bytes(secret),
            material,
            time_cost=p.time_cost,
            memory_cost=p.memory_cost,
            parallelism=p.parallelism,
            hash_len=32,
            type=argon2.low_level.Type.ID,
            version=p.version,
        )

    def params(self) -> dict[str, Any]:
        return {
            "kind": "exact",
            "profile": self.profile,
            "min_entropy": self.min_entropy,
            "space_bits": self.space_bits,
        }

    def facts(self, index: int) -> ComponentFacts:
        return ComponentFacts(f"{index}:exact", "exact", self.min_entropy, self.space_bits)


@dataclass(frozen=True, slots=True)
class FuzzySecret:
    """A fuzzy secret (biometric) with its own sketch, optional declarations, and key length.

    ``importance``: larger means more important (``None``: unknown); the key of a less important
    secret should mix the sketch of a more important one. ``key_bits``: the extractor output
    when this secret's key mixes another sketch.
    """

    sketch: SecureSketch[Any, Any]
    min_entropy: float | None = None
    importance: int | None = None
    key_bits: int = 128

    def __post_init__(self) -> None:
        # A MixedSketch (scheme "mixed") cannot nest: its components are the secrets themselves.
        if not isinstance(self.sketch, SecureSketch) or self.sketch.scheme_name == "mixed":
            raise ParameterError("a fuzzy secret needs a (non-mixed) SecureSketch")
        object.__setattr__(self, "min_entropy", _check_entropy("min_entropy", self.min_entropy))
        object.__setattr__(self, "importance", _check_importance(self.importance))
        object.__setattr__(self, "key_bits", check_int("key_bits", self.key_bits, 8, 4096))

    @property
    def role(self) -> str:
        return self.sketch.scheme_name

    def check_secret(self, secret: Any) -> Any:
        return self.sketch.check_secret(secret)

    def secret_bytes(self, secret: Any) -> bytes:
        return self.sketch.secret_bytes(secret)

    def draw_key_material(self, secret: Any) -> bytes:
        """A fresh Toeplitz seed (from :mod:`secrets`) sized for this secret's canonical bytes."""
        size = len(self.sketch.secret_bytes(secret)) + 4
        if size > MAX_EXTRACTOR_INPUT_BYTES:
            raise SampleError("the second secret is too long for the extractor")
        return _secrets.token_bytes(extractor_seed_bytes(size, self.key_bits))

    def check_key_material(self, material: bytes) -> None:
        """A seed read from a helper must serve a bounded input (the extractor's cost grows with it)."""
        size = self._seed_input_bytes(material)
        if not 4 < size <= MAX_EXTRACTOR_INPUT_BYTES:
            raise SketchFormatError("extractor seed length out of range")

    def derive_key(self, secret: Any, material: bytes) -> bytes:
        """``Toeplitz_seed(u32 length ‖ canonical bytes)`` (``key_bits`` bits; ``material`` is the seed)."""
        data = self.sketch.secret_bytes(secret)
        data = _U32.pack(len(data)) + data
        # A recovered secret of another length is surely wrong; fit it to the seed so that it
        # still yields some key (the caller's hash check rejects the result).
        size = self._seed_input_bytes(material)
        data = (data + bytes(max(0, size - len(data))))[:size]
        return toeplitz_extract(material, data, self.key_bits)

    def _seed_input_bytes(self, seed: bytes) -> int:
        """Extractor input length a seed of this length serves (the inverse of ``extractor_seed_bytes``)."""
        return len(seed) - extractor_seed_bytes(0, self.key_bits)

    def params(self) -> dict[str, Any]:
        return {
            "kind": "fuzzy",
            "scheme": self.sketch.scheme_name,
            "params": self.sketch.params(),
            "min_entropy": self.min_entropy,
            "importance": self.importance,
            "key_bits": self.key_bits,
        }

    def facts(self, index: int) -> ComponentFacts:
        r = self.sketch.report()
        support = float(r.extra.get("randomness_support_bits", r.randomness_bits))
        return ComponentFacts(
            f"{index}:{self.sketch.scheme_name}",
            "fuzzy",
            self.min_entropy,
            None,
            r.sketch_bits,
            r.randomness_bits,
            support,
            self.key_bits,
            self.sketch.pad_group_bits(r),
        )


def component(value: Any) -> SecretKey:
    """A structure's component from what the caller gave: a bare sketch becomes a :class:`FuzzySecret`."""
    if isinstance(value, (ExactKey, FuzzySecret)):
        return value
    if isinstance(value, SecureSketch):
        return FuzzySecret(value)
    raise ParameterError(f"a component must be a SecureSketch, FuzzySecret or ExactKey, not {type(value).__name__}")


#: The keys of one component's parameters, per kind (what ``ExactKey.params`` / ``FuzzySecret.params`` write).
_COMPONENT_PARAMETERS = {
    "exact": ParameterSpec(required=("kind", "profile"), optional=("min_entropy", "space_bits")),
    "fuzzy": ParameterSpec(required=("kind", "scheme", "params"), optional=("min_entropy", "importance", "key_bits")),
}


def component_from_params(p: Any, index: int) -> SecretKey:
    """Rebuild component ``index`` from stored (untrusted) parameters, strictly."""
    where = f"components[{index}]"
    if not isinstance(p, Mapping):
        raise ParameterError(f"{where} must be an object with 'kind' 'exact' or 'fuzzy', not {type(p).__name__}")
    kind = p.get("kind")
    spec = _COMPONENT_PARAMETERS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise ParameterError(f"{where}: unknown component 'kind' {kind!r}; known: exact, fuzzy")
    spec.check(f"{where} ({kind})", p)
    if kind == "exact":
        if not isinstance(p["profile"], str):
            raise ParameterError(
                f"{where}: 'profile' must be the name of an argon2 profile ({', '.join(HASH_PROFILES)})"
            )
        return ExactKey(p["profile"], min_entropy=p.get("min_entropy"), space_bits=p.get("space_bits"))
    scheme = p["scheme"]
    if scheme == "mixed":
        raise ParameterError(f"{where}: a mixed sketch cannot be a component (its 'scheme' is 'mixed')")
    sketch = scheme_class(scheme).from_params(p["params"])
    return FuzzySecret(sketch, p.get("min_entropy"), p.get("importance"), p.get("key_bits", 128))
