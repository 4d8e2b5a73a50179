"""Operations: one JSON log line per request and Prometheus metrics, with no sample, PIN or raw user id.

Request log
-----------
:class:`RequestLog` (pure ASGI) writes one JSON object per request to the ``sketchauth.access``
logger (standard error under ``sketchauth serve``)::

    {"ts": 1764012345.123, "request_id": "6f1c…", "method": "POST",
     "route": "/v1/users/{user_id}/verification", "user": "hmac-sha256:9b2e…", "client": "door-12",
     "status": 200, "outcome": "verified", "latency_ms": 41.7}

* ``request_id``: the caller's ``X-Request-ID`` when it is 1–64 characters of
  ``[A-Za-z0-9._-]``, else a fresh random one; echoed in the response's ``X-Request-ID``;
* ``route``: the route *template*, never the path (the path holds the raw user id);
* ``user``: HMAC-SHA256 of the user id under ``SKETCHAUTH_LOG_KEY`` (first 128 bits, hex), so
  lines about one user can be correlated without the log naming them; without the setting a
  random key per process is used (lines correlate only within one process's lifetime);
* ``client``: the name of the API key that acted; ``outcome``: ``verified`` / ``rejected`` for a
  verification's yes/no, the problem type (``too-many-failures``, ``unauthorized``…) for an
  error, ``ok`` otherwise. Bodies are never logged.

Metrics
-------
:class:`Metrics` keeps counters and histograms in the process and renders the Prometheus text
exposition format 0.0.4 itself (no client library needed). Every series carries a ``worker``
label (the process id): with ``--workers N`` a scrape reaches one worker, and the label keeps
the workers' counters apart instead of making them look like resets; ``sum without (worker)``
adds them up.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["METRICS", "Metrics", "RequestLog", "UserHasher", "access_logger", "route_of", "timed"]

access_log = logging.getLogger("sketchauth.access")

#: Histogram buckets (seconds): request latency, decode and argon2 time.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: Responses small enough to read their outcome from (``{"verified": …}``, problem+json).
_SNIFF_LIMIT = 4096

_HELP = {
    "sketchauth_http_requests_total": ("counter", "HTTP requests by route template, method, status and outcome"),
    "sketchauth_http_request_duration_seconds": ("histogram", "HTTP request latency by route template"),
    "sketchauth_audit_events_total": ("counter", "audit rows written, by event (lock and disable are the lockouts)"),
    "sketchauth_lockouts_total": ("counter", "lockouts imposed: kind=wait (a wait started) or kind=disable"),
    "sketchauth_decode_seconds": ("histogram", "secure-sketch decode time per verification (PIN stretching included)"),
    "sketchauth_argon2_seconds": ("histogram", "argon2id hash verification time per verification"),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Metrics:
    """Counters and histograms of one process, rendered in the Prometheus text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        self._histograms: dict[str, dict[tuple[tuple[str, str], ...], list[float]]] = {}

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._counters.setdefault(name, {})
            series[key] = series.get(key, 0.0) + amount

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """Add one observation: bucket counts (non-cumulative here), then sum and count."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._histograms.setdefault(name, {})
            cells = series.setdefault(key, [0.0] * (len(LATENCY_BUCKETS) + 2))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    cells[i] += 1
                    break
            cells[-2] += seconds
            cells[-1] += 1

    def value(self, name: str, **labels: str) -> float:
        """A counter's value, or a histogram's count (tests)."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            if name in self._counters:
                return self._counters[name].get(key, 0.0)
            return self._histograms.get(name, {}).get(key, [0.0])[-1]

    def render(self) -> str:
        """The exposition text (``text/plain; version=0.0.4``)."""
        worker = ("worker", str(os.getpid()))
        lines: list[str] = []
        with self._lock:
            for name, (kind, text) in _HELP.items():
                lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
                if kind == "counter":
                    for key, value in sorted(self._counters.get(name, {}).items()):
                        lines.append(f"{name}{_labels((*key, worker))} {_number(value)}")
                    continue
                for key, cells in sorted(self._histograms.get(name, {}).items()):
                    running = 0.0
                    for bound, count in zip(LATENCY_BUCKETS, cells, strict=False):
                        running += count
                        lines.append(f"{name}_bucket{_labels((*key, worker, ('le', repr(bound))))} {_number(running)}")
                    lines.append(f"{name}_bucket{_labels((*key, worker, ('le', '+Inf')))} {_number(cells[-1])}")
                    lines.append(f"{name}_sum{_labels((*key, worker))} {_number(cells[-2])}")
                    lines.append(f"{name}_count{_labels((*key, worker))} {_number(cells[-1])}")
        return "\n".join(lines) + "\n"

    def audit_written(self, events: Sequence[str]) -> None:
        """Count audit rows (called by the store as it writes them)."""
        for event in events:
            self.inc("sketchauth_audit_events_total", event=event)
            if event == "lock":
                self.inc("sketchauth_lockouts_total", kind="wait")
            elif event == "disable":
                self.inc("sketchauth_lockouts_total", kind="disable")


