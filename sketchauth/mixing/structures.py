"""The structures of Fang's thesis, ch. 7: which secret's key mixes which sketch.

Each structure is a :class:`SecureSketch` of scheme ``"mixed"`` sharing ``encode(secrets)`` /
``decode(helper, samples)`` with one secret and one sample per component: :class:`Concatenate`,
:class:`Cascade`, :class:`Fanning`, :class:`Chaining` and :class:`Hybrid` (any forest "key ``j``
mixes sketch ``i``"). A forest is validated once (indices, one key per sketch, no cycle, exact keys
never mixed), decoded in topological order, and checked against the thesis's guidelines
(:class:`MixingWarning`). Components are reached through :class:`sketchauth.mixing.keys.SecretKey`.
"""

from __future__ import annotations

import secrets as _secrets
import struct
import warnings
from collections.abc import Iterable, Mapping, Sequence, Sized
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

import numpy as np

from sketchauth.errors import MixingWarning, ParameterError, SampleError
from sketchauth.mixing.bounds import ComponentFacts, MixAccount, MixingReport, account
from sketchauth.mixing.keys import SALT_BYTES, ExactKey, FuzzySecret, SecretKey, component, component_from_params
from sketchauth.mixing.pads import NONCE_BYTES, mix_helper, unmix_helper
from sketchauth.mixing.payload import MixRandomness, pack_payload, unpack_payload
from sketchauth.sketches.base import EntropyReport, SecureSketch, SymbolSpace
from sketchauth.sketches.params import ParameterSpec
from sketchauth.sketches.samples import as_collection

__all__ = [
    "MAX_COMPONENTS",
    "MAX_EXACT_KEYS",
    "Cascade",
    "Chaining",
    "Concatenate",
    "Fanning",
    "Hybrid",
    "MixedSketch",
]

#: Most components one mixed sketch may hold.
MAX_COMPONENTS = 64
#: Most exact keys (PINs/passwords) one mixed sketch may hold: each costs an argon2id call on
#: every decode, so a crafted helper could otherwise make one decode run dozens of slow hashes.
MAX_EXACT_KEYS = 4
_U32 = struct.Struct(">I")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, complex, np.generic))


