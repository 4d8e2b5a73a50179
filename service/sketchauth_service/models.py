"""Response models of the HTTP API, kept apart from the storage records.

Responses are built field by field from these models only, so helper data and hashes (which
live in :class:`sketchauth_service.store.UserRecord`) can never leak into a response by accident.

The request models depend on the configured limits, schemes and pipelines, so each app builds
its own (:mod:`sketchauth_service.requests`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from sketchauth_service.limits import USER_ID_MAX_LENGTH

__all__ = [
    "USER_ID_PATTERN",
    "AuditEntry",
    "AuditTrail",
    "EnrolmentResponse",
    "EntropyReportOut",
    "HealthResponse",
    "LimitsInfo",
    "PipelineInfo",
    "ProblemDetails",
    "SchemeInfo",
    "SchemeList",
    "SecondBiometricOut",
    "VerificationResponse",
]

#: User ids are opaque to the service: letters, digits and ``._~@+-``, at most 128 characters.
USER_ID_PATTERN = rf"^[A-Za-z0-9._~@+\-]{{1,{USER_ID_MAX_LENGTH}}}$"


class EntropyReportOut(BaseModel):
    """What the stored sketch can leak about the biometric, in bits (``|S| - H∞(R)``: the sketch bound)."""

    scheme: str
    sketch_bits: float
    randomness_bits: float
    loss_bound_bits: float
    notes: list[str]
    extra: dict[str, Any]


class SecondBiometricOut(BaseModel):
    """The public description of an enrolment's second biometric (never its samples)."""

    scheme: str
    params: dict[str, Any]


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
    second: SecondBiometricOut | None = Field(
        default=None,
        description="the second biometric mixed in, if any (verification then needs 'second_sample'); "
        "left out of enrolments without one",
        # Enrolments without a second biometric answer exactly as before the field existed.
        exclude_if=lambda second: second is None,
    )


class VerificationResponse(BaseModel):
    verified: bool


class SchemeInfo(BaseModel):
    name: str
    sample_kind: Literal["vector", "bytes", "set"]
    min_samples: int = Field(description="fewest enrolment samples")
    max_samples: int = Field(description="most enrolment samples (at most the service's max_samples)")
    description: str
    params_schema: dict[str, Any] = Field(description="JSON schema of the parameters, with the enforced bounds")


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


class LimitsInfo(BaseModel):
    """The request limits this service enforces (its ``SKETCHAUTH_MAX_*`` settings)."""

    max_samples: int = Field(description="enrolment samples per request (SKETCHAUTH_MAX_SAMPLES)")
    max_sample_length: int = Field(description="numbers per sample (SKETCHAUTH_MAX_SAMPLE_LENGTH)")
    max_body_bytes: int = Field(description="bytes per request body (SKETCHAUTH_MAX_BODY_BYTES)")


class SchemeList(BaseModel):
    schemes: list[SchemeInfo]
    pipelines: list[PipelineInfo] = Field(default_factory=list, description="server-side feature pipelines")
    limits: LimitsInfo


class AuditEntry(BaseModel):
    at: float = Field(description="Unix time in seconds")
    event: str = Field(
        description="enrol, re-enrol, attempt, lock, disable, verify-ok, verify-fail, rehash, reset, revoke"
    )
    client: str | None = Field(description="name of the API key that acted (null for rows older than key names)")


class AuditTrail(BaseModel):
    user_id: str
    events: list[AuditEntry]


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
