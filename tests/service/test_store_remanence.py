"""No remnants of revoked or replaced enrolments where the store can erase them.

SQLite (WAL mode): every committed change appends whole pages to ``-wal``; ``secure_delete``
zeroes deleted cells only in the page versions written from then on, so an old argon2 hash and
helper record stayed readable in ``-wal`` (once per change that touched their page) for as
long as the server ran. The store now checkpoints and truncates the WAL after a revocation, a
replacing enrolment or a re-hash; these tests scan the database, ``-wal`` and ``-shm`` files
of a running ``sketchauth serve`` for the old bytes.

PostgreSQL keeps dead row versions in the table's pages until ``VACUUM FULL`` rewrites the
table (plain ``VACUUM`` frees their space without overwriting it); the test checks the
operator's command through ``pageinspect``, which reads the raw pages.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_testing import ADMIN_KEY, API_KEY, ServerProcess
from sketchauth_service.store import NewEnrolment, open_store
from sketchauth_service.store.sqlite import SQLiteStore

NOW = 1_800_000_000.0
N = 1 << 20
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}}
TEMPLATES = [[987_651 - 997 * i, 876_541 + 991 * i, 765_431 - 983 * i, 654_321 + 977 * i] for i in range(6)]


def _files(directory: Path, name: str) -> dict[str, bytes]:
    """The database file and its ``-wal``/``-shm`` companions as they are now."""
    return {p.name: p.read_bytes() for p in sorted(directory.glob(name + "*"))}


def _copies(files: dict[str, bytes], markers: list[bytes]) -> int:
    return sum(data.count(marker) for data in files.values() for marker in markers)


def _stored(db: Path, user: str) -> list[bytes]:
    """The user's hash and helper record as stored now (a second handle, as an attacker's)."""
    with sqlite3.connect(db) as conn:
        secret_hash, helper = conn.execute(
            "SELECT secret_hash, helper FROM users WHERE user_id = ?", (user,)
        ).fetchone()
    conn.close()
    return [secret_hash.encode(), bytes(helper)]


@pytest.mark.slow
def test_revoked_and_replaced_records_are_not_on_disk_while_the_server_runs(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    """Before the fix, the 5 replaced records' hashes and helpers were all in ``-wal`` (32
    copies) and the deleted user's in 7; now none in any of the three files, two workers running."""
    db = tmp_path / "sketchauth.db"
    env = {"SKETCHAUTH_API_KEYS": API_KEY, "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY, "SKETCHAUTH_HASH_PROFILE": "test"}
    server = ServerProcess(tmp_path, env, workers=2, db=f"sqlite:///{db}")
    servers.append(server)
    server.wait_ready()
    replaced: list[bytes] = []
    with server.client() as c:
        for i, template in enumerate(TEMPLATES):
            body = {**ENROL, "samples": [template], "replace": True}
            assert c.post("/v1/users/alice/enrolment", json=body).status_code == 201
            if i < len(TEMPLATES) - 1:
                replaced += _stored(db, "alice")
            # Each counted attempt rewrites the row's page: more WAL copies of the record.
            for _ in range(2):
                assert c.post("/v1/users/alice/verification", json={"sample": TEMPLATES[-1 - i]}).status_code == 200
        assert c.post("/v1/users/bob/enrolment", json={**ENROL, "samples": [TEMPLATES[0]]}).status_code == 201
        c.post("/v1/users/bob/verification", json={"sample": TEMPLATES[1]})
        deleted = _stored(db, "bob")
        assert c.delete("/v1/users/bob").status_code == 204
        on_disk = _files(tmp_path, db.name)  # the server still runs, both workers connected
        assert {db.name, db.name + "-wal", db.name + "-shm"} <= set(on_disk)
        assert _copies(on_disk, replaced) == 0
        assert _copies(on_disk, deleted) == 0
        assert _copies(on_disk, _stored(db, "alice")) >= 2  # the scan does see live records
        assert c.post("/v1/users/alice/verification", json={"sample": TEMPLATES[-1]}).json() == {"verified": True}


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "s.db")
    store.migrate()
    yield store
    store.close()


def _record(user: str, helper: bytes, secret_hash: str) -> NewEnrolment:
    return NewEnrolment(user, "interval", {}, helper, secret_hash, {}, False)


