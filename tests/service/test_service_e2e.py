"""End-to-end: real ``sketchauth serve`` processes on free loopback ports, driven with httpx.

Covers the life of an enrolment across restarts, throttling, revocation, a SIGKILL while
enrolments are in flight (the store must stay consistent), a byte scan of the SQLite file for
sample values and PINs, concurrent verifications in two worker processes (no failure lost) and
two servers sharing one PostgreSQL database acting as one service.
"""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from http_testing import service_client
from service_testing import ADMIN_KEY, API_KEY, ServerProcess
from sketchauth_service.store.sqlite import SQLiteStore

from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_uints, uint_width

pytestmark = pytest.mark.slow

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]  # within v = 50 of every feature
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
PIN = "pin-7391-secret"
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}


def _env(**extra: str) -> dict[str, str]:
    return {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        **extra,
    }


def _start(servers: list[ServerProcess], workdir: Path, db: str, workers: int = 1, **env: str) -> ServerProcess:
    server = ServerProcess(workdir, _env(**env), workers=workers, db=db)
    servers.append(server)
    return server.wait_ready()


def _forbidden_patterns() -> dict[str, bytes]:
    """Byte strings that would betray a stored sample, template or PIN."""
    patterns: dict[str, bytes] = {"pin": PIN.encode(), "pin-utf16": PIN.encode("utf-16-le")}
    for name, vector in {"template": TEMPLATE, "genuine": GENUINE}.items():
        arr = np.array(vector, dtype=np.int64)
        patterns[f"{name}-canonical"] = pack_uints(arr, uint_width(N - 1))
        patterns[f"{name}-json"] = str(vector).encode()
        for dtype in ("<u4", ">u4", "<u8", ">u8", "<f8"):
            patterns[f"{name}-{dtype}"] = arr.astype(dtype).tobytes()
        for i, value in enumerate(vector):
            patterns[f"{name}[{i}]-text"] = str(value).encode()
    return patterns


def test_lifecycle_restart_lockout_revoke_and_no_sample_on_disk(tmp_path: Path, servers: list[ServerProcess]) -> None:
    db_path = tmp_path / "e2e.db"
    db = f"sqlite:///{db_path}"
    server = _start(servers, tmp_path, db)
    with server.client() as c:
        api = service_client(c)
        assert api.raw.enrol("alice", **ENROL, pin=PIN).status_code == 201
        assert api.raw.enrol("bob", **ENROL).status_code == 201
        assert api.raw.enrol("bob", **ENROL).status_code == 409
        assert api.raw.verify("alice", GENUINE, pin=PIN).json() == {"verified": True}
        assert api.raw.verify("alice", IMPOSTOR, pin=PIN).json() == {"verified": False}
        assert api.raw.verify("alice", GENUINE, pin="pin-0000-wrong").json() == {"verified": False}
        assert api.raw.verify("alice", GENUINE, pin=PIN).json() == {"verified": True}  # success resets
        for _ in range(5):
            assert api.raw.verify("bob", IMPOSTOR).json() == {"verified": False}
        locked = api.raw.verify("bob", GENUINE)
        assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 30
        assert api.raw.report("alice").json()["scheme"] == "mixed"
        # While the server runs, the WAL holds the newest pages: scan it too.
        on_disk = b"".join(p.read_bytes() for p in tmp_path.glob("e2e.db*"))
    server.stop()
    on_disk += db_path.read_bytes()
    leaks = [name for name, pattern in _forbidden_patterns().items() if pattern in on_disk]
    assert leaks == []
    assert b"$argon2id$" in on_disk  # the scan did look at the stored records

    server = _start(servers, tmp_path, db)
    with server.client() as c:
        api = service_client(c)
        assert api.raw.verify("alice", GENUINE, pin=PIN).json() == {"verified": True}  # survives a restart
        assert api.raw.verify("bob", GENUINE).status_code == 429  # so does the wait
        reset = c.post("/v1/admin/users/bob/reset", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        assert reset.status_code == 204
        assert api.raw.verify("bob", GENUINE).json() == {"verified": True}
        assert api.raw.delete("alice").status_code == 204
        assert api.raw.verify("alice", GENUINE, pin=PIN).json() == {"verified": False}
        assert api.raw.report("alice").status_code == 404
    store = SQLiteStore(db_path)
    events = [e.event for e in store.audit_events("bob")]
    store.close()
    failure = ["attempt", "verify-fail"]
    assert events == ["enrol"] + failure * 4 + ["attempt", "lock", "verify-fail", "reset", "attempt", "verify-ok"]


def test_sigkill_mid_enrolment_leaves_a_consistent_store(tmp_path: Path, servers: list[ServerProcess]) -> None:
    db_path = tmp_path / "kill.db"
    db = f"sqlite:///{db_path}"
    # The OWASP profile makes each enrolment take tens of ms, so many are in flight at the kill.
    server = _start(servers, tmp_path, db, SKETCHAUTH_HASH_PROFILE="owasp")
    users = [f"user-{i}" for i in range(60)]
    created: list[str] = []

    def enrol(user: str) -> None:
        try:
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10) as c:
                api = service_client(c)
                if api.raw.enrol(user, **ENROL).status_code == 201:
                    created.append(user)
        except httpx.HTTPError:
            pass  # the server died under this request

    with ThreadPoolExecutor(max_workers=12) as pool:
        futures = [pool.submit(enrol, u) for u in users]
        deadline = time.monotonic() + 20
        while len(created) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        for f in futures:
            f.result()
    assert 8 <= len(created) < len(users), "the kill should land while enrolments are in flight"

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store = SQLiteStore(db_path)
    stored = {u: store.get(u) for u in users}
    enrolled = {u for u, r in stored.items() if r is not None}
    audit = store.audit_events(limit=10_000)
    store.close()
    # Every acknowledged enrolment is there; nothing half-written: each row is complete and its
    # audit event was committed with it, and no audit event lacks its row.
    assert set(created) <= enrolled
    assert sorted(e.user_id for e in audit if e.event == "enrol") == sorted(enrolled)
    for user in enrolled:
        record = stored[user]
        assert record is not None and record.secret_hash.startswith("$argon2id$")
        assert load_sketch(record.helper).decode(record.helper, GENUINE).tolist() == TEMPLATE

    # Restart with two workers: the survivors verify, and concurrent failures all count.
    server = _start(
        servers, tmp_path, db, workers=2, SKETCHAUTH_LOCKOUT_THRESHOLD="1000", SKETCHAUTH_DISABLE_THRESHOLD="1000"
    )
    with server.client() as c:
        api = service_client(c)
        for user in created:
            assert api.raw.verify(user, GENUINE).json() == {"verified": True}
    target = created[0]
    attempts = 48

    def fail(_: int) -> int:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30) as c:
            api = service_client(c)
            return api.raw.verify(target, IMPOSTOR).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        assert list(pool.map(fail, range(attempts))) == [200] * attempts
    store = SQLiteStore(db_path)
    assert store.get(target).failures == attempts  # type: ignore[union-attr]
    store.close()


