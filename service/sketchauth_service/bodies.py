"""Request bodies and connections: read whole, in bounded size and time, parsed strictly, off the event loop.

:class:`BodySizeLimit` is a pure-ASGI middleware that reads the body before the app runs and
replays it, so that the app never sees a partial body and every check holds whether or not the
client sent ``Content-Length``:

* size: more than ``limit`` bytes (announced or received) is ``413 body-too-large``;
* time: a body not received within ``timeout`` seconds of the request's start (a client that
  announces more than it sends, or trickles it) is ``408 body-timeout`` and the connection is
  closed. uvicorn bounds idle keep-alive connections (``timeout_keep_alive``) but not a body
  being received: without this a partial body held a connection (and a worker's slot) for as
  long as the client liked (> 25 s measured);
* framing: a ``Content-Length`` that is not a decimal integer is ``400 bad-content-length``.
  uvicorn's HTTP parser (h11, or httptools when installed) rejects bad framing itself before
  any ASGI app runs (a non-numeric, negative or list-valued ``Content-Length``, two differing
  ones, a malformed header line) with a plain-text ``400 Invalid HTTP request received.``;
  ``sketchauth serve`` runs uvicorn with :class:`ProblemHTTPProtocol`, which sends that answer
  as a ``400 bad-framing`` problem+json instead.

:class:`ParsedBodyRoute` (the route class of every router) then decodes a JSON body once and
validates it against the route's request model once — in a worker thread when the body is over
:data:`INLINE_BODY_BYTES`, so that a large enrolment (a 0.4 MB body: about 8 ms to decode and 7
to validate) does not hold the event loop, and with it ``/livez`` and every other request:

* encoding: a JSON body (``application/json`` or ``+json``) must be UTF-8 (RFC 8259 §8.1):
  otherwise ``400 invalid-encoding`` (the JSON parser behind the app would also accept UTF-16
  and UTF-32);
* duplicate members: an object repeating a member name (``{"replace": false, "replace": true}``)
  is ``422 duplicate-key``. RFC 8259 §4 leaves the meaning of repeated names open and parsers
  disagree (most keep the last one): a proxy or audit log reading the first member would see
  another request than the service, so the service refuses to guess;
* syntax: ``400 malformed-json``; the request model's rules: ``422`` (:mod:`sketchauth_service.problems`).

:class:`ProblemHTTPProtocol` also bounds what a connection may hold before it is a request:
its header section must be complete within ``header_timeout`` seconds of its first byte (of the
connection's opening, for the first request), or it is answered ``408 header-timeout`` and
closed — uvicorn itself waits forever, so a client sending headers a byte at a time held its
connection, and 1,100 such clients held every file descriptor of the worker. And a worker keeps
at most ``max_connections`` open, 192 below its file-descriptor limit (64 for its own files, 128
for a batch of accepts: asyncio accepts up to the listen backlog at once): a new connection beyond
that closes the connection that has waited longest for its header section (a slow or idle
client; never one whose request is being answered), or, when there is none, is closed itself.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import weakref
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

import anyio.to_thread
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from sketchauth_service.problems import PROBLEM_BASE, PROBLEM_MEDIA_TYPE, ProblemError, problem_response

__all__ = [
    "ACCEPT_BACKLOG",
    "INLINE_BODY_BYTES",
    "BodySizeLimit",
    "DuplicateKey",
    "ParsedBodyRoute",
    "ProblemHTTPProtocol",
    "connection_cap",
    "reject_duplicates",
]

#: JSON bodies up to this size are decoded and validated on the event loop (a verification's
#: 4,096 numbers take well under a millisecond); larger ones in a worker thread.
INLINE_BODY_BYTES = 16 * 1024
#: File descriptors a worker keeps beyond its connections: database, key file, logs, pipes.
RESERVED_DESCRIPTORS = 64
#: The listen backlog ``sketchauth serve`` asks for, which is also how many connections asyncio
#: accepts at once (one batch per readiness event) before any of them can be shed: descriptors are
#: kept for a whole batch.
ACCEPT_BACKLOG = 128


def _problem_bytes(status: int, reason: str, kind: str, detail: str) -> bytes:
    """A whole HTTP/1.1 answer with a problem+json body that closes the connection."""
    body = json.dumps(
        {"type": PROBLEM_BASE + kind, "title": reason, "status": status, "detail": detail}, separators=(",", ":")
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        f"content-type: {PROBLEM_MEDIA_TYPE}\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode("ascii")
    return head + body


def connection_cap(wanted: int) -> int:
    """``wanted``, held below the file-descriptor limit by :data:`RESERVED_DESCRIPTORS` and a
    batch of accepts (:data:`ACCEPT_BACKLOG`).

    The soft limit is first raised towards the hard one as far as ``wanted`` needs (raising a
    soft limit needs no privilege); whatever it ends at bounds the connections, so accepting one
    never fails for want of a descriptor.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    spare = RESERVED_DESCRIPTORS + ACCEPT_BACKLOG
    needed = wanted + spare
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - spare))


class ProblemHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP/1.1 protocol with problem+json ``400``s, a header timeout and a connection cap.

    The parser rejects a request it cannot frame before any ASGI code runs (so no middleware can
    answer it); this writes the answer uvicorn would, with an RFC 9457 body, and closes the
    connection as uvicorn does.

    Header timeout: a connection must complete its request's header section within
    :attr:`header_timeout` seconds of opening, and each later request within as long of its first
    byte; otherwise ``408 header-timeout`` and the connection is closed. Connection cap: with
    more than :attr:`max_connections` open, the newest closes the one that has waited longest for
    a request (idle or slow), else itself (``503``). Both are class settings, set per worker by
    :meth:`configure` (uvicorn builds one protocol object per connection, with no room for ours).
    """

    #: Seconds a request's header section may take (``SKETCHAUTH_HEADER_TIMEOUT_SECONDS``).
    header_timeout: float = 10.0
    #: Connections this worker keeps open (``SKETCHAUTH_MAX_CONNECTIONS``, under the fd limit).
    max_connections: int = 1000

    @classmethod
    def configure(cls, header_timeout: float, max_connections: int) -> None:
        """Set the worker's header timeout and connection cap (:func:`connection_cap`)."""
        cls.header_timeout = header_timeout
        cls.max_connections = connection_cap(max_connections)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._headers_of: Any = None  # the request cycle whose header section completed last
        #: Loop time since when this connection waits for a request (None: one is being handled).
        self.waiting_since: float | None = self.loop.time()
        self._start_header_timer()
        self._shed()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if self._header_timer is None and idle:
            self._start_header_timer()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._headers_of:
            self._headers_of = self.cycle  # a new request's header section is complete
            self.waiting_since = None
            self._stop_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle is None or self.cycle.response_complete:
            self.waiting_since = self.loop.time()
        else:  # a pipelined request was read meanwhile: it is being handled
            self._headers_of = self.cycle

    def _start_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timed_out)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        self._close_with(_HEADER_TIMEOUT)

    def _close_with(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _shed(self) -> None:
        """Over the cap: close the connection waiting longest for a request, else this one."""
        if len(self.connections) <= self.max_connections:
            return
        waiting = [c for c in self.connections if c is not self and getattr(c, "waiting_since", None) is not None]
        if waiting:
            min(waiting, key=lambda c: c.waiting_since)._close_with(_HEADER_TIMEOUT)
        else:
            self._close_with(_TOO_MANY_CONNECTIONS)

    def send_400_response(self, msg: str) -> None:
        self._close_with(_BAD_FRAMING)


_BAD_FRAMING = _problem_bytes(
    400,
    "Bad Request",
    "bad-framing",
    "the request is not valid HTTP/1.1 (framing: Content-Length must be one decimal integer, "
    "at most one Content-Length or Transfer-Encoding; header syntax): fix the request",
)
_HEADER_TIMEOUT = _problem_bytes(
    408,
    "Request Timeout",
    "header-timeout",
    "the request's header section did not arrive in time (SKETCHAUTH_HEADER_TIMEOUT_SECONDS): send it whole",
)
_TOO_MANY_CONNECTIONS = _problem_bytes(
    503,
    "Service Unavailable",
    "too-many-connections",
    "the service has as many connections open as it keeps (SKETCHAUTH_MAX_CONNECTIONS): retry shortly",
)


#: Member names short and plain enough to be quoted back in a problem's detail.
_QUOTABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}")


