"""Request models of one running service, built from its limits, schemes and pipelines.

The enrolment body is a union discriminated by ``scheme``: one model per offered scheme, whose
``params`` is that scheme's parameter model (:mod:`sketchauth_service.schemes`) and whose ``samples`` take
the scheme's sample kind and count, plus one model per configured feature pipeline
(``"scheme": "pipeline:<name>"``), whose samples are raw embeddings of exactly the pipeline's
input dimension, whose ``params`` must stay empty, and which has a ``pin`` only when the
pipeline's sketch can be mixed with one. The verification body takes one sample
(the user's scheme is known only once the record is read).

Second factor: every enrolment model whose sketch can be mixed takes an optional ``second``, a
second biometric ``{"scheme", "params", "samples"}`` — a union discriminated by ``scheme`` over
the offered plain schemes, each with the same parameter model, sample kind, sample count and
sample length as a first biometric of that scheme (:func:`second_biometric`). The verification,
key-release and PIN-change bodies take an optional ``second_sample`` under the same length limit
as ``sample`` (:func:`second_sample`).

The same models validate the requests and generate the OpenAPI schema, so every bound a client
reads there (samples per enrolment, numbers per sample, parameter ranges, PIN length) is the
one enforced, from the one :class:`~sketchauth_service.limits.RequestLimits` value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    model_validator,
)

from sketchauth_service.authenticator import Captures
from sketchauth_service.jsontypes import integral
from sketchauth_service.limits import PIN_MAX_LENGTH, PIN_MIN_LENGTH, RequestLimits
from sketchauth_service.pipelines import PIPELINE_PREFIX, min_samples
from sketchauth_service.schemes import SchemeSpec
from sketchauth_service.settings import SettingsError
from sketchauth_service.usecases import AttemptInput, EnrolmentInput, SecondInput, second_factor

if TYPE_CHECKING:
    from sketchauth_service.pipelines import LoadedPipeline

__all__ = [
    "Number",
    "Pin",
    "RequestModels",
    "build_request_models",
    "enrolment_input",
    "key_input",
    "pin_change_input",
    "second_biometric",
    "second_sample",
    "validated",
    "verification_input",
]

FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False)]
Number = StrictInt | FiniteFloat
Byte = integral(ge=0, le=255)
Pin = Annotated[
    StrictStr,
    Field(
        min_length=PIN_MIN_LENGTH,
        max_length=PIN_MAX_LENGTH,
        description="optional PIN or password mixed into the biometric's sketch",
    ),
]

_SAMPLE_DESCRIPTIONS = {
    "vector": "a feature vector: numbers (integers, or reals with the 'step' parameter)",
    "bytes": "a byte string: integers 0..255, exactly n of them",
    "set": "a set: distinct integers of the scheme's universe",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class RequestModels:
    """The request body types of one app: enrolment (a tagged union) and verification."""

    limits: RequestLimits
    enrolment: Any
    verification: type[BaseModel]
    #: Scheme value → the scheme spec it enrols with (plain schemes only).
    schemes: dict[str, SchemeSpec]
    #: Scheme value (``pipeline:<name>``) → pipeline name.
    pipelines: dict[str, str]
    #: Scheme value (``pipeline:<name>``) → fewest and most enrolment samples.
    pipeline_counts: dict[str, tuple[int, int]]
    #: Scheme value (``pipeline:<name>``) → why its sketch takes no PIN (mixable ones are absent).
    pin_refusals: dict[str, str]
    #: The optional ``second`` field's type (``None``: no scheme is offered for a second biometric).
    second: Any = None


def _list_of(item: Any, low: int, high: int, description: str) -> Any:
    """A JSON array of ``low`` to ``high`` ``item`` values (both bounds enforced and published)."""
    return Annotated[list[item], Field(min_length=low, max_length=high, description=description)]


def _item_type(spec: SchemeSpec) -> Any:
    if spec.sample_kind == "vector":
        return Number
    if spec.sample_kind == "bytes":
        return Byte
    # A set element is an integer; an integral JSON number (``3.0``, as numpy-backed clients write
    # integers) is the same element, as JSON Schema's "integer" type says.
    return integral(ge=spec.min_element)


def _model_name(prefix: str, name: str) -> str:
    words = [part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part]
    return prefix + "".join(words) + "Enrolment"


def _base(doc: str, example: dict[str, Any]) -> type[BaseModel]:
    """A strict base whose JSON schema carries ``doc`` and a working ``example``."""
    config = ConfigDict(extra="forbid", json_schema_extra={"examples": [example]})
    return type("_Enrolment", (_Strict,), {"model_config": config, "__doc__": doc, "__module__": __name__})


def _second_variant(spec: SchemeSpec, limits: RequestLimits) -> type[BaseModel]:
    """``{"scheme": "<name>", "params": ..., "samples": [...]}``: one second biometric on ``spec``.

    The same parameter model, sample kind, count and length as enrolling a first biometric on
    ``spec`` (one :class:`~sketchauth_service.limits.RequestLimits` value bounds both).
    """
    least, most = spec.sample_count(limits)
    sample = _list_of(_item_type(spec), *spec.sample_length(limits), _SAMPLE_DESCRIPTIONS[spec.sample_kind])
    params, samples, _ = spec.example
    tag: Any = Literal[spec.name]
    example = {"scheme": spec.name, "params": params, "samples": samples}
    base = _base(f"A second biometric on {spec.name}: {spec.description}.", example)
    return create_model(
        "Second" + _model_name("", spec.name).removesuffix("Enrolment") + "Biometric",
        __base__=base,
        scheme=(tag, Field(description="the second biometric's scheme (GET /v1/schemes lists the offered ones)")),
        params=(spec.params_model(limits), Field(description=f"the {spec.name} parameters")),
        samples=(_list_of(sample, least, most, "enrolment captures of the second biometric"), ...),
    )


def second_biometric(specs: Iterable[SchemeSpec], limits: RequestLimits) -> Any:
    """The type of the optional ``second`` enrolment field: a union discriminated by ``scheme``."""
    variants: list[Any] = [_second_variant(spec, limits) for spec in specs]
    if not variants:
        return None
    if len(variants) == 1:
        return variants[0]
    union: Any = Union[tuple(variants)]  # noqa: UP007 - the member count is only known at run time
    return Annotated[union, Field(discriminator="scheme")]


def _second_field(second: Any) -> dict[str, Any]:
    """The ``second`` field of an enrolment model (none when no scheme is offered for it)."""
    if second is None:
        return {}
    return {
        "second": (
            second | None,
            Field(
                None,
                description="optional second biometric, mixed with the first (Fang's thesis ch. 7.4): "
                "verification then needs 'second_sample'",
            ),
        )
    }


def second_sample(limits: RequestLimits) -> Any:
    """The optional ``second_sample`` field of verification, key release and PIN change."""
    sample = _list_of(
        Number,
        1,
        limits.max_sample_length,
        "the second biometric's sample, for an enrolment with a second biometric (of its kind: a feature "
        "vector, a byte string or a set); leave it out otherwise",
    )
    return (sample | None, None)


def _scheme_enrolment(spec: SchemeSpec, limits: RequestLimits, second: Any = None) -> type[BaseModel]:
    """``{"scheme": "<name>", "params": <the scheme's parameters>, "samples": [...], "pin"?, "second"?,
    "replace"?}``."""
    least, most = spec.sample_count(limits)
    sample = _list_of(_item_type(spec), *spec.sample_length(limits), _SAMPLE_DESCRIPTIONS[spec.sample_kind])
    params, samples, _ = spec.example
    tag: Any = Literal[spec.name]
    return create_model(
        _model_name("", spec.name),
        __base__=_base(
            f"Enrol with {spec.name}: {spec.description}.", {"scheme": spec.name, "params": params, "samples": samples}
        ),
        scheme=(tag, Field(description="the scheme (GET /v1/schemes lists the offered ones)")),
        params=(spec.params_model(limits), Field(description=f"the {spec.name} parameters")),
        samples=(_list_of(sample, least, most, "enrolment captures"), ...),
        pin=(Pin | None, None),
        replace=(StrictBool, Field(False, description="replace an existing enrolment (with fresh randomness)")),
        **_second_field(second),
    )


class _NoParams(_Strict):
    """A pipeline fixes its scheme's parameters: send none (or an empty object)."""


