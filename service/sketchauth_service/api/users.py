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

import math
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Response
from starlette.concurrency import run_in_threadpool

from sketchauth.errors import ParameterError, SampleError
from sketchauth_service.api.deps import ServiceState, State, scoped
from sketchauth_service.authenticator import Captures, EnrolmentResult, SecondFactor, Verification
from sketchauth_service.bodies import ParsedBodyRoute
from sketchauth_service.credentials import ENROL, VERIFY
from sketchauth_service.limits import USER_ID_MAX_LENGTH
from sketchauth_service.models import (
    USER_ID_PATTERN,
    EnrolmentResponse,
    EntropyReportOut,
    SecondBiometricOut,
    VerificationResponse,
)
from sketchauth_service.pipelines import LoadedPipeline, check_dimensions, pipeline_report
from sketchauth_service.problems import ProblemError, json_body_only, problem_doc
from sketchauth_service.requests import RequestModels
from sketchauth_service.store import AlreadyEnrolled, AttemptRefused, NewEnrolment, UserNotFound, UserRecord

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


def not_enrolled() -> ProblemError:
    """404 for a user id with no enrolment (report, revoke, admin reset)."""
    return ProblemError(404, "not-enrolled", "no enrolment for this user")


def _invalid(exc: Exception) -> ProblemError:
    kind = "invalid-sample" if isinstance(exc, SampleError) else "invalid-parameters"
    return ProblemError(422, kind, str(exc))


def build_router(models: RequestModels) -> APIRouter:
    """The ``/v1/users`` router whose request bodies are ``models`` (one app's limits and schemes)."""
    router = APIRouter(prefix="/v1/users", tags=["users"], responses=_COMMON, route_class=ParsedBodyRoute)
    # Per-app types: a static checker cannot follow them (they exist once the settings are known).
    EnrolmentBody = Annotated[models.enrolment, Body()]  # type: ignore[name-defined]
    VerificationBody = Annotated[models.verification, Body()]  # type: ignore[name-defined]

    @router.post(
        "/{user_id}/enrolment",
        status_code=201,
        response_model=EnrolmentResponse,
        dependencies=[scoped(ENROL), json_body_only],
        responses={
            **_JSON_BODY,
            409: problem_doc("already enrolled and replace is false"),
            422: problem_doc(
                "invalid request: types, parameters (invalid-parameters), sample shape or range (invalid-sample), "
                "sample count (wrong-sample-count, too-many-samples), sample length (sample-too-long); "
                "unknown-scheme; unknown-pipeline (no pipeline:<name> configured); a pipeline sample not of its "
                "input dimension"
            ),
        },
        summary="Enrol a user: store a secure sketch and an argon2id hash, return the entropy report",
    )
    async def enrol_user(user_id: UserId, body: EnrolmentBody, state: State) -> EnrolmentResponse:
        pipeline = models.pipelines.get(body.scheme)
        if pipeline is not None:
            return await _enrol_pipeline(user_id, body, state, _offered_pipeline(state, pipeline), models)
        return await _enrol_scheme(user_id, body, state, models)

    @router.post(
        "/{user_id}/verification",
        response_model=VerificationResponse,
        dependencies=[scoped(VERIFY), json_body_only],
        responses={
            **_JSON_BODY,
            409: problem_doc(
                "pipeline-changed: the feature pipeline this user enrolled through was changed or removed since "
                "(its fingerprint differs); restore it or re-enrol the user. No attempt is counted"
            ),
            423: problem_doc("biometric disabled after too many failures: re-enrol or admin reset"),
            429: problem_doc("too many failures: wait Retry-After seconds"),
        },
        summary="Verify a sample (and PIN) against the user's enrolment: yes or no",
    )
    async def verify_user(user_id: UserId, body: VerificationBody, state: State) -> VerificationResponse:
        # The whole attempt (read, decode + argon2, count) is one trip to the thread pool: argon2
        # stays off the event loop and the request pays for one thread hand-off, not three.
        sample = body.sample if body.samples is None else Captures(body.samples)
        outcome = await run_in_threadpool(_attempt, state, user_id, sample, body.pin, second_sample=body.second_sample)
        return VerificationResponse(verified=outcome.verified)

    @router.get(
        "/{user_id}/report",
        response_model=EntropyReportOut,
        dependencies=[scoped(ENROL)],
        responses={404: problem_doc("not enrolled")},
        summary="The stored entropy report (never the helper data)",
    )
    async def get_report(user_id: UserId, state: State) -> EntropyReportOut:
        record = await run_in_threadpool(state.store.get, user_id)
        if record is None:
            raise not_enrolled()
        return EntropyReportOut(**record.report)

    @router.delete(
        "/{user_id}",
        status_code=204,
        response_class=Response,
        dependencies=[scoped(ENROL)],
        responses={404: problem_doc("not enrolled")},
        summary="Revoke: delete the enrolment",
    )
    async def revoke_user(user_id: UserId, state: State) -> Response:
        try:
            await run_in_threadpool(state.store.revoke, user_id, state.clock())
        except UserNotFound:
            raise not_enrolled() from None
        return Response(status_code=204)

    return router


