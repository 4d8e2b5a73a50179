"""Shared request dependencies as ``Annotated`` aliases: the service state and API-key checks.

API keys are bearer tokens whose SHA-256 digests are compared with :func:`hmac.compare_digest`
against *every* configured key's (no early exit), so the time taken does not depend on which
key, how much of one, or how long a key, matched. Keys are named and scoped
(:mod:`sketchauth_service.credentials`). Every route states the scopes it accepts with :func:`scoped`, and
a key is let through when it holds *any one* of them (least privilege: the smallest scope that
does the job):

=====================================  ===============================
route                                  scopes (any one of)
=====================================  ===============================
``POST /v1/users/{id}/enrolment``      ``enrol``
``GET /v1/users/{id}/report``          ``enrol``
``DELETE /v1/users/{id}``              ``enrol``
``POST /v1/users/{id}/verification``   ``verify``
``POST /v1/users/{id}/key``            ``verify``
``POST /v1/users/{id}/pin``            ``pin``, ``enrol``
``/v1/admin/...``                      ``admin``
``GET /v1/schemes``                    any key
=====================================  ===============================

The OpenAPI document publishes the same table: each operation's ``security`` lists one
requirement per accepted scope (OpenAPI 3.1 lets a bearer scheme's requirement name roles).
:func:`check_every_route_is_scoped` refuses to build an app with a ``/v1`` route that states
none, so a new endpoint cannot be reached without a key. Failed authentications are throttled
per client address (429 with ``Retry-After``).

The dependencies are ``async`` on purpose: FastAPI runs plain ``def`` dependencies in the
thread pool, a hand-off per dependency per request for work that takes microseconds.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any

import fastapi.routing
from fastapi import Depends, FastAPI, Request, Security
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer, SecurityScopes

from sketchauth_service.bodies import ParsedBodyRoute
from sketchauth_service.credentials import ADMIN, client_bucket
from sketchauth_service.credentials import ApiKey as ConfiguredKey
from sketchauth_service.problems import ProblemError
from sketchauth_service.state import ServiceState
from sketchauth_service.store import AUDIT_CLIENT

__all__ = [
    "ANY_KEY",
    "KeyedRoute",
    "ServiceState",
    "State",
    "api_routes",
    "check_every_route_is_scoped",
    "route_scopes",
    "scope_alternatives",
    "scoped",
]


async def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


State = Annotated[ServiceState, Depends(_state)]

_bearer = HTTPBearer(auto_error=False, description="an API key (SKETCHAUTH_API_KEYS or SKETCHAUTH_API_KEY_FILE)")
_admin_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="AdminKey",
    description="a key with the admin scope (SKETCHAUTH_ADMIN_KEYS or the key file)",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
AdminCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_admin_bearer)]

#: The audit trail's name for requests of local mode without keys.
DEV_CLIENT = "dev-mode"
#: :func:`scoped` with no scope: any configured key will do (``GET /v1/schemes``).
ANY_KEY: tuple[str, ...] = ()


def _unauthorized(detail: str) -> ProblemError:
    return ProblemError(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})


def _authenticate(
    request: Request, state: ServiceState, credentials: HTTPAuthorizationCredentials | None, *, what: str = "an API key"
) -> ConfiguredKey | None:
    """The configured key the request presents (``None``: local mode without keys, everyone trusted).

    A client address out of tokens (:class:`~sketchauth_service.credentials.FailureThrottle`) is refused
    with 429 before its key is looked at; a wrong key takes a token. The key's name becomes the
    audit trail's ``client`` for this request.
    """
    ring = state.keys.current()
    if not ring.keys and state.settings.dev_mode:
        AUDIT_CLIENT.set(DEV_CLIENT)
        request.state.api_key = DEV_CLIENT
        return None
    address = client_bucket(request.client.host if request.client else None)
    now = time.monotonic()
    wait = state.throttle.retry_after(address, now)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise ProblemError(
            429,
            "too-many-authentication-failures",
            f"too many requests with a wrong API key from this address: retry in {seconds} s",
            headers={"Retry-After": str(seconds)},
        )
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized(f"send {what} as 'Authorization: Bearer <key>'")
    key = ring.match(credentials.credentials)
    if key is None:
        state.throttle.fail(address, now)
        raise _unauthorized("the API key is not valid")
    AUDIT_CLIENT.set(key.name)
    request.state.api_key = key.name
    return key


def _check_scopes(key: ConfiguredKey | None, scopes: list[str]) -> None:
    """403 unless ``key`` holds one of ``scopes`` (none listed: any key; ``None``: local mode)."""
    if key is None or not scopes or any(key.allows(scope) for scope in scopes):
        return
    wanted = " or ".join(repr(scope) for scope in scopes)
    raise ProblemError(403, "forbidden", f"this endpoint needs a key with the {wanted} scope")


#: Set in the ASGI scope once a request's key was checked, before its body was decoded.
_KEY_CHECKED = "sketchauth.key_checked"


async def _require_scopes(security: SecurityScopes, request: Request, state: State, credentials: Credentials) -> None:
    if request.scope.get(_KEY_CHECKED):
        return
    _check_scopes(_authenticate(request, state, credentials), security.scopes)


async def _require_admin_scopes(
    security: SecurityScopes, request: Request, state: State, credentials: AdminCredentials
) -> None:
    if request.scope.get(_KEY_CHECKED):
        return
    key = _authenticate(request, state, credentials, what="an admin key")
    _check_scopes(key, security.scopes)


def _bearer_credentials(request: Request) -> HTTPAuthorizationCredentials | None:
    """What :class:`~fastapi.security.HTTPBearer` (``auto_error=False``) reads from the request."""
    scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
    if not scheme or not token or scheme.lower() != "bearer":
        return None
    return HTTPAuthorizationCredentials(scheme=scheme, credentials=token)


class KeyedRoute(ParsedBodyRoute):
    """A route whose API key and scope are decided before its body is decoded.

    FastAPI decodes the body before it solves the dependencies, so a request without a key met
    the JSON decoder first: malformed JSON answered 400 before the key was looked at, and a body
    the decoder choked on answered before authentication. Here the route's scope dependency
    (:func:`scoped`) runs first; FastAPI then finds it done (a mark in the ASGI scope).
    """

    _scopes: list[str] | None
    _what: str

    async def before_body(self, request: Request) -> None:
        try:
            scopes, what = self._scopes, self._what
        except AttributeError:  # first request: read once from the route's dependencies
            found = route_scopes(self)
            admin = any(dependant.call is _require_admin_scopes for dependant in self.dependant.dependencies)
            scopes = self._scopes = None if found is None else list(found)
            what = self._what = "an admin key" if admin else "an API key"
        if scopes is None:
            return
        state: ServiceState = request.app.state.service
        _check_scopes(_authenticate(request, state, _bearer_credentials(request), what=what), scopes)
        request.scope[_KEY_CHECKED] = True


def scoped(*scopes: str) -> Any:
    """The route dependency that lets through a key with any one of ``scopes`` (none: any key).

    ``scoped(ADMIN)`` documents the ``AdminKey`` bearer scheme, every other the API-key one.
    """
    check = _require_admin_scopes if scopes == (ADMIN,) else _require_scopes
    return Security(check, scopes=list(scopes))


def route_scopes(route: APIRoute) -> tuple[str, ...] | None:
    """The scopes a route accepts (``()``: any key), or ``None`` if it asks for no key at all."""
    for dependant in route.dependant.dependencies:
        if dependant.call in (_require_scopes, _require_admin_scopes):
            return tuple(dependant.own_oauth_scopes or ())
    return None


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every FastAPI route of ``app``, those of included routers too.

    FastAPI from 0.16x keeps an included router as one entry of ``app.routes`` and resolves its
    routes lazily; :func:`fastapi.routing.iter_route_contexts` lists them (earlier versions
    copied them into ``app.routes``).
    """
    iterate = getattr(fastapi.routing, "iter_route_contexts", None)
    found = [context.original_route for context in iterate(app.routes)] if iterate else list(app.routes)
    return [route for route in found if isinstance(route, APIRoute)]


def check_every_route_is_scoped(app: FastAPI) -> None:
    """``RuntimeError`` if a ``/v1`` route states no scopes: every endpoint there needs a key."""
    loose = [
        f"{sorted(route.methods or ())} {route.path}"
        for route in api_routes(app)
        if route.path.startswith("/v1/") and route_scopes(route) is None
    ]
    if loose:
        raise RuntimeError(f"routes without a scope (add dependencies=[scoped(...)]): {', '.join(loose)}")


def scope_alternatives(document: dict[str, Any]) -> None:
    """Publish "any one of these scopes" as OpenAPI alternatives: one requirement per scope.

    FastAPI writes a route's scopes into one requirement (``{"HTTPBearer": ["pin", "enrol"]}``),
    which OpenAPI reads as *all* of them; the service accepts any one.
    """
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            alternatives = []
            for requirement in operation.get("security", []):
                for scheme, scopes in requirement.items():
                    alternatives += [{scheme: [scope]} for scope in scopes] or [{scheme: []}]
            if alternatives:
                operation["security"] = alternatives
