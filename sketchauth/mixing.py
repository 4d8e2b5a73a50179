"""Cascaded mixing of several secrets: a PIN, password or second biometric over a biometric's sketch.

Fang's thesis, ch. 7. A biometric cannot be replaced; a PIN can. A *cascade* encrypts the biometric's sketch
``S_1`` with a key ``K`` from the less important secret, ``Q = f(S_1, K, R_f)``, so the entropy
loss of ``S_1`` is diverted to that secret. This module holds

* the **format-preserving mixing function** ``f``, generic over every family's symbol
  interface (:meth:`SecureSketch.symbols`): a keyed pad added modulo each symbol's modulus
  (``SymbolSpace("mod")``: interval offsets, vault values, chaff ranks, asymmetric offsets) or
  XORed onto each word (``SymbolSpace("xor")``: PinSketch syndromes, code-offset bytes). Every
  key, right or wrong, inverts ``Q`` to a *valid* sketch of the same scheme, so a wrong key is
  never recognisable by a malformed result (redundancy would let an attacker test keys offline).
  The pad is SHAKE-256 of ``("sketchauth/mix-pad/v1", sketch index, R_f, K)``, ``R_f`` a 16-byte
  nonce from :mod:`secrets` stored in the helper; each pad symbol is drawn *exactly* uniformly
  by rejection sampling of 64-bit words (``w < 2^64 − (2^64 mod m)``), so no bias bound is
  needed. ``f`` is invertible (subtract the pad) and randomness-recoverable (``R_f`` is stored).
  Its key recoverability ``β`` is reported by :func:`sketchauth.mixing_bounds.key_recoverability_bits`.
* **keys**: :class:`ExactKey` (PIN/password → argon2id with its own 16-byte salt and a profile
  of :data:`sketchauth.enrolment.HASH_PROFILES`, so each offline guess costs a slow hash) and
  :class:`FuzzySecret` (a second biometric with its own sketch; its key is a Toeplitz-matrix
  universal hash over GF(2) of its recovered canonical bytes, seeded by a public random seed
  stored in the helper: a strong extractor by the leftover hash lemma, overhead ``δ`` and
  distance ``ε = 2^(−δ/2)`` reported).
* the **structures**, each a :class:`SecureSketch` of scheme ``"mixed"`` sharing
  ``encode(secrets)`` / ``decode(helper, samples)`` with one secret and one sample per
  component: :class:`Concatenate`, :class:`Cascade`, :class:`Fanning`, :class:`Chaining` and
  :class:`Hybrid` (any forest "key ``j`` mixes sketch ``i``"). ``load_sketch(helper)`` rebuilds
  the right one from the helper's parameters.

Usage (a PinSketch biometric and a 6-digit PIN; enrol/verify work unchanged)::

    from sketchauth.enrolment import enrol, verify
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("owasp"))
    record = enrol(cascade, [enrolled_set, "123456"])
    verify(cascade, record, [sample_set, "123456"])            # True
    cascade.decode(record.helper, [sample_set, "123456"])      # [recovered set, "123456"]

Secrets and samples hold one entry per component, in component order: a list, a tuple or any
ordered iterable (a generator is read once); a set or a mapping is refused, since it has no order.
Each entry is whatever its component takes — a Python ``set`` for a PinSketch biometric, a ``str``
PIN (a PIN given as an ``int`` is refused: it would lose its leading zeros).

``secret_bytes`` of a mixed sketch is the length-prefixed concatenation of each component's
canonical bytes. With a wrong PIN, decode unmixes to a well-formed sketch and then returns a
different secret or raises :class:`DecodeError` — never a format error.

Accounting (:meth:`MixedSketch.mixing_report`, also in ``report().extra``): per secret, the
concatenation bound next to Lemma 6, Theorem 7, Theorem 8 and the two-fuzzy-secret bounds
(:mod:`sketchauth.mixing_bounds`). The guidelines of Fang's thesis, ch. 7 are enforced as
:class:`MixingWarning` at construction.

Helper payload, per component in order: ``u32 length ‖ inner helper`` (fuzzy, the mixed ``Q``
or the clear sketch: itself a complete helper of the component's scheme), then a 16-byte nonce
if that sketch is mixed, a 16-byte argon2 salt for an exact key, and ``u32 length ‖ seed`` for
a fuzzy secret whose key mixes something.
"""

from __future__ import annotations

import hashlib
import math
import secrets as _secrets
import struct
import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence, Sized
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import argon2
import numpy as np

from sketchauth.enrolment import HASH_PROFILES
from sketchauth.errors import MixingWarning, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing_bounds import ComponentFacts, MixingReport, account
from sketchauth.sketches.base import EntropyReport, SecureSketch, SymbolSpace, scheme_class
from sketchauth.sketches.params import ParameterSpec, check_int
from sketchauth.sketches.samples import as_collection