def _pipeline_enrolment(loaded: LoadedPipeline, limits: RequestLimits, second: Any = None) -> type[BaseModel]:
    """``{"scheme": "pipeline:<name>", "samples": [raw embeddings], "pin"?, "replace"?}``."""
    pipeline = loaded.pipeline
    dimension = pipeline.transform.features
    if dimension > limits.max_sample_length:
        raise SettingsError(
            f"pipeline {loaded.name!r} takes embeddings of {dimension} numbers, more than "
            f"SKETCHAUTH_MAX_SAMPLE_LENGTH={limits.max_sample_length}: raise it or no sample could be sent"
        )
    sample = _list_of(
        Number, dimension, dimension, f"a raw embedding: exactly {dimension} finite numbers (the transform's input)"
    )
    least = min_samples(pipeline)
    example = {"scheme": PIPELINE_PREFIX + loaded.name, "samples": [[0.0] * dimension] * least}
    tag: Any = Literal[PIPELINE_PREFIX + loaded.name]
    # A sketch that cannot be mixed takes no PIN: the field is not offered at all.
    pin: dict[str, Any] = {} if loaded.pin_refusal is not None else {"pin": (Pin | None, None)}
    # Nor a second biometric: its key would mix this sketch.
    pin.update({} if loaded.pin_refusal is not None else _second_field(second))
    return create_model(
        _model_name("Pipeline", loaded.name),
        __base__=_base(
            f"Enrol raw embeddings through the configured feature pipeline {loaded.name!r} "
            f"({pipeline.kind}, on {pipeline.sketch.scheme_name}): the service applies its transform and "
            "enrols on the pipeline's scheme with the pipeline's parameters.",
            example,
        ),
        scheme=(
            tag,
            Field(description="'pipeline:<name>' for a server-side feature pipeline (GET /v1/schemes lists them)"),
        ),
        params=(_NoParams, Field(default_factory=_NoParams, description="must be empty: the pipeline fixes them")),
        samples=(_list_of(sample, least, limits.max_samples, "raw embeddings of enrolment captures"), ...),
        replace=(StrictBool, Field(False, description="replace an existing enrolment (with fresh randomness)")),
        **pin,
    )


