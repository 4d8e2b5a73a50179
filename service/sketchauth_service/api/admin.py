"""``/v1/admin``: operations that need a key with the ``admin`` scope: reset a throttled or
disabled biometric, read a user's audit trail, see and rotate the pepper (:mod:`sketchauth_service.pepper`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response
from pydantic import BaseModel, ConfigDict, Field, Strict
from starlette.concurrency import run_in_threadpool

from sketchauth_service import usecases
from sketchauth_service.api.deps import KeyedRoute, State, scoped
from sketchauth_service.api.users import UserId
from sketchauth_service.credentials import ADMIN
from sketchauth_service.jsontypes import AS_INTEGER
from sketchauth_service.models import AuditEntry, AuditTrail
from sketchauth_service.pepper import DEFAULT_BATCH, MAX_BATCH, census, rotate
from sketchauth_service.problems import ProblemError, json_body_only, problem_doc

__all__ = ["AUDIT_PAGE_MAX", "router"]

#: Largest ``limit`` of one audit read.
AUDIT_PAGE_MAX = 10_000
#: Most batches one rotation call may run.
MAX_ROTATION_BATCHES = 10_000

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    dependencies=[scoped(ADMIN)],
    route_class=KeyedRoute,
    responses={
        401: problem_doc("missing admin key"),
        403: problem_doc("the key lacks the 'admin' scope"),
        429: problem_doc("too many wrong API keys from this address: wait Retry-After seconds"),
        422: problem_doc("invalid user id"),
    },
)


@router.post(
    "/users/{user_id}/reset",
    status_code=204,
    response_class=Response,
    responses={404: problem_doc("not enrolled")},
    summary="Clear the failure count, wait and disabled flag of a user's biometric",
)
async def reset_user(user_id: UserId, state: State) -> Response:
    await run_in_threadpool(usecases.reset, state, user_id)
    return Response(status_code=204)


@router.get(
    "/users/{user_id}/audit",
    response_model=AuditTrail,
    responses={404: problem_doc("no audit rows for this user id")},
    summary="A user's audit trail, oldest first: time, event, and the name of the key that acted",
)
async def user_audit(
    user_id: UserId,
    state: State,
    limit: Annotated[int, Query(ge=1, le=AUDIT_PAGE_MAX, description="the newest rows to return")] = 100,
) -> AuditTrail:
    """The newest ``limit`` rows of the user's trail (kept after a revocation: the trail outlives
    the enrolment). The events are those of the store's audit grammar (``enrol``, ``attempt``,
    ``lock``, ``verify-ok``…); no sample, PIN, hash or helper data is ever in it."""
    events = await run_in_threadpool(state.store.audit_events, user_id, limit)
    if not events:
        raise ProblemError(404, "no-audit-trail", "no audit rows for this user id")
    return AuditTrail(user_id=user_id, events=[AuditEntry(at=e.at, event=e.event, client=e.client) for e in events])


# -- pepper ---------------------------------------------------------------------------------------------
class PepperStatus(BaseModel):
    """Which pepper generations wrapped the stored helpers (ids are public keyed hashes, never peppers)."""

    current_id: str | None = Field(description="id of the pepper new helpers are wrapped with (null: none)")
    previous_ids: list[str] = Field(description="ids of the earlier peppers this deployment still reads")
    records: dict[str, int] = Field(description="stored records per pepper id ('clear': not wrapped)")


class RotationRequest(BaseModel):
    """How much one rotation call does (every field optional; the body itself may be left out)."""

    model_config = ConfigDict(extra="forbid")

    batch_size: Annotated[int, Strict(), Field(ge=1, le=MAX_BATCH), AS_INTEGER] = Field(
        DEFAULT_BATCH, description="records re-wrapped per transaction"
    )
    max_batches: Annotated[int, Strict(), Field(ge=1, le=MAX_ROTATION_BATCHES), AS_INTEGER] = Field(
        50, description="batches this call runs at most; call again to go on"
    )


class RotationResponse(BaseModel):
    new_id: str
    rewrapped: int = Field(description="records re-wrapped by this call")
    unreadable: int = Field(description="records wrapped by a pepper this deployment does not have (left alone)")
    batches: int
    remaining: int = Field(description="records not wrapped by the current pepper after this call")
    complete: bool = Field(description="this call went through every record (call again while false)")


def _status(state: State) -> PepperStatus:
    ring = state.settings.pepper_ring()
    counts = census(state.store)
    return PepperStatus(
        current_id=ring.current.id if ring.current else None,
        previous_ids=[p.id for p in ring.previous],
        records={("clear" if pid is None else pid): n for pid, n in sorted(counts.items(), key=lambda kv: str(kv[0]))},
    )


@router.get("/pepper", response_model=PepperStatus, summary="The pepper generations of the stored helpers")
async def pepper_status(state: State) -> PepperStatus:
    return await run_in_threadpool(_status, state)


@router.post(
    "/pepper/rotation",
    response_model=RotationResponse,
    dependencies=[json_body_only],
    responses={
        400: problem_doc("malformed JSON"),
        409: problem_doc("no pepper configured to rotate to"),
        413: problem_doc("request body too large"),
        415: problem_doc("the body is not sent as JSON: send 'Content-Type: application/json'"),
    },
    summary="Re-wrap stored helpers with the current pepper (from the previous ones or from clear), resumable",
)
async def pepper_rotation(state: State, body: Annotated[RotationRequest | None, Body()] = None) -> RotationResponse:
    """Re-wraps up to ``max_batches`` batches, one transaction each, with the peppers this
    deployment runs with (``SKETCHAUTH_PEPPER``, reading ``SKETCHAUTH_PEPPER_PREVIOUS``): no
    pepper ever travels in a request. Records already wrapped by the current pepper are skipped,
    so calling again continues an interrupted or bounded rotation. Without a body (or with
    ``{}``) the defaults apply."""
    body = body or RotationRequest.model_validate({})
    ring = state.settings.pepper_ring()
    if ring.current is None:
        raise ProblemError(409, "no-pepper", "no pepper is configured: set SKETCHAUTH_PEPPER and restart")
    result = await run_in_threadpool(
        rotate, state.store, ring.current, ring.previous, batch_size=body.batch_size, max_batches=body.max_batches
    )
    return RotationResponse(**result.to_dict())
