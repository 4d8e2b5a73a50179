"""The schemes the service exposes: name → parameter model, sample kind, and how to enrol.

Everything a scheme's entry says comes from the library's
:class:`~sketchauth.sketches.base.SchemeDescriptor` (``scheme_class(name).descriptor``): the
parameters with their bounds and descriptions (:class:`~sketchauth.sketches.params.Parameter`,
from the scheme module's own constants), the sample kind, the one-line description, how many
captures enrolment takes and the template hook that turns them into the secret, and a working
example. The service adds only its own policy: a parameter that fixes a sample's length is capped
at the configured sample length (:class:`~sketchauth_service.limits.RequestLimits`), and where the service
stores less than the library allows (vault slots, s2 gaps) or defaults differently, the
per-scheme :data:`POLICIES` below tighten the library's bounds — never widen them. The result is
a pydantic model with ``extra="forbid"`` whose JSON schema ``GET /v1/schemes`` and the OpenAPI
request schema publish exactly as it is enforced. Rules between parameters, which JSON Schema
cannot state one parameter at a time (``2*t < n``, ``2*t + 1 <= m``, ``v <= n``, the service's
``p*q`` and s2-gap caps), are :data:`RULES`: published as ``x-rules`` and checked by the same
model (p prime stays in the description, checked by the library). Building the sketch goes
through the library's public registry (``scheme_class(name)``), so the service never reaches into
a scheme's internals.

Every registered family is offered unless :data:`NOT_OFFERED` says why not, and only when its
library module (and its template's) is importable, so a new scheme reaches the service with no
change here.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.config import JsonDict

from sketchauth.errors import ParameterError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.base import SchemeDescriptor, SecureSketch
from sketchauth.sketches.params import Parameter
from sketchauth.sketches.registry import Registration, registrations, scheme_class, scheme_descriptor
from sketchauth_service.jsontypes import integral
from sketchauth_service.limits import RequestLimits

__all__ = [
    "MAX_ANGULAR_DIMENSION",
    "MAX_STORED_GAPS",
    "MAX_VAULT_PRIME",
    "MAX_VAULT_SLOTS",
    "NOT_OFFERED",
    "POLICIES",
    "RULES",
    "SchemeSpec",
    "UnknownScheme",
    "available_schemes",
    "build_sketch",
    "get_scheme",
    "pin_cascade",
    "scheme_specs",
    "stored_sketch",
    "warm_up",
]

#: The service's cap on the values a vault's helper lists: one per field element (fuzzy vault)
#: or per slot (weighted vault, p*q), 4 bytes each at this size, so one stored enrolment stays
#: near 512 KiB (measured: 524,341 bytes for p = 131071). The library allows 2^21 (8 MiB).
MAX_VAULT_SLOTS = 1 << 17
#: The largest prime field within that cap: 2^17 - 1 is a (Mersenne) prime.
MAX_VAULT_PRIME = MAX_VAULT_SLOTS - 1
#: The service's cap on the gaps an s2 asymmetric sketch may list (features * (n // 2 + 1) in
#: the worst case): the same ~512 KiB per stored enrolment as the vaults, and an encode of
#: about 0.1 s. The library allows 16 MiB helpers (n = 2^24 with q = 1: 8 MiB, 2.8 s).
MAX_STORED_GAPS = 1 << 20
#: The service's cap on an angular sketch's dimension: the common 512 of face models. Encoding draws
#: the Haar rotation in n^2 work, but decoding expands the stored Householder factors (n^3 work, about
#: 8 times as much at 1024; benchmarks/bench_angular_enrol.py, benchmarks/bench_worst_request.py);
#: the helper is n(n-1) + 2*ceil(n/8) bytes (261,760 at 512). The library allows 2048 (4 MiB).
MAX_ANGULAR_DIMENSION = 512
#: The weighted vault decodes at most ``MAX_CANDIDATE_POINTS // q`` sample elements (each
#: brings q candidate points); the service keeps room for samples of at least this many.
WEIGHTED_MIN_SAMPLE_ROOM = 8

#: Registered families the service does not offer, and why.
NOT_OFFERED: dict[str, str] = {
    "chaff-point": "the reference family of the key-guessing experiments (points on a line), not a biometric",
}


class UnknownScheme(LookupError):
    """No scheme of that name is offered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the service's policy: tightenings of the library's bounds -----------------------------------------
