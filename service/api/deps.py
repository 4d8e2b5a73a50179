"""Shared request dependencies as ``Annotated`` aliases: the service state and API-key checks.

API keys are bearer tokens whose SHA-256 digests are compared with :func:`hmac.compare_digest`
against *every* configured key's (no early exit), so the time taken does not depend on which
key, how much of one, or how long a key, matched.
Admin keys (``SKETCHAUTH_ADMIN_KEYS``) are a separate set and only they may reset a disabled
biometric.

The dependencies are ``async`` on purpose: FastAPI runs plain ``def`` dependencies in the
thread pool, a hand-off per dependency per request for work that takes microseconds.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.authenticator import Authenticator
from service.problems import ProblemError
from service.settings import Settings
from service.store import LockoutPolicy, Store

if TYPE_CHECKING:
    from service.pipelines import LoadedPipeline

__all__ = ["ServiceState", "State", "ApiKey", "AdminKey", "key_matches"]


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


async def _state(request: Request) -> ServiceState:
    return request.app.state.service


State = Annotated[ServiceState, Depends(_state)]

_bearer = HTTPBearer(auto_error=False, description="an API key from SKETCHAUTH_API_KEYS")
_admin_bearer = HTTPBearer(
    auto_error=False, scheme_name="AdminKey", description="an admin key from SKETCHAUTH_ADMIN_KEYS"
)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def key_matches(presented: str, keys: tuple[str, ...]) -> bool:
    """Constant-time membership: compares against every key whatever the outcome.

    SHA-256 digests are compared, not the keys: ``compare_digest`` is constant-time only for
    equal lengths, so comparing raw keys would let response times tell a key's length.
    """
    given = _digest(presented)
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(given, _digest(key))
    return matched


def _unauthorized(detail: str) -> ProblemError:
    return ProblemError(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})


async def _require_api_key(
    state: State, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    settings = state.settings
    if not settings.api_keys and settings.dev_mode:
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("send an API key as 'Authorization: Bearer <key>'")
    if not key_matches(credentials.credentials, settings.api_keys + settings.admin_keys):
        raise _unauthorized("the API key is not valid")


async def _require_admin_key(
    state: State, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_admin_bearer)]
) -> None:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("send an admin key as 'Authorization: Bearer <key>'")
    if not key_matches(credentials.credentials, state.settings.admin_keys):
        raise ProblemError(403, "forbidden", "this endpoint needs an admin key (SKETCHAUTH_ADMIN_KEYS)")


ApiKey = Depends(_require_api_key)
AdminKey = Depends(_require_admin_key)
