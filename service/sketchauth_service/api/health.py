"""Liveness ``/livez`` (alias ``/healthz``: the process answers, no database call), readiness
``/readyz`` (the database answers a query: take the instance out of the load balancer, do not
restart it) and ``/metrics`` (Prometheus text format, :mod:`sketchauth_service.observability`); no API key.

``/metrics`` holds counts and timings by route template, never a user id; expose it to the
monitoring network only."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from sketchauth_service.api.deps import State
from sketchauth_service.models import HealthResponse
from sketchauth_service.observability import METRICS
from sketchauth_service.problems import ProblemError, problem_doc

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get(
    "/healthz", name="healthz", response_model=HealthResponse, summary="Liveness (alias of /livez): the process answers"
)
@router.get(
    "/livez", name="livez", response_model=HealthResponse, summary="Liveness: the process answers (no database call)"
)
async def healthz() -> HealthResponse:
    return HealthResponse(status="ok")


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics of this worker process (text exposition format 0.0.4)",
    responses={200: {"content": {"text/plain": {}}}},
)
async def metrics() -> PlainTextResponse:
    return PlainTextResponse(METRICS.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


@router.get("/readyz", response_model=HealthResponse, responses={503: problem_doc("the database does not answer")})
async def readyz(state: State) -> HealthResponse:
    try:
        await run_in_threadpool(state.store.ping)
    except Exception:
        raise ProblemError(503, "not-ready", "the database does not answer") from None
    return HealthResponse(status="ok")
