"""The schemes the service exposes: name → parameter model, sample kind, and how to enrol.

Each :class:`SchemeSpec` says how to validate a scheme's parameters (a pydantic model with
``extra="forbid"``, whose JSON schema ``GET /v1/schemes`` publishes), what a sample looks like,
how many samples enrolment takes and how the secret is derived from them. Building the sketch
goes through the library's public registry (``scheme_class(name)``), so the service never
reaches into a scheme's internals.

A scheme is offered only when its library module is importable, so the table grows as the
library does without the service changing its shape.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, model_validator

from service.models import HARD_MAX_SAMPLES
from sketchauth.errors import ParameterError
from sketchauth.sketches.base import SCHEMES, SecureSketch, scheme_class

__all__ = ["SchemeSpec", "SCHEME_SPECS", "available_schemes", "get_scheme", "build_sketch", "stored_sketch", "pin_cascade", "warm_up", "UnknownScheme"]

PositiveInt = Annotated[StrictInt, Field(ge=1)]
#: The service's cap on a vault's field (and on a weighted vault's p*q slots): the helper lists
#: a value for every field element or slot (4 bytes each at this size), so one stored enrolment
#: stays near 512 KiB (measured: 524,341 bytes for p = 131071).
MAX_VAULT_FIELD = 1 << 17
#: The service's cap on feature-vector length (samples are also bounded by settings).
HARD_MAX_FEATURES = 1 << 16


class UnknownScheme(LookupError):
    """No scheme of that name is offered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntervalParams(_Params):
    n: Annotated[StrictInt, Field(ge=2, le=2**52, description="size of each feature's universe [0, n)")]
    v: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1, max_length=HARD_MAX_FEATURES)] = Field(
        description="tolerance: |d'_i - b_i| < v_i; one int for all features or one per feature"
    )
    features: Annotated[PositiveInt, Field(le=HARD_MAX_FEATURES)] | None = Field(
        default=None, description="vector length (from v when v is a list)"
    )
    step: Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="quantisation step for real-valued features (none: integer features)"
    )
    offset: Annotated[StrictFloat | StrictInt, Field(allow_inf_nan=False)] | None = Field(
        default=None,
        description="value of level 0, for signed features: values [offset - step/2, offset + (n - 1/2)*step) "
        "are accepted, others refused (an integer when there is no step)",
    )


class FuzzyVaultParams(_Params):
    p: Annotated[StrictInt, Field(ge=3, le=MAX_VAULT_FIELD, description="prime field size: elements are 0..p-1")]
    m: Annotated[PositiveInt, Field(le=512, description="set size (every sample has exactly m elements)")]
    t: Annotated[StrictInt, Field(ge=0, description="wrong elements tolerated (m >= 2t + 1)")]


class PinSketchParams(_Params):
    m: Annotated[StrictInt, Field(ge=8, le=32, description="field GF(2^m): elements are 1..2^m - 1")]
    t: Annotated[PositiveInt, Field(le=256, description="set difference tolerated: |A symmetric-difference B| <= t")]


class WeightedVaultParams(_Params):
    p: Annotated[StrictInt, Field(ge=2, le=MAX_VAULT_FIELD, description="element universe [0, p)")]
    q: Annotated[StrictInt, Field(ge=3, le=64, description="slots per element; weights lie in [1, q)")]
    g: Annotated[PositiveInt, Field(description="total weight of every enrolment (fixed per deployment)")]
    t: Annotated[StrictInt, Field(ge=0, description="decoder slack: accepts iff c - w >= g - 2t")]
    min_count: PositiveInt | None = Field(
        default=None, description="enrolment option: captures an element must appear in (default: a majority)"
    )

    @model_validator(mode="after")
    def _slots_within_cap(self) -> WeightedVaultParams:
        # The helper lists a value for every one of the p*q slots: the library allows 2^21 of
        # them (an 8 MiB record per enrolment); the service holds it to the plain vault's cap.
        if self.p * self.q > MAX_VAULT_FIELD:
            raise ValueError(f"p*q must be at most {MAX_VAULT_FIELD} slots (the helper lists every slot)")
        return self


class AsymmetricIntervalParams(_Params):
    n: Annotated[StrictInt, Field(ge=2, le=2**52, description="size of each feature's universe [0, n)")]
    q: Annotated[PositiveInt, Field(description="largest per-feature tolerance v (1 <= q <= n)")]
    scheme: Literal["s1", "s2", "s3"] = Field(
        default="s2",
        description="s1: tolerance in clear; s2: hidden among random even intervals; "
        "s3: s2 with odd decoy gaps, so the boundaries' parity no longer reveals b - v (needs q >= 2)",
    )
    features: Annotated[PositiveInt, Field(le=HARD_MAX_FEATURES, description="vector length")] = 1
    step: Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="quantisation step for real-valued captures (none: integer features)"
    )
    offset: Annotated[StrictFloat | StrictInt, Field(allow_inf_nan=False)] | None = Field(
        default=None,
        description="value of level 0, for signed features: values [offset - step/2, offset + (n - 1/2)*step) "
        "are accepted, others refused (an integer when there is no step)",
    )
    spread: Literal["range", "std"] = Field(default="range", description="enrolment option: spread measure for v")
    margin: Annotated[StrictInt, Field(ge=0)] = Field(default=1, description="enrolment option: v = ceil(scale*spread) + margin")