__all__ = [
    "NONCE_BYTES",
    "SALT_BYTES",
    "Cascade",
    "Chaining",
    "Concatenate",
    "ExactKey",
    "Fanning",
    "FuzzySecret",
    "Hybrid",
    "MixRandomness",
    "MixedSketch",
    "derive_pad",
    "mix_helper",
    "mix_symbols",
    "toeplitz_extract",
    "unmix_helper",
    "unmix_symbols",
]

NONCE_BYTES = 16
SALT_BYTES = 16
#: Longest PIN/password accepted (bytes of its UTF-8 NFKC form).
MAX_PIN_BYTES = 4096
#: Longest canonical second-biometric encoding the extractor accepts.
MAX_EXTRACTOR_INPUT_BYTES = 1 << 16
#: Most components one mixed sketch may hold.
MAX_COMPONENTS = 64
#: Most exact keys (PINs/passwords) one mixed sketch may hold: each costs an argon2id call on
#: every decode, so a crafted helper could otherwise make one decode run dozens of slow hashes.
MAX_EXACT_KEYS = 4
_PAD_TAG = b"sketchauth/mix-pad/v1\x00"
_U32 = struct.Struct(">I")


# -- the format-preserving mixing function --------------------------------------------------------
def _words(xof: Any, start: int, count: int) -> np.ndarray:
    data = xof.digest(8 * (start + count))[8 * start :]
    return np.frombuffer(data, dtype=">u8").astype(np.uint64)


def derive_pad(key: bytes, nonce: bytes, space: SymbolSpace, count: int, *, domain: int = 0) -> np.ndarray:
    """The pad of ``count`` group elements for ``key`` and ``nonce``, exactly uniform per symbol.

    SHAKE-256 over ``tag ‖ u32 domain ‖ u32 |nonce| ‖ nonce ‖ key`` is read as 64-bit words.
    ``xor``: each word masked to ``bits`` (exact, since ``2^bits`` divides ``2^64``). ``mod m``:
    a word is accepted iff it is below ``2^64 − (2^64 mod m)`` and reduced mod ``m``; rejected
    symbols draw the next words of the stream (probability ``< m/2^64`` each).
    """
    xof = hashlib.shake_256(_PAD_TAG + _U32.pack(domain) + _U32.pack(len(nonce)) + nonce + key)
    words = _words(xof, 0, count)
    if space.kind == "xor":
        if space.bits >= 64:
            return words
        return words & np.uint64((1 << space.bits) - 1)
    moduli = np.asarray(space.moduli, dtype=np.uint64)
    if moduli.shape != (count,) or np.any(moduli == 0):
        raise ParameterError("moduli must be positive, one per symbol")
    excess = (np.uint64(0) - moduli) % moduli  # 2^64 mod m, computed in wrapping uint64
    pad = np.zeros(count, dtype=np.uint64)
    pending = np.arange(count)
    offset = count
    while pending.size:
        m, e = moduli[pending], excess[pending]
        ok = (e == 0) | (words < np.uint64(0) - e)
        pad[pending[ok]] = words[ok] % m[ok]
        pending = pending[~ok]
        words = _words(xof, offset, pending.size)
        offset += pending.size
    return pad


def mix_symbols(symbols: np.ndarray, pad: np.ndarray, space: SymbolSpace) -> np.ndarray:
    """``symbols + pad`` in the group (mod each modulus without overflow, or XOR)."""
    s = np.asarray(symbols, dtype=np.uint64)
    p = np.asarray(pad, dtype=np.uint64)
    if space.kind == "xor":
        return s ^ p
    m = np.asarray(space.moduli, dtype=np.uint64)
    room = m - p  # s + p ≥ m  ⇔  s ≥ m − p
    return np.where(s >= room, s - room, s + p)


def unmix_symbols(symbols: np.ndarray, pad: np.ndarray, space: SymbolSpace) -> np.ndarray:
    """``symbols − pad`` in the group: the inverse of :func:`mix_symbols`."""
    s = np.asarray(symbols, dtype=np.uint64)
    p = np.asarray(pad, dtype=np.uint64)
    if space.kind == "xor":
        return s ^ p
    m = np.asarray(space.moduli, dtype=np.uint64)
    return np.where(s >= p, s - p, s + (m - p))


def mix_helper(sketch: SecureSketch, helper: bytes, key: bytes, nonce: bytes, *, domain: int = 0) -> bytes:
    """``Q``: the helper of the same scheme whose symbols carry the keyed pad."""
    symbols, space = sketch.symbols(sketch.payload(helper))
    pad = derive_pad(key, nonce, space, symbols.shape[0], domain=domain)
    return sketch.with_symbols(helper, mix_symbols(symbols, pad, space))


def unmix_helper(sketch: SecureSketch, helper: bytes, key: bytes, nonce: bytes, *, domain: int = 0) -> bytes:
    """The inverse of :func:`mix_helper`; any key yields a valid helper of the same scheme."""
    symbols, space = sketch.symbols(sketch.payload(helper))
    pad = derive_pad(key, nonce, space, symbols.shape[0], domain=domain)
    return sketch.with_symbols(helper, unmix_symbols(symbols, pad, space))


