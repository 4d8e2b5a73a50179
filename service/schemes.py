"""The schemes the service exposes: name → parameter model, sample kind, and how to enrol.

Each :class:`SchemeSpec` says how to validate a scheme's parameters (a pydantic model with
``extra="forbid"``, built for the service's :class:`~service.limits.RequestLimits`, whose JSON
schema ``GET /v1/schemes`` and the OpenAPI request schema publish), what a sample looks like,
how many samples enrolment takes and how the secret is derived from them. Parameter bounds come
from the library's own constants (``interval.MAX_N``, ``vault.MAX_CANDIDATE_POINTS``,
``pinsketch.MAX_T``, ...), tightened where a parameter fixes a sample's length to the configured
sample length, and where the service stores less than the library allows (vault slots, s2 gaps)
to the service's caps below. Building the sketch
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
from functools import cache, lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, model_validator

from service.limits import RequestLimits
from sketchauth.errors import ParameterError
from sketchauth.sketches.base import SCHEMES, SecureSketch, scheme_class

__all__ = [
    "MAX_STORED_GAPS",
    "MAX_VAULT_PRIME",
    "MAX_VAULT_SLOTS",
    "SCHEME_SPECS",
    "SchemeSpec",
    "UnknownScheme",
    "available_schemes",
    "build_sketch",
    "get_scheme",
    "pin_cascade",
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
#: Code-offset sketches are Reed-Solomon codewords over GF(2^8): at most 2^8 - 1 bytes.
CODE_OFFSET_MAX_N = 255
#: The weighted vault decodes at most ``MAX_CANDIDATE_POINTS // q`` sample elements (each
#: brings q candidate points); the service keeps room for samples of at least this many.
WEIGHTED_MIN_SAMPLE_ROOM = 8


class UnknownScheme(LookupError):
    """No scheme of that name is offered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


PositiveInt = Annotated[StrictInt, Field(ge=1)]
Step = Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False)]
Offset = Annotated[StrictFloat | StrictInt, Field(allow_inf_nan=False)]


# -- parameter models --------------------------------------------------------------------------
# One factory per scheme: the bounds come from the library's constants and, where a parameter
# fixes a sample's length, from the configured sample length; every bound is published in the
# JSON schema exactly as pydantic enforces it. Cross-parameter rules the JSON schema cannot say
# (2t < n, m >= 2t + 1, v <= n, p prime) are in the descriptions and enforced by the library.


def _interval_params(limits: RequestLimits) -> type[BaseModel]:
    from sketchauth.sketches.interval import MAX_FEATURES, MAX_N

    max_features = min(MAX_FEATURES, limits.max_sample_length)
    Tolerance = Annotated[StrictInt, Field(ge=1, le=MAX_N)]

    class IntervalParams(_Params):
        n: Annotated[StrictInt, Field(ge=2, le=MAX_N, description="size of each feature's universe [0, n)")]
        v: Tolerance | Annotated[list[Tolerance], Field(min_length=1, max_length=max_features)] = Field(
            description="tolerance: |d'_i - b_i| < v_i, 1 <= v_i <= n; one int for all features or one per feature"
        )
        features: Annotated[StrictInt, Field(ge=1, le=max_features)] | None = Field(
            default=None, description="vector length (default: from v when v is a list, else 1)"
        )
        step: Step | None = Field(
            default=None, description="quantisation step for real-valued features (none: integer features)"
        )
        offset: Offset | None = Field(
            default=None,
            description="value of level 0, for signed features: values [offset - step/2, offset + (n - 1/2)*step) "
            "are accepted, others refused (an integer when there is no step)",
        )

    return IntervalParams


