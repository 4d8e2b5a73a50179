"""RFC 9457 problem details (``application/problem+json``) for every error the service returns.

Every 4xx/5xx body has ``type``, ``title``, ``status`` and ``detail`` (what is wrong, in words a
caller can act on) and, for validation failures, ``errors``: a list of ``{"loc", "msg"}``.
Offending *values* are never echoed back: a request body may carry a biometric sample or a PIN,
so messages name positions and constraints only (pydantic's ``input`` field is dropped).

Validation failures of the request models (:mod:`sketchauth_service.requests`) are named by what went
wrong: ``unknown-scheme``, ``unknown-pipeline``, ``invalid-parameters`` (anything under
``params``), ``wrong-sample-count`` / ``too-many-samples`` (the number of enrolment samples),
``sample-too-long`` (numbers per sample), ``invalid-sample`` (a pipeline sample not of the
transform's input dimension), else ``invalid-request``. A body sent without a JSON content type
(``curl -d`` sends ``application/x-www-form-urlencoded``) is ``415 unsupported-media-type``
saying to send ``Content-Type: application/json``.

The OpenAPI document declares every problem response under ``application/problem+json`` with
the :class:`~sketchauth_service.models.ProblemDetails` schema (:func:`install_problem_openapi`): that is the
media type the service sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sketchauth_service.models import ProblemDetails
from sketchauth_service.observability import route_of

__all__ = [
    "PROBLEM_BASE",
    "PROBLEM_MEDIA_TYPE",
    "ProblemError",
    "install_problem_handlers",
    "install_problem_openapi",
    "json_body_only",
    "problem_doc",
    "problem_response",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
#: Problem types are URIs naming the kind of failure; they resolve to nothing, they identify.
PROBLEM_BASE = "https://sketchauth.invalid/problems/"

log = logging.getLogger("sketchauth.service")


def problem_doc(description: str) -> dict[str, Any]:
    """An OpenAPI ``responses`` entry for a problem+json answer.

    FastAPI files a response ``model`` under ``application/json``; :func:`install_problem_openapi`
    moves every error response's schema to ``application/problem+json``.
    """
    return {"model": ProblemDetails, "description": description}


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


def _is_union_member(part: Any) -> bool:
    """Whether a location part is pydantic's name for a member of a union (``int``,
    ``constrained-int``, ``list[...]``, ``function-before[...]``), not a field or an index."""
    return isinstance(part, str) and (part in _MEMBER_NAMES or part.startswith(_MEMBER_PREFIXES) or "[" in part)


_MEMBER_NAMES = frozenset({"int", "float", "str", "bool", "list", "dict", "none"})
_MEMBER_PREFIXES = ("constrained-", "function-", "lax-", "strict-", "nullable", "tagged-union", "json-or-python")


def _where(loc: Sequence[Any], models: Any) -> tuple[str, str]:
    """``(loc, path)`` of an error: the slash-separated location without pydantic's union-member
    names or the enrolment's scheme tag (``body/samples/0/3``), and the field as a caller writes
    it (``samples[0][3]``; ``the body`` for the body itself, ``user_id`` for a path parameter)."""
    parts = [part for part in loc if not _is_union_member(part)]
    tags = set(getattr(models, "schemes", {})) | set(getattr(models, "pipelines", {}))
    kept = [
        part
        for i, part in enumerate(parts)
        if not (i > 0 and parts[i - 1] in ("body", "second") and part in tags)  # the discriminator's branch
    ]
    path = ""
    for part in kept[1:]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return "/".join(str(part) for part in kept), path or ("the body" if kept[:1] == ["body"] else "the request")


def _kind_of_input(value: Any) -> str:
    """The JSON kind of an input (never its value: it could be a sample or a PIN)."""
    kinds = ((type(None), "null"), (bool, "true or false"), (str, "a string"), (list, "an array"), (dict, "an object"))
    for python_type, name in kinds:
        if isinstance(value, python_type):
            return name
    return "a number" if isinstance(value, (int, float)) else "something else"


#: pydantic error types and what to say instead (``{given}``: the JSON kind sent; the rest: the rule's figures).
_PHRASES = {
    "missing": "is required",
    "extra_forbidden": "is not a field of this request: remove it",
    "list_type": "must be a JSON array, not {given}",
    "dict_type": "must be a JSON object, not {given}",
    "model_type": "must be a JSON object, not {given}",
    "model_attributes_type": "must be a JSON object, not {given}",
    "float_type": "must be a number, not {given}",
    "int_type": "must be a whole number, not {given}",
    "bool_type": "must be true or false, not {given}",
    "string_type": "must be a string, not {given}",
    "finite_number": "must be a finite number",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "literal_error": "must be one of {expected}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
}


def _say(err: dict[str, Any]) -> str:
    """What is wrong, in words a caller can act on (pydantic's type names and ``Input should be``
    replaced; never the offending value)."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    given = _kind_of_input(err.get("input"))
    if kind == "list_type" and given == "a string":
        return (
            "must be a JSON array of numbers, not a string: send the numbers themselves "
            "(base64 or another encoding of them is not accepted)"
        )
    if kind in ("too_short", "too_long"):
        unit = "characters" if given == "a string" else "items"
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        return f"must have {'at least' if kind == 'too_short' else 'at most'} {bound} {unit}"
    phrase = _PHRASES.get(kind)
    if phrase is None:
        return str(err.get("msg", "")).removeprefix("Value error, ")
    try:
        return phrase.format(given=given, **ctx)
    except (KeyError, IndexError):
        return str(err.get("msg", ""))