def toeplitz_extract(seed: bytes, data: bytes, out_bits: int) -> bytes:
    """``T·x`` over GF(2) for the Toeplitz matrix ``T[i, j] = seed_bit[i + n − 1 − j]``.

    ``x`` is the ``n = 8·len(data)`` bits of ``data``; ``seed`` must carry ``n + out_bits − 1``
    bits (rounded up to bytes). Toeplitz hashing is a universal family (collision probability
    exactly ``2^−out_bits``), hence a strong extractor by the leftover hash lemma.
    """
    x = np.unpackbits(np.frombuffer(data, dtype=np.uint8)).astype(bool)
    n = x.size
    bits = np.unpackbits(np.frombuffer(seed, dtype=np.uint8)).astype(bool)
    if bits.size < n + out_bits - 1:
        raise ParameterError(f"seed has {bits.size} bits, needs {n + out_bits - 1}")
    # y_i = XOR_j seed[i + n − 1 − j]·x[j] = parity(seed[i : i + n] · reversed(x)): with the seed
    # and reversed x as integers (bit k = k-th bit), row i is (seed >> i) & x_rev. Never builds
    # the out_bits × n matrix (4096 × 2^19 bits = 2 GiB for a crafted 64 KiB extractor seed).
    seed_int = int.from_bytes(np.packbits(bits[: n + out_bits - 1], bitorder="little").tobytes(), "little")
    x_rev = int.from_bytes(np.packbits(x[::-1], bitorder="little").tobytes(), "little")
    y = np.array([((seed_int >> i) & x_rev).bit_count() & 1 for i in range(out_bits)], dtype=bool)
    return np.packbits(y).tobytes()


def _seed_bytes(input_bytes: int, out_bits: int) -> int:
    return input_bytes + (out_bits - 1 + 7) // 8


# -- the secrets ----------------------------------------------------------------------------------
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
        return secret

    def secret_bytes(self, secret: Any) -> bytes:
        secret = self.check_secret(secret)
        return secret.encode("utf-8") if isinstance(secret, str) else secret

    def derive_key(self, secret: Any, salt: bytes) -> bytes:
        """``argon2id(secret, salt)``, 32 bytes, with this key's profile."""
        p = HASH_PROFILES[self.profile]
        return argon2.low_level.hash_secret_raw(
            self.secret_bytes(secret),
            salt,
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


@dataclass(frozen=True, slots=True)
class FuzzySecret:
    """A fuzzy secret (biometric) with its own sketch, optional declarations, and key length.

    ``importance``: larger means more important (``None``: unknown); the key of a less important
    secret should mix the sketch of a more important one. ``key_bits``: the extractor output
    when this secret's key mixes another sketch.
    """

    sketch: SecureSketch
    min_entropy: float | None = None
    importance: int | None = None
    key_bits: int = 128

    def __post_init__(self) -> None:
        if not isinstance(self.sketch, SecureSketch) or isinstance(self.sketch, MixedSketch):
            raise ParameterError("a fuzzy secret needs a (non-mixed) SecureSketch")
        object.__setattr__(self, "min_entropy", _check_entropy("min_entropy", self.min_entropy))
        object.__setattr__(self, "importance", _check_importance(self.importance))
        object.__setattr__(self, "key_bits", check_int("key_bits", self.key_bits, 8, 4096))

    def derive_key(self, secret: Any, seed: bytes) -> bytes:
        """``Toeplitz_seed(u32 length ‖ canonical bytes)`` (``key_bits`` bits)."""
        data = self.sketch.secret_bytes(secret)
        data = _U32.pack(len(data)) + data
        # A recovered secret of another length is surely wrong; fit it to the seed so that it
        # still yields some key (the caller's hash check rejects the result).
        size = self._seed_input_bytes(seed)
        data = (data + bytes(max(0, size - len(data))))[:size]
        return toeplitz_extract(seed, data, self.key_bits)

    def _seed_input_bytes(self, seed: bytes) -> int:
        """Extractor input length a seed of this length serves (the inverse of ``_seed_bytes``)."""
        return len(seed) - _seed_bytes(0, self.key_bits)

    def params(self) -> dict[str, Any]:
        return {
            "kind": "fuzzy",
            "scheme": self.sketch.scheme_name,
            "params": self.sketch.params(),
            "min_entropy": self.min_entropy,
            "importance": self.importance,
            "key_bits": self.key_bits,
        }


Component = ExactKey | FuzzySecret


def _component_role(c: Component) -> str:
    return "pin" if isinstance(c, ExactKey) else c.sketch.scheme_name


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, complex, np.generic))


def _component(value: Any) -> Component:
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


def _component_from_params(p: Any, index: int) -> Component:
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