def _code_offset_params(limits: RequestLimits) -> type[BaseModel]:
    max_n = min(CODE_OFFSET_MAX_N, limits.max_sample_length)

    class CodeOffsetParams(_Params):
        n: Annotated[StrictInt, Field(ge=3, le=max_n, description="bytes per sample")]
        t: Annotated[StrictInt, Field(ge=1, le=(max_n - 1) // 2, description="byte errors corrected (2t < n)")]

    return CodeOffsetParams


def _pinsketch_params(limits: RequestLimits) -> type[BaseModel]:
    from sketchauth.sketches._gf2m import MAX_M, MIN_M
    from sketchauth.sketches.pinsketch import MAX_T

    class PinSketchParams(_Params):
        m: Annotated[StrictInt, Field(ge=MIN_M, le=MAX_M, description="field GF(2^m): elements are 1..2^m - 1")]
        t: Annotated[
            StrictInt,
            Field(ge=1, le=MAX_T, description="set difference tolerated, |A symmetric-difference B| <= t < 2^(m-1)"),
        ]

    return PinSketchParams


def _fuzzy_vault_params(limits: RequestLimits) -> type[BaseModel]:
    from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS

    max_m = min(MAX_CANDIDATE_POINTS, limits.max_sample_length)

    class FuzzyVaultParams(_Params):
        p: Annotated[StrictInt, Field(ge=2, le=MAX_VAULT_PRIME, description="prime field size: elements are 0..p-1")]
        m: Annotated[
            StrictInt, Field(ge=1, le=max_m, description="set size, m <= p (every sample has exactly m elements)")
        ]
        t: Annotated[StrictInt, Field(ge=0, le=(max_m - 1) // 2, description="wrong elements tolerated (m >= 2t + 1)")]

    return FuzzyVaultParams


def _weighted_vault_params(limits: RequestLimits) -> type[BaseModel]:
    from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS

    min_q = 3
    max_q = MAX_CANDIDATE_POINTS // WEIGHTED_MIN_SAMPLE_ROOM
    # The template's total weight comes from the elements of one capture, each weighing < q.
    max_g = min(MAX_CANDIDATE_POINTS, limits.max_sample_length * (max_q - 1))

    class WeightedVaultParams(_Params):
        p: Annotated[StrictInt, Field(ge=2, le=MAX_VAULT_SLOTS // min_q, description="element universe [0, p)")]
        q: Annotated[
            StrictInt, Field(ge=min_q, le=max_q, description="slots per element; weights lie in [1, q); p*q <= 131072")
        ]
        g: Annotated[
            StrictInt,
            Field(ge=1, le=max_g, description="total weight of every enrolment, g <= p(q-1) (fixed per deployment)"),
        ]
        t: Annotated[
            StrictInt,
            Field(ge=0, le=(max_g - 1) // 2, description="decoder slack (g >= 2t + 1): accepts iff c - w >= g - 2t"),
        ]
        min_count: Annotated[StrictInt, Field(ge=1, le=limits.max_samples)] | None = Field(
            default=None, description="enrolment option: captures an element must appear in (default: a majority)"
        )

        @model_validator(mode="after")
        def _slots_within_cap(self) -> WeightedVaultParams:
            # The helper lists a value for every one of the p*q slots: the library allows 2^21 of
            # them (an 8 MiB record per enrolment); the service holds it to the plain vault's cap.
            if self.p * self.q > MAX_VAULT_SLOTS:
                raise ValueError(f"p*q must be at most {MAX_VAULT_SLOTS} slots (the helper lists every slot)")
            return self

    return WeightedVaultParams


def _asymmetric_params(limits: RequestLimits) -> type[BaseModel]:
    from sketchauth.sketches.asymmetric import MAX_FEATURES, MAX_N

    max_features = min(MAX_FEATURES, limits.max_sample_length)

    class AsymmetricIntervalParams(_Params):
        n: Annotated[StrictInt, Field(ge=2, le=MAX_N, description="size of each feature's universe [0, n)")]
        q: Annotated[StrictInt, Field(ge=1, le=MAX_N, description="largest per-feature tolerance v (1 <= q <= n)")]
        scheme: Literal["s1", "s2", "s3"] = Field(
            default="s2",
            description="s1: tolerance in clear; s2: hidden among random even intervals "
            "(its boundaries keep the parity of b - v); "
            "s3: s2 with decoy parities, q >= 2 (s2/s3: features * (n // 2 + 1) <= 2^20)",
        )
        features: Annotated[StrictInt, Field(ge=1, le=max_features, description="vector length")] = 1
        step: Step | None = Field(
            default=None, description="quantisation step for real-valued captures (none: integer features)"
        )
        offset: Offset | None = Field(
            default=None,
            description="value of level 0, for signed features: values [offset - step/2, offset + (n - 1/2)*step) "
            "are accepted, others refused (an integer when there is no step)",
        )
        spread: Literal["range", "std"] = Field(default="range", description="enrolment option: spread measure for v")
        margin: Annotated[StrictInt, Field(ge=0)] = Field(
            default=1, description="enrolment option: v = ceil(scale*spread) + margin"
        )

        @model_validator(mode="after")
        def _gaps_within_cap(self) -> AsymmetricIntervalParams:
            # An s2 helper lists every gap of a random partition of [0, n): up to n // 2 + 1 per
            # feature. The service holds the worst case to MAX_STORED_GAPS (bytes and encode time).
            if self.scheme in ("s2", "s3") and self.features * (self.n // 2 + 1) > MAX_STORED_GAPS:
                raise ValueError(
                    f"an {self.scheme} sketch lists up to features * (n // 2 + 1) gaps, "
                    f"at most {MAX_STORED_GAPS} here: "
                    "lower n or features, or use scheme s1"
                )
            return self

    return AsymmetricIntervalParams


def _one_sample(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    return samples[0]


def _interval_template(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    """``(b, v)`` from several captures by ``sketchauth.templates.enrol_interval``."""
    from sketchauth.templates import enrol_interval

    params = sketch.params()
    return enrol_interval(
        samples, params["n"], params["q"], step=params.get("step"), offset=params.get("offset"), **options
    )


def _weighted_template(sketch: SecureSketch, samples: Sequence[Any], options: dict[str, Any]) -> Any:
    """``(elements, weights)`` from several captured sets, fitted to the vault's total weight ``g``.

    ``sketchauth.templates.enrol_weighted_set(..., total=g)`` weighs each element by how
    consistently the captures contain it and fits the weights to the fixed ``g`` (``g`` is fixed
    so it cannot link two enrolments) with the library's one rule, ``fit_weights``.
    """
    from sketchauth.templates import enrol_weighted_set

    params = sketch.params()
    return enrol_weighted_set(samples, params["q"], p=params["p"], total=params["g"], **options)


def _vault_sample_length() -> tuple[int, int]:
    """A fuzzy-vault sample has exactly m elements, 1 <= m <= ``MAX_CANDIDATE_POINTS``."""
    from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS

    return 1, MAX_CANDIDATE_POINTS


@dataclass(frozen=True, slots=True)
class SchemeSpec:
    """How the service enrols and verifies with one scheme."""

    name: str
    #: limits -> the parameter model (bounds from the library's constants and the sample length).
    params_factory: Callable[[RequestLimits], type[BaseModel]]
    sample_kind: Literal["vector", "bytes", "set"]
    description: str
    min_samples: int = 1
    #: Most enrolment samples; ``None``: as many as the configured limit allows.
    max_samples: int | None = 1
    #: (sketch, enrolment samples, enrolment options) → the secret to sketch.
    secret_from_samples: Callable[[SecureSketch, Sequence[Any], dict[str, Any]], Any] = _one_sample
    #: Parameters that steer enrolment only (template derivation), not the sketch itself.
    enrolment_options: tuple[str, ...] = ()
    #: Further library modules enrolment needs (e.g. template derivation).
    requires: tuple[str, ...] = ()
    #: Smallest sample element (sets: PinSketch elements are non-zero field elements).
    min_element: int = 0
    #: () → the fewest and most numbers a sample of this scheme can have whatever the parameters
    #: (a code-offset sample is n <= 255 bytes); ``None``: 1 to the configured sample length.
    sample_length_range: Callable[[], tuple[int, int]] | None = None
    #: A small working request: (params, enrolment samples, a genuine verification sample).
    #: Used to warm tables and compiled code at start-up, as the OpenAPI example and in tests.
    example: tuple[dict[str, Any], list[list[Any]], list[Any]] = ({}, [], [])

    @property
    def module(self) -> str:
        return SCHEMES[self.name][1].partition(":")[0]

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
        """Fewest and most numbers per enrolment sample under ``limits``."""
        low, high = (1, limits.max_sample_length) if self.sample_length_range is None else self.sample_length_range()
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
    return SCHEME_SPECS[name].params_factory(limits)


SCHEME_SPECS: dict[str, SchemeSpec] = {
    spec.name: spec
    for spec in (
        SchemeSpec(
            "interval",
            _interval_params,
            "vector",
            "interval sketch per feature, S = b mod (2v - 1): close iff |d'_i - b_i| < v_i for every feature",
            example=({"n": 256, "v": 8, "features": 4}, [[120, 33, 200, 71]], [123, 30, 205, 71]),
        ),
        SchemeSpec(
            "code-offset",
            _code_offset_params,
            "bytes",
            "code-offset sketch with Reed-Solomon over GF(2^8) (Dodis-Ostrovsky-Reyzin-Smith): close iff at "
            "most t of n bytes differ",
            sample_length_range=lambda: (3, CODE_OFFSET_MAX_N),
            example=({"n": 16, "t": 2}, [list(range(16))], [99, *range(1, 15), 0]),
        ),
        SchemeSpec(
            "fuzzy-vault",
            _fuzzy_vault_params,
            "set",
            "complete Juels-Sudan fuzzy vault over F_p: close iff at most t of the m elements differ",
            sample_length_range=_vault_sample_length,
            example=(
                {"p": 257, "m": 8, "t": 2},
                [[3, 17, 40, 66, 101, 150, 200, 251]],
                [3, 17, 40, 66, 101, 150, 9, 10],
            ),
        ),
        SchemeSpec(
            "pinsketch",
            _pinsketch_params,
            "set",
            "PinSketch, BCH syndromes over GF(2^m) (Dodis-Ostrovsky-Reyzin-Smith): close iff the sets differ "
            "in at most t elements",
            min_element=1,
            example=({"m": 16, "t": 4}, [[3, 70, 1000, 2024, 65535]], [3, 70, 1001, 2024, 65535, 9]),
        ),
        SchemeSpec(
            "asymmetric-interval",
            _asymmetric_params,
            "vector",
            "asymmetric interval sketch: several captures give a template b and per-feature tolerances v "
            "(sketchauth.templates.enrol_interval), both sketched; close iff |d'_i - b_i| < v_i",
            min_samples=2,
            max_samples=None,
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
            _weighted_vault_params,
            "set",
            "weighted fuzzy vault: several captured sets give elements weighted by consistency "
            "(sketchauth.templates.enrol_weighted_set, fitted to total weight g); accepts iff c - w >= g - 2t",
            min_samples=2,
            max_samples=None,
            secret_from_samples=_weighted_template,
            enrolment_options=("min_count",),
            requires=("sketchauth.templates",),
            example=({"p": 50, "q": 4, "g": 9, "t": 3}, [[3, 17, 40], [3, 17, 40], [3, 17, 40, 5]], [3, 17]),
        ),
    )
}


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
