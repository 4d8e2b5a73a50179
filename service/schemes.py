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

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from sketchauth.errors import ParameterError
from sketchauth.sketches.base import SCHEMES, SecureSketch, scheme_class

__all__ = ["SchemeSpec", "SCHEME_SPECS", "available_schemes", "get_scheme", "build_sketch", "stored_sketch", "warm_up", "UnknownScheme"]

PositiveInt = Annotated[StrictInt, Field(ge=1)]
#: The service's cap on a vault's field: the helper lists every field element (up to 3 bytes
#: each), so this keeps one stored enrolment under about 400 KB.
MAX_VAULT_FIELD = 1 << 17


class UnknownScheme(LookupError):
    """No scheme of that name is offered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntervalParams(_Params):
    n: Annotated[StrictInt, Field(ge=2, le=2**52, description="size of each feature's universe [0, n)")]
    v: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] = Field(
        description="tolerance: |d'_i - b_i| < v_i; one int for all features or one per feature"
    )
    features: PositiveInt | None = Field(default=None, description="vector length (from v when v is a list)")
    step: Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="quantisation step for real-valued features (none: integer features)"
    )


class FuzzyVaultParams(_Params):
    p: Annotated[StrictInt, Field(ge=3, le=MAX_VAULT_FIELD, description="prime field size: elements are 0..p-1")]
    m: Annotated[PositiveInt, Field(le=512, description="set size (every sample has exactly m elements)")]
    t: Annotated[StrictInt, Field(ge=0, description="wrong elements tolerated (m >= 2t + 1)")]


class CodeOffsetParams(_Params):
    n: Annotated[StrictInt, Field(ge=2, le=255, description="bytes per sample")]
    t: Annotated[PositiveInt, Field(description="byte errors corrected (2t < n)")]


def _one_sample(sketch: SecureSketch, samples: Sequence[Any]) -> Any:
    return samples[0]


@dataclass(frozen=True, slots=True)
class SchemeSpec:
    """How the service enrols and verifies with one scheme."""

    name: str
    params_model: type[BaseModel]
    sample_kind: Literal["vector", "bytes", "set"]
    description: str
    min_samples: int = 1
    max_samples: int = 1
    #: (sketch, enrolment samples) → the secret to sketch; samples are already size-checked.
    secret_from_samples: Callable[[SecureSketch, Sequence[Any]], Any] = _one_sample
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

    def validate_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """Checked constructor arguments (``ParameterError`` naming every problem)."""
        try:
            model = self.params_model.model_validate(params)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'/'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
            )
            raise ParameterError(f"invalid parameters for {self.name}: {problems}") from None
        return model.model_dump(exclude_none=True)

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
    sketch = build_sketch(spec.name, spec.validate_params(arguments))
    helper = sketch.encode(spec.secret_from_samples(sketch, samples))
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
    return _constructed(name, json.dumps(arguments, sort_keys=True))


def stored_sketch(name: str, params: dict[str, Any]) -> SecureSketch:
    """The sketch for stored ``sketch.params()`` output (verification), via ``from_params``.

    Cached: requests share sketch objects, whose construction can be costly (field tables).
    """
    return _from_params(name, json.dumps(params, sort_keys=True))


@lru_cache(maxsize=256)
def _constructed(name: str, arguments_json: str) -> SecureSketch:
    return scheme_class(name)(**json.loads(arguments_json))


@lru_cache(maxsize=1024)
def _from_params(name: str, params_json: str) -> SecureSketch:
    return scheme_class(name).from_params(json.loads(params_json))