#: Errors that only say a union member's type did not match: dropped when the same place has another.
_TYPE_MISMATCHES = frozenset({"int_type", "int_from_float", "float_type", "list_type", "bool_type", "string_type"})


def _distinct(raw: Sequence[Any], models: Any) -> list[dict[str, Any]]:
    """One error per place: where a union's members each failed (``3.5`` for an integer *or* a
    finite number), the telling one, not "must be a whole number" beside "must be finite"."""
    by_place: dict[str, list[dict[str, Any]]] = {}
    for err in raw:
        by_place.setdefault(_where(tuple(err.get("loc", ())), models)[0], []).append(err)
    kept = []
    for errors in by_place.values():
        telling = [err for err in errors if err.get("type") not in _TYPE_MISMATCHES]
        kept.append(telling[0] if telling else errors[-1])  # the last member is the widest (a number)
    return kept


def _validation_errors(raw: Sequence[Any], models: Any) -> list[dict[str, Any]]:
    # Only where and what rule: never pydantic's "input" (it could be a sample or a PIN).
    return [{"loc": _where(tuple(err.get("loc", ())), models)[0], "msg": _say(err)} for err in raw]


async def _on_problem(request: Request, exc: ProblemError) -> JSONResponse:
    return problem_response(
        exc.status, exc.kind, exc.detail, instance=request.url.path, headers=exc.headers, errors=exc.errors
    )


async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    models = getattr(request.app.state, "request_models", None)
    raw = _distinct(exc.errors(), models)
    errors = _validation_errors(raw, models)
    if any(err.get("type") == "json_invalid" for err in raw):
        why = str(next((err.get("ctx") or {}).get("error", "") for err in raw if err.get("type") == "json_invalid"))
        said = "the request body is not valid JSON" + (f" ({why[:100]})" if why else "") + ": send a JSON object"
        return problem_response(400, "malformed-json", said, instance=request.url.path, errors=errors)
    kind, detail = _classify(raw, models)
    if detail is None:
        detail = "; ".join(f"{_where(tuple(err.get('loc', ())), models)[1]}: {_say(err)}" for err in raw[:5])
    return problem_response(422, kind, detail, instance=request.url.path, errors=errors)


_LENGTH_ERRORS = frozenset({"too_long", "too_short"})
_RANGE_ERRORS = frozenset({"greater_than_equal", "less_than_equal"})


