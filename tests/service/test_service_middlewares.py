"""The service's own middlewares stay pure ASGI and do no per-request work a verification can do without.

``BaseHTTPMiddleware`` runs the rest of the app in a separate task with streamed bodies; per
request it cost more than the whole store share of a verification, which is why the service's
middlewares are plain ASGI callables (``docs/service/performance.md``). A verification body has a
single member, so the duplicate-member check must not parse it a second time.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from service_testing import test_settings
from starlette.middleware.base import BaseHTTPMiddleware

from service import bodies
from service.app import create_app
from service.bodies import BodySizeLimit


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


def test_single_member_body_is_not_parsed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []

    class Spy:
        def decode(self, text: str) -> Any:
            parsed.append(text)
            return json.JSONDecoder(object_pairs_hook=bodies.reject_duplicates).decode(text)

    monkeypatch.setattr(bodies, "_STRICT_DECODER", Spy())
    guard = BodySizeLimit(_answer, limit=1 << 20)
    assert _run(guard, json.dumps({"sample": list(range(64))}).encode())[0]["status"] == 200
    assert parsed == []
    duplicated = _run(guard, b'{"sample": [1], "sample": [2]}')
    assert duplicated[0]["status"] == 422 and len(parsed) == 1


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
