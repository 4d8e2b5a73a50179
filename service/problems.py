"""RFC 9457 problem details (``application/problem+json``) for every error the service returns.

Every 4xx/5xx body has ``type``, ``title``, ``status`` and ``detail`` (what is wrong, in words a
caller can act on) and, for validation failures, ``errors``: a list of ``{"loc", "msg"}``.
Offending *values* are never echoed back: a request body may carry a biometric sample or a PIN,
so messages name positions and constraints only (pydantic's ``input`` field is dropped).
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["PROBLEM_MEDIA_TYPE", "PROBLEM_BASE", "ProblemError", "problem_doc", "problem_response", "install_problem_handlers"]

PROBLEM_MEDIA_TYPE = "application/problem+json"
#: Problem types are URIs naming the kind of failure; they resolve to nothing, they identify.
PROBLEM_BASE = "https://sketchauth.invalid/problems/"

log = logging.getLogger("sketchauth.service")


def problem_doc(description: str) -> dict[str, Any]:
    """An OpenAPI ``responses`` entry for a problem+json answer."""
    from service.models import ProblemDetails

    return {"model": ProblemDetails, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": description}


class ProblemError(Exception):
    """Raise anywhere in a request to answer with a problem+json body."""

    def __init__(
        self,
        status: int,
        kind: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.kind = kind
        self.detail = detail
        self.headers = headers or {}
        self.errors = errors


def problem_response(
    status: int,
    kind: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    """A ``JSONResponse`` with an RFC 9457 body and media type."""
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + kind,
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def _loc(loc: tuple[Any, ...]) -> str:
    return "/".join(str(part) for part in loc)


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Only where and what rule: never pydantic's "input" (it could be a sample or a PIN).
    return [{"loc": _loc(tuple(err.get("loc", ()))), "msg": str(err.get("msg", ""))} for err in exc.errors()]


async def _on_problem(request: Request, exc: ProblemError) -> JSONResponse:
    return problem_response(
        exc.status, exc.kind, exc.detail, instance=request.url.path, headers=exc.headers, errors=exc.errors
    )


async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = _validation_errors(exc)
    if any(err.get("type") == "json_invalid" for err in exc.errors()):
        return problem_response(
            400, "malformed-json", "the request body is not valid JSON", instance=request.url.path, errors=errors
        )
    detail = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors[:5])
    return problem_response(422, "invalid-request", detail, instance=request.url.path, errors=errors)


async def _on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kinds = {404: "not-found", 405: "method-not-allowed", 401: "unauthorized", 413: "body-too-large"}
    return problem_response(
        exc.status_code,
        kinds.get(exc.status_code, "http-error"),
        str(exc.detail),
        instance=request.url.path,
        headers=getattr(exc, "headers", None),
    )


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Log the type and where, never the request body.
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return problem_response(500, "internal-error", "the service failed to handle this request", instance=request.url.path)


def install_problem_handlers(app: FastAPI) -> None:
    """Route every error the app can raise to a problem+json response."""
    app.add_exception_handler(ProblemError, _on_problem)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _on_unexpected)