def _classify(errors: Sequence[Any], models: Any) -> tuple[str, str | None]:
    """The problem kind of a request-model failure, and a specific message when there is one.

    ``models`` is the app's :class:`~sketchauth_service.requests.RequestModels`. Locations look like
    ``("body", "<scheme>", "params", "n")`` for the enrolment union and ``("body", "sample", 3)``
    for verification; the first error that has a specific kind decides.
    """
    for err in errors:
        found = _kind_of(err, models)
        if found is not None:
            return found
    return "invalid-request", None


def _kind_of(err: dict[str, Any], models: Any) -> tuple[str, str | None] | None:
    loc = tuple(err.get("loc", ()))
    if loc[:1] != ("body",) or models is None:
        return None
    kind = err.get("type")
    ctx = err.get("ctx") or {}
    if len(loc) == 1 and kind == "union_tag_invalid":
        return _unknown_scheme(str(ctx.get("tag", "")), models)
    if len(loc) == 1 and kind == "union_tag_not_found":
        return "unknown-scheme", f"the enrolment needs a 'scheme': one of {_offered(models)}"
    if loc[1:] == ("second",) and kind in ("union_tag_invalid", "union_tag_not_found"):
        return "unknown-scheme", f"the second biometric needs a 'scheme': one of {', '.join(models.schemes)}"
    tag = loc[1] if len(loc) > 1 and (loc[1] in models.schemes or loc[1] in models.pipelines) else None
    fields = loc[2:] if tag is not None else loc[1:]
    if fields == ("pin",) and kind == "extra_forbidden" and tag in models.pin_refusals:
        name = models.pipelines[tag]
        return "invalid-parameters", f"pipeline {name!r} takes no PIN: {models.pin_refusals[tag]}"
    if fields[:1] == ("params",):
        if tag in models.pipelines:
            name = models.pipelines[tag]
            return "invalid-parameters", f"pipeline {name!r} fixes its scheme and parameters; send no params"
        where = _where(("body", *fields), models)[1]
        return "invalid-parameters", f"invalid parameters for {tag}: {where}: {_say(err)}"
    if kind in _RANGE_ERRORS and fields[:1] == ("samples",) and len(fields) == 3:
        bound = "at least {ge}".format(**ctx) if "ge" in ctx else "at most {le}".format(**ctx)
        return "invalid-sample", f"samples[{fields[1]}][{fields[2]}] is outside the allowed range ({bound})"
    if kind not in _LENGTH_ERRORS:
        return None
    actual = ctx.get("actual_length")
    if fields == ("samples",):
        return _sample_count(tag, kind, ctx, actual, models)
    if (len(fields) == 2 and fields[0] == "samples") or fields == ("sample",):
        return _sample_length(tag, fields[1] if len(fields) == 2 else 0, kind, ctx, actual, models)
    return None


def _sample_length(
    tag: Any, index: Any, kind: str, ctx: dict[str, Any], actual: Any, models: Any
) -> tuple[str, str] | None:
    limit = models.limits.max_sample_length
    if kind == "too_long" and isinstance(actual, int) and actual > limit:
        return (
            "sample-too-long",
            f"sample {index} has more than {limit} values (the service's SKETCHAUTH_MAX_SAMPLE_LENGTH)",
        )
    if tag in models.pipelines:
        want = ctx.get("min_length", ctx.get("max_length"))
        return "invalid-sample", (
            f"sample {index} has {actual} features; pipeline {models.pipelines[tag]!r}'s transform takes {want}"
        )
    if tag in models.schemes:
        low, high = models.schemes[tag].sample_length(models.limits)
        return "invalid-sample", f"sample {index} has {actual} values; {tag} samples have {low} to {high}"
    return None


def _unknown_scheme(tag: str, models: Any) -> tuple[str, str]:
    if tag.startswith("pipeline:"):
        offered = ", ".join(sorted(models.pipelines.values())) or "none (SKETCHAUTH_PIPELINES is not set)"
        return "unknown-pipeline", f"unknown pipeline {tag.removeprefix('pipeline:')!r}; offered: {offered}"
    return "unknown-scheme", f"unknown scheme {tag!r}: send one of {_offered(models)}"


