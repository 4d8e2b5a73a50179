"""``sketchauth db status|migrate|backup|restore`` on SQLite and PostgreSQL (:mod:`sketchauth_service.dbadmin`).

The round trip a disaster-recovery drill runs: enrol through the real service, back up, wipe the
database, restore, and verify the same user again (genuine accepted, impostor refused). A schema
newer than the code (a migration this release does not know) is refused by ``migrate`` and by
``restore``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from http_testing import served
from service_testing import API_KEY, REPO, ServerProcess, free_port, test_settings
from sketchauth_service import dbadmin
from sketchauth_service.settings import Settings
from sketchauth_service.store.migrations import LATEST_VERSION

from sketchauth.cli import main

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]  # within v = 50 of every feature
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}


def _db(settings: Settings, *args: str) -> list[str]:
    return ["db", *args, "--db", settings.database_url, "--schema", settings.postgres_schema]


def _round_trip(settings: Settings, backup_file: Path, wipe: object, capsys: pytest.CaptureFixture[str]) -> None:
    with served(settings) as api:
        api.enrol("alice", **ENROL)
    assert main(_db(settings, "backup", str(backup_file))) == 0
    assert f"backup of schema version {LATEST_VERSION}" in capsys.readouterr().out
    assert stat.S_IMODE(backup_file.stat().st_mode) == 0o600
    with served(settings) as api:  # after the backup: the restore must not bring it back
        api.enrol("mallory", **ENROL)
    wipe()  # type: ignore[operator]
    try:
        state = dbadmin.status(settings.database_url, schema=settings.postgres_schema).state
    except dbadmin.DatabaseMissing:  # SQLite: the file is gone
        state = "missing"
    assert state in ("empty", "missing")
    assert main(_db(settings, "restore", str(backup_file))) == 0
    assert f"schema version {LATEST_VERSION} (current)" in capsys.readouterr().out
    with served(settings) as api:
        assert api.verify("alice", GENUINE)
        assert not api.verify("alice", IMPOSTOR)
    # mallory enrolled after the backup: unknown again, so enrolling her anew succeeds
    with served(settings) as api:
        api.enrol("mallory", **ENROL)


# -- SQLite ------------------------------------------------------------------------------------------


@pytest.fixture
def sqlite_settings(tmp_path: Path) -> Settings:
    return test_settings(tmp_path)


def _sqlite_file(settings: Settings) -> Path:
    return Path(settings.database_url.removeprefix("sqlite:///"))


def test_sqlite_backup_wipe_restore_verify(
    sqlite_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = _sqlite_file(sqlite_settings)

    def wipe() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)

    _round_trip(sqlite_settings, tmp_path / "backup.sqlite3", wipe, capsys)


def test_sqlite_backup_is_one_consistent_file(sqlite_settings: Settings, tmp_path: Path) -> None:
    with served(sqlite_settings) as api:
        api.enrol("alice", **ENROL)
    out = tmp_path / "b.sqlite3"
    result = dbadmin.backup(sqlite_settings.database_url, out)
    assert result.state == "current"
    assert not Path(f"{out}-wal").exists()
    with closing(sqlite3.connect(out)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT user_id FROM users").fetchall() == [("alice",)]


def test_backup_refuses_to_overwrite_without_force(sqlite_settings: Settings, tmp_path: Path) -> None:
    with served(sqlite_settings) as api:
        api.enrol("alice", **ENROL)
    out = tmp_path / "b.sqlite3"
    out.write_bytes(b"precious")
    with pytest.raises(dbadmin.BackupError, match="--force"):
        dbadmin.backup(sqlite_settings.database_url, out)
    assert out.read_bytes() == b"precious"
    dbadmin.backup(sqlite_settings.database_url, out, force=True)
    assert out.read_bytes().startswith(b"SQLite format 3\x00")


def test_restore_refuses_a_database_with_enrolments_without_force(sqlite_settings: Settings, tmp_path: Path) -> None:
    with served(sqlite_settings) as api:
        api.enrol("alice", **ENROL)
    out = tmp_path / "b.sqlite3"
    dbadmin.backup(sqlite_settings.database_url, out)
    with pytest.raises(dbadmin.BackupError, match="holds enrolments"):
        dbadmin.restore(sqlite_settings.database_url, out)
    assert dbadmin.restore(sqlite_settings.database_url, out, force=True).state == "current"


def test_restore_refuses_what_is_not_a_backup(sqlite_settings: Settings, tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(dbadmin.BackupError, match="not a readable SQLite database"):
        dbadmin.restore(sqlite_settings.database_url, junk)
    with pytest.raises(dbadmin.BackupError, match="no backup file"):
        dbadmin.restore(sqlite_settings.database_url, tmp_path / "missing")


def _add_future_migration(database: Path) -> None:
    with closing(sqlite3.connect(database, isolation_level=None)) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
            (LATEST_VERSION + 1, "from a newer release", time.time()),
        )


def test_a_newer_schema_is_refused_by_migrate_and_restore(
    sqlite_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = sqlite_settings.database_url
    dbadmin.migrate(url)
    _add_future_migration(_sqlite_file(sqlite_settings))
    assert main(["db", "status", "--db", url]) == 1
    assert json.loads(capsys.readouterr().out)["state"] == "newer"
    assert main(["db", "migrate", "--db", url]) == 2  # one line on stderr, exit status 2
    err = capsys.readouterr().err
    assert f"schema version {LATEST_VERSION + 1}, newer than this release's {LATEST_VERSION}" in err
    assert len(err.strip().splitlines()) == 1
    # a backup of the newer database is made (copying changes nothing) but not restored by this release
    newer_backup = tmp_path / "newer.sqlite3"
    assert dbadmin.backup(url, newer_backup).state == "newer"
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    with pytest.raises(dbadmin.SchemaTooNew, match="backup"):
        dbadmin.restore(fresh, newer_backup)


def test_status_and_migrate_from_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    # A file that does not exist is named as missing, not reported as an empty database.
    assert main(["db", "status", "--db", url]) == 2
    error = capsys.readouterr().err
    assert error.startswith("sketchauth: error: no SQLite database at ") and str(tmp_path / "new.db") in error
    assert error.count("\n") == 1
    assert not (tmp_path / "new.db").exists()  # status created nothing
    sqlite3.connect(tmp_path / "new.db").close()  # an empty file: an empty database
    assert main(["db", "status", "--db", url]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["state"], report["current"], report["latest"]) == ("empty", 0, LATEST_VERSION)
    assert [m["version"] for m in report["pending"]] == list(range(1, LATEST_VERSION + 1))
    (tmp_path / "new.db").unlink()
    assert main(["db", "migrate", "--db", url]) == 0
    assert capsys.readouterr().out.startswith(f"schema version 0 -> {LATEST_VERSION}")
    assert main(["db", "status", "--db", url]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "current"
    assert main(["db", "migrate", "--db", url]) == 0
    assert "(current)" in capsys.readouterr().out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``sketchauth ARGS`` in a process of its own: everything it prints, logging included."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "sketchauth.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_every_db_action_against_an_unreachable_postgres_is_one_line(tmp_path: Path) -> None:
    # Nothing listens on the port: the pool's retries and its PoolTimeout traceback were 38 lines.
    pytest.importorskip("psycopg_pool")
    url = f"postgresql://sketchauth:s3cret-pw@127.0.0.1:{free_port()}/sketchauth"
    (tmp_path / "in.dump").write_bytes(b"x")
    for action in (
        ["status"],
        ["migrate"],
        ["backup", str(tmp_path / "out.dump")],
        ["restore", str(tmp_path / "in.dump")],
    ):
        done = _cli("db", *action, "--db", url)
        assert done.returncode == 2, (action, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sketchauth: error: "), (action, done.stderr)
        assert "s3cret-pw" not in done.stderr and not done.stdout


def test_restore_refuses_a_database_a_service_has_open(
    sqlite_settings: Settings, tmp_path: Path, servers: list[ServerProcess], capsys: pytest.CaptureFixture[str]
) -> None:
    with served(sqlite_settings) as api:
        api.enrol("alice", **ENROL)
    out = tmp_path / "b.sqlite3"
    dbadmin.backup(sqlite_settings.database_url, out)
    env = {"SKETCHAUTH_API_KEYS": API_KEY, "SKETCHAUTH_HASH_PROFILE": "test"}
    server = ServerProcess(tmp_path, env, db=sqlite_settings.database_url)
    servers.append(server)
    server.wait_ready()
    assert main(_db(sqlite_settings, "restore", str(out), "--force")) == 2
    assert "in use" in capsys.readouterr().err
    server.stop()
    assert main(_db(sqlite_settings, "restore", str(out), "--force")) == 0
    with served(sqlite_settings) as api:
        assert api.verify("alice", GENUINE)


# -- PostgreSQL --------------------------------------------------------------------------------------


@pytest.fixture
def postgres_settings(tmp_path: Path, postgres_available: str, postgres_schema: str) -> Iterator[Settings]:
    for tool in ("pg_dump", "pg_restore"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (PostgreSQL's client tools)")
    yield test_settings(tmp_path, database_url=postgres_available, postgres_schema=postgres_schema)


def _drop_schema(settings: Settings) -> None:
    import psycopg

    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{settings.postgres_schema}" CASCADE')


@pytest.mark.postgres
def test_postgres_backup_wipe_restore_verify(
    postgres_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _round_trip(postgres_settings, tmp_path / "backup.pgdump", lambda: _drop_schema(postgres_settings), capsys)


@pytest.mark.postgres
def test_postgres_restore_over_enrolments_needs_force_and_refuses_a_newer_dump(
    postgres_settings: Settings, tmp_path: Path
) -> None:
    url, schema = postgres_settings.database_url, postgres_settings.postgres_schema
    with served(postgres_settings) as api:
        api.enrol("alice", **ENROL)
    dump = tmp_path / "b.pgdump"
    dbadmin.backup(url, dump, schema=schema)
    with pytest.raises(dbadmin.BackupError, match="holds enrolments"):
        dbadmin.restore(url, dump, schema=schema)
    assert dbadmin.restore(url, dump, schema=schema, force=True).state == "current"
    with served(postgres_settings) as api:
        assert api.verify("alice", GENUINE)
    with pytest.raises(dbadmin.BackupError, match="pg_restore restores a schema under its own name"):
        dbadmin.restore(url, dump, schema="public_elsewhere")

    import psycopg

    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (%s, %s, %s)",
            (LATEST_VERSION + 1, "from a newer release", time.time()),
        )
    newer = tmp_path / "newer.pgdump"
    assert dbadmin.backup(url, newer, schema=schema).state == "newer"
    _drop_schema(postgres_settings)
    with pytest.raises(dbadmin.SchemaTooNew, match="backup"):
        dbadmin.restore(url, newer, schema=schema)
