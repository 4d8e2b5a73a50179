"""A typed Python client for the sketchauth HTTP service (``sketchauth serve``).

:class:`Client` (blocking) and :class:`AsyncClient` (``async``/``await``) cover every endpoint a
relying party or an operator uses: enrolment, verification, key release, PIN change, the entropy
report, revocation, the scheme list, health, and the admin endpoints (throttle reset, audit trail,
pepper status and rotation). Both speak to the service over `httpx <https://www.python-httpx.org>`_
(the ``service`` extra installs it; nothing here runs server code).

Errors come back as the library's exception classes. Every 4xx/5xx answer of the service is an
RFC 9457 ``application/problem+json`` body; the client turns it into a :class:`ServiceError`
whose subclass says what happened and which is also the library's own class where one fits:
a ``422`` about parameters is a :class:`ParameterError`, one about a sample a
:class:`SampleError`, so code written against the library catches the same things whether it
runs the schemes in process or over HTTP::

    from sketchauth.client import Client, Throttled

    with Client("https://auth.example", api_key=KEY) as api:
        api.enrol("alice", "interval", [[120, 33, 200, 71]], params={"n": 256, "v": 8, "features": 4})
        try:
            ok = api.verify("alice", [123, 30, 205, 71])
        except Throttled as wait:
            sleep(wait.retry_after or 1)

A failed verification is ``False``, not an exception: the service answers an unknown user, a far
sample and a wrong PIN alike (``200 {"verified": false}``), and so does the client.

Samples may be anything the library takes: lists, tuples, numpy arrays (float or integer
vectors, byte strings as ``bytes``), Python sets of integers; they are sent as JSON arrays.
Released keys come back as ``bytes`` (the service's unpadded base64url decoded).

``Client.raw`` makes the same user calls and hands back the service's :class:`httpx.Response`
unread, for code that needs the status, headers or problem body itself (the project's own HTTP
tests go through it).
"""

from __future__ import annotations

import base64
import math
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Self, TypeVar

from sketchauth.errors import ParameterError, SampleError, SketchAuthError

try:
    import httpx
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "sketchauth.client needs httpx: pip install 'sketchauth[service]' (or 'pip install httpx')"
    ) from exc

__all__ = [
    "AsyncClient",
    "BadRequest",
    "Client",
    "Conflict",
    "Enrolment",
    "Forbidden",
    "InvalidParameters",
    "InvalidSample",
    "Locked",
    "NotFound",
    "RawCalls",
    "ServiceError",
    "ServiceUnavailable",
    "Throttled",
    "Unauthorized",
]

#: The service's problem types are ``<base><kind>``; the kind is what the client reads.
_PROBLEM_PREFIX = "problems/"
T = TypeVar("T")