def _offered(models: Any) -> str:
    """The offered ``scheme`` values, for a message."""
    return ", ".join(models.schemes) + (", or pipeline:<name>" if models.pipelines else "")


def _sample_count(tag: Any, kind: str, ctx: dict[str, Any], actual: Any, models: Any) -> tuple[str, str]:
    limit = models.limits.max_samples
    if kind == "too_long" and isinstance(actual, int) and actual > limit:
        return (
            "too-many-samples",
            f"at most {limit} samples per request (the service's SKETCHAUTH_MAX_SAMPLES), got {actual}",
        )
    least, most = _count_range(tag, models)
    got = actual if actual is not None else "another number"
    if tag in models.pipelines:
        name = models.pipelines[tag]
        return (
            "wrong-sample-count",
            f"pipeline {name!r} enrols from at least {least} samples (at most {most}), got {got}",
        )
    want = f"exactly {least} sample" if least == most == 1 else f"{least} to {most} samples"
    return "wrong-sample-count", f"{tag} enrols from {want}, got {got}"


def _count_range(tag: Any, models: Any) -> tuple[int, int]:
    spec = models.schemes.get(tag)
    if spec is not None:
        counted: tuple[int, int] = spec.sample_count(models.limits)
        return counted
    found: tuple[int, int] = models.pipeline_counts.get(tag, (1, models.limits.max_samples))
    return found


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
    # Log the type and the route template: never the body, nor the path (it holds the user id).
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method, route_of(request.scope))
    return problem_response(
        500, "internal-error", "the service failed to handle this request", instance=request.url.path
    )


async def _require_json(request: Request) -> None:
    """415 unless the body is labelled JSON (FastAPI does not read an unlabelled body as JSON either).

    A request with no body at all needs no label (``POST /v1/admin/pepper/rotation`` takes none).
    """
    label = request.headers.get("content-type")
    if label is None and not await request.body():
        return
    media = "" if label is None else label.split(";", 1)[0].strip().lower()
    if media == "application/json" or (media.startswith("application/") and media.endswith("+json")):
        return
    sent = "without a Content-Type" if label is None else f"as {media[:100]!r}"
    raise ProblemError(
        415,
        "unsupported-media-type",
        f"the body was sent {sent}; send it as JSON with the header 'Content-Type: application/json' "
        "(curl: -H 'Content-Type: application/json', or --json instead of -d)",
    )


#: Route dependency: the request body must be JSON (``415 unsupported-media-type`` otherwise).
json_body_only = Depends(_require_json)


def install_problem_openapi(app: FastAPI, *rewrites: Callable[[dict[str, Any]], None]) -> None:
    """Publish every 4xx/5xx response as ``application/problem+json`` with the ProblemDetails schema.

    FastAPI files response models under ``application/json`` (and adds its own validation-error
    schema for 422); the service sends RFC 9457 documents, so the generated document is
    rewritten once, on first request, to say so. Integer bounds are written as integers.
    ``rewrites`` then change the document in place, in order (the scopes' alternatives).
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            _problem_media_types(document)
            _integer_bounds(document)
            for rewrite in rewrites:
                rewrite(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _integer_bounds(node: Any) -> None:
    """Integer bounds as integers: FastAPI's generator writes ``le=4096`` as ``4096.0``."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            for keyword in _NUMBER_BOUNDS:
                value = node.get(keyword)
                if isinstance(value, float) and value.is_integer():
                    node[keyword] = int(value)
        for value in node.values():
            _integer_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _integer_bounds(value)


def _problem_media_types(document: dict[str, Any]) -> None:
    problem = {"$ref": "#/components/schemas/ProblemDetails"}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                if status[:1] in {"4", "5"}:
                    response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": problem}}
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)


def install_problem_handlers(app: FastAPI) -> None:
    """Route every error the app can raise to a problem+json response."""
    app.add_exception_handler(ProblemError, _on_problem)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _on_unexpected)
