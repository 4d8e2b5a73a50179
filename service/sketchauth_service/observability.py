"""Operations: one JSON log line per request and Prometheus metrics, with no sample, PIN or raw user id.

Request log
-----------
:class:`RequestLog` (pure ASGI) writes one JSON object per request to the ``sketchauth.access``
logger (standard error under ``sketchauth serve``)::

    {"ts": 1764012345.123, "level": "info", "logger": "sketchauth.access", "message": "request",
     "request_id": "6f1c…", "method": "POST",
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
:class:`Metrics` keeps the service's counters and histograms in a `prometheus_client
<https://prometheus.github.io/client_python/>`_ registry and renders the text exposition format
0.0.4 with it. With one worker the registry also carries the client's process, platform and
garbage-collector collectors (``process_resident_memory_bytes``, ``python_gc_collections_total``…).
With ``--workers N`` the workers share a multiprocess directory (``PROMETHEUS_MULTIPROC_DIR``,
made fresh by ``sketchauth serve`` at every start): a scrape reaching any worker answers for the
whole service — counters and histograms summed over the workers, no per-process label, so a restart
adds no new series. The process figures are then kept by each worker every few seconds
(:class:`ProcessSampler`): resident memory and open descriptors summed over the live workers, CPU
seconds and GC collections over all of them.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import logging
import os
import re
import resource
import secrets
import threading
import time
import traceback
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, Literal, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "METRICS",
    "MULTIPROC_ENV",
    "JsonFormatter",
    "Metrics",
    "ProcessSampler",
    "RequestLog",
    "UserHasher",
    "access_logger",
    "json_line",
    "log_settings",
    "logging_config",
    "multiprocess_dir",
    "route_of",
    "timed",
]

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
    # Process figures of every worker (multiprocess mode; one worker has prometheus_client's collectors).
    "process_resident_memory_bytes": ("livesum", "resident memory of the live workers, in bytes"),
    "process_open_fds": ("livesum", "open file descriptors of the live workers"),
    "process_cpu_seconds_total": ("sum", "user and system CPU time of every worker since start, in seconds"),
    "python_gc_collections_total": ("sum", "garbage collections of every worker, by generation"),
}
#: How the workers' values of a gauge add up in multiprocess mode (prometheus_client's modes).
_GaugeMode = Literal["sum", "livesum"]
#: Set by ``sketchauth serve`` with several workers: the directory their metrics share.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The directory the workers share their metrics in, or ``None`` in a single process."""
    return os.environ.get(MULTIPROC_ENV) or None


class Metrics:
    """The service's counters and histograms (names and help texts: ``_HELP``) in a registry.

    ``inc``/``observe`` take the labels as keywords; a series is created at its first use.
    ``render()`` is the exposition text of this registry (in multiprocess mode: of every worker).
    """

    def __init__(self, *, collectors: bool = False) -> None:
        # Function-level import: prometheus_client reads PROMETHEUS_MULTIPROC_DIR when it is first
        # imported, which for a worker must be after ``sketchauth serve`` set it (start-up).
        import prometheus_client as prom  # start-up: reads PROMETHEUS_MULTIPROC_DIR at first import

        self._prom = prom
        prom.disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: one timestamp per series is noise here
        self._lock = threading.Lock()
        self._families: dict[tuple[str, tuple[str, ...]], Any] = {}
        #: Series by name and label items as passed: a request's six updates skip the label
        #: sorting and prometheus_client's label look-up (its cost per update is most of ours).
        self._series_of: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
        shared = multiprocess_dir()
        self._own = prom.CollectorRegistry(auto_describe=True)
        if shared is None:
            self._scrape = self._own
            if collectors:
                prom.ProcessCollector(registry=self._own)
                prom.PlatformCollector(registry=self._own)
                prom.GCCollector(registry=self._own)
        else:
            # Values go to the shared files; a scrape collects every worker's files.
            from prometheus_client import multiprocess  # start-up: as above

            self._scrape = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(self._scrape, path=shared)  # type: ignore[no-untyped-call]

    def _family(self, name: str, labels: tuple[str, ...]) -> Any:
        key = (name, labels)
        family = self._families.get(key)
        if family is None:
            with self._lock:
                family = self._families.get(key)
                if family is None:
                    kind, text = _HELP[name]
                    if kind == "counter":
                        family = self._prom.Counter(name, text, labels, registry=self._own)
                    elif kind == "histogram":
                        family = self._prom.Histogram(name, text, labels, buckets=LATENCY_BUCKETS, registry=self._own)
                    else:
                        mode = cast(_GaugeMode, kind)
                        family = self._prom.Gauge(name, text, labels, registry=self._own, multiprocess_mode=mode)
                    self._families[key] = family
        return family

    def _series(self, name: str, labels: dict[str, str]) -> Any:
        key = (name, tuple(labels.items()))
        series = self._series_of.get(key)
        if series is None:
            names = tuple(sorted(labels))
            family = self._family(name, names)
            series = family.labels(*(labels[n] for n in names)) if names else family
            self._series_of[key] = series  # one assignment: safe across threads (a race builds it twice)
        return series

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        self._series(name, labels).inc(amount)

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """Add one observation to histogram ``name``."""
        self._series(name, labels).observe(seconds)

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set gauge ``name`` (process figures in multiprocess mode)."""
        self._series(name, labels).set(value)

    def value(self, name: str, **labels: str) -> float:
        """A counter's value, or a histogram's count, in this registry (tests)."""
        kind = _HELP[name][0]
        sample = f"{name}_count" if kind == "histogram" else name
        found = self._own.get_sample_value(sample, labels)
        return float(found or 0.0)

    def render(self) -> str:
        """The exposition text (``text/plain; version=0.0.4``)."""
        return self._prom.generate_latest(self._scrape).decode("utf-8")

    def audit_written(self, events: Sequence[str]) -> None:
        """Count audit rows (called by the store as it writes them)."""
        for event in events:
            self.inc("sketchauth_audit_events_total", event=event)
            if event == "lock":
                self.inc("sketchauth_lockouts_total", kind="wait")
            elif event == "disable":
                self.inc("sketchauth_lockouts_total", kind="disable")


class ProcessSampler:
    """Keeps a worker's process figures in the shared metrics (multiprocess mode only).

    prometheus_client's process and GC collectors read the process that answers the scrape, which
    with several workers is any one of them; instead every worker writes its own figures every
    ``interval`` seconds and the scrape adds them up (live workers for memory and descriptors).
    """

    def __init__(self, metrics: Metrics, interval: float = 5.0) -> None:
        self.metrics = metrics
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sketchauth-process-sampler", daemon=True)

    def start(self) -> ProcessSampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """Write this process's resident memory, open descriptors, CPU seconds and GC collections."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.metrics.set("process_cpu_seconds_total", usage.ru_utime + usage.ru_stime)
        self.metrics.set("process_resident_memory_bytes", _resident_bytes())
        with suppress(OSError):
            self.metrics.set("process_open_fds", len(os.listdir("/proc/self/fd")))
        for generation, stats in enumerate(gc.get_stats()):
            self.metrics.set("python_gc_collections_total", stats["collections"], generation=str(generation))