class CodeOffsetParams(_Params):
    n: Annotated[StrictInt, Field(ge=2, le=255, description="bytes per sample")]
    t: Annotated[PositiveInt, Field(description="byte errors corrected (2t < n)")]


def _one_sample(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    return samples[0]


def _interval_template(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    """``(b, v)`` from several captures by ``sketchauth.templates.enrol_interval`` (SPEC §3.1)."""
    from sketchauth.templates import enrol_interval

    params = sketch.params()
    return enrol_interval(samples, params["n"], params["q"], step=params.get("step"), offset=params.get("offset"), **options)


def _weighted_template(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    """``(elements, weights)`` from several captured sets, fitted to the vault's total weight ``g``.

    ``sketchauth.templates.enrol_weighted_set(..., total=g)`` weighs each element by how
    consistently the captures contain it and fits the weights to the fixed ``g`` (SPEC §3.2; ``g``
    is fixed so it cannot link two enrolments) with the library's one rule, ``fit_weights``.
    """
    from sketchauth.templates import enrol_weighted_set

    params = sketch.params()
    return enrol_weighted_set(samples, params["q"], p=params["p"], total=params["g"], **options)


@dataclass(frozen=True, slots=True)
class SchemeSpec:
    """How the service enrols and verifies with one scheme."""

    name: str
    params_model: type[BaseModel]
    sample_kind: Literal["vector", "bytes", "set"]
    description: str
    min_samples: int = 1
    max_samples: int = 1
    #: (sketch, enrolment samples, enrolment options) → the secret to sketch.
    secret_from_samples: Callable[[SecureSketch, Sequence[Any], dict[str, Any]], Any] = _one_sample
    #: Parameters that steer enrolment only (template derivation), not the sketch itself.
    enrolment_options: tuple[str, ...] = ()
    #: Further library modules enrolment needs (e.g. template derivation).
    requires: tuple[str, ...] = ()
    #: A small working request: (params, enrolment samples, a genuine verification sample).
    #: Used to warm tables and compiled code at start-up, in docs and in tests.
    example: tuple[dict[str, Any], list[list[Any]], list[Any]] = ({}, [], [])

    @property
    def module(self) -> str:
        return SCHEMES[self.name][1].partition(":")[0]

    def available(self) -> bool:
        """Whether the library has this scheme (and what its enrolment needs) in this tree."""
        return _importable(self.name, self.requires)

    def validate_params(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Checked (constructor arguments, enrolment options); ``ParameterError`` naming every problem."""
        try:
            model = self.params_model.model_validate(params)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'/'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
            )
            raise ParameterError(f"invalid parameters for {self.name}: {problems}") from None
        values = model.model_dump(exclude_none=True)
        options = {k: values.pop(k) for k in self.enrolment_options if k in values}
        return values, options

    def params_schema(self) -> dict[str, Any]:
        return self.params_model.model_json_schema()


SCHEME_SPECS: dict[str, SchemeSpec] = {
    spec.name: spec
    for spec in (
        SchemeSpec(
            "interval",
            IntervalParams,
            "vector",
            "Euclidean interval sketch per feature (SPEC §2.1): close iff |d'_i - b_i| < v_i for every feature",
            example=({"n": 256, "v": 8, "features": 4}, [[120, 33, 200, 71]], [123, 30, 205, 71]),
        ),
        SchemeSpec(
            "code-offset",
            CodeOffsetParams,
            "bytes",
            "code-offset sketch with Reed-Solomon over GF(2^8) (SPEC §2.3): close iff at most t of n bytes differ",
            example=({"n": 16, "t": 2}, [list(range(16))], [99, *range(1, 15), 0]),
        ),
        SchemeSpec(
            "fuzzy-vault",
            FuzzyVaultParams,
            "set",
            "complete Juels-Sudan fuzzy vault over F_p (SPEC §2.2): close iff at most t of the m elements differ",
            example=({"p": 257, "m": 8, "t": 2}, [[3, 17, 40, 66, 101, 150, 200, 251]], [3, 17, 40, 66, 101, 150, 9, 10]),
        ),
        SchemeSpec(
            "pinsketch",
            PinSketchParams,
            "set",
            "PinSketch, BCH syndromes over GF(2^m) (SPEC §2.2): close iff the sets differ in at most t elements",
            example=({"m": 16, "t": 4}, [[3, 70, 1000, 2024, 65535]], [3, 70, 1001, 2024, 65535, 9]),
        ),
        SchemeSpec(
            "asymmetric-interval",
            AsymmetricIntervalParams,
            "vector",
            "asymmetric interval sketch (SPEC §3.1): several captures give a template b and per-feature "
            "tolerances v (sketchauth.templates.enrol_interval), both sketched; close iff |d'_i - b_i| < v_i",
            min_samples=2,
            max_samples=HARD_MAX_SAMPLES,
            secret_from_samples=_interval_template,
            enrolment_options=("spread", "margin"),
            requires=("sketchauth.templates",),
            example=(
                {"n": 256, "q": 16, "scheme": "s2", "features": 4},
                [[120, 33, 200, 71], [122, 35, 198, 70], [119, 31, 203, 73]],
                [122, 35, 203, 73],
            ),
        ),
        SchemeSpec(
            "weighted-vault",
            WeightedVaultParams,
            "set",
            "weighted fuzzy vault (SPEC §3.2): several captured sets give elements weighted by consistency "
            "(sketchauth.templates.enrol_weighted_set, fitted to total weight g); accepts iff c - w >= g - 2t",
            min_samples=2,
            max_samples=HARD_MAX_SAMPLES,
            secret_from_samples=_weighted_template,
            enrolment_options=("min_count",),
            requires=("sketchauth.templates",),
            example=({"p": 50, "q": 4, "g": 9, "t": 3}, [[3, 17, 40], [3, 17, 40], [3, 17, 40, 5]], [3, 17]),
        ),
    )
}


@lru_cache(maxsize=None)
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
    return [spec for spec in SCHEME_SPECS.values() if spec.available()]


def get_scheme(name: str) -> SchemeSpec:
    """The spec of an offered scheme (:class:`UnknownScheme` otherwise)."""
    spec = SCHEME_SPECS.get(name)
    if spec is None or not spec.available():
        known = ", ".join(s.name for s in available_schemes())
        raise UnknownScheme(f"unknown scheme {name!r}; offered: {known}")
    return spec


def build_sketch(name: str, arguments: dict[str, Any]) -> SecureSketch:
    """The sketch for validated constructor arguments (enrolment)."""
    return _cached(_constructed, name, json.dumps(arguments, sort_keys=True))


def stored_sketch(name: str, params: dict[str, Any]) -> SecureSketch:
    """The sketch for stored ``sketch.params()`` output (verification), via ``from_params``.

    ``name`` is a scheme name or ``"mixed"`` (a PIN cascade stores the cascade's parameters,
    which include the PIN key's argon2 profile). Requests share sketch objects, whose
    construction can be costly (field tables).
    """
    return _cached(_from_params, name, json.dumps(params, sort_keys=True))


def pin_cascade(sketch: SecureSketch, profile: str, pin_min_entropy: float | None = None) -> SecureSketch:
    """The biometric's sketch under cascaded mixing with a PIN (SPEC §4, ``sketchauth.mixing``).

    ``Cascade(sketch, pin=ExactKey(profile, min_entropy=pin_min_entropy))``: the PIN, stretched
    by argon2id with ``profile`` and a per-enrolment salt, keys a format-preserving pad over the
    sketch, so the loss of the biometric is diverted to the PIN and every wrong PIN still
    unmixes to a valid sketch. Secrets and samples are ``[biometric, pin]``. The service cannot
    know how people choose their PINs, so the min-entropy is whatever the deployment declares
    (``SKETCHAUTH_PIN_MIN_ENTROPY``): declared, the report shows how much of the biometric's
    loss is diverted to the PIN (SPEC §4, Theorem 8); undeclared, the bounds
    that need it stay open. The declaration is part of the stored parameters, so a report never
    changes after enrolment. The guideline warnings are for whoever configures a structure;
    here the structure is fixed, so they are not raised per request.
    """
    return _cached(_cascade, sketch.scheme_name, json.dumps(sketch.params(), sort_keys=True), profile, pin_min_entropy)


#: Parameters longer than this (JSON characters; e.g. a long per-feature tolerance list) are not
#: cached, so the caches stay small whatever callers send.
MAX_CACHED_PARAMS = 4096


def _cached(build: Any, name: str, params_json: str, *rest: Any) -> SecureSketch:
    """``build(name, params_json, *rest)`` through its cache, bypassing it for long parameters."""
    if len(params_json) > MAX_CACHED_PARAMS:
        return build.__wrapped__(name, params_json, *rest)
    return build(name, params_json, *rest)


@lru_cache(maxsize=256)
def _cascade(name: str, params_json: str, profile: str, pin_min_entropy: float | None) -> SecureSketch:
    from sketchauth.mixing import Cascade, ExactKey

    inner = _cached(_from_params, name, params_json)
    return Cascade(inner, pin=ExactKey(profile, min_entropy=pin_min_entropy), warn=False)


@lru_cache(maxsize=256)
def _constructed(name: str, arguments_json: str) -> SecureSketch:
    return scheme_class(name)(**json.loads(arguments_json))


@lru_cache(maxsize=1024)
def _from_params(name: str, params_json: str) -> SecureSketch:
    return scheme_class(name).from_params(json.loads(params_json))