# -- errors -----------------------------------------------------------------------------------------------
class ServiceError(SketchAuthError):
    """The service refused a request (an RFC 9457 problem+json answer).

    ``status`` is the HTTP status, ``kind`` the problem type's last segment (``not-enrolled``,
    ``invalid-parameters``…), ``detail`` the service's words on what to change, ``errors`` the
    per-field list of a validation failure (``{"loc", "msg"}``), ``retry_after`` the seconds a
    ``Retry-After`` header asked for.
    """

    def __init__(
        self,
        status: int,
        kind: str,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {kind}: {detail}")
        self.status = status
        self.kind = kind
        self.detail = detail
        self.errors = errors or []
        self.retry_after = retry_after


class BadRequest(ServiceError):
    """400/413/415/422 not about parameters or samples: malformed JSON, too large, wrong type."""


class InvalidParameters(BadRequest, ParameterError):
    """422 about the scheme or its parameters (unknown scheme, a bound broken, a wrong type)."""


class InvalidSample(BadRequest, SampleError):
    """422 about a sample: wrong count, length, kind or range."""


class Unauthorized(ServiceError):
    """401: the API key is missing or wrong."""


class Forbidden(ServiceError):
    """403: the API key lacks the scope the endpoint needs."""


class NotFound(ServiceError):
    """404: no enrolment (report, revoke, admin reset) or no audit trail for the user id."""


class Conflict(ServiceError):
    """409: already enrolled (without ``replace``), an enrolment without key release, a changed pipeline."""


class Locked(ServiceError):
    """423: the biometric is disabled after repeated failures, until re-enrolment or an admin reset."""


class Throttled(ServiceError):
    """429: wait ``retry_after`` seconds (failed attempts, wrong API keys, or too many requests)."""


class ServiceUnavailable(ServiceError):
    """5xx: the service or its database cannot answer now (``retry_after`` when it says when)."""


_BY_STATUS: dict[int, type[ServiceError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    423: Locked,
    429: Throttled,
}
_SAMPLE_KINDS = frozenset(
    {"invalid-sample", "wrong-sample-count", "too-many-samples", "sample-too-long", "invalid-second-sample"}
)
_PARAMETER_KINDS = frozenset({"invalid-parameters", "unknown-scheme", "unknown-pipeline"})


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _error_class(status: int, kind: str) -> type[ServiceError]:
    if status >= 500:
        return ServiceUnavailable
    if kind in _PARAMETER_KINDS:
        return InvalidParameters
    if kind in _SAMPLE_KINDS:
        return InvalidSample
    return _BY_STATUS.get(status, BadRequest)


def _raise_for_problem(response: httpx.Response) -> None:
    """Raise the :class:`ServiceError` subclass a non-2xx answer stands for."""
    if response.is_success:
        return
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    kind = str(body.get("type", "")).rsplit(_PROBLEM_PREFIX, 1)[-1] or f"http-{response.status_code}"
    detail = str(body.get("detail") or body.get("title") or response.reason_phrase)
    errors = body.get("errors") if isinstance(body.get("errors"), list) else None
    raise _error_class(response.status_code, kind)(
        response.status_code, kind, detail, errors=errors, retry_after=_retry_after(response)
    )


# -- request bodies -----------------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    """Samples as JSON values: numpy arrays/scalars, bytes, sets and generators become lists."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return list(bytes(value))
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, (str, Mapping)):
        return value
    if isinstance(value, Iterable):
        return [_jsonable(v) for v in value]
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _without_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class Enrolment:
    """What the service answered to an enrolment (no helper data or hash ever leaves it)."""

    user_id: str
    scheme: str
    params: dict[str, Any]
    pin: bool
    replaced: bool
    report: dict[str, Any]
    pipeline: str | None = None
    second: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Enrolment:
        return cls(
            user_id=body["user_id"],
            scheme=body["scheme"],
            params=dict(body.get("params", {})),
            pin=bool(body.get("pin", False)),
            replaced=bool(body.get("replaced", False)),
            report=dict(body.get("report", {})),
            pipeline=body.get("pipeline"),
            second=body.get("second"),
            raw=body,
        )


@dataclass(frozen=True, slots=True)
class _Request(Generic[T]):
    """One call: method, path, JSON body, query, and how to read the answer (shared by both clients)."""

    method: Literal["GET", "POST", "DELETE"]
    path: str
    read: Callable[[Any], T]
    body: dict[str, Any] | None = None
    query: dict[str, str] | None = None


def _user_path(user_id: str, tail: str = "", *, admin: bool = False) -> str:
    if not isinstance(user_id, str) or not user_id:
        raise ParameterError("user_id must be a non-empty string (the relying party's opaque id)")
    quoted = urllib.parse.quote(user_id, safe="")
    return f"/v1/{'admin/' if admin else ''}users/{quoted}{tail}"


def _verified(body: Any) -> bool:
    return bool(body["verified"])


def _key_from(body: Any) -> bytes | None:
    key = body.get("key")
    if not body.get("verified") or not isinstance(key, str):
        return None
    return base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))


def _events(body: Any) -> list[dict[str, Any]]:
    return list(body["events"])


def _ok(body: Any) -> bool:
    return isinstance(body, dict) and body.get("status") == "ok"


def _object(body: Any) -> dict[str, Any]:
    return dict(body)


def _nothing(body: Any) -> None:
    return None


