"""Fixtures for the service tests: temp SQLite databases, a PostgreSQL schema per test, apps, servers.

``settings`` → ``client`` (the app in process) → ``api`` (the project's :class:`Client` over it,
``tests/service/http_testing.py``): a module that needs other settings overrides ``settings`` and
gets the same client and api.

PostgreSQL: ``SKETCHAUTH_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``)
is used for real. When it is unreachable the PostgreSQL tests are skipped with the reason, except
under CI (``CI`` set to a true value), where they fail: CI must exercise the scale-out path.
Every PostgreSQL test gets its own schema (``sketchauth_test_<pid>_<random>``), dropped
afterwards, so parallel runs never collide.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import ServerProcess, in_ci, postgres_problem, postgres_url, test_settings, unique_schema
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings
from sketchauth_service.store import Store
from sketchauth_service.store.sqlite import SQLiteStore

from sketchauth.client import Client


@pytest.fixture(scope="session")
def postgres_available() -> str:
    """The PostgreSQL URL; skip (fail under CI) when the server does not answer."""
    problem = postgres_problem()
    if problem is not None:
        if in_ci():
            pytest.fail(f"CI requires PostgreSQL for the store tests: {problem}")
        pytest.skip(problem)
    return postgres_url()


@pytest.fixture
def postgres_schema(postgres_available: str) -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    from sketchauth_service.store.postgres import PostgresStore

    schema = unique_schema()
    yield schema
    cleanup = PostgresStore(postgres_available, schema=schema, max_size=1)
    try:
        cleanup.drop_schema()
    finally:
        cleanup.close()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return test_settings(tmp_path)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def api(client: TestClient) -> Client:
    """The project's :class:`Client` over ``client`` with ``API_KEY`` (``api.raw``: the answers unread)."""
    return service_client(client)


@pytest.fixture
def sqlite_store(settings: Settings) -> Iterator[Store]:
    """A second handle on the client's database, to inspect what was stored."""
    store = SQLiteStore.from_url(settings.database_url)
    yield store
    store.close()


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    """Collects started servers and stops every one at the end, whatever happened."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        with contextlib.suppress(Exception):
            server.stop()