async def _enrol_scheme(user_id: str, body: Any, state: ServiceState, models: RequestModels) -> EnrolmentResponse:
    """Enrol on a plain scheme; ``body`` (the scheme's request model) is already checked."""
    spec = models.schemes[body.scheme]
    arguments, options = spec.split(body.params)
    samples, pin = body.samples, body.pin
    second = _second_factor(body, models)
    try:
        result = await run_in_threadpool(state.authenticator.enrol, spec, arguments, options, samples, pin, second)
    except (SampleError, ParameterError) as exc:
        raise _invalid(exc) from None
    report = result.enrolment.report.to_dict()
    record = NewEnrolment(
        user_id=user_id,
        scheme=spec.name,
        params=result.stored.params(),
        helper=result.enrolment.helper,
        secret_hash=result.enrolment.secret_hash,
        key_params=result.enrolment.key_params,
        report=report,
        has_pin=pin is not None,
    )
    replaced = await _store(state, record, body.replace)
    return EnrolmentResponse(
        user_id=user_id,
        scheme=spec.name,
        params=result.sketch.params(),
        pin=pin is not None,
        replaced=replaced,
        report=EntropyReportOut(**report),
        second=_second_out(result),
    )


def _second_out(result: EnrolmentResult) -> SecondBiometricOut | None:
    """The enrolled second biometric's scheme and parameters (public, like the first's), if any."""
    if result.second is None:
        return None
    return SecondBiometricOut(scheme=result.second.scheme_name, params=result.second.params())


def _second_factor(body: Any, models: RequestModels) -> SecondFactor | None:
    """The body's second biometric (``"second"``), checked by its scheme's request model, or ``None``."""
    second = getattr(body, "second", None)  # absent from a pipeline model whose sketch cannot be mixed
    if second is None:
        return None
    spec = models.schemes[second.scheme]
    arguments, options = spec.split(second.params)
    return SecondFactor(spec, arguments, options, second.samples)


async def _store(state: ServiceState, record: NewEnrolment, replace: bool) -> bool:
    try:
        return await run_in_threadpool(state.store.enrol, record, replace=replace, now=state.clock())
    except AlreadyEnrolled:
        raise ProblemError(
            409, "already-enrolled", 'user is already enrolled; send "replace": true to re-enrol'
        ) from None


def _offered_pipeline(state: ServiceState, name: str) -> LoadedPipeline:
    loaded = state.pipelines.get(name)
    if loaded is None:  # the request models offer only loaded pipelines: a programming error
        raise ProblemError(422, "unknown-pipeline", f"unknown pipeline {name!r}")
    return loaded