# -- randomness of one encoding -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MixRandomness:
    """Everything random in one encoding: each sketch's randomness and the public values."""

    inner: tuple[Any, ...]
    nonces: tuple[bytes | None, ...]
    salts: tuple[bytes | None, ...]
    seeds: tuple[bytes | None, ...]


# -- the structures -------------------------------------------------------------------------------
class MixedSketch(SecureSketch):
    """A forest of secrets where key ``j`` mixes sketch ``i`` for each pair ``(j, i)`` in ``mixes``.

    The common base of every structure (scheme ``"mixed"``). ``from_params`` dispatches on
    ``params()["structure"]``. Validation: every index in range, no self-mix, each sketch mixed
    by at most one key, no cycles (so every component is reachable from an unmixed one and
    decodes), exact keys are never mixed (they have no sketch) and always mix something.
    """

    scheme_name = "mixed"
    structure = "hybrid"
    parameters = ParameterSpec(required=("structure", "components", "mixes"))

    def __init__(self, components: Sequence[Any], mixes: Iterable[tuple[int, int]] = (), *, warn: bool = True) -> None:
        if type(self) is MixedSketch:
            raise ParameterError(
                "MixedSketch is the common base: build Concatenate, Cascade, Fanning, Chaining or Hybrid"
            )
        self._setup([_component(c) for c in components], mixes, warn)

    # -- construction and validation ---------------------------------------------------------------
    def _setup(self, components: list[Component], mixes: Iterable[tuple[int, int]], warn: bool) -> None:
        if not components:
            raise ParameterError("a mixed sketch needs at least one component")
        if len(components) > MAX_COMPONENTS:
            raise ParameterError(f"at most {MAX_COMPONENTS} components")
        if sum(isinstance(c, ExactKey) for c in components) > MAX_EXACT_KEYS:
            raise ParameterError(f"at most {MAX_EXACT_KEYS} exact keys (PINs/passwords) per mixed sketch")
        self.components = tuple(components)
        self.mixes = _validate_mixes(self.components, mixes)
        self.parent = {i: j for j, i in self.mixes}
        self.key_owners = frozenset(j for j, _ in self.mixes)
        self.order = _topological_order(len(self.components), self.mixes)
        self._expected_shape()
        if warn:
            for message in self.guideline_violations():
                warnings.warn(message, MixingWarning, stacklevel=3)

    def _expected_shape(self) -> None:
        """Subclasses check that the forest has their shape (``from_params`` relies on it)."""

    @classmethod
    def _build(cls, components: list[Component], mixes: Iterable[tuple[int, int]], warn: bool) -> MixedSketch:
        obj = cls.__new__(cls)
        obj._setup(components, mixes, warn)
        return obj

    def params(self) -> dict[str, Any]:
        return {
            "structure": self.structure,
            "components": [c.params() for c in self.components],
            "mixes": [[j, i] for j, i in self.mixes],
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MixedSketch:
        params = cls.parameters.check(cls.scheme_name, params)
        structure = params["structure"]
        target = _STRUCTURES.get(structure) if isinstance(structure, str) else None
        if target is None:
            raise ParameterError(f"unknown mixing 'structure' {structure!r}; known: {', '.join(_STRUCTURES)}")
        raw = params["components"]
        if not isinstance(raw, list):
            raise ParameterError("components must be a list")
        if len(raw) > MAX_COMPONENTS:
            # Checked before any component is built: each may cost milliseconds and megabytes.
            raise ParameterError(f"at most {MAX_COMPONENTS} components")
        mixes = params["mixes"]
        if not isinstance(mixes, list) or not all(isinstance(m, list) and len(m) == 2 for m in mixes):
            raise ParameterError("mixes must be a list of [key, sketch] pairs")
        # Rebuilding from stored parameters: the guidelines were shown when it was configured.
        components = [_component_from_params(c, index) for index, c in enumerate(raw)]
        return target._build(components, [tuple(m) for m in mixes], False)

    # -- secrets -------------------------------------------------------------------------------------
    def _check_sequence(self, values: Any, what: str) -> list[Any]:
        """One entry per component, in component order: a list, tuple or any ordered iterable (read once)."""
        n = len(self.components)
        shape = f"[{', '.join(_component_role(c) for c in self.components)}]"
        if isinstance(values, (str, bytes, bytearray, memoryview, Mapping)) or _is_number(values):
            raise SampleError(f"{what} must be a list with one entry per component: {shape}")
        if isinstance(values, AbstractSet):
            raise SampleError(
                f"{what} must be a list with one entry per component: {shape} (a {type(values).__name__} has no order)"
            )
        if isinstance(values, Sized) and len(values) != n:
            raise SampleError(f"{what} must have {n} entries, one per component {shape}, got {len(values)}")
        entries = list(as_collection(values, what, what="entries, one per component", ordered=True, max_size=n))
        if len(entries) != n:
            raise SampleError(f"{what} must have {n} entries, one per component {shape}, got {len(entries)}")
        return entries

    def check_secret(self, secret: Any) -> list[Any]:
        values = self._check_sequence(secret, "secrets")
        return [
            c.check_secret(v) if isinstance(c, ExactKey) else c.sketch.check_secret(v)
            for c, v in zip(self.components, values, strict=False)
        ]

    def secret_bytes(self, secret: Any) -> bytes:
        parts = []
        for c, v in zip(self.components, self._check_sequence(secret, "secrets"), strict=False):
            data = c.secret_bytes(v) if isinstance(c, ExactKey) else c.sketch.secret_bytes(v)
            parts.append(_U32.pack(len(data)) + data)
        return b"".join(parts)

    def draw_randomness(self, secret: Any) -> MixRandomness:
        inner, nonces, salts, seeds = [], [], [], []
        for index, (c, v) in enumerate(zip(self.components, secret, strict=False)):
            fuzzy = isinstance(c, FuzzySecret)
            inner.append(c.sketch.draw_randomness(v) if fuzzy else None)
            nonces.append(_secrets.token_bytes(NONCE_BYTES) if index in self.parent else None)
            salts.append(None if fuzzy else _secrets.token_bytes(SALT_BYTES))
            if fuzzy and index in self.key_owners:
                size = len(c.sketch.secret_bytes(v)) + 4
                if size > MAX_EXTRACTOR_INPUT_BYTES:
                    raise SampleError("the second secret is too long for the extractor")
                seeds.append(_secrets.token_bytes(_seed_bytes(size, c.key_bits)))
            else:
                seeds.append(None)
        return MixRandomness(tuple(inner), tuple(nonces), tuple(salts), tuple(seeds))

    def _key(self, index: int, secret: Any, randomness: MixRandomness) -> bytes:
        c = self.components[index]
        if isinstance(c, ExactKey):
            return c.derive_key(secret, randomness.salts[index])  # type: ignore[arg-type]
        return c.derive_key(secret, randomness.seeds[index])  # type: ignore[arg-type]

    # -- encode / decode -----------------------------------------------------------------------------
    def _check_randomness(self, r: Any) -> None:
        """``encode_with`` takes caller-built randomness: check every public value is in place."""
        n = len(self.components)
        if not isinstance(r, MixRandomness) or not all(len(x) == n for x in (r.inner, r.nonces, r.salts, r.seeds)):
            raise ParameterError("randomness must be the MixRandomness of this structure")
        for index, c in enumerate(self.components):
            fuzzy = isinstance(c, FuzzySecret)
            expected = (
                (r.nonces[index], NONCE_BYTES if index in self.parent else None),
                (r.salts[index], None if fuzzy else SALT_BYTES),
            )
            for value, size in expected:
                well_formed = isinstance(value, bytes) and len(value) == size
                if (size is None) != (value is None) or (size is not None and not well_formed):
                    raise ParameterError(f"randomness of component {index}: wrong nonce or salt")
            if (fuzzy and index in self.key_owners) != isinstance(r.seeds[index], bytes):
                raise ParameterError(f"randomness of component {index}: extractor seed missing or unexpected")

    def _encode_payload(self, secret: list[Any], randomness: Any) -> bytes:
        self._check_randomness(randomness)
        keys: dict[int, bytes] = {}
        stored: list[bytes | None] = [None] * len(self.components)
        for index in self.order:
            c = self.components[index]
            if isinstance(c, FuzzySecret):
                helper = c.sketch.encode_with(secret[index], randomness.inner[index])
                if index in self.parent:
                    nonce: bytes = randomness.nonces[index]  # type: ignore[assignment]
                    helper = mix_helper(c.sketch, helper, keys[self.parent[index]], nonce, domain=index)
                stored[index] = helper
            if index in self.key_owners:
                keys[index] = self._key(index, secret[index], randomness)
        return self._pack(stored, randomness)

    def _decode_payload(self, payload: bytes, sample: Any) -> list[Any]:
        samples = self._check_sequence(sample, "samples")
        stored, randomness = self._unpack(payload)
        keys: dict[int, bytes] = {}
        recovered: list[Any] = [None] * len(self.components)
        for index in self.order:
            c = self.components[index]
            if isinstance(c, ExactKey):
                recovered[index] = c.check_secret(samples[index])
            else:
                helper = stored[index]
                if index in self.parent:
                    nonce: bytes = randomness.nonces[index]  # type: ignore[assignment]
                    helper = unmix_helper(c.sketch, helper, keys[self.parent[index]], nonce, domain=index)  # type: ignore[arg-type]
                recovered[index] = c.sketch.decode(helper, samples[index])
            if index in self.key_owners:
                keys[index] = self._key(index, recovered[index], randomness)
        return recovered

    def rekey(self, helper: bytes, index: int, old_secret: Any, new_secret: Any) -> bytes:
        """The helper with exact key ``index`` (a PIN or password) changed, no biometric needed.

        Mixing is invertible with the key (``g(f(S, K, R_f), K) = S``): every sketch the old key
        mixed is unmixed with ``K_old = argon2id(old, salt)`` and mixed again with
        ``K_new = argon2id(new, salt')`` under a fresh salt and fresh nonces (from
        :mod:`secrets`), so nothing of the old key's pads survives. The other components and the
        sketches' own randomness are unchanged. A wrong ``old_secret`` cannot be detected here
        (every key unmixes to a valid sketch): the caller must have verified it first, e.g. by
        a successful verification with it; otherwise the result is a sketch no sample decodes.
        """
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.components):
            raise ParameterError(f"index must be a component index 0..{len(self.components) - 1}")
        component = self.components[index]
        if not isinstance(component, ExactKey):
            raise ParameterError(f"component {index} is not an exact key (PIN or password): it cannot be changed alone")
        old, new = component.check_secret(old_secret), component.check_secret(new_secret)
        stored, r = self._unpack(self.payload(helper))
        salt = _secrets.token_bytes(SALT_BYTES)
        old_key = component.derive_key(old, r.salts[index])  # type: ignore[arg-type]
        new_key = component.derive_key(new, salt)
        nonces, salts = list(r.nonces), list(r.salts)
        salts[index] = salt
        for child, parent in self.parent.items():
            if parent != index:
                continue
            sketch = self.components[child].sketch  # type: ignore[union-attr]
            clear = unmix_helper(sketch, stored[child], old_key, r.nonces[child], domain=child)  # type: ignore[arg-type]
            nonces[child] = _secrets.token_bytes(NONCE_BYTES)
            stored[child] = mix_helper(sketch, clear, new_key, nonces[child], domain=child)  # type: ignore[arg-type]
        return self._wrap(self._pack(stored, MixRandomness(r.inner, tuple(nonces), tuple(salts), r.seeds)))

    # -- payload format ------------------------------------------------------------------------------
    def _pack(self, stored: list[bytes | None], r: MixRandomness) -> bytes:
        out = []
        for index, c in enumerate(self.components):
            if isinstance(c, FuzzySecret):
                out.append(_U32.pack(len(stored[index])) + stored[index])  # type: ignore[arg-type]
                if r.nonces[index] is not None:
                    out.append(r.nonces[index])  # type: ignore[arg-type]
                if r.seeds[index] is not None:
                    out.append(_U32.pack(len(r.seeds[index])) + r.seeds[index])  # type: ignore[arg-type, operator]
            else:
                out.append(r.salts[index])  # type: ignore[arg-type]
        return b"".join(out)

    def _unpack(self, payload: bytes) -> tuple[list[bytes | None], MixRandomness]:
        reader = _Reader(payload)
        stored: list[bytes | None] = []
        nonces: list[bytes | None] = []
        salts: list[bytes | None] = []
        seeds: list[bytes | None] = []
        for index, c in enumerate(self.components):
            if isinstance(c, FuzzySecret):
                helper = reader.prefixed()
                c.sketch.payload(helper)  # strict: same scheme, same parameters, valid payload
                stored.append(helper)
                nonces.append(reader.take(NONCE_BYTES) if index in self.parent else None)
                salts.append(None)
                if index in self.key_owners:
                    seed = reader.prefixed()
                    size = c._seed_input_bytes(seed)
                    if not 4 < size <= MAX_EXTRACTOR_INPUT_BYTES:
                        raise SketchFormatError("extractor seed length out of range")
                    seeds.append(seed)
                else:
                    seeds.append(None)
            else:
                stored.append(None)
                nonces.append(None)
                salts.append(reader.take(SALT_BYTES))
                seeds.append(None)
        reader.done()
        return stored, MixRandomness(tuple([None] * len(stored)), tuple(nonces), tuple(salts), tuple(seeds))

    def _check_payload(self, payload: bytes) -> None:
        self._unpack(payload)

    # -- accounting ----------------------------------------------------------------------------------
    def _facts(self) -> list[ComponentFacts]:
        facts = []
        for index, c in enumerate(self.components):
            if isinstance(c, ExactKey):
                facts.append(ComponentFacts(f"{index}:exact", "exact", c.min_entropy, c.space_bits))
                continue
            r = c.sketch.report()
            support = float(r.extra.get("randomness_support_bits", r.randomness_bits))
            facts.append(
                ComponentFacts(
                    f"{index}:{c.sketch.scheme_name}",
                    "fuzzy",
                    c.min_entropy,
                    None,
                    r.sketch_bits,
                    r.randomness_bits,
                    support,
                    c.key_bits,
                    c.sketch.pad_group_bits(r),
                )
            )
        return facts

    def mixing_report(self) -> MixingReport:
        """Per-secret bounds (concatenation, Lemma 6, Theorems 7 and 8, two-fuzzy) and per-mix β."""
        return account(self._facts(), self.mixes)

    def report(self) -> EntropyReport:
        mixing = self.mixing_report()
        notes = list(mixing.notes) + [f"guideline: {m}" for m in self.guideline_violations()]
        for s in mixing.secrets:
            if s.diverted_bits:
                notes.append(f"secret {s.index}: {s.diverted_bits:.2f} bits of its sketch's loss diverted to its key")
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=mixing.sketch_bits,
            randomness_bits=mixing.randomness_bits,
            notes=notes,
            extra={"structure": self.structure, "mixing": mixing.to_dict()},
        )

    def guideline_violations(self) -> list[str]:
        """The Fang's thesis, ch. 7 guidelines this configuration breaks, each with its reason and numbers."""
        facts = self._facts()
        mixing = account(facts, self.mixes)
        out = []
        for edge in mixing.mixes:
            out.extend(_edge_guidelines(edge, self.components, facts))
        return out

    # -- symbols -------------------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        """The stored sketches' symbols, concatenated (they must share one kind of group)."""
        stored, _ = self._unpack(payload)
        parts, spaces = [], []
        for c, helper in zip(self.components, stored, strict=False):
            if helper is not None:
                s, space = c.sketch.symbols(c.sketch.payload(helper))  # type: ignore[union-attr]
                parts.append(s)
                spaces.append(space)
        kinds = {(sp.kind, sp.bits if sp.kind == "xor" else 0) for sp in spaces}
        if len(kinds) != 1:
            raise ParameterError("the components' symbols live in different groups; mix the components instead")
        if spaces[0].kind == "xor":
            return np.concatenate(parts), SymbolSpace("xor", bits=spaces[0].bits)
        moduli = np.concatenate([np.asarray(sp.moduli, dtype=np.uint64) for sp in spaces])
        return np.concatenate(parts), SymbolSpace("mod", moduli=moduli)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        stored, randomness = self._unpack(payload)
        at = 0
        for index, (c, helper) in enumerate(zip(self.components, stored, strict=False)):
            if helper is not None:
                count = c.sketch.symbols(c.sketch.payload(helper))[0].shape[0]  # type: ignore[union-attr]
                stored[index] = c.sketch.with_symbols(helper, symbols[at : at + count])  # type: ignore[union-attr]
                at += count
        return self._pack(stored, randomness)