#: Captures one verification may average: ``sketchauth.features.angular.MAX_VERIFY_CAPTURES``, not
#: imported (the service loads the features package only when a pipeline is configured).
MAX_VERIFY_CAPTURES = 3


def _one_of_sample_and_samples(body: Any) -> Any:
    if (body.sample is None) == (body.samples is None):
        raise ValueError("give exactly one of 'sample' and 'samples'")
    return body


def _verification(limits: RequestLimits) -> type[BaseModel]:
    sample = _list_of(
        Number,
        1,
        limits.max_sample_length,
        "the sample to verify, of the kind the user enrolled with: a feature vector, a byte string, a set, "
        "or a raw embedding for a pipeline enrolment",
    )
    samples = _list_of(
        _list_of(Number, 1, limits.max_sample_length, "one raw embedding"),
        1,
        MAX_VERIFY_CAPTURES,
        f"instead of 'sample': 1 to {MAX_VERIFY_CAPTURES} raw embeddings of one attempt (frames or utterances) "
        "for an angular pipeline enrolment, averaged into one probe (one decode, one hash: still one attempt)",
    )
    return create_model(
        "VerificationRequest",
        __base__=_Strict,
        __validators__={"one_of": model_validator(mode="after")(_one_of_sample_and_samples)},  # type: ignore[dict-item]
        sample=(sample | None, None),
        samples=(samples | None, None),
        pin=(Pin | None, None),
        second_sample=second_sample(limits),
    )


