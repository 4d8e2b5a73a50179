"""Shared request dependencies as ``Annotated`` aliases: the service state and API-key checks.

API keys are bearer tokens whose SHA-256 digests are compared with :func:`hmac.compare_digest`
against *every* configured key's (no early exit), so the time taken does not depend on which
key, how much of one, or how long a key, matched. Keys are named and scoped
(:mod:`service.credentials`): ``UserKey`` asks for ``verify`` on verification routes and
``enrol`` on the other ``/v1/users`` routes, ``AdminKey`` for ``admin``. Failed
authentications are throttled per client address (429 with ``Retry-After``).

The dependencies are ``async`` on purpose: FastAPI runs plain ``def`` dependencies in the
thread pool, a hand-off per dependency per request for work that takes microseconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.authenticator import Authenticator
from service.credentials import ADMIN, ENROL, VERIFY, FailureThrottle, KeySource, client_bucket
from service.credentials import ApiKey as ConfiguredKey
from service.problems import ProblemError
from service.settings import Settings
from service.store import AUDIT_CLIENT, LockoutPolicy, Store

if TYPE_CHECKING:
    from service.pipelines import LoadedPipeline

__all__ = ["AdminKey", "ApiKey", "ServiceState", "State", "UserKey"]


@dataclass(slots=True)
class ServiceState:
    """Everything a request needs, built once in the app's lifespan."""

    settings: Settings
    store: Store
    authenticator: Authenticator
    policy: LockoutPolicy
    #: Unix time in seconds; tests pass a controllable clock to step through waits.
    clock: Callable[[], float] = field(default=time.time)
    #: Feature pipelines by name (``SKETCHAUTH_PIPELINES``), loaded once when the app was built.
    pipelines: dict[str, LoadedPipeline] = field(default_factory=dict)
    #: The API keys in force (re-reads ``SKETCHAUTH_API_KEY_FILE`` when it changes).
    keys: KeySource = field(default_factory=KeySource)
    #: Failed authentications per client address.
    throttle: FailureThrottle = field(default_factory=lambda: FailureThrottle(1.0, 10))


async def _state(request: Request) -> ServiceState:
    return request.app.state.service


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
#: ``/v1/users`` routes (by their last path segment) that need the ``verify`` scope; every
#: other route of that router changes or reads an enrolment and needs ``enrol``.
_VERIFY_ROUTES = frozenset({"verification", "key", "pin"})  # attempts: verification, key release, PIN change


def _unauthorized(detail: str) -> ProblemError:
    return ProblemError(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})


def _authenticate(
    request: Request, state: ServiceState, credentials: HTTPAuthorizationCredentials | None
) -> ConfiguredKey | None:
    """The configured key the request presents (``None``: local mode without keys, everyone trusted).

    A client address out of tokens (:class:`~service.credentials.FailureThrottle`) is refused
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
        raise _unauthorized("send an API key as 'Authorization: Bearer <key>'")
    key = ring.match(credentials.credentials)
    if key is None:
        state.throttle.fail(address, now)
        raise _unauthorized("the API key is not valid")
    AUDIT_CLIENT.set(key.name)
    request.state.api_key = key.name
    return key


def _forbidden(scope: str) -> ProblemError:
    return ProblemError(403, "forbidden", f"this endpoint needs a key with the {scope!r} scope")


async def _require_api_key(request: Request, state: State, credentials: Credentials) -> None:
    """Any configured key, whatever its scopes (``GET /v1/schemes``)."""
    _authenticate(request, state, credentials)


async def _require_user_key(request: Request, state: State, credentials: Credentials) -> None:
    """A key with the scope the ``/v1/users`` route needs: ``verify`` to verify, ``enrol`` otherwise."""
    key = _authenticate(request, state, credentials)
    route = request.scope.get("route")
    last = getattr(route, "path", request.url.path).rstrip("/").rsplit("/", 1)[-1]
    scope = VERIFY if last in _VERIFY_ROUTES else ENROL
    if key is not None and not key.allows(scope):
        raise _forbidden(scope)


async def _require_admin_key(request: Request, state: State, credentials: AdminCredentials) -> None:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("send an admin key as 'Authorization: Bearer <key>'")
    key = _authenticate(request, state, credentials)
    if key is None or not key.allows(ADMIN):
        raise ProblemError(403, "forbidden", "this endpoint needs a key with the 'admin' scope (SKETCHAUTH_ADMIN_KEYS)")


ApiKey = Depends(_require_api_key)
UserKey = Depends(_require_user_key)
AdminKey = Depends(_require_admin_key)