#: ``(limits, parameters and template options by name) -> the same, some tightened``.
Tightening = Callable[[RequestLimits, dict[str, Parameter]], dict[str, Parameter]]


def _cap(name: str, high: int) -> Tightening:
    """``name <= high`` (the service stores less than the library allows)."""

    def tighten(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
        current = fields[name].high
        return {**fields, name: replace(fields[name], high=high if current is None else min(current, high))}

    return tighten


def _half_of(tolerance: str, size: str) -> Tightening:
    """``tolerance <= (max size − 1) // 2``: the bound ``2·tolerance < size`` implies at the largest size."""

    def tighten(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
        largest = fields[size].high
        return _cap(tolerance, (largest - 1) // 2)(limits, fields) if largest is not None else fields

    return tighten


def _below(name: str, size: str) -> Tightening:
    """``name <= (max size) − 1``: the bound ``name < size`` implies at the largest size."""

    def tighten(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
        largest = fields[size].high
        return _cap(name, largest - 1)(limits, fields) if largest is not None else fields

    return tighten


def _crc_room(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
    """``crc``: the largest CRC the polar code offers that leaves one data bit below the largest
    dimension (``bits + crc < dimension``, ``bits >= 1``)."""
    # start-up: the polar family's module loads only when its policy is applied.
    from sketchauth.sketches.angular_polar import CRC_BITS

    largest = fields["dimension"].high
    if largest is None:
        return fields
    return _cap("crc", max(c for c in CRC_BITS if c <= largest - 2))(limits, fields)


def _default(name: str, value: Any) -> Tightening:
    """Requests may leave ``name`` out; the service then uses ``value``."""

    def tighten(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
        return {**fields, name: replace(fields[name], required=False, default=value)}

    return tighten


def _weighted_sizes(limits: RequestLimits, fields: dict[str, Parameter]) -> dict[str, Parameter]:
    """Room for samples of ``WEIGHTED_MIN_SAMPLE_ROOM`` elements, ``p*q`` within the vault cap,
    and a total weight ``g`` that the elements of one capture (each weighing < q) can reach."""
    points = fields["g"].high  # the decoder's candidate points (vault.MAX_CANDIDATE_POINTS)
    assert points is not None
    max_q = points // WEIGHTED_MIN_SAMPLE_ROOM
    min_q = int(fields["q"].low or 1)
    fields = _cap("q", max_q)(limits, fields)
    fields = _cap("p", MAX_VAULT_SLOTS // min_q)(limits, fields)
    fields = _cap("g", limits.max_sample_length * (max_q - 1))(limits, fields)
    fields = _half_of("t", "g")(limits, fields)
    fields["q"] = replace(
        fields["q"], description=f"slots per element; weights lie in [1, q); p*q <= {MAX_VAULT_SLOTS}"
    )
    return _cap("min_count", limits.max_samples)(limits, fields)


# -- rules between parameters: published as x-rules, checked by the parameter model -----------------------
@dataclass(frozen=True, slots=True)
class Rule:
    """A rule between parameters, which JSON Schema cannot state one parameter at a time.

    Its ``text`` is published in the parameters' schema (``"x-rules": ["v <= n"]``, with the
    same names and Python's arithmetic), and the parameter model refuses what breaks it, saying
    ``remedy``: what the schema publishes is what the service enforces (the library checks the
    same rules again when it builds the sketch).
    """

    text: str
    holds: Callable[[Mapping[str, Any]], bool]
    remedy: str


def _each(value: Any) -> list[Any]:
    """A per-feature value as a list (one value for every feature, or a list of them)."""
    return value if isinstance(value, list) else [value]


def _s2_gaps(p: Mapping[str, Any]) -> bool:
    # An s2 (or s3) helper lists every gap of a random partition of [0, n): up to n // 2 + 1 per
    # feature. The service holds the worst case to MAX_STORED_GAPS (bytes and encode time).
    return p.get("scheme") not in ("s2", "s3") or (p.get("features") or 1) * (p["n"] // 2 + 1) <= MAX_STORED_GAPS


#: The rules between each scheme's parameters (the library's, and the service's own caps).
RULES: dict[str, tuple[Rule, ...]] = {
    "interval": (Rule("v <= n", lambda p: all(v <= p["n"] for v in _each(p["v"])), "lower v or raise n"),),
    "code-offset": (Rule("2*t < n", lambda p: 2 * p["t"] < p["n"], "lower t or raise n"),),
    "pinsketch": (Rule("t < 2**(m-1)", lambda p: p["t"] < 2 ** (p["m"] - 1), "lower t or raise m"),),
    "fuzzy-vault": (
        Rule("m <= p", lambda p: p["m"] <= p["p"], "lower m or raise p"),
        Rule("2*t + 1 <= m", lambda p: 2 * p["t"] + 1 <= p["m"], "lower t or raise m"),
    ),
    "weighted-vault": (
        Rule("2*t + 1 <= g", lambda p: 2 * p["t"] + 1 <= p["g"], "lower t or raise g"),
        # The helper lists a value for every one of the p*q slots: the library allows 2^21 of
        # them (an 8 MiB record per enrolment); the service holds it to the plain vault's cap.
        Rule(
            f"p*q <= {MAX_VAULT_SLOTS}",
            lambda p: p["p"] * p["q"] <= MAX_VAULT_SLOTS,
            "the helper lists every one of the p*q slots: lower p or q",
        ),
    ),
    "asymmetric-interval": (
        Rule(
            f"features*(n//2 + 1) <= {MAX_STORED_GAPS} if scheme in ('s2', 's3')",
            _s2_gaps,
            "an s2 or s3 helper lists up to n//2 + 1 gaps per feature: lower n or features, or use scheme s1",
        ),
    ),
}


class _RuleChecks(_Params):
    """A parameter model that checks its scheme's :data:`RULES` once each value is valid."""

    rules: ClassVar[tuple[Rule, ...]] = ()

    @model_validator(mode="after")
    def _rules_hold(self) -> Any:
        values = self.model_dump()
        broken = [rule for rule in self.rules if not rule.holds(values)]
        if broken:
            raise ValueError("; ".join(f"{rule.text} must hold: {rule.remedy}" for rule in broken))
        return self


def _ruled(name: str, rules: tuple[Rule, ...], base: type[BaseModel]) -> type[BaseModel]:
    """``base`` checking ``rules`` and publishing them as ``x-rules``."""
    extra: JsonDict | None = {"x-rules": [rule.text for rule in rules]} if rules else None
    namespace = {"rules": rules, "model_config": ConfigDict(extra="forbid", json_schema_extra=extra)}
    return type(f"_{name}Rules", (_RuleChecks, base), namespace)


@dataclass(frozen=True, slots=True)
class Policy:
    """What the service changes about one scheme's published parameters (tightening only)."""

    tighten: tuple[Tightening, ...] = ()
    #: Base of the parameter model: checks across parameters of the service's own caps.
    checks: type[BaseModel] = _Params


#: The service's own caps and defaults, per scheme (absent: the library's bounds as they are).
POLICIES: dict[str, Policy] = {
    "code-offset": Policy((_half_of("t", "n"),)),
    "fuzzy-vault": Policy((_cap("p", MAX_VAULT_PRIME), _half_of("t", "m"))),
    "weighted-vault": Policy((_weighted_sizes,)),
    "asymmetric-interval": Policy((_default("scheme", "s2"), _default("features", 1))),
    "angular": Policy((_cap("dimension", MAX_ANGULAR_DIMENSION), _below("alpha", "dimension"))),
    "angular-polar": Policy((_cap("dimension", MAX_ANGULAR_DIMENSION), _below("bits", "dimension"), _crc_room)),
}


# -- parameter models ------------------------------------------------------------------------------
def _bounds(low: int | float | None, high: int | None, *, exclusive_low: bool = False) -> dict[str, Any]:
    """The :func:`pydantic.Field` bounds of ``[low, high]`` (``(low, high]`` when ``exclusive_low``)."""
    bounds: dict[str, Any] = {}
    if low is not None:
        bounds["gt" if exclusive_low else "ge"] = low
    if high is not None:
        bounds["le"] = high
    return bounds


def _annotation(p: Parameter) -> Any:
    """The type of one parameter's value, with its bounds.

    Each bound sits on a scalar type (never on a union), so the schema states it with the JSON
    Schema keyword (``exclusiveMinimum``, ``minimum``, ``maximum``), not pydantic's ``gt``.
    """
    bounds = _bounds(p.low, p.high, exclusive_low=p.exclusive_low)
    if p.kind == "choice":
        return Literal[p.choices]
    if p.kind == "number":  # an integer stays one (an offset of integer features must be)
        return Annotated[StrictInt, Field(**bounds)] | Annotated[StrictFloat, Field(allow_inf_nan=False, **bounds)]
    item = integral(**bounds)
    if p.kind == "per-feature":
        return item | Annotated[list[item], Field(min_length=1, max_length=p.max_items)]  # type: ignore[valid-type]
    return item


def _field(p: Parameter) -> tuple[Any, Any]:
    """``(annotation, Field)`` for :func:`pydantic.create_model`: required, defaulted or nullable."""
    annotation = _annotation(p)
    if p.required:
        return annotation, Field(description=p.description)
    if p.default is None:
        return annotation | None, Field(default=None, description=p.description)
    return annotation, Field(default=p.default, description=p.description)


def _capped_lengths(descriptor: SchemeDescriptor, limits: RequestLimits, fields: dict[str, Parameter]) -> None:
    """Parameters that fix a sample's length are at most the configured sample length."""
    for name in descriptor.length_parameters:
        p = fields[name]
        if p.kind == "per-feature":
            most = limits.max_sample_length if p.max_items is None else min(p.max_items, limits.max_sample_length)
            fields[name] = replace(p, max_items=most)
        else:
            fields[name] = _cap(name, limits.max_sample_length)(limits, fields)[name]


def _model_name(name: str) -> str:
    """``IntervalParams``, ``CodeOffsetParams``; a class named after its scheme keeps its spelling
    (``PinSketchParams``)."""
    camel = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part)
    own = scheme_class(name).__name__
    return (own if own.lower() == camel.lower() else camel) + "Params"


def _published_fields(descriptor: SchemeDescriptor, limits: RequestLimits) -> dict[str, Parameter]:
    """The scheme's parameters and enrolment options with the service's caps and policy applied."""
    fields = {p.name: p for p in (*descriptor.parameters.fields, *descriptor.template_options)}
    _capped_lengths(descriptor, limits, fields)
    for tighten in POLICIES.get(descriptor.name, Policy()).tighten:
        fields = tighten(limits, fields)
    return fields


def _build_params_model(descriptor: SchemeDescriptor, limits: RequestLimits) -> type[BaseModel]:
    """The scheme's parameters and enrolment options as a strict pydantic model under ``limits``."""
    fields = _published_fields(descriptor, limits)
    policy = POLICIES.get(descriptor.name, Policy())
    definitions = {name: _field(p) for name, p in fields.items()}
    name = _model_name(descriptor.name)
    base = _ruled(name, RULES.get(descriptor.name, ()), policy.checks)
    model: type[BaseModel] = create_model(name, __base__=base, **definitions)  # type: ignore[call-overload]
    return model


@dataclass(frozen=True, slots=True)
class SchemeSpec:
    """How the service enrols and verifies with one scheme (a view of its library descriptor)."""

    descriptor: SchemeDescriptor

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def sample_kind(self) -> Literal["vector", "bytes", "set"]:
        return self.descriptor.sample_kind

    @property
    def description(self) -> str:
        return self.descriptor.summary

    @property
    def min_samples(self) -> int:
        return self.descriptor.min_captures

    @property
    def max_samples(self) -> int | None:
        """Most enrolment samples; ``None``: as many as the configured limit allows."""
        return self.descriptor.max_captures

    @property
    def enrolment_options(self) -> tuple[str, ...]:
        """Parameters that steer enrolment only (template derivation), not the sketch itself."""
        return tuple(p.name for p in self.descriptor.template_options)

    @property
    def requires(self) -> tuple[str, ...]:
        """Further library modules enrolment needs (the template hook's)."""
        template = self.descriptor.template
        return () if template is None else (template.partition(":")[0],)

    @property
    def min_element(self) -> int:
        """Smallest sample element (sets: PinSketch elements are non-zero field elements)."""
        return self.descriptor.min_element

    @property
    def example(self) -> tuple[dict[str, Any], list[list[Any]], list[Any]]:
        """A small working request: (params, enrolment samples, a genuine verification sample).
        Used to warm tables and compiled code at start-up, as the OpenAPI example and in tests."""
        return self.descriptor.example

    @property
    def module(self) -> str:
        return scheme_class(self.name).__module__

    def secret_from_samples(
        self, sketch: SecureSketch[Any, Any], samples: Sequence[Any], options: Mapping[str, Any]
    ) -> Any:
        """The secret to sketch from the enrolment samples (the descriptor's template hook)."""
        return self.descriptor.secret_from_captures(sketch, samples, options)

    def sample_length_range(self) -> tuple[int, int] | None:
        """The fewest and most numbers a sample can have whatever the parameters, when a single
        parameter fixes it (a code-offset sample is n <= 255 bytes); ``None``: no such bound."""
        lengths = [self.descriptor.parameters.field(n) for n in self.descriptor.length_parameters]
        fixed = [p for p in lengths if p.kind == "int" and p.low is not None and p.high is not None]
        if not fixed:
            return None
        return int(fixed[0].low), int(fixed[0].high)  # type: ignore[arg-type]

    def available(self) -> bool:
        """Whether the library has this scheme (and what its enrolment needs) in this tree."""
        return _importable(self.name, self.requires)

    def params_model(self, limits: RequestLimits | None = None) -> type[BaseModel]:
        """The parameter model under ``limits`` (default: the default settings' limits)."""
        return _params_model(self.name, limits or RequestLimits.default())

    def sample_count(self, limits: RequestLimits) -> tuple[int, int]:
        """Fewest and most enrolment samples under ``limits``."""
        most = limits.max_samples if self.max_samples is None else min(self.max_samples, limits.max_samples)
        return self.min_samples, most

    def sample_length(self, limits: RequestLimits) -> tuple[int, int]:
        """Fewest and most numbers per enrolment sample under ``limits`` (and the service's own caps
        on the parameter that fixes it)."""
        fixed = self.sample_length_range()
        low, high = (1, limits.max_sample_length) if fixed is None else fixed
        if fixed is not None:
            capped = _published_fields(self.descriptor, limits)[self.descriptor.length_parameters[0]].high
            high = high if capped is None else min(high, int(capped))
        return low, min(high, limits.max_sample_length)

    def split(self, model: BaseModel) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validated parameters as (constructor arguments, enrolment options)."""
        values = model.model_dump(exclude_none=True)
        options = {k: values.pop(k) for k in self.enrolment_options if k in values}
        return values, options

    def validate_params(
        self, params: dict[str, Any], limits: RequestLimits | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Checked (constructor arguments, enrolment options); ``ParameterError`` naming every problem."""
        try:
            model = self.params_model(limits).model_validate(params)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'/'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
            )
            raise ParameterError(f"invalid parameters for {self.name}: {problems}") from None
        return self.split(model)

    def params_schema(self, limits: RequestLimits | None = None) -> dict[str, Any]:
        return self.params_model(limits).model_json_schema()


@lru_cache(maxsize=64)
def _params_model(name: str, limits: RequestLimits) -> type[BaseModel]:
    return _build_params_model(scheme_specs()[name].descriptor, limits)


def scheme_specs() -> dict[str, SchemeSpec]:
    """A spec per registered family the service offers (read from the library's registry)."""
    return _offered(registrations())


@lru_cache(maxsize=8)
def _offered(entries: tuple[Registration, ...]) -> dict[str, SchemeSpec]:
    """A spec per registered family the service offers whose library module imports."""
    specs: dict[str, SchemeSpec] = {}
    for entry in entries:
        if entry.composite or entry.name in NOT_OFFERED:
            continue
        try:
            specs[entry.name] = SchemeSpec(scheme_descriptor(entry.name))
        except (ImportError, AttributeError):
            continue  # not in this tree: not offered
    return specs


@cache
def _importable(name: str, requires: tuple[str, ...]) -> bool:
    try:
        scheme_class(name)
        for module in requires:
            importlib.import_module(module)
    except (ImportError, AttributeError):
        return False
    return True


def warm_up(spec: SchemeSpec) -> None:
    """Enrol and decode the spec's example once: builds field tables, imports, compiled code."""
    arguments, samples, genuine = spec.example
    arguments, options = spec.validate_params(arguments)
    sketch = build_sketch(spec.name, arguments)
    helper = sketch.encode(spec.secret_from_samples(sketch, samples, options))
    sketch.decode(helper, genuine)


def available_schemes() -> list[SchemeSpec]:
    """The schemes whose library module is present, in a stable order."""
    return [spec for spec in scheme_specs().values() if spec.available()]


def get_scheme(name: str) -> SchemeSpec:
    """The spec of an offered scheme (:class:`UnknownScheme` otherwise)."""
    spec = scheme_specs().get(name)
    if spec is None or not spec.available():
        known = ", ".join(s.name for s in available_schemes())
        raise UnknownScheme(f"unknown scheme {name!r}; offered: {known}")
    return spec


#: ``json.dumps(value, sort_keys=True)`` with its encoder built once (``json.dumps`` with an
#: argument builds one per call, and a verification names its sketch by one such key).
_cache_key = json.JSONEncoder(sort_keys=True).encode


def build_sketch(name: str, arguments: dict[str, Any]) -> SecureSketch[Any, Any]:
    """The sketch for validated constructor arguments (enrolment)."""
    return _cached(_constructed, name, _cache_key(arguments))


def stored_sketch(name: str, params: dict[str, Any]) -> SecureSketch[Any, Any]:
    """The sketch for stored ``sketch.params()`` output (verification), via ``from_params``.

    ``name`` is a scheme name or ``"mixed"`` (a PIN cascade stores the cascade's parameters,
    which include the PIN key's argon2 profile). Requests share sketch objects, whose
    construction can be costly (field tables).
    """
    return _cached(_from_params, name, _cache_key(params))


def pin_cascade(
    sketch: SecureSketch[Any, Any], profile: str, pin_min_entropy: float | None = None
) -> SecureSketch[Any, Any]:
    """The biometric's sketch under cascaded mixing with a PIN (``sketchauth.mixing``).

    ``Cascade(sketch, pin=ExactKey(profile, min_entropy=pin_min_entropy))``: the PIN, stretched
    by argon2id with ``profile`` and a per-enrolment salt, keys a format-preserving pad over the
    sketch, so the loss of the biometric is diverted to the PIN and every wrong PIN still
    unmixes to a valid sketch. Secrets and samples are ``[biometric, pin]``. The service cannot
    know how people choose their PINs, so the min-entropy is whatever the deployment declares
    (``SKETCHAUTH_PIN_MIN_ENTROPY``): declared, the report shows how much of the biometric's
    loss is diverted to the PIN (the cascade's Theorem 8 bound); undeclared, the bounds
    that need it stay open. The declaration is part of the stored parameters, so a report never
    changes after enrolment. The guideline warnings are for whoever configures a structure;
    here the structure is fixed, so they are not raised per request.
    """
    return _cached(_cascade, sketch.scheme_name, _cache_key(sketch.params()), profile, pin_min_entropy)


#: Parameters longer than this (JSON characters; e.g. a long per-feature tolerance list) are not
#: cached, so the caches stay small whatever callers send.
MAX_CACHED_PARAMS = 4096


def _cached(build: Any, name: str, params_json: str, *rest: Any) -> SecureSketch[Any, Any]:
    """``build(name, params_json, *rest)`` through its cache, bypassing it for long parameters."""
    if len(params_json) > MAX_CACHED_PARAMS:
        built: SecureSketch[Any, Any] = build.__wrapped__(name, params_json, *rest)
    else:
        built = build(name, params_json, *rest)
    return built


@lru_cache(maxsize=256)
def _cascade(name: str, params_json: str, profile: str, pin_min_entropy: float | None) -> SecureSketch[Any, Any]:
    inner = _cached(_from_params, name, params_json)
    return Cascade(inner, pin=ExactKey(profile, min_entropy=pin_min_entropy), warn=False)


@lru_cache(maxsize=256)
def _constructed(name: str, arguments_json: str) -> SecureSketch[Any, Any]:
    return scheme_class(name)(**json.loads(arguments_json))


@lru_cache(maxsize=1024)
def _from_params(name: str, params_json: str) -> SecureSketch[Any, Any]:
    return scheme_class(name).from_params(json.loads(params_json))
