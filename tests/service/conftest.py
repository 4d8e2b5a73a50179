"""Fixtures for the service tests: temp SQLite databases, a PostgreSQL schema per run, apps, servers.

PostgreSQL: ``SKETCHAUTH_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``)
is used for real. When it is unreachable the PostgreSQL tests are skipped with the reason, except
under CI (``CI`` set to a true value), where they fail: CI must exercise the scale-out path.
Every store gets its own schema (``sketchauth_test_<pid>_<random>``), dropped afterwards, so
parallel runs never collide.

End-to-end tests start real ``sketchauth serve`` processes on free loopback ports
(:class:`ServerProcess`).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from service.store import Store
from service.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
API_KEY = "test-api-key"
ADMIN_KEY = "test-admin-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_url() -> str:
    return os.environ.get("SKETCHAUTH_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def _postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used, or None when it answers."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (extra 'postgres')"
    try:
        with psycopg.connect(postgres_url(), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the reason to report
        return f"PostgreSQL at {postgres_url()} is unreachable: {type(exc).__name__}: {exc}".strip()
    return None


@pytest.fixture(scope="session")
def postgres_available() -> str:
    """The PostgreSQL URL; skip (fail under CI) when the server does not answer."""
    problem = _postgres_problem()
    if problem is not None:
        if in_ci():
            pytest.fail(f"CI requires PostgreSQL for the store tests: {problem}")
        pytest.skip(problem)
    return postgres_url()


def unique_schema() -> str:
    return f"sketchauth_test_{os.getpid()}_{secrets.token_hex(4)}"


@pytest.fixture
def postgres_schema(postgres_available: str) -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    from service.store.postgres import PostgresStore

    schema = unique_schema()
    yield schema
    cleanup = PostgresStore(postgres_available, schema=schema, max_size=1)
    try:
        cleanup.drop_schema()
    finally:
        cleanup.close()


def test_settings(tmp_path: Path, **changes: Any) -> Settings:
    base = Settings(
        database_url=f"sqlite:///{tmp_path / 'service.db'}",
        api_keys=(API_KEY,),
        admin_keys=(ADMIN_KEY,),
        hash_profile="test",
    )
    return base.replace(**changes)


test_settings.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return test_settings(tmp_path)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def sqlite_store(settings: Settings) -> Iterator[Store]:
    """A second handle on the client's database, to inspect what was stored."""
    store = SQLiteStore.from_url(settings.database_url)
    yield store
    store.close()


# -- real server processes ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """A ``sketchauth serve`` subprocess on a free loopback port, in its own process group."""

    def __init__(self, workdir: Path, env: dict[str, str], *, workers: int = 1, db: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"server-{self.port}.log"
        full_env = {**os.environ, **env}
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "sketchauth.cli", "serve", "--port", str(self.port), "--workers", str(workers)]
        if db is not None:
            args += ["--db", db]
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            args, cwd=workdir, env=full_env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log()}")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=30.0, **kwargs)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole process group (uvicorn's supervisor and its workers)."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    def _signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=15)
        self._log.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """Collects started servers and stops every one at the end, whatever happened."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
