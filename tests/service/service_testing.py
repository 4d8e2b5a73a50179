"""Helpers shared by the service tests (a uniquely named module, so importing it never collides
with another directory's ``conftest``): keys, settings for a temp database, PostgreSQL discovery
and :class:`ServerProcess`, a real ``sketchauth serve`` subprocess on a free loopback port.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sketchauth_service.settings import Settings
from sketchauth_service.store import open_store

REPO = Path(__file__).resolve().parents[2]
API_KEY = "test-api-key-0123456789abcdef"
ADMIN_KEY = "test-admin-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_url() -> str:
    return os.environ.get("SKETCHAUTH_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used, or None when it answers."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (extra 'postgres')"
    try:
        with psycopg.connect(postgres_url(), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"PostgreSQL at {postgres_url()} is unreachable: {type(exc).__name__}: {exc}".strip()
    return None


def unique_schema() -> str:
    return f"sketchauth_test_{os.getpid()}_{secrets.token_hex(4)}"


def test_settings(tmp_path: Path, **changes: Any) -> Settings:
    """Settings for a temporary database with the cheapest argon2 profile, explicitly allowed."""
    base = Settings(
        database_url=f"sqlite:///{tmp_path / 'service.db'}",
        api_keys=(API_KEY,),
        admin_keys=(ADMIN_KEY,),
        hash_profile="test",
        allow_test_profile=True,
    )
    return base.replace(**changes)


test_settings.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


# -- real server processes ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """A ``sketchauth serve`` subprocess on a free loopback port, in its own process group."""

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        *,
        workers: int = 1,
        db: str | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"server-{self.port}.log"
        full_env = {**os.environ, **env}
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "sketchauth.cli", "serve", "--port", str(self.port), "--workers", str(workers)]
        if full_env.get("SKETCHAUTH_HASH_PROFILE") == "test":
            # The servers of the test suite opt in to the cheap argon2 profile explicitly.
            args.append("--allow-insecure-test-profile")
        if db is not None:
            args += ["--db", db]
        args += extra_args or []
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
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=15)
        self._log.close()


class Backend:
    """One database (a SQLite file or a PostgreSQL schema) and the servers started on it."""

    def __init__(self, kind: str, workdir: Path, url: str, env: dict[str, str], servers: list[ServerProcess]) -> None:
        self.kind, self.workdir, self.url, self.env, self.servers = kind, workdir, url, env, servers

    def start(self, **env: str) -> ServerProcess:
        base = {"SKETCHAUTH_API_KEYS": API_KEY, "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY, "SKETCHAUTH_HASH_PROFILE": "test"}
        server = ServerProcess(self.workdir, {**base, **self.env, **env}, db=self.url)
        self.servers.append(server)
        return server.wait_ready()

    def audit(self, user: str) -> list[str]:
        """The audit events of ``user``, read from the database directly."""
        store = open_store(self.url, postgres_schema=self.env.get("SKETCHAUTH_SCHEMA", "public"), pool_size=1)
        try:
            return [e.event for e in store.audit_events(user)]
        finally:
            store.close()