class DuplicateKey(ValueError):
    """A JSON object repeats a member name."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` ``object_pairs_hook``: the object as a dict, :class:`DuplicateKey` if a name repeats."""
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise DuplicateKey(name)
        result[name] = value
    return result


#: Built once: ``json.loads`` with a hook builds a new decoder per call.
_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=reject_duplicates)


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media: bytes = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))
    return False


class BodySizeLimit:
    """ASGI middleware: the body whole, within ``limit`` bytes and ``timeout`` seconds, strict JSON."""

    def __init__(self, app: ASGIApp, limit: int, timeout: float = 5.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                if not value.isdigit():
                    await self._answer(
                        scope,
                        receive,
                        send,
                        400,
                        "bad-content-length",
                        "Content-Length must be one decimal integer: the number of bytes in the body",
                    )
                    return
                if int(value) > self.limit:
                    await self._reject_size(scope, receive, send)
                    return
        try:
            body = await self._read_within(receive)
        except TimeoutError:
            await self._answer(
                scope,
                receive,
                send,
                408,
                "body-timeout",
                f"the request body was not received within {self.timeout:g} s; send it whole without pausing",
                headers={"Connection": "close"},
            )
            return
        if body is None:  # the client went away mid-body: nothing to answer
            return
        if len(body) > self.limit:
            await self._reject_size(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read_within(self, receive: Receive) -> bytes | None:
        """:meth:`_read` within ``timeout`` seconds, else ``TimeoutError``.

        One timer handle that cancels this task when it fires: what ``asyncio.timeout`` does,
        without its bookkeeping (``wait_for`` also wraps the read in a new task). Measured per
        request: ``wait_for`` about 50 µs, ``asyncio.timeout`` 33 µs, this 7 µs.
        """
        task = asyncio.current_task()
        if task is None:  # not inside a task (never under an ASGI server): one of its own
            return await asyncio.wait_for(self._read(receive), self.timeout)
        loop = asyncio.get_running_loop()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        handle = loop.call_at(loop.time() + self.timeout, expire)
        try:
            return await self._read(receive)
        except asyncio.CancelledError:
            if not expired or task.uncancel() > 0:  # not ours, or also cancelled by someone else
                raise
            raise TimeoutError from None  # our own cancellation: answered, not propagated
        finally:
            handle.cancel()

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body, or only its first ``limit + 1`` bytes when it is longer; ``None`` on disconnect."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit or not message.get("more_body", False):
                return b"".join(chunks)

    async def _reject_size(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._answer(scope, receive, send, 413, "body-too-large", f"request body exceeds {self.limit} bytes")

    async def _answer(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        kind: str,
        detail: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        response = problem_response(status, kind, detail, instance=scope.get("path"), headers=headers)
        await response(scope, receive, send)


# -- the body of a route: decoded and validated once, off the event loop when large ----------------------------


def _malformed(position: int, why: str) -> RequestValidationError:
    """The error FastAPI raises for a body that is not JSON (answered ``400 malformed-json``)."""
    error = {"type": "json_invalid", "loc": ("body", position), "msg": "JSON decode error", "ctx": {"error": why}}
    return RequestValidationError([{**error, "input": {}}])


def decode_and_validate(field: Any, body: bytes) -> Any:
    """``body`` decoded as strict JSON and validated by the route's body ``field``: the request model
    (or, when it does not validate, the decoded value, for FastAPI to refuse after the key checks).

    Raises :class:`~sketchauth_service.problems.ProblemError` (not UTF-8, a repeated member name) or
    :class:`~fastapi.exceptions.RequestValidationError` (not JSON, nested too deeply, an integer
    literal too long to convert), each answered as the problem the service documents. Every
    route of the API decides the API key first (:meth:`ParsedBodyRoute.before_body`).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProblemError(
            400,
            "invalid-encoding",
            f"the request body is not UTF-8 (invalid byte at offset {exc.start}); send JSON text encoded as UTF-8",
        ) from None
    try:
        value = _STRICT_DECODER.decode(text)
    except DuplicateKey as dup:
        name = f"{dup.name!r}" if _QUOTABLE.fullmatch(dup.name) else "a member name"
        raise ProblemError(
            422, "duplicate-key", f"an object in the request body has {name} more than once; send each member once"
        ) from None
    except json.JSONDecodeError as exc:
        raise _malformed(exc.pos, exc.msg) from None
    except RecursionError:
        raise _malformed(0, "nested too deeply") from None
    except ValueError:  # an integer literal longer than Python converts (sys.get_int_max_str_digits)
        raise _malformed(0, "a number has too many digits") from None
    validated, errors = field.validate(value, {}, loc=("body",))
    # Invalid: the decoded value goes on, and FastAPI validates it again and answers its 422.
    return value if errors else validated


_DECODING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


def _decoding_limiter() -> anyio.CapacityLimiter:
    """The running loop's one place for decoding large bodies (a limiter belongs to its loop).

    Decoding and validating hold the GIL for milliseconds at a time (C code that never releases
    it); with many at once the event loop waited behind each of them in turn.
    """
    loop = asyncio.get_running_loop()
    limiter = _DECODING.get(loop)
    if limiter is None:
        limiter = _DECODING[loop] = anyio.CapacityLimiter(1)
    return limiter


class _ValidatedRequest(Request):
    """The request with its body already read, decoded and validated (FastAPI then takes it as is)."""

    def __init__(self, request: Request, body: bytes, value: Any) -> None:
        super().__init__(request.scope, request.receive)
        self._raw = body
        self._value = value

    async def body(self) -> bytes:
        return self._raw

    async def json(self) -> Any:
        return self._value


class ParsedBodyRoute(APIRoute):
    """A route whose JSON body is decoded (strictly) and validated once, in a worker thread when large.

    FastAPI decodes and validates a body on the event loop, where a 0.4 MB enrolment holds every
    other request for about 15 ms; 64 of them at once held ``/livez`` for over 2 s. Here both
    happen in :func:`decode_and_validate`, off the loop for bodies over
    :data:`INLINE_BODY_BYTES`; FastAPI then receives the validated model, which it accepts as is.
    Bodies not labelled JSON go to FastAPI untouched (the route answers them ``415``).
    """

    async def before_body(self, request: Request) -> None:
        """Runs before the body is decoded (:class:`~sketchauth_service.api.deps.KeyedRoute`: the key checks)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        field = self.body_field
        if field is None:
            return handler

        async def parsed_handler(request: Request) -> Response:
            await self.before_body(request)
            body = await request.body()
            if not body or not _is_json(request.scope):
                return await handler(request)
            work = partial(decode_and_validate, field, body)
            if len(body) <= INLINE_BODY_BYTES:
                value = work()
            else:  # one body at a time: more threads decoding would only contend with the loop for the GIL
                value = await anyio.to_thread.run_sync(work, limiter=_decoding_limiter())
            return await handler(_ValidatedRequest(request, body, value))

        return parsed_handler