def _enrol(
    user_id: str,
    scheme: str,
    samples: Iterable[Any],
    params: Mapping[str, Any] | None,
    pin: str | None,
    second: Mapping[str, Any] | None,
    replace: bool,
) -> _Request[Enrolment]:
    body: dict[str, Any] = {"scheme": scheme, "params": dict(params or {}), "samples": _jsonable(list(samples))}
    if pin is not None:
        body["pin"] = pin
    if second is not None:
        body["second"] = {**second, "samples": _jsonable(list(second["samples"]))}
    if replace:
        body["replace"] = True
    return _Request("POST", _user_path(user_id, "/enrolment"), Enrolment.from_json, body)


def _attempt(
    user_id: str, tail: str, read: Callable[[Any], T], sample: Any, pin: str | None, second: Any, **extra: Any
) -> _Request[T]:
    body = _without_none(
        sample=_jsonable(sample), pin=pin, second_sample=None if second is None else _jsonable(second), **extra
    )
    return _Request("POST", _user_path(user_id, tail), read, body)


def _audit(user_id: str, limit: int) -> _Request[list[dict[str, Any]]]:
    return _Request("GET", _user_path(user_id, "/audit", admin=True), _events, query={"limit": str(limit)})


def _rotation(batch_size: int | None, max_batches: int | None) -> _Request[dict[str, Any]]:
    body = _without_none(batch_size=batch_size, max_batches=max_batches)
    return _Request("POST", "/v1/admin/pepper/rotation", _object, body)


def _answer(request: _Request[T], response: httpx.Response) -> T:
    _raise_for_problem(response)
    return request.read(None if response.status_code == 204 else response.json())


def _http_args(api_key: str | None, base_url: str, timeout: float) -> dict[str, Any]:
    if not api_key:
        raise ParameterError("api_key is required: the service answers 401 to requests without a key")
    return {"base_url": base_url, "headers": _bearer(api_key), "timeout": timeout}


