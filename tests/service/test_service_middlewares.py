"""The service's own middlewares stay pure ASGI and do no per-request work a verification can do without.

``BaseHTTPMiddleware`` runs the rest of the app in a separate task with streamed bodies; per
request it cost more than the whole store share of a verification, which is why the service's
middlewares are plain ASGI callables (``docs/service/performance.md``). A body is decoded once,
strictly (that decode is the duplicate-member check), and large ones off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import starlette.requests
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings
from sketchauth_service import bodies
from sketchauth_service.app import create_app
from sketchauth_service.bodies import BodySizeLimit
from starlette.middleware.base import BaseHTTPMiddleware


def test_no_base_http_middleware(tmp_path: Path) -> None:
    app = create_app(test_settings(tmp_path))
    classes = [m.cls for m in app.user_middleware]
    assert classes and not any(isinstance(c, type) and issubclass(c, BaseHTTPMiddleware) for c in classes)


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _run(middleware: BodySizeLimit, body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(middleware({"type": "http", "path": "/", "headers": headers}, receive, send))
    return sent


def test_every_json_body_is_decoded_once_and_large_ones_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One strict decode per body (the duplicate-member check is that decode), none by FastAPI;
    a body over ``INLINE_BODY_BYTES`` is decoded and validated in a worker thread, not on the loop."""
    decoded: list[tuple[int, int]] = []
    strict = json.JSONDecoder(object_pairs_hook=bodies.reject_duplicates)

    class Spy:
        def decode(self, text: str) -> Any:
            decoded.append((len(text), threading.get_ident()))
            return strict.decode(text)

    monkeypatch.setattr(bodies, "_STRICT_DECODER", Spy())
    monkeypatch.setattr(starlette.requests.Request, "json", _refuse)  # FastAPI's own decode must not run
    enrolment = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
    with TestClient(create_app(test_settings(tmp_path))) as client:
        assert client.post("/v1/users/a/enrolment", headers=AUTH, json=enrolment).status_code == 201
        assert client.post("/v1/users/a/verification", headers=AUTH, json={"sample": [123, 30, 205, 71]}).json() == {
            "verified": True
        }
        assert len(decoded) == 2
        loop_thread = decoded[-1][1]
        padded = b'{"sample": [123, 30, 205, 71]' + b" " * bodies.INLINE_BODY_BYTES + b"}"
        big = client.post(
            "/v1/users/a/verification", headers={**AUTH, "content-type": "application/json"}, content=padded
        )
        assert big.json() == {"verified": True}
        assert len(decoded) == 3 and decoded[-1][0] > bodies.INLINE_BODY_BYTES
        assert decoded[-1][1] != loop_thread
        duplicated = client.post(
            "/v1/users/a/verification",
            headers={**AUTH, "content-type": "application/json"},
            content=b'{"sample": [1], "sample": [2]}',
        )
        assert duplicated.status_code == 422 and duplicated.json()["type"].endswith("duplicate-key")
        assert len(decoded) == 4


async def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the body was decoded a second time")


def test_body_timeout_answers_408_and_leaves_the_task_uncancelled() -> None:
    guard = BodySizeLimit(_answer, limit=1 << 20, timeout=0.05)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(10)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def main() -> int:
        await guard({"type": "http", "path": "/", "headers": []}, receive, send)
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert asyncio.run(main()) == 0
    assert sent[0]["status"] == 408
