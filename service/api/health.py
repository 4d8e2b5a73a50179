"""``/healthz`` (the process answers) and ``/readyz`` (the database answers); no API key."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from service.api.deps import State
from service.models import HealthResponse
from service.problems import ProblemError, problem_doc

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthResponse)
async def healthz() -> HealthResponse:
    return HealthResponse(status="ok")


@router.get(
    "/readyz", response_model=HealthResponse, responses={503: problem_doc("the database does not answer")}
)
async def readyz(state: State) -> HealthResponse:
    try:
        await run_in_threadpool(state.store.ping)
    except Exception:  # noqa: BLE001 - any database failure means "not ready"
        raise ProblemError(503, "not-ready", "the database does not answer") from None
    return HealthResponse(status="ok")