@pytest.mark.postgres
def test_two_servers_on_one_postgres_database_act_as_one(
    tmp_path: Path, servers: list[ServerProcess], postgres_available: str, postgres_schema: str
) -> None:
    a = _start(servers, tmp_path, postgres_available, SKETCHAUTH_SCHEMA=postgres_schema)
    b = _start(servers, tmp_path, postgres_available, SKETCHAUTH_SCHEMA=postgres_schema)
    with a.client() as ca, b.client() as cb:
        api_a, api_b = service_client(ca), service_client(cb)
        assert api_a.raw.enrol("carol", **ENROL, pin=PIN).status_code == 201
        assert api_b.raw.enrol("carol", **ENROL).status_code == 409  # B sees A's write
        assert api_b.raw.verify("carol", GENUINE, pin=PIN).json() == {"verified": True}
        assert api_b.raw.report("carol").json() == api_a.raw.report("carol").json()
        # Failures counted across both replicas: 2 + 2 + 1 = 5 -> the next attempt anywhere waits.
        for api in (api_a, api_a, api_b, api_b, api_a):
            assert api.raw.verify("carol", IMPOSTOR, pin=PIN).json() == {"verified": False}
        assert api_b.raw.verify("carol", GENUINE, pin=PIN).status_code == 429
        assert api_a.raw.verify("carol", GENUINE, pin=PIN).status_code == 429
        assert (
            cb.post("/v1/admin/users/carol/reset", headers={"Authorization": f"Bearer {ADMIN_KEY}"}).status_code == 204
        )
        assert api_a.raw.verify("carol", GENUINE, pin=PIN).json() == {"verified": True}
        assert api_b.raw.delete("carol").status_code == 204
        assert api_a.raw.verify("carol", GENUINE, pin=PIN).json() == {"verified": False}
    from sketchauth_service.store.postgres import PostgresStore

    store = PostgresStore(postgres_available, schema=postgres_schema, max_size=1)
    events = [e.event for e in store.audit_events("carol")]
    store.close()
    success, failure = ["attempt", "verify-ok"], ["attempt", "verify-fail"]
    # The attempt after the revocation is an unknown id's: counted and audited like any other.
    assert events == [
        "enrol",
        *success,
        *failure * 4,
        "attempt",
        "lock",
        "verify-fail",
        "reset",
        *success,
        "revoke",
        *failure,
    ]