def _markers(helper: bytes, secret_hash: str) -> list[bytes]:
    """The hash, and 32-byte pieces of the helper at several offsets (a large record spans
    overflow pages, so the whole of it is never contiguous on disk)."""
    pieces = [helper[i : i + 32] for i in range(0, len(helper) - 32, max(1, len(helper) // 8))]
    return [secret_hash.encode(), *pieces]


def test_large_records_on_overflow_pages_and_rehashed_hashes_are_erased(
    sqlite_store: SQLiteStore, tmp_path: Path
) -> None:
    big = secrets.token_bytes(20_000)  # five overflow pages
    old_hash = "$argon2id$v=19$m=8,t=1,p=1$" + secrets.token_hex(16)
    sqlite_store.enrol(_record("alice", big, old_hash), replace=False, now=NOW)
    bob_hash = "$argon2id$bob-" + secrets.token_hex(8)
    sqlite_store.enrol(_record("bob", secrets.token_bytes(9_000), bob_hash), replace=False, now=NOW)
    bob = sqlite_store.get("bob")
    assert bob is not None
    assert _copies(_files(tmp_path, "s.db"), _markers(big, old_hash)) > 0
    new_hash = "$argon2id$v=19$m=19456,t=2,p=1$" + secrets.token_hex(16)
    sqlite_store.record_success("alice", NOW, version=1, new_hash=new_hash)  # a re-hash
    on_disk = _files(tmp_path, "s.db")
    assert _copies(on_disk, [old_hash.encode()]) == 0 and _copies(on_disk, [new_hash.encode()]) > 0
    sqlite_store.enrol(_record("alice", b"small", "$argon2id$replacement"), replace=True, now=NOW)
    sqlite_store.revoke("bob", NOW)
    on_disk = _files(tmp_path, "s.db")
    assert _copies(on_disk, _markers(big, new_hash)) == 0
    assert _copies(on_disk, _markers(bob.helper, bob.secret_hash)) == 0
    assert on_disk["s.db-wal"] == b""


def test_a_reader_holding_the_wal_delays_the_erasure_until_the_next_write(
    sqlite_store: SQLiteStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot older than the revocation keeps its pages in ``-wal``: the truncation waits
    ``busy_timeout`` for it, then stays pending (logged) and is retried after the next write."""
    helper, secret_hash = secrets.token_bytes(64), "$argon2id$gone-" + secrets.token_hex(8)
    sqlite_store.enrol(_record("alice", helper, secret_hash), replace=False, now=NOW)
    sqlite_store.enrol(_record("bob", b"kept", "$argon2id$kept"), replace=False, now=NOW)
    sqlite_store._conn.execute("PRAGMA busy_timeout = 50")  # the test need not wait 10 s
    reader = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM users").fetchone() == (2,)  # holds its snapshot
    with caplog.at_level(logging.WARNING, logger="sketchauth_service.store.sqlite"):
        sqlite_store.revoke("alice", NOW)
    assert "could not truncate the SQLite WAL" in caplog.text and secret_hash not in caplog.text
    assert _copies(_files(tmp_path, "s.db"), [helper]) > 0  # still there: the reader may read it
    reader.execute("COMMIT")
    reader.close()
    sqlite_store.reset("bob", NOW)  # any write retries the pending erasure
    assert _copies(_files(tmp_path, "s.db"), [helper, secret_hash.encode()]) == 0


def test_an_erasure_interrupted_by_a_crash_is_done_at_the_next_start(tmp_path: Path) -> None:
    """A process killed between a revocation's commit and its checkpoint leaves the old pages
    in ``-wal``; the next store to open the file truncates it before serving."""
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.migrate()
    helper = secrets.token_bytes(64)
    store.enrol(_record("alice", helper, "$argon2id$crash"), replace=False, now=NOW)
    store._erase_remnants = lambda: None  # type: ignore[method-assign]  # dies before the checkpoint
    store.revoke("alice", NOW)
    assert _copies(_files(tmp_path, "s.db"), [helper]) > 0
    survivor = SQLiteStore(path)  # another process, or the restarted one, opens the file
    assert _copies(_files(tmp_path, "s.db"), [helper]) == 0
    survivor.close()
    store._conn.close()


# -- PostgreSQL: what remains, and the operator's command -------------------------------------------


def _raw_pages(conn: Any, relation: str) -> bytes:
    """Every page of ``relation`` as the buffer manager holds it (``pageinspect``)."""
    blocks = conn.execute(
        "SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int", (relation,)
    ).fetchone()[0]
    return b"".join(
        bytes(conn.execute("SELECT public.get_raw_page(%s, %s)", (relation, i)).fetchone()[0]) for i in range(blocks)
    )


def _users_relations(conn: Any, schema: str) -> list[str]:
    toast = conn.execute(
        "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = %s::regclass", (f"{schema}.users",)
    ).fetchone()[0]
    return [f"{schema}.users", toast]


@pytest.mark.postgres
def test_postgres_dead_versions_remain_until_vacuum_full(postgres_available: str, postgres_schema: str) -> None:
    import psycopg

    with psycopg.connect(postgres_available, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
        except psycopg.Error as exc:
            pytest.skip(f"pageinspect is not available to read raw pages: {exc}")
        store = open_store(postgres_available, postgres_schema=postgres_schema)
        store.migrate()
        small, big = secrets.token_bytes(64), secrets.token_bytes(6_000)  # inline, and out of line (TOAST)
        hashes = ["$argon2id$pg-" + secrets.token_hex(12) for _ in range(3)]
        store.enrol(_record("alice", small, hashes[0]), replace=False, now=NOW)
        store.enrol(_record("bob", big, hashes[1]), replace=False, now=NOW)
        store.enrol(_record("carol", b"kept", hashes[2]), replace=False, now=NOW)
        store.enrol(_record("alice", b"new", "$argon2id$new"), replace=True, now=NOW)
        store.revoke("bob", NOW)
        store.close()
        gone = [small[:32], big[:32], big[3000:3032], hashes[0].encode(), hashes[1].encode()]

        def copies() -> int:
            return sum(_raw_pages(conn, r).count(m) for r in _users_relations(conn, postgres_schema) for m in gone)

        assert copies() > 0  # dead versions: invisible to SQL, in the pages all the same
        conn.execute(f'VACUUM FULL "{postgres_schema}".users')
        assert copies() == 0
        assert hashes[2].encode() in _raw_pages(conn, f"{postgres_schema}.users")  # the scan sees live rows
