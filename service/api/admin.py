"""``/v1/admin``: operations that need an admin key (reset a throttled or disabled biometric)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from service.api.deps import AdminKey, State
from service.api.users import UserId, not_enrolled
from service.problems import problem_doc
from service.store import UserNotFound

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    dependencies=[AdminKey],
    responses={
        401: problem_doc("missing admin key"),
        403: problem_doc("not an admin key"),
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
