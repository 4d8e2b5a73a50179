"""``/v1/users/{user_id}``: enrol, verify, read the entropy report, revoke (SPEC §5).

Verification answers ``200 {"verified": false}`` alike for an unknown user, a far sample, a
wrong PIN and a missing PIN, after the same argon2 work. Throttling (NIST SP 800-63B-4): while a
wait imposed after repeated failures runs, ``429`` with ``Retry-After``; once the biometric is
disabled, ``423`` until re-enrolment or an admin reset.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from starlette.concurrency import run_in_threadpool

from service.api.deps import ApiKey, ServiceState, State
from service.models import (
    USER_ID_PATTERN,
    EnrolmentRequest,
    EnrolmentResponse,
    EntropyReportOut,
    VerificationRequest,
    VerificationResponse,
)
from service.problems import ProblemError, problem_doc
from service.schemes import UnknownScheme, get_scheme
from service.settings import Settings
from service.store import AlreadyEnrolled, NewEnrolment, UserNotFound
from sketchauth.errors import ParameterError, SampleError

__all__ = ["router"]

UserId = Annotated[str, Path(pattern=USER_ID_PATTERN, description="the relying party's opaque user id")]

_COMMON: dict[int | str, dict[str, Any]] = {
    400: problem_doc("malformed JSON"),
    401: problem_doc("missing or invalid API key"),
    413: problem_doc("request body too large"),
    422: problem_doc("invalid request: types, parameters, sample shape or range"),
}

router = APIRouter(prefix="/v1/users", tags=["users"], dependencies=[ApiKey], responses=_COMMON)


def _check_sizes(settings: Settings, samples: list[list[Any]]) -> None:
    if len(samples) > settings.max_samples:
        raise ProblemError(422, "too-many-samples", f"at most {settings.max_samples} samples per request")
    for i, sample in enumerate(samples):
        if len(sample) > settings.max_sample_length:
            raise ProblemError(
                422, "sample-too-long", f"sample {i} has more than {settings.max_sample_length} values"
            )


def _invalid(exc: Exception) -> ProblemError:
    kind = "invalid-sample" if isinstance(exc, SampleError) else "invalid-parameters"
    return ProblemError(422, kind, str(exc))


@router.post(
    "/{user_id}/enrolment",
    status_code=201,
    response_model=EnrolmentResponse,
    responses={409: problem_doc("already enrolled and replace is false")},
    summary="Enrol a user: store a secure sketch and an argon2id hash, return the entropy report",
)
async def enrol_user(user_id: UserId, body: EnrolmentRequest, state: State) -> EnrolmentResponse:
    try:
        spec = get_scheme(body.scheme)
    except UnknownScheme as exc:
        raise ProblemError(422, "unknown-scheme", str(exc)) from None
    _check_sizes(state.settings, body.samples)
    if not spec.min_samples <= len(body.samples) <= spec.max_samples:
        want = str(spec.min_samples) if spec.min_samples == spec.max_samples else f"{spec.min_samples} to {spec.max_samples}"
        raise ProblemError(422, "wrong-sample-count", f"{spec.name} enrols from {want} samples, got {len(body.samples)}")
    try:
        arguments, options = spec.validate_params(body.params)
        result = await run_in_threadpool(state.authenticator.enrol, spec, arguments, options, body.samples, body.pin)
    except (SampleError, ParameterError) as exc:
        raise _invalid(exc) from None
    report = result.enrolment.report.to_dict()
    params = result.sketch.params()
    record = NewEnrolment(
        user_id=user_id,
        scheme=spec.name,
        params=result.stored.params(),
        helper=result.enrolment.helper,
        secret_hash=result.enrolment.secret_hash,
        report=report,
        has_pin=body.pin is not None,
    )
    try:
        replaced = await run_in_threadpool(state.store.enrol, record, replace=body.replace, now=state.clock())
    except AlreadyEnrolled:
        raise ProblemError(409, "already-enrolled", "user is already enrolled; send \"replace\": true to re-enrol") from None
    return EnrolmentResponse(
        user_id=user_id,
        scheme=spec.name,
        params=params,
        pin=body.pin is not None,
        replaced=replaced,
        report=EntropyReportOut(**report),
    )


@router.post(
    "/{user_id}/verification",
    response_model=VerificationResponse,
    responses={
        423: problem_doc("biometric disabled after too many failures: re-enrol or admin reset"),
        429: problem_doc("too many failures: wait Retry-After seconds"),
    },
    summary="Verify a sample (and PIN) against the user's enrolment: yes or no",
)
async def verify_user(user_id: UserId, body: VerificationRequest, state: State) -> VerificationResponse:
    _check_sizes(state.settings, [body.sample])
    # The whole attempt (read, decode + argon2, count) is one trip to the thread pool: argon2
    # stays off the event loop and the request pays for one thread hand-off, not three.
    verified = await run_in_threadpool(_attempt, state, user_id, body.sample, body.pin)
    return VerificationResponse(verified=verified)


def _attempt(state: ServiceState, user_id: str, sample: list[Any], pin: str | None) -> bool:
    """One verification attempt, throttled and counted (runs in a worker thread)."""
    record = state.store.get(user_id)
    if record is None:
        state.authenticator.dummy_verify(with_pin=pin is not None)
        return False
    if record.disabled:
        raise ProblemError(
            423, "biometric-disabled", "too many consecutive failures: the biometric is disabled until re-enrolment or an admin reset"
        )
    now = state.clock()
    if record.locked_until > now:
        wait = max(1, math.ceil(record.locked_until - now))
        raise ProblemError(
            429, "too-many-failures", f"too many consecutive failures: retry in {wait} s", headers={"Retry-After": str(wait)}
        )
    try:
        outcome = state.authenticator.verify(record, sample, pin)
    except SampleError as exc:
        raise _invalid(exc) from None
    try:
        if outcome.verified:
            state.store.record_success(user_id, state.clock(), old_hash=record.secret_hash, new_hash=outcome.new_hash)
        else:
            state.store.record_failure(user_id, state.policy, state.clock())
    except UserNotFound:
        # Revoked while this attempt ran: nothing to count any more.
        pass
    return outcome.verified


@router.get(
    "/{user_id}/report",
    response_model=EntropyReportOut,
    responses={404: problem_doc("not enrolled")},
    summary="The stored entropy report (never the helper data)",
)
async def get_report(user_id: UserId, state: State) -> EntropyReportOut:
    record = await run_in_threadpool(state.store.get, user_id)
    if record is None:
        raise ProblemError(404, "not-enrolled", "no enrolment for this user")
    return EntropyReportOut(**record.report)


@router.delete(
    "/{user_id}",
    status_code=204,
    response_class=Response,
    responses={404: problem_doc("not enrolled")},
    summary="Revoke: delete the enrolment",
)
async def revoke_user(user_id: UserId, state: State) -> Response:
    try:
        await run_in_threadpool(state.store.revoke, user_id, state.clock())
    except UserNotFound:
        raise ProblemError(404, "not-enrolled", "no enrolment for this user") from None
    return Response(status_code=204)