def _bearer(api_key: str | None) -> dict[str, str] | None:
    """The authorisation header of ``api_key`` (``None``: send the HTTP client's own headers)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else None


def _send(http: httpx.Client, headers: dict[str, str] | None, request: _Request[Any]) -> httpx.Response:
    return http.request(request.method, request.path, json=request.body, params=request.query, headers=headers)


class RawCalls:
    """The :class:`Client`'s user calls, answering the service's :class:`httpx.Response` unread.

    Reached as ``Client.raw``. Each request is the one the matching :class:`Client` method sends
    (same path, JSON body and key); nothing is raised for a 4xx/5xx answer, so a caller can read the
    status, the headers and the problem+json body itself.
    """

    def __init__(self, http: httpx.Client, headers: dict[str, str] | None) -> None:
        self._http = http
        self._headers = headers

    def _send(self, request: _Request[Any]) -> httpx.Response:
        return _send(self._http, self._headers, request)

    def enrol(
        self,
        user_id: str,
        scheme: str,
        samples: Iterable[Any],
        *,
        params: Mapping[str, Any] | None = None,
        pin: str | None = None,
        second: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> httpx.Response:
        """See :meth:`Client.enrol`."""
        return self._send(_enrol(user_id, scheme, samples, params, pin, second, replace))

    def verify(
        self, user_id: str, sample: Any, *, pin: str | None = None, second_sample: Any | None = None
    ) -> httpx.Response:
        """See :meth:`Client.verify`."""
        return self._send(_attempt(user_id, "/verification", _verified, sample, pin, second_sample))

    def release_key(
        self, user_id: str, sample: Any, context: str, *, pin: str | None = None, second_sample: Any | None = None
    ) -> httpx.Response:
        """See :meth:`Client.release_key`."""
        return self._send(_attempt(user_id, "/key", _key_from, sample, pin, second_sample, context=context))

    def change_pin(
        self, user_id: str, sample: Any, pin: str, new_pin: str, *, second_sample: Any | None = None
    ) -> httpx.Response:
        """See :meth:`Client.change_pin`."""
        return self._send(_attempt(user_id, "/pin", _verified, sample, pin, second_sample, new_pin=new_pin))

    def report(self, user_id: str) -> httpx.Response:
        """See :meth:`Client.report`."""
        return self._send(_Request("GET", _user_path(user_id, "/report"), _object))

    def delete(self, user_id: str) -> httpx.Response:
        """See :meth:`Client.delete`."""
        return self._send(_Request("DELETE", _user_path(user_id), _nothing))


class Client:
    """Blocking client of a sketchauth service.

    ``base_url`` is the service's root (``http://127.0.0.1:8000``); ``api_key`` a key with the
    scopes the calls need (``verify`` for verification and key release, ``enrol`` for enrolment,
    report and revocation, ``pin`` or ``enrol`` for a PIN change, ``admin`` for the admin calls).
    ``http_client`` lets a caller bring its own configured :class:`httpx.Client` (proxies, TLS, a
    test transport); its base URL is then the caller's, and so is the authorisation header unless
    ``api_key`` is given too, in which case every request carries that key (several clients with
    different keys can share one connection pool). :meth:`close` closes it as well.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._http = http_client or httpx.Client(**_http_args(api_key, base_url, timeout))
        self._headers = _bearer(api_key) if http_client is not None else None
        self.raw = RawCalls(self._http, self._headers)
        """The same user calls answering the :class:`httpx.Response` unread (see :class:`RawCalls`)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _run(self, request: _Request[T]) -> T:
        return _answer(request, _send(self._http, self._headers, request))

    # users -----------------------------------------------------------------------------------------------
    def enrol(
        self,
        user_id: str,
        scheme: str,
        samples: Iterable[Any],
        *,
        params: Mapping[str, Any] | None = None,
        pin: str | None = None,
        second: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Enrolment:
        """Enrol ``user_id`` on ``scheme`` (or ``"pipeline:<name>"``) from one or more captures.

        ``second`` is an optional second biometric ``{"scheme", "params", "samples"}``;
        ``replace=True`` replaces an existing enrolment (otherwise :class:`Conflict`).
        """
        return self._run(_enrol(user_id, scheme, samples, params, pin, second, replace))

    def verify(self, user_id: str, sample: Any, *, pin: str | None = None, second_sample: Any | None = None) -> bool:
        """Whether ``sample`` (with the PIN / second sample the enrolment needs) is ``user_id``'s."""
        return self._run(_attempt(user_id, "/verification", _verified, sample, pin, second_sample))

    def release_key(
        self, user_id: str, sample: Any, context: str, *, pin: str | None = None, second_sample: Any | None = None
    ) -> bytes | None:
        """The user's 32-byte key for ``context`` after a genuine verification, else ``None``."""
        return self._run(_attempt(user_id, "/key", _key_from, sample, pin, second_sample, context=context))

    def change_pin(
        self, user_id: str, sample: Any, pin: str, new_pin: str, *, second_sample: Any | None = None
    ) -> bool:
        """Change the PIN after a genuine verification; ``False`` changed nothing (a counted failure)."""
        return self._run(_attempt(user_id, "/pin", _verified, sample, pin, second_sample, new_pin=new_pin))

    def report(self, user_id: str) -> dict[str, Any]:
        """The entropy report of the user's enrolment (what the stored helper data can leak)."""
        return self._run(_Request("GET", _user_path(user_id, "/report"), _object))

    def delete(self, user_id: str) -> None:
        """Revoke the user's enrolment (:class:`NotFound` if there is none)."""
        self._run(_Request("DELETE", _user_path(user_id), _nothing))

    def schemes(self) -> dict[str, Any]:
        """The offered schemes with their parameter schemas, the pipelines and the request limits."""
        return self._run(_Request("GET", "/v1/schemes", _object))

    # health ----------------------------------------------------------------------------------------------
    def live(self) -> bool:
        """Whether the process answers (``/livez``)."""
        return self._run(_Request("GET", "/livez", _ok))

    def ready(self) -> bool:
        """Whether the service and its database answer (``/readyz``; :class:`ServiceUnavailable` if not)."""
        return self._run(_Request("GET", "/readyz", _ok))

    # admin -----------------------------------------------------------------------------------------------
    def reset(self, user_id: str) -> None:
        """Admin: lift the user's throttling and lock."""
        self._run(_Request("POST", _user_path(user_id, "/reset", admin=True), _nothing))

    def audit(self, user_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """Admin: the newest ``limit`` rows of the user's audit trail."""
        return self._run(_audit(user_id, limit))

    def pepper_status(self) -> dict[str, Any]:
        """Admin: which pepper generations seal the stored records."""
        return self._run(_Request("GET", "/v1/admin/pepper", _object))

    def rotate_pepper(self, *, batch_size: int | None = None, max_batches: int | None = None) -> dict[str, Any]:
        """Admin: re-seal stored records with the current pepper (call again while ``complete`` is false)."""
        return self._run(_rotation(batch_size, max_batches))


class AsyncClient:
    """The :class:`Client`'s calls for ``asyncio`` code (``await api.verify(...)``); same arguments."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = http_client or httpx.AsyncClient(**_http_args(api_key, base_url, timeout))
        self._headers = _bearer(api_key) if http_client is not None else None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _run(self, request: _Request[T]) -> T:
        response = await self._http.request(
            request.method, request.path, json=request.body, params=request.query, headers=self._headers
        )
        return _answer(request, response)

    async def enrol(
        self,
        user_id: str,
        scheme: str,
        samples: Iterable[Any],
        *,
        params: Mapping[str, Any] | None = None,
        pin: str | None = None,
        second: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Enrolment:
        """See :meth:`Client.enrol`."""
        return await self._run(_enrol(user_id, scheme, samples, params, pin, second, replace))

    async def verify(
        self, user_id: str, sample: Any, *, pin: str | None = None, second_sample: Any | None = None
    ) -> bool:
        """See :meth:`Client.verify`."""
        return await self._run(_attempt(user_id, "/verification", _verified, sample, pin, second_sample))

    async def release_key(
        self, user_id: str, sample: Any, context: str, *, pin: str | None = None, second_sample: Any | None = None
    ) -> bytes | None:
        """See :meth:`Client.release_key`."""
        request = _attempt(user_id, "/key", _key_from, sample, pin, second_sample, context=context)
        return await self._run(request)

    async def change_pin(
        self, user_id: str, sample: Any, pin: str, new_pin: str, *, second_sample: Any | None = None
    ) -> bool:
        """See :meth:`Client.change_pin`."""
        request = _attempt(user_id, "/pin", _verified, sample, pin, second_sample, new_pin=new_pin)
        return await self._run(request)

    async def report(self, user_id: str) -> dict[str, Any]:
        """See :meth:`Client.report`."""
        return await self._run(_Request("GET", _user_path(user_id, "/report"), _object))

    async def delete(self, user_id: str) -> None:
        """See :meth:`Client.delete`."""
        await self._run(_Request("DELETE", _user_path(user_id), _nothing))

    async def schemes(self) -> dict[str, Any]:
        """See :meth:`Client.schemes`."""
        return await self._run(_Request("GET", "/v1/schemes", _object))

    async def live(self) -> bool:
        """See :meth:`Client.live`."""
        return await self._run(_Request("GET", "/livez", _ok))

    async def ready(self) -> bool:
        """See :meth:`Client.ready`."""
        return await self._run(_Request("GET", "/readyz", _ok))

    async def reset(self, user_id: str) -> None:
        """See :meth:`Client.reset`."""
        await self._run(_Request("POST", _user_path(user_id, "/reset", admin=True), _nothing))

    async def audit(self, user_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """See :meth:`Client.audit`."""
        return await self._run(_audit(user_id, limit))

    async def pepper_status(self) -> dict[str, Any]:
        """See :meth:`Client.pepper_status`."""
        return await self._run(_Request("GET", "/v1/admin/pepper", _object))

    async def rotate_pepper(self, *, batch_size: int | None = None, max_batches: int | None = None) -> dict[str, Any]:
        """See :meth:`Client.rotate_pepper`."""
        return await self._run(_rotation(batch_size, max_batches))