async def _enrol_pipeline(
    user_id: str, body: Any, state: ServiceState, loaded: LoadedPipeline, models: RequestModels
) -> EnrolmentResponse:
    """Enrol raw embeddings through a configured pipeline; store its name and fingerprint.

    The request model has already checked the sample count and that every sample has the
    transform's input dimension.
    """
    pipeline = loaded.pipeline
    pin = getattr(body, "pin", None)  # absent from the model of a pipeline whose sketch takes no PIN
    second = _second_factor(body, models)
    try:
        check_dimensions(pipeline, body.samples)
        result = await run_in_threadpool(state.authenticator.enrol_pipeline, pipeline, body.samples, pin, second)
    except (SampleError, ParameterError) as exc:
        raise _invalid(exc) from None
    has_pin = pin is not None
    report = pipeline_report(loaded, result.enrolment.report.to_dict(), pin=has_pin or second is not None)
    record = NewEnrolment(
        user_id=user_id,
        scheme=result.sketch.scheme_name,
        params=result.stored.params(),
        helper=result.enrolment.helper,
        secret_hash=result.enrolment.secret_hash,
        key_params=result.enrolment.key_params,
        report=report,
        has_pin=has_pin,
        pipeline=loaded.name,
        pipeline_sha256=loaded.fingerprint,
    )
    replaced = await _store(state, record, body.replace)
    return EnrolmentResponse(
        user_id=user_id,
        scheme=body.scheme,
        params=result.sketch.params(),
        pin=has_pin,
        replaced=replaced,
        report=EntropyReportOut(**report),
        pipeline=loaded.name,
        pipeline_sha256=loaded.fingerprint,
        second=_second_out(result),
    )


def _attempt(
    state: ServiceState,
    user_id: str,
    sample: list[Any] | Captures,
    pin: str | None,
    *,
    key_context: bytes | None = None,
    new_pin: str | None = None,
    second_sample: list[Any] | None = None,
) -> Verification:
    """One verification attempt, throttled and counted (runs in a worker thread).

    Key release (``key_context``) and PIN change (``new_pin``) are verifications too: the same
    claim, the same work and the same answer for every failure; only a success differs (the key
    is returned, or the helper data and hash under the new PIN replace the old ones).

    The attempt is counted as a failure (atomically, in the store) before any decode or hash
    work: concurrent attempts cannot all slip past the lockout check, and a client that hangs up
    mid-request has still spent its attempt. A success resets the count; anything else stays a
    counted failure: giving an attempt back could undo a wait or a disable that concurrent
    attempts had imposed (and audited) meanwhile.

    No answer tells whether ``user_id`` is enrolled: an id with no enrolment is claimed and
    counted in the store like an enrolled one (:meth:`~sketchauth_service.store.Store.claim_probe`: the same
    ``429`` and ``423`` at the same counts, the same store round trips), and a sample that does
    not fit the enrolment (wrong dimension, a value out of range: the enrolment's parameters
    decide, so the answer would reveal them and the enrolment) is a failed attempt,
    ``{"verified": false}`` after the same argon2 work as any other failure.

    Store round trips: two, whoever the id is and whatever the outcome. The first
    (:meth:`~sketchauth_service.store.Store.begin_attempt`) reads the enrolment and claims the attempt; the
    second records the outcome: ``verify-fail`` (:meth:`~sketchauth_service.store.Store.settle_failure`) or
    the reset of a success (:meth:`~sketchauth_service.store.Store.record_success`). Why two and not one:
    :mod:`sketchauth_service.store.sql`, "Round trips".
    """
    pipelines: list[Any] = [None]  # the record's pipeline, found by admit()

    def admit(enrolled: UserRecord) -> None:
        # Before the claim: a changed pipeline is 409 and nothing is counted.
        if enrolled.pipeline is not None:
            pipelines[0] = _enrolled_pipeline(state, enrolled).pipeline

    try:
        # Read and claim in one store transaction (see sketchauth_service.store.sql, "Round trips").
        attempt = state.store.begin_attempt(user_id, state.policy, state.clock(), admit=admit)
    except AttemptRefused as refused:
        raise _refusal(refused, state.clock()) from None
    record, claim, pipeline = attempt.record, attempt.claim, pipelines[0]
    if record is None:  # no enrolment, or one that failed its integrity checks (counted, alerted)
        _decoy_attempt(state, attempt.decoy, sample, pin, second_sample)
        state.store.settle_failure(user_id, claim, state.clock())
        return Verification(False)
    state.authenticator.remember(record)
    key_params = record.key_params
    if key_context is not None and key_params is None:  # enrolled before key release: public salt, set once
        key_params = state.store.ensure_key_params(user_id, state.authenticator.key_params())
        if key_params is None:  # revoked since the claim
            state.authenticator.dummy_verify(with_pin=pin is not None)
            state.store.settle_failure(user_id, claim, state.clock())
            return Verification(False)
    try:
        outcome: Verification | None = state.authenticator.verify(
            record,
            sample,
            pin,
            pipeline=pipeline,
            key_context=key_context,
            key_params=key_params,
            new_pin=new_pin,
            second_sample=second_sample,
        )
    except SampleError:
        # A sample of the wrong shape or range for this enrolment: a failed attempt like any
        # other, after the argon2 work of one (that of an unknown id with the same request).
        state.authenticator.dummy_verify(with_pin=pin is not None)
        outcome = None
    if outcome is None or not outcome.verified:
        state.store.settle_failure(user_id, claim, state.clock())
        return Verification(False)
    if outcome.new_helper is not None:
        changed = state.store.change_pin(
            user_id,
            state.clock(),
            version=record.version,
            helper=outcome.new_helper,
            secret_hash=outcome.new_hash or "",
        )
        if not changed:
            raise ProblemError(
                409,
                "enrolment-changed",
                "the enrolment was replaced or revoked during the PIN change; nothing was changed",
            )
    else:
        state.store.record_success(user_id, state.clock(), version=record.version, new_hash=outcome.new_hash)
    return outcome


