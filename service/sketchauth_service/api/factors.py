"""``/v1/users/{user_id}/key`` and ``/v1/users/{user_id}/pin``: key release and PIN change.

Both are verifications (:func:`sketchauth_service.usecases.attempt`): the attempt is claimed and counted
toward throttling before any work, every failure — unknown user, far sample, wrong or missing
PIN, malformed sample — gets the answer a failed verification gets, and ``429``/``423`` refuse
them exactly as they refuse verifications.

Key release (Fang's thesis §7.1: the recovered secret "can be used in standard cryptographic
applications"): ``{"sample", "pin"?, "context"}`` → ``{"verified": true, "key": "<base64url>"}``,
32 bytes ``HKDF(argon2id(recovered secret, per-enrolment key salt), info = context)``
(``sketchauth.enrolment.key_from_message``). The same for every genuine sample and across
restarts and replicas, independent per context; never stored or logged; sent with
``Cache-Control: no-store``. Its strength is that of the secret it comes from: at most the
residual min-entropy the stored entropy report gives (``GET /v1/users/{id}/report``), however
long the key; argon2id only slows each offline guess. Enrolments made before key release get
their public key salt at their first key request.

PIN change: ``{"sample", "pin", "new_pin"}`` → ``{"verified": true}`` once the stored cascade
is re-mixed under the new PIN (``MixedSketch.rekey``: unmixed with the old PIN's key, re-mixed
with the new one's under a fresh salt) and the new secret hashed, in one transaction audited
``verify-ok`` + ``pin-change``; the old helper data and hash are then erased as after a
replacing enrolment. Keys released before the change are not released after it (the PIN is
part of the secret they come from).

Second factor: an enrolment with a second biometric needs ``"second_sample"`` in both bodies,
as in verification; the released key then comes from both biometrics (and the PIN), so it
differs from a first-only enrolment's, and a PIN change re-mixes the second biometric's sketch
under the new PIN, leaving both biometrics' helper data as they were otherwise.
"""

import base64
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr, create_model
from starlette.concurrency import run_in_threadpool

from sketchauth_service import usecases
from sketchauth_service.api.deps import KeyedRoute, State, scoped
from sketchauth_service.api.users import UserId
from sketchauth_service.credentials import ENROL, PIN, VERIFY
from sketchauth_service.problems import json_body_only, problem_doc
from sketchauth_service.requests import (
    Number,
    Pin,
    RequestModels,
    key_input,
    pin_change_input,
    second_sample,
    validated,
)

__all__ = ["CONTEXT_PATTERN", "KeyResponse", "PinChangeResponse", "build_router"]

#: A context names the key's use (an application and version), not data: printable, no spaces.
CONTEXT_PATTERN = r"^[A-Za-z0-9._:/@+\-]{1,128}$"

_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: problem_doc("malformed JSON"),
    401: problem_doc("missing or invalid API key"),
    403: problem_doc("the key lacks the scope: 'verify' for key release, 'pin' or 'enrol' for a PIN change"),
    409: problem_doc(
        "pipeline-changed: the feature pipeline of the enrolment changed since (nothing counted); "
        "enrolment-changed: the enrolment was replaced or revoked during a PIN change"
    ),
    413: problem_doc("request body too large"),
    415: problem_doc("the body is not sent as JSON: send 'Content-Type: application/json'"),
    422: problem_doc(
        "invalid request: types, context, sample shape or range (a counted failed attempt); same-pin: a PIN "
        "change whose new_pin is the current pin (refused before any work, nothing counted)"
    ),
    423: problem_doc("biometric disabled after too many failures: re-enrol or admin reset"),
    429: problem_doc("too many failures: wait Retry-After seconds"),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KeyResponse(BaseModel):
    verified: bool
    key: str | None = Field(default=None, description="32 bytes, unpadded base64url; present only when verified")


class PinChangeResponse(BaseModel):
    verified: bool = Field(description="true: the PIN was changed; false: nothing changed (a counted failure)")


def _sample(models: RequestModels) -> Any:
    return Annotated[
        list[Number],
        Field(
            min_length=1,
            max_length=models.limits.max_sample_length,
            description="the sample, of the kind the user enrolled with (as for verification)",
        ),
    ]


def build_router(models: RequestModels) -> APIRouter:
    """The key-release and PIN-change routes with ``models``' sample limits."""
    router = APIRouter(prefix="/v1/users", tags=["users"], responses=_RESPONSES, route_class=KeyedRoute)
    sample = (_sample(models), ...)
    KeyRequest = create_model(
        "KeyRequest",
        __base__=_Strict,
        sample=sample,
        pin=(Pin | None, None),
        context=(
            Annotated[StrictStr, Field(pattern=CONTEXT_PATTERN)],
            Field(description="what the key is for, e.g. 'com.example.backup/v1': one independent key per context"),
        ),
        second_sample=second_sample(models.limits),
    )
    PinChangeRequest = create_model(
        "PinChangeRequest",
        __base__=_Strict,
        sample=sample,
        pin=(Pin, ...),
        new_pin=(Pin, ...),
        second_sample=second_sample(models.limits),
    )

    # Per-app models (their limits come from the settings): a static checker cannot follow them.
    KeyBody = Annotated[KeyRequest, Body()]  # type: ignore[valid-type]
    PinChangeBody = Annotated[PinChangeRequest, Body()]  # type: ignore[valid-type]

    @router.post(
        "/{user_id}/key",
        response_model=KeyResponse,
        response_model_exclude_none=True,
        dependencies=[scoped(VERIFY), json_body_only],
        summary="Release the user's key for a context after a genuine verification",
    )
    async def release_key(
        user_id: UserId,
        body: KeyBody,
        state: State,
        response: Response,
    ) -> KeyResponse:
        outcome = await run_in_threadpool(usecases.attempt, state, key_input(user_id, validated(body)))
        response.headers["Cache-Control"] = "no-store"
        if not outcome.verified or outcome.key is None:
            return KeyResponse(verified=False)
        return KeyResponse(verified=True, key=base64.urlsafe_b64encode(outcome.key).rstrip(b"=").decode())

    @router.post(
        "/{user_id}/pin",
        response_model=PinChangeResponse,
        # Its own scope: a PIN change rewrites the enrolment, which a verify-only key must not do.
        dependencies=[scoped(PIN, ENROL), json_body_only],
        summary="Change the PIN after a genuine verification, without a new capture",
    )
    async def change_pin(
        user_id: UserId,
        body: PinChangeBody,
        state: State,
    ) -> PinChangeResponse:
        outcome = await run_in_threadpool(usecases.attempt, state, pin_change_input(user_id, validated(body)))
        return PinChangeResponse(verified=outcome.verified)

    return router