def _resident_bytes() -> float:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return float(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


#: The process's metrics (one per worker process).
METRICS = Metrics(collectors=True)


class timed:
    """Observe the wall time of the ``with`` body into histogram ``name`` (also when it raises).

    A class rather than a ``@contextmanager`` generator: it runs twice per verification, and a
    generator-based context manager costs several calls more each time.
    """

    __slots__ = ("_labels", "_name", "_start")

    def __init__(self, name: str, **labels: str) -> None:
        self._name = name
        self._labels = labels
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        METRICS.observe(self._name, time.perf_counter() - self._start, **self._labels)


class UserHasher:
    """Keyed hash of user ids for logs: ``hmac-sha256:`` + the first 128 bits in hex."""

    def __init__(self, key: str | None) -> None:
        self._key = key.encode("utf-8") if key else secrets.token_bytes(32)

    def __call__(self, user_id: str) -> str:
        return "hmac-sha256:" + hmac.new(self._key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def json_line(level: str, logger: str, message: str) -> str:
    """One log line of the service's format, for what is written before logging is set up."""
    return json.dumps(
        {"ts": round(time.time(), 3), "level": level, "logger": logger, "message": message}, separators=(",", ":")
    )


class JsonFormatter(logging.Formatter):
    """Every log record as one JSON object: ``ts``, ``level``, ``logger``, ``message``.

    A record with an exception gets ``exc_type`` and ``stack`` (``file:line function`` frames)
    but never the exception's message or a formatted traceback: either can quote a value from
    deep in a decode — a sample, a PIN, an embedding coordinate. Records whose message is
    already a JSON object (the request log) are written as that object.
    """

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if message.startswith("{") and record.name == access_log.name:
            return message
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message,
        }
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc_type"] = record.exc_info[0].__name__
            frames = traceback.extract_tb(record.exc_info[2])
            entry["stack"] = [f"{frame.filename}:{frame.lineno} {frame.name}" for frame in frames]
        return json.dumps(entry, separators=(",", ":"), default=str)


def logging_config(level: str = "info") -> dict[str, Any]:
    """``logging.config.dictConfig`` of ``sketchauth serve``: every logger writes JSON to stderr.

    uvicorn applies it in the server process and in each worker (its ``log_config``), so the
    server's own lines (start, stop, bad requests), the service's warnings and the request log
    share one format; uvicorn's access log stays off (it prints paths, which hold user ids).
    """
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"stderr": handler},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            access_log.name: {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        },
    }


def log_settings(view: dict[str, Any]) -> None:
    """The start-up ``settings`` line (keys by name, secrets replaced): a request-log line with ``event``."""
    entry = {
        "ts": round(time.time(), 3),
        "level": "info",
        "logger": access_log.name,
        "message": "settings",
        "event": "settings",
        **view,
    }
    access_logger().info(json.dumps(entry, default=str))


def access_logger() -> logging.Logger:
    """The request logger, writing bare JSON lines to standard error (set up once per process)."""
    if not any(isinstance(h, logging.StreamHandler) for h in access_log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
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
    kind = data.get("type")
    if status >= 400 and "problem" in content_type and isinstance(kind, str):
        return kind.rstrip("/").rsplit("/", 1)[-1][:64]
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
            "level": "info",
            "logger": access_log.name,
            "message": "request",
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
            text: str = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    return secrets.token_hex(8)
