"""The answers to what a use case refuses: each refusal of :mod:`sketchauth_service.usecases` and of the
store as the problem+json the API documents, installed once as exception handlers so that no
router catches anything."""

from __future__ import annotations

import math

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from sketchauth_service.problems import ProblemError, problem_response
from sketchauth_service.store import AlreadyEnrolled, AttemptRefused, UserNotFound
from sketchauth_service.usecases import (
    EnrolmentChanged,
    InvalidEnrolment,
    PipelineChanged,
    SamePin,
    UnknownPipeline,
    UseCaseError,
)

__all__ = ["install_use_case_handlers", "not_enrolled", "problem_of", "refusal"]


def not_enrolled() -> ProblemError:
    """404 for a user id with no enrolment (report, revoke, admin reset)."""
    return ProblemError(404, "not-enrolled", "no enrolment for this user")


def refusal(refused: AttemptRefused, now: float) -> ProblemError:
    """423 for a disabled biometric, else 429 with the wait left (at least a second)."""
    if refused.disabled:
        return ProblemError(
            423,
            "biometric-disabled",
            "too many consecutive failures: the biometric is disabled until re-enrolment or an admin reset",
        )
    left = refused.locked_until - now
    wait = max(1, math.ceil(left)) if math.isfinite(left) else 1
    return ProblemError(
        429,
        "too-many-failures",
        f"too many consecutive failures: retry in {wait} s",
        headers={"Retry-After": str(wait)},
    )


def problem_of(exc: UseCaseError) -> ProblemError:
    """The problem answering a use case's refusal."""
    if isinstance(exc, InvalidEnrolment):
        return ProblemError(422, "invalid-sample" if exc.sample else "invalid-parameters", exc.detail)
    if isinstance(exc, PipelineChanged):
        return ProblemError(409, "pipeline-changed", exc.detail)
    if isinstance(exc, EnrolmentChanged):
        return ProblemError(409, "enrolment-changed", exc.detail)
    if isinstance(exc, SamePin):
        return ProblemError(422, "same-pin", exc.detail)
    if isinstance(exc, UnknownPipeline):
        return ProblemError(422, "unknown-pipeline", exc.detail)
    return ProblemError(422, "invalid-request", exc.detail)


def _answer(request: Request, problem: ProblemError) -> JSONResponse:
    return problem_response(
        problem.status,
        problem.kind,
        problem.detail,
        instance=request.url.path,
        headers=problem.headers,
        errors=problem.errors,
    )


async def _on_use_case(request: Request, exc: UseCaseError) -> JSONResponse:
    return _answer(request, problem_of(exc))


async def _on_refused(request: Request, exc: AttemptRefused) -> JSONResponse:
    return _answer(request, refusal(exc, request.app.state.service.clock()))


async def _on_not_found(request: Request, exc: UserNotFound) -> JSONResponse:
    return _answer(request, not_enrolled())


async def _on_already(request: Request, exc: AlreadyEnrolled) -> JSONResponse:
    return _answer(
        request, ProblemError(409, "already-enrolled", 'user is already enrolled; send "replace": true to re-enrol')
    )


def install_use_case_handlers(app: FastAPI) -> None:
    """Answer every refusal of a use case or of the store as its documented problem."""
    app.add_exception_handler(UseCaseError, _on_use_case)  # type: ignore[arg-type]
    app.add_exception_handler(AttemptRefused, _on_refused)  # type: ignore[arg-type]
    app.add_exception_handler(UserNotFound, _on_not_found)  # type: ignore[arg-type]
    app.add_exception_handler(AlreadyEnrolled, _on_already)  # type: ignore[arg-type]
