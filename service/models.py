"""Request and response models of the HTTP API, kept apart from the storage records.

Responses are built field by field from these models only, so helper data and hashes (which
live in :class:`service.store.UserRecord`) can never leak into a response by accident.

Samples are JSON arrays of numbers: integers, or finite reals (NaN and ±inf are rejected;
Python's JSON parser would otherwise accept ``NaN``/``Infinity`` literals). Feature vectors,
byte strings (integers 0..255) and element sets (distinct integers) all take this shape; the
scheme decides which it expects and validates dimensions, ranges and duplicates. Through a
feature pipeline (``"scheme": "pipeline:<name>"``) samples are raw embeddings: finite reals, as
many as the pipeline's transform takes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

__all__ = [
    "USER_ID_PATTERN",
    "HARD_MAX_SAMPLE_LENGTH",
    "HARD_MAX_SAMPLES",
    "Sample",
    "Pin",
    "EnrolmentRequest",
    "VerificationRequest",
    "EntropyReportOut",
    "EnrolmentResponse",
    "VerificationResponse",
    "SchemeInfo",
    "PipelineInfo",
    "SchemeList",
    "HealthResponse",
    "ProblemDetails",
]

#: User ids are opaque to the service: letters, digits and ``._~@+-``, at most 128 characters.
USER_ID_PATTERN = r"^[A-Za-z0-9._~@+\-]{1,128}$"
#: Parser-level caps; the configured (smaller or equal) limits are checked per request.
HARD_MAX_SAMPLE_LENGTH = 1 << 16
HARD_MAX_SAMPLES = 256

FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False)]
Number = Union[StrictInt, FiniteFloat]
Sample = Annotated[
    list[Number],
    Field(
        min_length=1,
        max_length=HARD_MAX_SAMPLE_LENGTH,
        description="a feature vector (numbers), a byte string (integers 0..255) or a set (distinct integers)",
    ),
]
Pin = Annotated[
    StrictStr,
    Field(min_length=4, max_length=256, description="optional PIN or password mixed into the biometric's sketch"),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EnrolmentRequest(_Strict):
    scheme: Annotated[
        StrictStr,
        Field(
            max_length=128,
            examples=["interval", "pipeline:thermometer"],
            description="a scheme name from GET /v1/schemes, or 'pipeline:<name>' for a server-side feature "
            "pipeline (its 'enrol_as'): the service applies the pipeline's transform to raw embedding samples "
            "and enrols on the pipeline's scheme with the pipeline's parameters",
        ),
    ]
    params: dict[str, Any] = Field(
        default_factory=dict,
        examples=[{"n": 256, "v": 8, "features": 4}],
        description="the scheme's parameters (see params_schema); must be empty for a pipeline, which fixes them",
    )
    samples: Annotated[
        list[Sample],
        Field(
            min_length=1,
            max_length=HARD_MAX_SAMPLES,
            description="enrolment captures; for a pipeline, raw embeddings of its input_dimension",
        ),
    ]
    pin: Pin | None = None
    replace: StrictBool = False


class VerificationRequest(_Strict):
    sample: Sample
    pin: Pin | None = None


class EntropyReportOut(BaseModel):
    """What the stored sketch can leak about the biometric (SPEC §1), in bits."""

    scheme: str
    sketch_bits: float
    randomness_bits: float
    loss_bound_bits: float
    notes: list[str]
    extra: dict[str, Any]


class EnrolmentResponse(BaseModel):
    user_id: str
    scheme: str
    params: dict[str, Any]
    pin: bool = Field(description="whether a PIN is mixed into the sketch")
    replaced: bool = Field(description="whether an earlier enrolment was replaced")
    report: EntropyReportOut
    pipeline: str | None = Field(default=None, description="the feature pipeline enrolled through, if any")
    pipeline_sha256: str | None = Field(
        default=None, description="its configuration fingerprint, stored with the enrolment and checked at verification"
    )


class VerificationResponse(BaseModel):
    verified: bool


class SchemeInfo(BaseModel):
    name: str
    sample_kind: Literal["vector", "bytes", "set"]
    min_samples: int
    max_samples: int
    description: str
    params_schema: dict[str, Any]


class PipelineInfo(BaseModel):
    """A server-side feature pipeline (``SKETCHAUTH_PIPELINES``): transform + scheme, by name."""

    name: str
    enrol_as: str = Field(description="the 'scheme' value that enrols through it: 'pipeline:<name>'")
    kind: str = Field(description="interval, asymmetric-interval, code-offset or thermometer")
    scheme: str = Field(description="the underlying sketch scheme")
    params: dict[str, Any] = Field(description="the underlying scheme's parameters, fixed by the pipeline")
    input_dimension: int = Field(description="length of every raw embedding sample")
    min_samples: int
    max_samples: int
    fingerprint: str = Field(description="SHA-256 of the pipeline configuration, stored with each enrolment")
    transform_sha256: str = Field(description="SHA-256 of the fitted transform")


class SchemeList(BaseModel):
    schemes: list[SchemeInfo]
    pipelines: list[PipelineInfo] = Field(default_factory=list, description="server-side feature pipelines")


class HealthResponse(BaseModel):
    status: Literal["ok"]


class ProblemDetails(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, str]] | None = None