def _decoy_attempt(
    state: ServiceState,
    decoy: UserRecord | None,
    sample: list[Any] | Captures,
    pin: str | None,
    second_sample: list[Any] | None = None,
) -> None:
    """The work of a failed attempt, for a user id with no usable enrolment: decode and hash ``sample``
    against the store's decoy (:attr:`sketchauth_service.store.Attempt.decoy`, another user's enrolment opened at
    the cost of the id's own, its outcome ignored), else (no decoy yet, or the sample does not fit
    it) the argon2 work of a failure."""
    pipeline = None
    if decoy is not None and decoy.pipeline is not None:
        try:
            pipeline = _enrolled_pipeline(state, decoy).pipeline
        except ProblemError:
            decoy = None
    if decoy is None:
        state.authenticator.dummy_verify(with_pin=pin is not None)
        return
    try:
        state.authenticator.verify(decoy, sample, pin, pipeline=pipeline, second_sample=second_sample)
    except SampleError:
        state.authenticator.dummy_verify(with_pin=pin is not None)


def _refusal(refused: AttemptRefused, now: float) -> ProblemError:
    if refused.disabled:
        return ProblemError(
            423,
            "biometric-disabled",
            "too many consecutive failures: the biometric is disabled until re-enrolment or an admin reset",
        )
    wait = max(1, math.ceil(refused.locked_until - now))
    return ProblemError(
        429,
        "too-many-failures",
        f"too many consecutive failures: retry in {wait} s",
        headers={"Retry-After": str(wait)},
    )


def _enrolled_pipeline(state: ServiceState, record: UserRecord) -> LoadedPipeline:
    """The configured pipeline the record was enrolled through, unchanged (409 otherwise)."""
    loaded = state.pipelines.get(record.pipeline or "")
    if loaded is None:
        raise ProblemError(
            409,
            "pipeline-changed",
            f"this user enrolled through pipeline {record.pipeline!r}, which the service no longer offers",
        )
    if loaded.fingerprint != record.pipeline_sha256:  # public configuration hashes, not secrets
        raise ProblemError(
            409,
            "pipeline-changed",
            f"pipeline {record.pipeline!r} changed since this user enrolled (fingerprint "
            f"{(record.pipeline_sha256 or '')[:12]}… then, {loaded.fingerprint[:12]}… now); re-enrol the user "
            "or restore the pipeline file",
        )
    return loaded