def build_request_models(
    limits: RequestLimits, specs: Iterable[SchemeSpec], pipelines: dict[str, LoadedPipeline]
) -> RequestModels:
    """The request models of an app offering ``specs`` and ``pipelines`` under ``limits``."""
    schemes = {spec.name: spec for spec in specs}
    second = second_biometric(schemes.values(), limits)
    variants: list[Any] = [_scheme_enrolment(spec, limits, second) for spec in schemes.values()]
    variants += [_pipeline_enrolment(loaded, limits, second) for _, loaded in sorted(pipelines.items())]
    if len(variants) == 1:
        enrolment = variants[0]
    else:
        # A union over a run-time list of models: ``X | Y`` has no spelling for that, Union[tuple] does.
        union: Any = Union[tuple(variants)]  # noqa: UP007 - the member count is only known at run time
        enrolment = Annotated[union, Field(discriminator="scheme")]
    return RequestModels(
        limits=limits,
        enrolment=enrolment,
        verification=_verification(limits),
        schemes=schemes,
        pipelines={PIPELINE_PREFIX + name: name for name in pipelines},
        pipeline_counts={
            PIPELINE_PREFIX + name: (min_samples(loaded.pipeline), limits.max_samples)
            for name, loaded in pipelines.items()
        },
        pin_refusals={
            PIPELINE_PREFIX + name: loaded.pin_refusal
            for name, loaded in pipelines.items()
            if loaded.pin_refusal is not None
        },
        second=second,
    )


# -- validated bodies as the use cases' typed inputs -----------------------------------------------------
# The per-app models are built at run time, so a static checker sees them as BaseModel: their
# fields are read here, once, into the frozen inputs of :mod:`sketchauth_service.usecases`.


def validated(body: object) -> BaseModel:
    """A route's validated body as the pydantic model it is (:class:`TypeError` for anything else)."""
    if not isinstance(body, BaseModel):
        raise TypeError("the request body was not validated by its model")
    return body


def enrolment_input(user_id: str, body: BaseModel, models: RequestModels) -> EnrolmentInput:
    """The enrolment a validated enrolment body asks for (a plain scheme or a configured pipeline)."""
    scheme: str = getattr(body, "scheme")  # noqa: B009 - a run-time model: every variant has it
    pipeline = models.pipelines.get(scheme)
    second: SecondInput | None = None
    sent = getattr(body, "second", None)  # absent from a pipeline model whose sketch cannot be mixed
    if sent is not None:
        second = SecondInput(scheme=sent.scheme, params=sent.params, samples=sent.samples)
    return EnrolmentInput(
        user_id=user_id,
        scheme=scheme,
        params=None if pipeline is not None else getattr(body, "params"),  # noqa: B009
        samples=getattr(body, "samples"),  # noqa: B009
        pin=getattr(body, "pin", None),  # absent from a pipeline model whose sketch takes no PIN
        replace=bool(getattr(body, "replace", False)),
        spec=models.schemes.get(scheme),
        pipeline=pipeline,
        second=second_factor(second, models.schemes),
    )


def verification_input(user_id: str, body: BaseModel) -> AttemptInput:
    """The attempt a validated verification body asks for (``samples``: 1-3 captures of one attempt)."""
    samples = getattr(body, "samples", None)
    return AttemptInput(
        user_id=user_id,
        sample=getattr(body, "sample") if samples is None else Captures(samples),  # noqa: B009
        pin=getattr(body, "pin", None),
        second_sample=getattr(body, "second_sample", None),
    )


def key_input(user_id: str, body: BaseModel) -> AttemptInput:
    """The attempt a validated key-release body asks for (its context as ASCII bytes)."""
    context: str = getattr(body, "context")  # noqa: B009
    return AttemptInput(
        user_id=user_id,
        sample=getattr(body, "sample"),  # noqa: B009
        pin=getattr(body, "pin", None),
        second_sample=getattr(body, "second_sample", None),
        key_context=context.encode("ascii"),
    )


def pin_change_input(user_id: str, body: BaseModel) -> AttemptInput:
    """The attempt a validated PIN-change body asks for."""
    return AttemptInput(
        user_id=user_id,
        sample=getattr(body, "sample"),  # noqa: B009
        pin=getattr(body, "pin"),  # noqa: B009
        second_sample=getattr(body, "second_sample", None),
        new_pin=getattr(body, "new_pin"),  # noqa: B009
    )
