"""``/v1/admin``: operations that need a key with the ``admin`` scope: reset a throttled or
disabled biometric, read a user's audit trail."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from service.api.deps import AdminKey, State
from service.api.users import UserId, not_enrolled
from service.models import AuditEntry, AuditTrail
from service.problems import ProblemError, problem_doc
from service.store import UserNotFound

__all__ = ["AUDIT_PAGE_MAX", "router"]

#: Largest ``limit`` of one audit read.
AUDIT_PAGE_MAX = 10_000

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    dependencies=[AdminKey],
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
    try:
        await run_in_threadpool(state.store.reset, user_id, state.clock())
    except UserNotFound:
        raise not_enrolled() from None
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