class _Reader:
    """Strict sequential reader of a mixed payload (``SketchFormatError`` on any defect)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise SketchFormatError("mixed payload truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def prefixed(self) -> bytes:
        (n,) = _U32.unpack(self.take(4))
        return self.take(n)

    def done(self) -> None:
        if self.pos != len(self.data):
            raise SketchFormatError("trailing bytes after the mixed payload")


def _validate_mixes(components: Sequence[Component], mixes: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    n = len(components)
    pairs: list[tuple[int, int]] = []
    try:
        items = [tuple(m) for m in mixes]
    except TypeError:
        raise ParameterError("mixes must be (key index, sketch index) pairs") from None
    for m in items:
        if len(m) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in m):
            raise ParameterError("mixes must be (key index, sketch index) pairs of ints")
        j, i = int(m[0]), int(m[1])
        if not (0 <= j < n and 0 <= i < n):
            raise ParameterError(f"mix ({j}, {i}) refers to a component that does not exist")
        if j == i:
            raise ParameterError(f"component {i} cannot mix its own sketch")
        if isinstance(components[i], ExactKey):
            raise ParameterError(f"component {i} is an exact key: it has no sketch to mix")
        pairs.append((j, i))
    children = [i for _, i in pairs]
    if len(set(children)) != len(children):
        raise ParameterError("a sketch can be mixed by at most one key")
    if len(set(pairs)) != len(pairs):
        raise ParameterError("duplicate mix")
    for index, c in enumerate(components):
        if isinstance(c, ExactKey) and not any(j == index for j, _ in pairs):
            raise ParameterError(f"exact key {index} mixes nothing (it would be stored nowhere)")
    return tuple(sorted(pairs))


def _topological_order(n: int, mixes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    parent = {i: j for j, i in mixes}
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < n:
        ready = [i for i in range(n) if i not in placed and (i not in parent or parent[i] in placed)]
        if not ready:
            raise ParameterError("the mixes form a cycle: some components could never be decoded")
        order.extend(ready)
        placed.update(ready)
    return tuple(order)


def _edge_guidelines(edge: Any, components: Sequence[Component], facts: Sequence[ComponentFacts]) -> list[str]:
    j, i = edge.key_index, edge.sketch_index
    key, child = components[j], components[i]
    kf, cf = facts[j], facts[i]
    out = []
    if isinstance(key, FuzzySecret):
        if key.importance is None or child.importance is None:
            out.append(
                f"secret {j} mixes secret {i} but their importance is unknown "
                f"({key.importance!r} vs {child.importance!r}): mixing moves loss between them; "
                "declare importance or concatenate"
            )
        elif key.importance == child.importance:
            out.append(
                f"secrets {j} and {i} are equally important ({key.importance}): mixing only moves loss; concatenate"
            )
        elif key.importance > child.importance:
            out.append(
                f"the key of the more important secret {j} (importance {key.importance}) mixes the less important "
                f"secret {i} ({child.importance}): the loss is diverted onto the secret you care about most"
            )
        if cf.randomness_bits > kf.randomness_bits:
            out.append(
                f"the important secret {i}'s sketch uses more randomness ({cf.randomness_bits:.2f} bits) than "
                f"secret {j}'s ({kf.randomness_bits:.2f} bits): "
                "give the important secret the sketch with less randomness"
            )
    if cf.randomness_bits > 0:
        if edge.key_entropy is None:
            out.append(
                f"sketch {i} is randomised (H(R) = {cf.randomness_bits:.2f} bits, not decoupled) and key {j}'s "
                "min-entropy is not declared: cannot check that the key is longer than the sketch"
            )
        elif edge.key_entropy < cf.sketch_bits:
            verdict = "and mixing is worse than concatenation" if not edge.helps else "so the bound gains less"
            out.append(
                f"sketch {i} is randomised (H(R) = {cf.randomness_bits:.2f} bits, not decoupled) and key {j} "
                f"({edge.key_entropy:.2f} bits) is shorter than the sketch ({cf.sketch_bits:.2f} bits), "
                f"{verdict}: need H(k) >= L_R + beta = {cf.randomness_support_bits + (edge.beta or 0.0):.2f}"
            )
    if edge.delta is not None and edge.epsilon == 1.0:
        out.append(
            f"secret {j}'s extracted key ({kf.key_bits} bits) is longer than the entropy left in it "
            f"({kf.min_entropy + kf.randomness_bits - kf.sketch_bits:.2f} bits): it is not close to uniform"  # type: ignore[operator]
        )
    return out


class Concatenate(MixedSketch):
    """Independent sketches side by side (``S = S_1 ‖ … ‖ S_n``): losses add, nothing is mixed."""

    structure = "concatenate"

    def __init__(self, *sketches: Any, warn: bool = True) -> None:
        comps = [_component(s) for s in sketches]
        self._setup(comps, (), warn)

    def _expected_shape(self) -> None:
        if self.mixes or any(isinstance(c, ExactKey) for c in self.components):
            raise ParameterError("a concatenation holds only fuzzy sketches and no mixes")


class Cascade(MixedSketch):
    """The cascade of Fang's thesis, ch. 7: ``Q = f(S_1, K_2, R_f)`` with ``K_2`` from the second secret.

    ``Cascade(sketch, key)`` or ``Cascade(sketch, pin=ExactKey(...))``. Secrets and samples are
    ``[biometric, second]``; a fuzzy second secret (``FuzzySecret``) keeps its own sketch in clear.
    """

    structure = "cascade"

    def __init__(self, sketch: Any, key: Any = None, *, pin: ExactKey | None = None, warn: bool = True) -> None:
        if (key is None) == (pin is None):
            raise ParameterError(
                "give the second secret once: Cascade(sketch, key) or Cascade(sketch, pin=ExactKey(...))"
            )
        if pin is not None and not isinstance(pin, ExactKey):
            raise ParameterError("pin= takes an ExactKey")
        self._setup([_component(sketch), _component(key if key is not None else pin)], [(1, 0)], warn)

    def _expected_shape(self) -> None:
        if len(self.components) != 2 or self.mixes != ((1, 0),):
            raise ParameterError("a cascade is two secrets, the second's key mixing the first's sketch")


class Fanning(MixedSketch):
    """``K_1`` mixes every other sketch. Secrets: ``[key secret, s_2, …, s_n]``."""

    structure = "fanning"

    def __init__(self, key: Any, *sketches: Any, warn: bool = True) -> None:
        comps = [_component(key)] + [_component(s) for s in sketches]
        self._setup(comps, [(0, i) for i in range(1, len(comps))], warn)

    def _expected_shape(self) -> None:
        n = len(self.components)
        if n < 2 or self.mixes != tuple((0, i) for i in range(1, n)):
            raise ParameterError("fanning: component 0's key mixes every other sketch")


class Chaining(MixedSketch):
    """``K_i`` mixes ``S_{i+1}``. Secrets in chain order; the last one is the best protected."""

    structure = "chaining"

    def __init__(self, first: Any, *rest: Any, warn: bool = True) -> None:
        comps = [_component(first)] + [_component(s) for s in rest]
        self._setup(comps, [(i, i + 1) for i in range(len(comps) - 1)], warn)

    def _expected_shape(self) -> None:
        n = len(self.components)
        if n < 2 or self.mixes != tuple((i, i + 1) for i in range(n - 1)):
            raise ParameterError("chaining: component i's key mixes sketch i + 1")


class Hybrid(MixedSketch):
    """Any forest: ``Hybrid(components, mixes)`` with ``(key index, sketch index)`` pairs."""

    structure = "hybrid"


_STRUCTURES: dict[str, type[MixedSketch]] = {
    "concatenate": Concatenate,
    "cascade": Cascade,
    "fanning": Fanning,
    "chaining": Chaining,
    "hybrid": Hybrid,
}