#: The process's metrics (one per worker process).
METRICS = Metrics()


@contextmanager
def timed(name: str, **labels: str) -> Iterator[None]:
    """Observe the wall time of the ``with`` body into histogram ``name`` (also when it raises)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        METRICS.observe(name, time.perf_counter() - start, **labels)


class UserHasher:
    """Keyed hash of user ids for logs: ``hmac-sha256:`` + the first 128 bits in hex."""

    def __init__(self, key: str | None) -> None:
        self._key = key.encode("utf-8") if key else secrets.token_bytes(32)

    def __call__(self, user_id: str) -> str:
        return "hmac-sha256:" + hmac.new(self._key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def access_logger() -> logging.Logger:
    """The request logger, writing bare JSON lines to standard error (set up once per process)."""
    if not any(getattr(h, "_sketchauth", False) for h in access_log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._sketchauth = True  # type: ignore[attr-defined]
        access_log.addHandler(handler)
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
    return access_log


#: A verification's two answers, recognised without parsing them (the common case, per request).
_ANSWERS = {b'{"verified":true}': "verified", b'{"verified":false}': "rejected"}


def _outcome(status: int, content_type: str, body: bytes) -> str:
    """``verified``/``rejected`` for a verification answer, the problem type for an error, else ``ok``."""
    if status == 200 and body in _ANSWERS:
        return _ANSWERS[body]
    if len(body) > _SNIFF_LIMIT or not body:
        return "ok" if status < 400 else f"http-{status}"
    try:
        data = json.loads(body)
    except ValueError:
        return "ok" if status < 400 else f"http-{status}"
    if not isinstance(data, dict):
        return "ok" if status < 400 else f"http-{status}"
    if status < 400 and isinstance(data.get("verified"), bool):
        return "verified" if data["verified"] else "rejected"
    if status >= 400 and "problem" in content_type and isinstance(data.get("type"), str):
        return data["type"].rstrip("/").rsplit("/", 1)[-1][:64]
    return "ok" if status < 400 else f"http-{status}"


class RequestLog:
    """ASGI middleware: one JSON log line and the request metrics per HTTP request."""

    def __init__(self, app: ASGIApp, *, hasher: UserHasher, enabled: bool = True, metrics: Metrics = METRICS) -> None:
        self.app = app
        self.hasher = hasher
        self.enabled = enabled
        self.metrics = metrics
        self.log = access_logger()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        request_id = _request_id(scope)
        status = 500
        content_type = ""
        body = bytearray()

        async def recording_send(message: Message) -> None:
            nonlocal status, content_type
            kind = message["type"]
            if kind == "http.response.body":
                if len(body) <= _SNIFF_LIMIT:
                    body.extend(message.get("body", b"")[: _SNIFF_LIMIT + 1 - len(body)])
            elif kind == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", ()), (b"x-request-id", request_id.encode("ascii"))]
                for name, value in headers:
                    if name.lower() == b"content-type":
                        content_type = value.decode("latin-1")
                        break
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            self._record(scope, request_id, status, _outcome(status, content_type, bytes(body)), start)

    def _record(self, scope: Scope, request_id: str, status: int, outcome: str, start: float) -> None:
        elapsed = time.perf_counter() - start
        route = route_of(scope)
        method = str(scope.get("method", ""))
        self.metrics.inc(
            "sketchauth_http_requests_total", route=route, method=method, status=str(status), outcome=outcome
        )
        self.metrics.observe("sketchauth_http_request_duration_seconds", elapsed, route=route)
        if not self.enabled:
            return
        entry: dict[str, Any] = {
            "ts": round(time.time(), 3),
            "request_id": request_id,
            "method": method,
            "route": route,
        }
        user_id = (scope.get("path_params") or {}).get("user_id")
        if isinstance(user_id, str):
            entry["user"] = self.hasher(user_id)
        state = scope.get("state") or {}
        if "api_key" in state:
            entry["client"] = state["api_key"]
        entry.update(status=status, outcome=outcome, latency_ms=round(elapsed * 1000, 2))
        self.log.info(json.dumps(entry, separators=(",", ":")))


def route_of(scope: Scope) -> str:
    """The request's route template (``/v1/users/{user_id}/verification``), or ``unmatched``.

    What logs name a request by: its path holds the raw user id, the template never does.
    """
    return getattr(scope.get("route"), "path", None) or "unmatched"


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    return secrets.token_hex(8)
