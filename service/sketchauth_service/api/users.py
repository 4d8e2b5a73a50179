"""``/v1/users/{user_id}``: enrol, verify, read the entropy report, revoke.

Verification answers ``200 {"verified": false}`` alike for an unknown user, a far sample, a
sample that does not fit the enrolment (wrong dimension or range), a wrong PIN and a missing PIN,
after the same argon2 work and the same store round trips, each a counted failure. Throttling
(NIST SP 800-63B-4): while a wait imposed after repeated failures runs, ``429`` with
``Retry-After``; once the biometric is disabled, ``423`` until re-enrolment or an admin reset.
User ids with no enrolment are counted and throttled the same way, so no answer (status, body,
headers) tells whether an id is enrolled. Only request errors that do not depend on the user
(malformed JSON, wrong types, over the published limits) are ``4xx`` before any counting.

The request bodies are the app's own models (:mod:`sketchauth_service.requests`): the enrolment body is a
union discriminated by ``scheme`` carrying each scheme's parameter model, and every size limit
is the configured one, so the router is built per app by :func:`build_router`. (This module
does not use postponed annotations: the endpoints' body types are those per-app models.)

Feature pipelines: ``"scheme": "pipeline:<name>"`` enrols raw embeddings through a configured
pipeline (:mod:`sketchauth_service.pipelines`); an unknown name is ``422 unknown-pipeline``. Verifying an
enrolment whose pipeline was changed or removed since is ``409 pipeline-changed`` (nothing is
counted): the stored helper data belongs to a configuration the service no longer has, so the
operator must restore it or the user re-enrol.

Second factor (Fang's thesis ch. 7.4): an enrolment may carry ``"second": {"scheme", "params",
"samples"}``, a second biometric on any offered plain scheme under the same published limits,
mixed with the first (:func:`sketchauth_service.authenticator.factor_structure`). Verification, key release
and PIN change then need ``"second_sample"``; a missing, unexpected, wrong or ill-shaped one is
the same counted ``{"verified": false}`` as any failure, after the same argon2 work.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Response
from starlette.concurrency import run_in_threadpool

from sketchauth_service import usecases
from sketchauth_service.api.deps import KeyedRoute, State, scoped
from sketchauth_service.api.errors import not_enrolled
from sketchauth_service.credentials import ENROL, VERIFY
from sketchauth_service.limits import USER_ID_MAX_LENGTH
from sketchauth_service.models import (
    USER_ID_PATTERN,
    EnrolmentResponse,
    EntropyReportOut,
    SecondBiometricOut,
    VerificationResponse,
)
from sketchauth_service.problems import json_body_only, problem_doc
from sketchauth_service.requests import RequestModels, enrolment_input, validated, verification_input

__all__ = ["UserId", "build_router", "not_enrolled"]

UserId = Annotated[
    str,
    Path(pattern=USER_ID_PATTERN, max_length=USER_ID_MAX_LENGTH, description="the relying party's opaque user id"),
]

_COMMON: dict[int | str, dict[str, Any]] = {
    400: problem_doc("malformed JSON"),
    401: problem_doc("missing or invalid API key"),
    403: problem_doc(
        "the key lacks the scope: 'verify' for verification and key release, 'pin' or 'enrol' for a "
        "PIN change, 'enrol' for the rest"
    ),
    413: problem_doc("request body too large"),
    422: problem_doc("invalid request: types, parameters, sample shape or range"),
    429: problem_doc("too many wrong API keys from this address: wait Retry-After seconds"),
}
_JSON_BODY: dict[int | str, dict[str, Any]] = {
    415: problem_doc("the body is not sent as JSON: send 'Content-Type: application/json'"),
}
_ENROL_RESPONSES: dict[int | str, dict[str, Any]] = {
    **_JSON_BODY,
    409: problem_doc("already enrolled and replace is false"),
    422: problem_doc(
        "invalid request: types, parameters (invalid-parameters), sample shape or range (invalid-sample), "
        "sample count (wrong-sample-count, too-many-samples), sample length (sample-too-long); "
        "unknown-scheme; unknown-pipeline (no pipeline:<name> configured); a pipeline sample not of its "
        "input dimension"
    ),
}
_VERIFY_RESPONSES: dict[int | str, dict[str, Any]] = {
    **_JSON_BODY,
    409: problem_doc(
        "pipeline-changed: the feature pipeline this user enrolled through was changed or removed since "
        "(its fingerprint differs); restore it or re-enrol the user. No attempt is counted"
    ),
    423: problem_doc("biometric disabled after too many failures: re-enrol or admin reset"),
    429: problem_doc("too many failures: wait Retry-After seconds"),
}


#: The two answers of a verification, encoded once (the ``VerificationResponse`` model's JSON).
_VERIFIED = VerificationResponse(verified=True).model_dump_json().encode()
_NOT_VERIFIED = VerificationResponse(verified=False).model_dump_json().encode()


def enrolment_response(enrolled: usecases.Enrolled, request: usecases.EnrolmentInput) -> EnrolmentResponse:
    """The answer to an enrolment: public parameters and the stored report (never helper data)."""
    result, loaded = enrolled.result, enrolled.pipeline
    second = result.second
    return EnrolmentResponse(
        user_id=request.user_id,
        scheme=request.scheme,
        params=result.sketch.params(),
        pin=enrolled.has_pin,
        replaced=enrolled.replaced,
        report=EntropyReportOut(**enrolled.report),
        pipeline=None if loaded is None else loaded.name,
        pipeline_sha256=None if loaded is None else loaded.fingerprint,
        second=None if second is None else SecondBiometricOut(scheme=second.scheme_name, params=second.params()),
    )


def build_router(models: RequestModels) -> APIRouter:
    """The ``/v1/users`` router whose request bodies are ``models`` (one app's limits and schemes)."""
    router = APIRouter(prefix="/v1/users", tags=["users"], responses=_COMMON, route_class=KeyedRoute)
    # Per-app types: a static checker cannot follow them (they exist once the settings are known).
    EnrolmentBody = Annotated[models.enrolment, Body()]  # type: ignore[name-defined]
    VerificationBody = Annotated[models.verification, Body()]  # type: ignore[name-defined]

    @router.post(
        "/{user_id}/enrolment",
        status_code=201,
        response_model=EnrolmentResponse,
        dependencies=[scoped(ENROL), json_body_only],
        responses=_ENROL_RESPONSES,
        summary="Enrol a user: store a secure sketch and an argon2id hash, return the entropy report",
    )
    async def enrol_user(user_id: UserId, body: EnrolmentBody, state: State) -> EnrolmentResponse:
        request = enrolment_input(user_id, validated(body), models)
        enrolled = await run_in_threadpool(usecases.enrol, state, request)
        return enrolment_response(enrolled, request)

    @router.post(
        "/{user_id}/verification",
        response_model=VerificationResponse,
        dependencies=[scoped(VERIFY), json_body_only],
        responses=_VERIFY_RESPONSES,
        summary="Verify a sample (and PIN) against the user's enrolment: yes or no",
    )
    async def verify_user(user_id: UserId, body: VerificationBody, state: State) -> Response:
        # The whole attempt (read, decode + argon2, count) is one trip to the thread pool: argon2
        # stays off the event loop and the request pays for one thread hand-off, not three. (Not
        # to a hashing thread directly: the store's waits would hold it, which halved PostgreSQL's
        # throughput when tried; docs/service/performance.md.)
        outcome = await run_in_threadpool(usecases.attempt, state, verification_input(user_id, validated(body)))
        # One of two fixed answers (VerificationResponse, as documented), without a model to
        # validate and serialise per request.
        return Response(_VERIFIED if outcome.verified else _NOT_VERIFIED, media_type="application/json")

    @router.get(
        "/{user_id}/report",
        response_model=EntropyReportOut,
        dependencies=[scoped(ENROL)],
        responses={404: problem_doc("not enrolled")},
        summary="The stored entropy report (never the helper data)",
    )
    async def get_report(user_id: UserId, state: State) -> EntropyReportOut:
        return EntropyReportOut(**await run_in_threadpool(usecases.report, state, user_id))

    @router.delete(
        "/{user_id}",
        status_code=204,
        response_class=Response,
        dependencies=[scoped(ENROL)],
        responses={404: problem_doc("not enrolled")},
        summary="Revoke: delete the enrolment",
    )
    async def revoke_user(user_id: UserId, state: State) -> Response:
        await run_in_threadpool(usecases.revoke, state, user_id)
        return Response(status_code=204)

    return router