class MixedSketch(SecureSketch[Sequence[Any], Sequence[Any]]):
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
        self._setup([component(c) for c in components], mixes, warn)

    # -- construction and validation ---------------------------------------------------------------
    def _setup(self, components: list[SecretKey], mixes: Iterable[tuple[int, int]], warn: bool) -> None:
        if not components:
            raise ParameterError("a mixed sketch needs at least one component")
        if len(components) > MAX_COMPONENTS:
            raise ParameterError(f"at most {MAX_COMPONENTS} components")
        if sum(c.sketch is None for c in components) > MAX_EXACT_KEYS:
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

    def deciding_with(self, index: int, sketch: SecureSketch[Any, Any]) -> MixedSketch:
        """This structure with fuzzy component ``index`` decoded by ``sketch``: the same scheme and
        parameters as the component's own (so the same helper data), deciding differently — an
        angular sketch at another threshold
        (:meth:`~sketchauth.sketches.angular.AngularSketch.deciding_at`)."""
        own = self.components[index] if isinstance(index, int) and 0 <= index < len(self.components) else None
        if not isinstance(own, FuzzySecret):
            raise ParameterError(f"component {index!r} is not a fuzzy secret of this structure")
        if own.sketch.scheme_name != sketch.scheme_name or own.sketch.params() != sketch.params():
            raise ParameterError(f"component {index} is decoded by a sketch of its own scheme and parameters only")
        components = list(self.components)
        components[index] = replace(own, sketch=sketch)
        return type(self)._build(components, self.mixes, False)

    @classmethod
    def _build(cls, components: list[SecretKey], mixes: Iterable[tuple[int, int]], warn: bool) -> MixedSketch:
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
        components = [component_from_params(c, index) for index, c in enumerate(raw)]
        return target._build(components, [tuple(m) for m in mixes], False)

    # -- secrets -------------------------------------------------------------------------------------
    def _check_sequence(self, values: Any, what: str) -> list[Any]:
        """One entry per component, in component order: a list, tuple or any ordered iterable (read once)."""
        n = len(self.components)
        shape = f"[{', '.join(c.role for c in self.components)}]"
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
        return [c.check_secret(v) for c, v in zip(self.components, values, strict=False)]

    def secret_bytes(self, secret: Any) -> bytes:
        parts = []
        for c, v in zip(self.components, self._check_sequence(secret, "secrets"), strict=False):
            data = c.secret_bytes(v)
            parts.append(_U32.pack(len(data)) + data)
        return b"".join(parts)

    def draw_randomness(self, secret: Any) -> MixRandomness:
        inner, nonces, salts, seeds = [], [], [], []
        for index, (c, v) in enumerate(zip(self.components, secret, strict=False)):
            inner.append(None if c.sketch is None else c.sketch.draw_randomness(v))
            nonces.append(_secrets.token_bytes(NONCE_BYTES) if index in self.parent else None)
            # An exact key always mixes something (validated); a fuzzy secret needs a seed only then.
            material = c.draw_key_material(v) if index in self.key_owners else None
            salts.append(material if c.sketch is None else None)
            seeds.append(None if c.sketch is None else material)
        return MixRandomness(tuple(inner), tuple(nonces), tuple(salts), tuple(seeds))

    def _key(self, index: int, secret: Any, randomness: MixRandomness) -> bytes:
        return self.components[index].derive_key(secret, randomness.key_material(index))

    def _sketch(self, index: int) -> SecureSketch[Any, Any]:
        """The sketch of component ``index``, which validation made a fuzzy secret (it is mixed)."""
        sketch = self.components[index].sketch
        if sketch is None:
            raise ParameterError(f"component {index} is an exact key: it has no sketch")
        return sketch

    @staticmethod
    def _stored(stored: Sequence[bytes | None], index: int) -> bytes:
        helper = stored[index]
        if helper is None:
            raise ParameterError(f"component {index} has no stored sketch")
        return helper

    @staticmethod
    def _nonce(randomness: MixRandomness, index: int) -> bytes:
        nonce = randomness.nonces[index]
        if nonce is None:
            raise ParameterError(f"randomness of component {index}: nonce missing")
        return nonce

    # -- encode / decode -----------------------------------------------------------------------------
    def _check_randomness(self, r: Any) -> None:
        """``encode_with`` takes caller-built randomness: check every public value is in place."""
        n = len(self.components)
        if not isinstance(r, MixRandomness) or not all(len(x) == n for x in (r.inner, r.nonces, r.salts, r.seeds)):
            raise ParameterError("randomness must be the MixRandomness of this structure")
        for index, c in enumerate(self.components):
            fuzzy = c.sketch is not None
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
            sketch = self.components[index].sketch
            if sketch is not None:
                helper = sketch.encode_with(secret[index], randomness.inner[index])
                if index in self.parent:
                    nonce = self._nonce(randomness, index)
                    helper = mix_helper(sketch, helper, keys[self.parent[index]], nonce, domain=index)
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
            if c.sketch is None:
                recovered[index] = c.check_secret(samples[index])
            else:
                helper = self._stored(stored, index)
                if index in self.parent:
                    nonce = self._nonce(randomness, index)
                    helper = unmix_helper(c.sketch, helper, keys[self.parent[index]], nonce, domain=index)
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
        key = self.components[index]
        if not isinstance(key, ExactKey):
            raise ParameterError(f"component {index} is not an exact key (PIN or password): it cannot be changed alone")
        old, new = key.check_secret(old_secret), key.check_secret(new_secret)
        stored, r = self._unpack(self.payload(helper))
        salt = key.draw_key_material(new)
        old_key = key.derive_key(old, r.key_material(index))
        new_key = key.derive_key(new, salt)
        nonces, salts = list(r.nonces), list(r.salts)
        salts[index] = salt
        for child, parent in self.parent.items():
            if parent != index:
                continue
            sketch = self._sketch(child)
            clear = unmix_helper(sketch, self._stored(stored, child), old_key, self._nonce(r, child), domain=child)
            nonce = _secrets.token_bytes(NONCE_BYTES)
            nonces[child] = nonce
            stored[child] = mix_helper(sketch, clear, new_key, nonce, domain=child)
        randomness = MixRandomness(r.inner, tuple(nonces), tuple(salts), r.seeds)
        return self._wrap(self._pack(stored, randomness))

    # -- payload format ------------------------------------------------------------------------------
    def _pack(self, stored: Sequence[bytes | None], randomness: MixRandomness) -> bytes:
        return pack_payload(self.components, stored, randomness)

    def _unpack(self, payload: bytes) -> tuple[list[bytes | None], MixRandomness]:
        return unpack_payload(self.components, self.parent, self.key_owners, payload)

    def _check_payload(self, payload: bytes) -> None:
        self._unpack(payload)

    # -- accounting ----------------------------------------------------------------------------------
    def _facts(self) -> list[ComponentFacts]:
        return [c.facts(index) for index, c in enumerate(self.components)]

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
            if helper is not None and c.sketch is not None:
                s, space = c.sketch.symbols(c.sketch.payload(helper))
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
            if helper is not None and c.sketch is not None:
                count = c.sketch.symbols(c.sketch.payload(helper))[0].shape[0]
                stored[index] = c.sketch.with_symbols(helper, symbols[at : at + count])
                at += count
        return self._pack(stored, randomness)


