"""The shape every secure sketch shares: parameters, helper-data format, entropy report.

A secure sketch (Dodis–Reyzin–Smith; Dodis–Ostrovsky–Reyzin–Smith §3.1) is a pair ``Enc``/``Dec``: ``encode(secret)``
returns public helper data ``S`` and ``decode(S, sample)`` returns the secret exactly whenever
the sample is close to it. Each scheme here

* is constructed from its parameters, validated once (``ParameterError``);
* draws all of its randomness from :mod:`secrets` (``draw_randomness``) and can encode with given
  randomness (``encode_with``), which is what exact evaluation enumerates
  (``randomness_space``) — the randomness is *recoverable* from (secret, helper);
* writes helper data in the common versioned format (:mod:`sketchauth.sketches.format`) and
  parses it strictly (``SketchFormatError`` for anything malformed, for another scheme or for
  other parameters);
* reports ``|S|`` (log of the number of values the helper can take, not its byte length), the
  min-entropy of its recoverable randomness, and the loss bound ``|S| − H∞(R)``;
* exposes its payload as a vector of symbols in a group (:class:`SymbolSpace`), so that a
  format-preserving mixing function can act on any family (Fang's thesis, ch. 7).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SketchFormatError
from sketchauth.sketches.format import (
    MAX_HELPER_BYTES,
    canonical_params,
    helper_prefix,
    pack_prefixed,
    parse_helper,
    prefix_parses_to,
    prefixed_payload,
)
from sketchauth.sketches.params import Parameter, ParameterSpec
from sketchauth.sketches.registry import registrations, scheme_class, scheme_id_of, scheme_name_of
from sketchauth.sketches.samples import as_batch, as_collection

json = LazyModule("json")  # on first use (sketchauth._lazy)

__all__ = [
    "EntropyReport",
    "ErrorPolicy",
    "SampleKind",
    "SchemeDescriptor",
    "SecureSketch",
    "SymbolSpace",
    "load_sketch",
    "scheme_class",
    "scheme_name_of",
]

#: What :meth:`SecureSketch.decode_many` does with a sample too far from its secret.
ErrorPolicy = Literal["raise", "return"]
#: What one sample of a scheme is: a feature vector, a byte string or a set of integers.
SampleKind = Literal["vector", "bytes", "set"]
#: ``params -> (parameters of a tiny instance, the secrets to enumerate)``.
SmallInstance = Callable[[Mapping[str, Any]], tuple[dict[str, Any], list[Any]]]
#: ``params -> the settings of the swept parameter`` (pure: no data, no randomness).
Sweep = Callable[[Mapping[str, Any]], list[int]]


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class SchemeDescriptor:
    """Everything the other layers need to know about one sketch family, kept with its class.

    A scheme module sets ``descriptor = SchemeDescriptor(...)`` on its class; the class's
    ``scheme_name`` and ``parameters`` come from it, the registry
    (:mod:`sketchauth.sketches.registry`) finds it, and the service and the evaluation derive
    their per-scheme tables from it. Evaluation-side code (deciders, attacks) lives above the
    sketches, so the descriptor names it instead of holding it:

    * ``name``, ``sample_kind`` and ``summary`` (one line: what "close" means);
    * ``parameters``: the :class:`ParameterSpec` with each parameter's bounds from the module's
      constants; ``length_parameters``: those whose value is the length of every sample (a
      publisher caps them at its sample length); ``min_element``: the smallest set element;
    * ``template`` (``"module:function"``, called as ``f(sketch, captures, **options)``) makes
      the secret from several captures, with ``template_options`` steering it; ``None`` means
      the secret is one capture. ``min_captures``/``max_captures`` (``None``: no limit);
    * ``sweep`` (the parameter an error-rate sweep varies; ``sweep_at_enrolment`` when it is a
      template option rather than a sketch parameter) and ``default_sweep(params)`` (both
      ``None`` for a family the error-rate evaluation does not cover);
    * ``small_instance(params)``: parameters and secrets of a miniature whose leakage can be
      enumerated exactly (``None`` if none is feasible);
    * ``variant``: the parameter whose value selects a variant with attacks of its own (the
      asymmetric sketch's ``scheme``); ``linkage_attacks`` and ``repeated_attacks`` map
      :meth:`attack_key` values to the names of the attacks of :mod:`sketchauth.evaluate`
      that apply (by name: the sketches never import the evaluation);
    * ``example``: a small working instance, ``(params, captures, a genuine sample)``.
    """

    name: str
    sample_kind: SampleKind
    summary: str
    parameters: ParameterSpec
    sweep: str | None = None
    default_sweep: Sweep | None = None
    sweep_at_enrolment: bool = False
    length_parameters: tuple[str, ...] = ()
    min_element: int = 0
    template: str | None = None
    template_options: tuple[Parameter, ...] = ()
    min_captures: int = 1
    max_captures: int | None = 1
    small_instance: SmallInstance | None = None
    variant: str | None = None
    linkage_attacks: Mapping[str, str] = field(default_factory=dict)
    repeated_attacks: Mapping[str, str] = field(default_factory=dict)
    example: tuple[dict[str, Any], list[list[Any]], list[Any]] = ({}, [], [])

    def __post_init__(self) -> None:
        object.__setattr__(self, "linkage_attacks", _frozen(self.linkage_attacks))
        object.__setattr__(self, "repeated_attacks", _frozen(self.repeated_attacks))
        names = set(self.parameters.names)
        options = {p.name for p in self.template_options}
        unknown = [n for n in (*self.length_parameters, self.variant) if n is not None and n not in names]
        if unknown:
            raise ParameterError(f"{self.name}: {unknown} are not parameters ({self.parameters.describe()})")
        if (self.sweep is None) != (self.default_sweep is None):
            raise ParameterError(f"{self.name}: a swept parameter needs a default sweep and vice versa")
        if self.sweep is not None and self.sweep not in (options if self.sweep_at_enrolment else names):
            raise ParameterError(f"{self.name}: the swept {self.sweep!r} is not a parameter or template option")
        if options & names:
            raise ParameterError(f"{self.name}: template options {sorted(options & names)} shadow parameters")
        if self.template is None and (options or self.min_captures != 1 or self.max_captures != 1):
            raise ParameterError(f"{self.name}: several captures or template options need a template")

    def attack_key(self, params: Mapping[str, Any]) -> str:
        """The key of :attr:`linkage_attacks` / :attr:`repeated_attacks` for these parameters."""
        if self.variant is None:
            return self.name
        return f"{self.name}/{params[self.variant]}"

    def secret_from_captures(
        self, sketch: SecureSketch[Any, Any], captures: Sequence[Any], options: Mapping[str, Any]
    ) -> Any:
        """The secret to sketch from enrolment ``captures`` (through :attr:`template`, if any)."""
        if self.template is None:
            if options:
                raise ParameterError(f"{self.name} takes no enrolment options, got {', '.join(sorted(options))}")
            if len(captures) != 1:
                raise ParameterError(f"{self.name} enrols from exactly one capture, got {len(captures)}")
            return captures[0]
        module, _, attr = self.template.partition(":")
        return getattr(importlib.import_module(module), attr)(sketch, captures, **options)


@dataclass(frozen=True, slots=True)
class EntropyReport:
    """What a sketch can leak about its secret, in bits (Dodis–Ostrovsky–Reyzin–Smith §3.1).

    ``sketch_bits`` is ``|S|``, the length of the compact description of the helper data;
    ``randomness_bits`` is ``H∞(R)`` of the encoder's recoverable randomness;
    ``loss_bound_bits`` is ``|S| − H∞(R)``, an upper bound on ``H∞(d) − H̃∞(d|S)`` for every
    distribution of the secret. ``notes`` carry scheme-specific remarks (estimates, caveats).
    """

    scheme: str
    sketch_bits: float
    randomness_bits: float
    loss_bound_bits: float
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_bits(
        cls,
        scheme: str,
        sketch_bits: float,
        randomness_bits: float,
        notes: Iterable[str] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> EntropyReport:
        """Build a report, computing the bound from the two lengths."""
        from sketchauth.entropy import sketch_loss_bound  # start-up: loaded at first use, not at import

        return cls(
            scheme=scheme,
            sketch_bits=float(sketch_bits),
            randomness_bits=float(randomness_bits),
            loss_bound_bits=sketch_loss_bound(sketch_bits, randomness_bits),
            notes=tuple(notes),
            extra=dict(extra or {}),
        )

    def remaining_entropy(self, source_min_entropy: float) -> float:
        """Lower bound on ``H̃∞(d|S)`` for a source of the given min-entropy (never below 0)."""
        return max(0.0, float(source_min_entropy) - self.loss_bound_bits)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with stable keys."""
        return {
            "scheme": self.scheme,
            "sketch_bits": self.sketch_bits,
            "randomness_bits": self.randomness_bits,
            "loss_bound_bits": self.loss_bound_bits,
            "notes": list(self.notes),
            "extra": dict(self.extra),
        }


@dataclass(frozen=True, slots=True)
class SymbolSpace:
    """The abelian group the payload's symbols live in.

    ``kind == "mod"``: symbol ``i`` lies in ``Z_{moduli[i]}`` and combines by addition modulo it.
    ``kind == "xor"``: every symbol is a ``bits``-bit word and combines by XOR (the additive group
    of GF(2^bits)). Adding any group element to a valid payload gives another valid payload, which
    is what makes a mixing function format-preserving.
    """

    kind: Literal["mod", "xor"]
    moduli: np.ndarray | None = None
    bits: int = 0


def _known_ids() -> str:
    return ", ".join(f"{r.scheme_id} ({r.name})" for r in registrations())


def _param_differences(stored: Mapping[str, Any], own: Mapping[str, Any]) -> str:
    """``"t=8 in the helper, t=4 here"`` for each differing key (parameters are public)."""

    def show(params: Mapping[str, Any], key: str) -> str:
        if key not in params:
            return "absent"
        text = json.dumps(params[key], sort_keys=True)
        return cast("str", text if len(text) <= 60 else text[:57] + "...")

    differing = [
        key
        for key in sorted(set(stored) | set(own), key=str)
        if (key in stored) != (key in own) or stored.get(key) != own.get(key)
    ]
    diffs = [f"{key}={show(stored, key)} in the helper, {show(own, key)} here" for key in differing]
    return "; ".join(diffs[:4]) + ("; ..." if len(diffs) > 4 else "")


def load_sketch(helper: bytes, *, max_bytes: int = MAX_HELPER_BYTES) -> SecureSketch[Any, Any]:
    """Rebuild the sketch object (scheme and parameters) that produced ``helper``."""
    record = parse_helper(helper, max_bytes=max_bytes)
    name = scheme_name_of(record.scheme_id)
    if name is None:
        raise SketchFormatError(
            f"unknown scheme id {record.scheme_id} (known: {_known_ids()}): not helper data of this library version"
        )
    try:
        # from_params raises ParameterError for every bad parameter (never KeyError/TypeError).
        sketch = scheme_class(name).from_params(record.params)
    except ParameterError as exc:
        raise SketchFormatError(f"helper parameters invalid for {name}: {exc}") from None
    # Extra keys, a float standing for an int, defaults left out: parameters the scheme
    # would never write are refused here, not silently reinterpreted.
    if canonical_params(sketch.params()) != canonical_params(record.params):
        raise SketchFormatError(f"helper parameters are not exactly those of a {name} sketch")
    return sketch


#: What a sketch encodes (``encode``'s secret) and what it decodes with (``decode``'s sample):
#: the family's natural input types (:mod:`sketchauth.sketches.types`).
SecretT = TypeVar("SecretT")
SampleT = TypeVar("SampleT")


class SecureSketch(ABC, Generic[SecretT, SampleT]):
    """Base class of every scheme. Subclasses set ``scheme_name`` and implement the hooks.

    Generic in the secret it encodes and the sample it decodes with
    (``PinSketch`` is a ``SecureSketch[ElementSet, ElementSet]``; :mod:`sketchauth.sketches.types`).

    Hooks (all receive already-validated values):

    * ``params()`` / ``from_params()``: the parameters as a JSON-ready mapping, and back;
    * ``check_secret(secret)``: validate and normalise a secret (``SampleError``);
    * ``_encode_payload(secret, randomness) -> bytes``;
    * ``_decode_payload(payload, sample) -> secret``;
    * ``_check_payload(payload)``: strict parse of untrusted payload bytes;
    * ``report()``;
    * ``symbols(payload)`` / ``_with_symbols(payload, symbols)`` for mixing.

    Randomised schemes override ``draw_randomness`` and ``randomness_space``.
    """

    scheme_name: ClassVar[str]
    #: The keys :meth:`from_params` takes (required and optional); see :class:`ParameterSpec`.
    parameters: ClassVar[ParameterSpec]
    #: What the other layers know about this family (absent on composites such as mixing).
    descriptor: ClassVar[SchemeDescriptor]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A family's ``scheme_name`` and ``parameters`` are those of its descriptor."""
        super().__init_subclass__(**kwargs)
        described = cls.__dict__.get("descriptor")
        if described is not None:
            cls.scheme_name = described.name
            cls.parameters = described.parameters

    # -- parameters --------------------------------------------------------------------------
    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The parameters as a JSON-ready mapping (written into every helper record)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SecureSketch[Any, Any]:
        """Rebuild the sketch from :meth:`params` output.

        Raises ``ParameterError`` — never ``KeyError`` or ``TypeError`` — for a missing, unknown
        or wrongly typed parameter, naming it and listing :attr:`parameters`. The default checks
        the keys against :attr:`parameters` and passes them to the constructor by name, whose
        ``check_*`` calls validate the values; a scheme whose constructor takes other names
        overrides it.
        """
        checked = cls.parameters.check(cls.scheme_name, params)
        return cls(**{str(key): value for key, value in checked.items()})

    @property
    def scheme_id(self) -> int:
        return scheme_id_of(self.scheme_name)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.params() == self.params()

    def __hash__(self) -> int:
        return hash((type(self), repr(sorted(self.params().items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    # -- secrets and randomness ----------------------------------------------------------------
    @abstractmethod
    def check_secret(self, secret: Any) -> Any:
        """Validate and normalise a secret; raise ``SampleError`` if it is not one."""

    @abstractmethod
    def secret_bytes(self, secret: Any) -> bytes:
        """Canonical byte encoding of a (normalised) secret, for hashing and key derivation."""

    def draw_randomness(self, secret: Any) -> Any:
        """Fresh encoder randomness from :mod:`secrets` (``None`` for deterministic schemes)."""
        return None

    def randomness_space(self, secret: Any) -> Iterable[tuple[Any, float]]:
        """Every value of the encoder's randomness for ``secret`` with its probability.

        Used by :func:`sketchauth.entropy.exact_sketch_loss`; only feasible for tiny parameters.
        """
        return [(None, 1.0)]

    # -- encode / decode --------------------------------------------------------------------------
    def encode(self, secret: SecretT) -> bytes:
        """Helper data for ``secret`` with fresh randomness."""
        secret = self.check_secret(secret)
        return self._wrap(self._encode_payload(secret, self.draw_randomness(secret)))

    def encode_with(self, secret: SecretT, randomness: Any) -> bytes:
        """Helper data for ``secret`` with the given randomness (evaluation and tests only)."""
        return self._wrap(self._encode_payload(self.check_secret(secret), randomness))

    def decode(self, helper: bytes, sample: SampleT) -> Any:
        """Recover the enrolled secret from helper data and a close sample.

        Raises ``SketchFormatError`` for bad helper data, ``SampleError`` for a malformed sample
        and ``DecodeError`` when the scheme can tell the sample is too far.
        """
        return self._decode_payload(self._unwrap(helper), sample)

    # -- batches --------------------------------------------------------------------------------------
    def encode_many(self, secrets: Iterable[SecretT]) -> list[bytes]:
        """Helper data for each of ``secrets``, fresh randomness each (same distribution as
        :meth:`encode` on each; schemes with a vectorised encoder override it)."""
        return [self.encode(secret) for secret in as_collection(secrets, "secrets", what="secrets", ordered=True)]

    def decode_many(
        self, helpers: Iterable[bytes], samples: Iterable[SampleT], *, errors: ErrorPolicy = "raise"
    ) -> list[Any]:
        """Decode many (helper, sample) pairs, in order.

        A sample too far from its secret raises :class:`DecodeError` with ``errors="raise"``;
        with ``errors="return"`` the list holds that :class:`DecodeError` *instance* in its
        place (test with ``isinstance(result, DecodeError)``), so evaluation can count failures
        without losing the batch. Malformed helpers or samples (``SketchFormatError``,
        ``SampleError``) and mismatched lengths (``ParameterError``) raise in either mode.
        Schemes with a vectorised decoder override it with this contract.
        """
        helpers, samples = check_batch(helpers, samples, errors)
        results: list[Any] = []
        for helper, sample in zip(helpers, samples, strict=True):
            try:
                results.append(self.decode(helper, sample))
            except DecodeError as exc:
                if errors == "raise":
                    raise
                results.append(exc)
        return results

    def payload(self, helper: bytes, *, max_bytes: int = MAX_HELPER_BYTES) -> bytes:
        """Parse a helper record made by this scheme with these parameters; return its payload."""
        record = parse_helper(helper, max_bytes=max_bytes)
        if record.scheme_id != self.scheme_id:
            other = scheme_name_of(record.scheme_id)
            if other is None:
                raise SketchFormatError(
                    f"helper data names an unknown scheme id {record.scheme_id}, not {self.scheme_name} "
                    "(not helper data of this library version)"
                )
            raise SketchFormatError(
                f"helper data was made by scheme {other!r} (id {record.scheme_id}), not {self.scheme_name}: "
                "rebuild the sketch that made it with load_sketch(helper)"
            )
        own = self.params()
        if record.params != own:
            raise SketchFormatError(
                f"helper data was made with different parameters ({_param_differences(record.params, own)}): "
                "rebuild the sketch that made it with load_sketch(helper)"
            )
        self._check_payload(record.payload)
        return record.payload

    def _wrap(self, payload: bytes) -> bytes:
        return pack_prefixed(self._helper_prefix()[0], payload)

    def _unwrap(self, helper: bytes, max_bytes: int = MAX_HELPER_BYTES) -> bytes:
        """:meth:`payload`, with a fast path for a sound record of this very sketch.

        A record that starts with this sketch's own header bytes, has the announced lengths and
        the right digest is exactly what :meth:`payload` would accept up to the payload, which is
        then checked strictly as there (``_check_payload``). Anything else — another scheme or
        parameters, any defect — goes through :meth:`payload` itself and gets its error.
        """
        prefix, own = self._helper_prefix()
        if own:
            payload = prefixed_payload(prefix, helper, max_bytes)
            if payload is not None:
                self._check_payload(payload)
                return payload
        return self.payload(helper, max_bytes=max_bytes)

    def _helper_prefix(self) -> tuple[bytes, bool]:
        """This sketch's header bytes (canonical parameters included), and whether they parse
        back to :meth:`params` exactly (so a record starting with them names these parameters).

        Computed once per sketch and kept while :meth:`params` stays the same: the canonical JSON
        is most of the fixed cost of writing or reading one small record.
        """
        params = self.params()
        store = getattr(self, "__dict__", None)  # None: a subclass with __slots__ only, no cache
        cached = store.get("_helper_prefix_cache") if store is not None else None
        if cached is not None and cached[0] == params:
            return cached[1], cached[2]
        prefix = helper_prefix(self.scheme_id, params)
        own = prefix_parses_to(prefix, params)
        if store is not None:
            store["_helper_prefix_cache"] = (params, prefix, own)
        return prefix, own

    @abstractmethod
    def _encode_payload(self, secret: Any, randomness: Any) -> bytes: ...

    @abstractmethod
    def _decode_payload(self, payload: bytes, sample: Any) -> Any: ...

    @abstractmethod
    def _check_payload(self, payload: bytes) -> None:
        """Raise ``SketchFormatError`` unless ``payload`` is a value this scheme can produce."""

    # -- accounting ---------------------------------------------------------------------------------
    @abstractmethod
    def report(self) -> EntropyReport:
        """Sketch size, recoverable randomness and loss bound (Dodis–Ostrovsky–Reyzin–Smith §3.1)."""

    # -- symbols, for format-preserving mixing ----------------------------------------------------
    @abstractmethod
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        """The payload as a vector of group elements (``uint64``) and the group they live in."""

    @abstractmethod
    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        """The payload with its symbols replaced (same structure, symbols already in range)."""

    def pad_group_bits(self, report: EntropyReport | None = None) -> float:
        """log2 of the smallest symbol group over every helper this scheme can produce.

        This is how many bits a format-preserving pad can move in the worst case, which is what
        bounds the key recoverability ``β`` of a mixing function (Fang's thesis, ch. 7). For most families the
        symbols are the whole sketch, so it equals ``report().sketch_bits``; a family whose
        symbols cover only part of its helper (or a part that depends on the secret) overrides it.
        ``report`` is this sketch's report when the caller already has it (it can be costly).
        """
        return (report or self.report()).sketch_bits

    def with_symbols(self, helper: bytes, symbols: np.ndarray) -> bytes:
        """Helper data of the same structure as ``helper`` carrying the given symbols."""
        payload = self.payload(helper)
        current, space = self.symbols(payload)
        symbols = np.asarray(symbols, dtype=np.uint64)
        if symbols.shape != current.shape:
            raise ParameterError(f"expected {current.shape[0]} symbols, got shape {symbols.shape}")
        if space.moduli is not None:
            if np.any(symbols >= space.moduli.astype(np.uint64)):
                raise ParameterError("symbol out of range for its modulus")
        elif space.bits < 64 and np.any(symbols >> np.uint64(space.bits)):
            raise ParameterError(f"symbol wider than {space.bits} bits")
        return self._wrap(self._with_symbols(payload, symbols))


def check_batch(helpers: Iterable[bytes], samples: Iterable[Any], errors: Any) -> tuple[list[bytes], list[Any]]:
    """Arguments of a ``decode_many`` call: a known error policy and one sample per helper.

    Returns both as lists (any ordered iterables are accepted and read once); ``ParameterError``
    for an unknown policy, a lone helper record or unequal lengths.
    """
    if errors not in ("raise", "return"):
        raise ParameterError(f'errors must be "raise" or "return", got {errors!r}')
    helpers, samples = as_batch(helpers, samples)
    if len(helpers) != len(samples):
        raise ParameterError(f"{len(helpers)} helpers but {len(samples)} samples: give one sample per helper")
    return helpers, samples
