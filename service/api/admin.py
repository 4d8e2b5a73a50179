"""``/v1/admin``: operations that need an admin key (reset a throttled or disabled biometric)."""

from __future__ import annotations


from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from service.api.deps import AdminKey, State
from service.api.users import _PROBLEM, UserId
from service.problems import ProblemError
from service.store import UserNotFound

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    dependencies=[AdminKey],
    responses={
        401: {**_PROBLEM, "description": "missing admin key"},
        403: {**_PROBLEM, "description": "not an admin key"},
        422: {**_PROBLEM, "description": "invalid user id"},
    },
)


@router.post(
    "/users/{user_id}/reset",
    status_code=204,
    response_class=Response,
    responses={404: {**_PROBLEM, "description": "not enrolled"}},
    summary="Clear the failure count, wait and disabled flag of a user's biometric",
)
async def reset_user(user_id: UserId, state: State) -> Response:
    try:
        await run_in_threadpool(state.store.reset, user_id, state.clock())
    except UserNotFound:
        raise ProblemError(404, "not-enrolled", "no enrolment for this user") from None
    return Response(status_code=204)
