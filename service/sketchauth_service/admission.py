"""Admission control: a bound on the requests one worker has in flight, in all and per API key.

Every request but the health checks and ``/metrics`` takes a place when it arrives and gives it
back when its answer is sent. With ``limit`` requests in flight the next is answered at once,
before its body is read, with ``503 overloaded``; with ``per_key`` requests of one API key in
flight, that key's next request gets ``429 too-many-requests-in-flight``; both carry
``Retry-After``. So what the worker holds at once — bodies, parsed samples, argon2 memory, thread
pool places — is bounded by the limits whatever callers send, one client cannot take every place,
and a refusal costs the server almost nothing (no body read, no JSON parsed, no database call).

The key is recognised as authentication recognises it (:meth:`~sketchauth_service.credentials.KeyRing.match`,
its SHA-256 digest compared with every configured key's): a valid key counts under its name,
anything else — no key, a wrong key — under one shared name, so wrong keys cannot crowd out
valid ones. In local mode without keys every request is one client. The health checks are never
refused: a load balancer must see an overloaded worker as alive.

The counts live in the worker's event loop (no lock: they change only between awaits); with
``--workers N`` a machine admits up to N times the limits.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sketchauth_service.problems import problem_response

__all__ = ["UNAUTHENTICATED", "UNCOUNTED_PATHS", "Admission", "client_of"]

#: Paths never refused nor counted: liveness, readiness and metrics must answer under any load.
UNCOUNTED_PATHS = frozenset({"/livez", "/healthz", "/readyz", "/metrics"})
#: The one name every request without a valid key counts under.
UNAUTHENTICATED = "(no valid key)"
#: Seconds a refused client is told to wait: places free up as answers go out, in milliseconds to
#: seconds (one argon2 hash each), so one second is the shortest whole number that means "soon".
RETRY_AFTER_SECONDS = 1


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" else None
    return None


def client_of(scope: Scope) -> str:
    """The name the request counts under: its valid API key's name, else :data:`UNAUTHENTICATED`."""
    state = getattr(getattr(scope.get("app"), "state", None), "service", None)
    token = _bearer(scope)
    if state is None or token is None:
        return UNAUTHENTICATED
    key = state.keys.current().match(token)
    return UNAUTHENTICATED if key is None else key.name


class Admission:
    """ASGI middleware: at most ``limit`` requests in flight, at most ``per_key`` of one API key."""

    def __init__(self, app: ASGIApp, *, limit: int, per_key: int) -> None:
        if limit < 1 or per_key < 1:
            raise ValueError("the in-flight limits must be at least 1")
        self.app = app
        self.limit = limit
        self.per_key = per_key
        self.in_flight = 0
        self.by_client: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNCOUNTED_PATHS:
            await self.app(scope, receive, send)
            return
        client = client_of(scope)
        refusal = self._refusal(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self.in_flight += 1
        self.by_client[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.by_client[client] -= 1
            if self.by_client[client] <= 0:
                del self.by_client[client]

    def _refusal(self, client: str) -> Any:
        """The answer refusing a request of ``client`` now, or ``None`` to admit it."""
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        if self.in_flight >= self.limit:
            return problem_response(
                503,
                "overloaded",
                f"the service has {self.limit} requests in flight, as many as it takes "
                f"(SKETCHAUTH_MAX_IN_FLIGHT): retry after {RETRY_AFTER_SECONDS} s",
                headers=headers,
            )
        if self.by_client[client] >= self.per_key:
            return problem_response(
                429,
                "too-many-requests-in-flight",
                f"this API key has {self.per_key} requests in flight, as many as one key may have "
                f"(SKETCHAUTH_MAX_IN_FLIGHT_PER_KEY): wait for an answer, or retry after {RETRY_AFTER_SECONDS} s",
                headers=headers,
            )
        return None