def _validate_mixes(components: Sequence[SecretKey], mixes: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
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
        if components[i].sketch is None:
            raise ParameterError(f"component {i} is an exact key: it has no sketch to mix")
        pairs.append((j, i))
    children = [i for _, i in pairs]
    if len(set(children)) != len(children):
        raise ParameterError("a sketch can be mixed by at most one key")
    if len(set(pairs)) != len(pairs):
        raise ParameterError("duplicate mix")
    for index, c in enumerate(components):
        if c.sketch is None and not any(j == index for j, _ in pairs):
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


def _edge_guidelines(edge: MixAccount, components: Sequence[SecretKey], facts: Sequence[ComponentFacts]) -> list[str]:
    j, i = edge.key_index, edge.sketch_index
    key, child = components[j], components[i]
    kf, cf = facts[j], facts[i]
    out = []
    if key.sketch is not None:  # a PIN is replaceable: only two fuzzy secrets have an order of importance
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
        comps = [component(s) for s in sketches]
        self._setup(comps, (), warn)

    def _expected_shape(self) -> None:
        if self.mixes or any(c.sketch is None for c in self.components):
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
        self._setup([component(sketch), component(key if key is not None else pin)], [(1, 0)], warn)

    def _expected_shape(self) -> None:
        if len(self.components) != 2 or self.mixes != ((1, 0),):
            raise ParameterError("a cascade is two secrets, the second's key mixing the first's sketch")


class Fanning(MixedSketch):
    """``K_1`` mixes every other sketch. Secrets: ``[key secret, s_2, …, s_n]``."""

    structure = "fanning"

    def __init__(self, key: Any, *sketches: Any, warn: bool = True) -> None:
        comps = [component(key)] + [component(s) for s in sketches]
        self._setup(comps, [(0, i) for i in range(1, len(comps))], warn)

    def _expected_shape(self) -> None:
        n = len(self.components)
        if n < 2 or self.mixes != tuple((0, i) for i in range(1, n)):
            raise ParameterError("fanning: component 0's key mixes every other sketch")


class Chaining(MixedSketch):
    """``K_i`` mixes ``S_{i+1}``. Secrets in chain order; the last one is the best protected."""

    structure = "chaining"

    def __init__(self, first: Any, *rest: Any, warn: bool = True) -> None:
        comps = [component(first)] + [component(s) for s in rest]
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
