"""The one door of the HTTP tests: :class:`sketchauth.client.Client` over a test client or a server.

Every test that talks to the service over HTTP goes through the project's own client, so a
request a test sends is the request an integrator's code sends:

* ``service_client(http)`` wraps an :class:`httpx.Client` (FastAPI's ``TestClient`` over an app
  in process, or :meth:`ServerProcess.client` of a live ``sketchauth serve``) in a
  :class:`~sketchauth.client.Client` that sends ``API_KEY`` with every request (the wrapped client's
  other headers, and the tests that call it with no key at all, are left as they were). Its typed
  calls (``enrol``, ``verify``, ``release_key``, ``change_pin``…) raise the client's
  :class:`~sketchauth.client.ServiceError` subclasses for every problem answer.
* ``served(settings)`` starts an app of ``settings`` in process for one block (a test that stops
  and restarts the service around a backup, a restore, a pepper change) and yields its ``Client``.
* ``service_client(http).raw`` makes the same calls and hands back the :class:`httpx.Response`
  unread, for the tests that assert status codes, headers and problem+json bodies; ``problem``
  and ``released`` check those answers the one way every test checks them.

Enrolment bodies kept as constants (``{"scheme", "params", "samples"}``) go in whole:
``api.enrol("alice", **INTERVAL)``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from fastapi.testclient import TestClient
from service_testing import API_KEY
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings

from sketchauth.client import Client

__all__ = ["problem", "released", "served", "service_client"]


def service_client(http: httpx.Client, api_key: str = API_KEY) -> Client:
    """A :class:`Client` over ``http`` sending ``api_key`` (not closed with it: ``http``'s owner closes it)."""
    return Client(api_key=api_key, http_client=http)


@contextmanager
def served(settings: Settings) -> Iterator[Client]:
    """A fresh app of ``settings`` in process (started and stopped around the block), behind a :class:`Client`."""
    with TestClient(create_app(settings)) as client:
        yield service_client(client)


def problem(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    """The RFC 9457 body of ``response``, after checking it is a ``status`` problem of type ``kind``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["type"].endswith("/" + kind) and body["title"] and body["detail"]
    return body


def released(response: httpx.Response) -> bytes:
    """The 32-byte key of a key-release answer, after checking the answer says nothing else."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verified"] is True and set(body) == {"verified", "key"}
    assert response.headers["cache-control"] == "no-store"
    assert "=" not in body["key"]
    key = base64.urlsafe_b64decode(body["key"] + "=")
    assert len(key) == 32
    return key
