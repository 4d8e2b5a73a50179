"""Operations on the service's database: schema status, migration, backup and restore.

The work behind ``sketchauth db status|migrate|backup|restore`` (:mod:`sketchauth.cli.db`), on
the store's own migration list (:mod:`sketchauth_service.store.migrations`):

* **status**: the applied migrations and the ones this code would apply; read-only;
* **migrate**: apply the pending migrations (what ``sketchauth serve`` also does at start-up);
* **backup**: SQLite through SQLite's online backup API (:meth:`sqlite3.Connection.backup`: a
  consistent copy while the service keeps writing), written as one self-contained file in
  rollback-journal mode and checked with ``PRAGMA integrity_check``; PostgreSQL through its own
  ``pg_dump --format=custom --schema=S`` (a consistent snapshot of the store's schema);
* **restore**: the reverse (``sqlite3`` backup API into the database file; ``pg_restore --clean
  --if-exists --single-transaction``), into an empty database unless ``force`` is given.

A database or a backup whose schema is *newer* than this code (a migration this release does not
know) is refused by ``migrate`` and ``restore`` with :class:`SchemaTooNew`: old code writing to a
newer schema could lose what the newer columns mean. Backups themselves are refused nothing: a
copy never changes the source.

Connection secrets never reach a command line: a password in a PostgreSQL URL is handed to
``pg_dump``/``pg_restore`` through ``PGPASSWORD`` in their environment (a command line is
visible to every local user), the rest of the URL as their ``--dbname``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sketchauth.errors import SketchAuthError
from sketchauth_service.store import StoreError, open_store
from sketchauth_service.store.migrations import LATEST_VERSION, MIGRATIONS
from sketchauth_service.store.postgres import ensure_schema, valid_schema_name
from sketchauth_service.store.sql import SqlStore
from sketchauth_service.store.sqlite import (
    SQLiteFileError,
    sqlite_copy,
    sqlite_file_migrations,
    sqlite_in_use,
    sqlite_path,
)

__all__ = [
    "AppliedMigration",
    "BackupError",
    "DatabaseInUse",
    "DatabaseMissing",
    "DatabaseUnavailable",
    "SchemaStatus",
    "SchemaTooNew",
    "backup",
    "migrate",
    "restore",
    "status",
]

#: Longest ``sketchauth db`` waits for a PostgreSQL connection before it reports the database unreachable.
CONNECT_TIMEOUT_SECONDS = 5.0
#: Longest a ``pg_dump`` or ``pg_restore`` may run before it is stopped.
PG_TOOL_TIMEOUT_SECONDS = 3600


class BackupError(SketchAuthError):
    """A backup or restore cannot be done as asked (the message says what to change)."""


class SchemaTooNew(BackupError):
    """The database or backup has migrations this code does not know: use the newer release."""


class DatabaseMissing(BackupError):
    """No database where the URL points (a SQLite file that does not exist)."""


class DatabaseUnavailable(BackupError):
    """The database cannot be reached or read (a server down, a wrong host, port or password)."""


class DatabaseInUse(BackupError):
    """A restore is refused while a service has the database open."""


@dataclass(frozen=True, slots=True)
class AppliedMigration:
    version: int
    description: str
    applied_at: float


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where a database's schema stands against this code's migrations."""

    backend: str
    applied: tuple[AppliedMigration, ...]
    latest: int = LATEST_VERSION
    pending: tuple[int, ...] = field(default=())

    @property
    def current(self) -> int:
        """The newest applied migration (0 for an empty database)."""
        return self.applied[-1].version if self.applied else 0

    @property
    def state(self) -> str:
        """``empty``, ``behind`` (migrations pending), ``current`` or ``newer`` (than this code)."""
        if self.current > self.latest:
            return "newer"
        if not self.applied:
            return "empty"
        return "behind" if self.pending else "current"

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "state": self.state,
            "current": self.current,
            "latest": self.latest,
            "pending": [
                {"version": m.version, "description": m.description} for m in MIGRATIONS if m.version in self.pending
            ],
            "applied": [
                {"version": m.version, "description": m.description, "applied_at": m.applied_at} for m in self.applied
            ],
        }

    def refuse_if_newer(self, what: str) -> None:
        """Raise :class:`SchemaTooNew` when ``what`` (the database, a backup) is ahead of this code."""
        if self.state == "newer":
            raise SchemaTooNew(
                f"{what} has schema version {self.current}, newer than this release's {self.latest}: "
                "run the sketchauth release that wrote it (or a later one)"
            )


def _backend(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    raise BackupError(f"unsupported database URL scheme {url.split(':', 1)[0]!r}: use sqlite:///PATH or postgresql://…")


def _status_of(backend: str, rows: list[tuple[int, str, float]]) -> SchemaStatus:
    applied = tuple(AppliedMigration(*row) for row in rows)
    done = {m.version for m in applied}
    pending = tuple(m.version for m in MIGRATIONS if m.version not in done)
    return SchemaStatus(backend, applied, pending=pending)


def status(url: str, *, schema: str = "public") -> SchemaStatus:
    """The schema status of the database at ``url`` (changes nothing).

    A SQLite file that does not exist is :class:`DatabaseMissing` (a mistyped path is named as
    such, not reported as an empty database): ``migrate`` or the service's first start creates it.
    """
    if _backend(url) == "sqlite" and not sqlite_path(url).exists():
        raise DatabaseMissing(
            f"no SQLite database at {sqlite_path(url)}: check --db or SKETCHAUTH_DATABASE_URL "
            "('sketchauth db migrate' or the service's first start creates it)"
        )
    return _status(url, schema)


def _status(url: str, schema: str) -> SchemaStatus:
    """:func:`status`, with a missing SQLite file taken as an empty database (migrate, restore)."""
    backend = _backend(url)
    if backend == "postgres" and not valid_schema_name(schema):
        raise BackupError(
            f"schema {schema!r} is not a lower-case identifier (a-z, 0-9 and _, not starting with a digit)"
        )
    if backend == "sqlite" and not sqlite_path(url).exists():
        return _status_of(backend, [])  # opening would create the file
    with _opened(url, schema) as store:
        return _status_of(backend, store.applied_migrations())


def migrate(url: str, *, schema: str = "public") -> tuple[SchemaStatus, SchemaStatus]:
    """Apply the pending migrations; the status before and after (:class:`SchemaTooNew` if ahead)."""
    before = _status(url, schema)
    before.refuse_if_newer("the database")
    with _opened(url, schema) as store:
        store.migrate()
    return before, _status(url, schema)


@contextlib.contextmanager
def _opened(url: str, schema: str) -> Iterator[SqlStore]:
    """The store at ``url``, closed afterwards; every failure to reach or read it one :class:`BackupError`.

    PostgreSQL's connection pool logs each failed connection attempt and ends in a ``PoolTimeout``
    traceback; here it is one line naming the database (without its password) and what to check.
    """
    where = _redacted(url)
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)  # its retries would print first
    try:
        store = open_store(url, postgres_schema=schema, pool_size=1, timeout=CONNECT_TIMEOUT_SECONDS)
    except (ImportError, RuntimeError) as exc:
        raise BackupError(f"{where} needs a driver that is not installed: {exc}") from None
    except (ValueError, OSError, sqlite3.Error) as exc:
        raise DatabaseUnavailable(f"the database at {where} cannot be opened ({_reason(exc)})") from None
    if not isinstance(store, SqlStore):  # open_store makes SQL stores only
        raise BackupError(f"the database at {where} is not one this release can administer")
    try:
        yield store
    except SketchAuthError:
        raise
    except StoreError as exc:  # a newer schema met by migrate: the store says what to run
        raise BackupError(str(exc)) from None
    except Exception as exc:
        raise DatabaseUnavailable(
            f"the database at {where} cannot be reached or read ({_reason(exc)}): check --db or "
            "SKETCHAUTH_DATABASE_URL, that the server runs and accepts this user"
        ) from None
    finally:
        with contextlib.suppress(Exception):
            store.close()


def _reason(exc: BaseException) -> str:
    """The exception's type and the first line of its message (drivers' messages span lines)."""
    first = str(exc).strip().splitlines()[:1]
    return type(exc).__name__ + (f": {first[0][:200]}" if first else "")


def _redacted(url: str) -> str:
    """``url`` without a password (``postgresql://user:***@host/db``)."""
    return re.sub(r"^([a-z]+://[^:/@]*):[^@/]*@", r"\1:***@", url)


# -- backup -------------------------------------------------------------------------------------------


def backup(url: str, destination: str | Path, *, schema: str = "public", force: bool = False) -> SchemaStatus:
    """Write a consistent backup of the database to ``destination``; the schema status it holds.

    ``destination`` must not exist unless ``force``; it is written beside its final name and
    renamed into place only once complete, readable by its owner only.
    """
    destination = Path(destination)
    if destination.exists() and not force:
        raise BackupError(f"{destination} exists: choose another file or pass --force to replace it")
    partial = destination.with_name(destination.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        if _backend(url) == "sqlite":
            result = _sqlite_backup(sqlite_path(url), partial)
        else:
            result = _pg_backup(url, schema, partial)
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    return result


def restore(url: str, source: str | Path, *, schema: str = "public", force: bool = False) -> SchemaStatus:
    """Replace the database's contents with the backup ``source``; the restored schema status.

    Refused when the backup's schema is newer than this code, or when the database already holds
    enrolments and ``force`` is not given. Stop the service first: a restore replaces the data
    under it.
    """
    source = Path(source)
    if not source.is_file():
        raise BackupError(f"no backup file at {source}")
    current = _status(url, schema)
    current.refuse_if_newer("the database")
    if current.applied and not force and _enrolments(url, schema):
        raise BackupError(
            "the database holds enrolments: restore into an empty database, or pass --force to replace them"
        )
    _refuse_in_use(url, schema)  # --force or not: replacing data under a running service is never wanted
    if _backend(url) == "sqlite":
        _sqlite_restore(source, sqlite_path(url))
    else:
        _pg_restore(url, schema, source)
    return _status(url, schema)


def _enrolments(url: str, schema: str) -> int:
    with _opened(url, schema) as store:
        try:
            return store.enrolment_count()
        except Exception as exc:  # a damaged schema (a table missing): whether to replace it is the operator's call
            raise BackupError(
                f"the database's users table cannot be read ({_reason(exc)}); pass --force to replace it"
            ) from None


def _refuse_in_use(url: str, schema: str) -> None:
    """:class:`DatabaseInUse` while a service (or any other store) has the database open.

    SQLite: the shared lock every connection in WAL mode holds on its ``-shm`` file
    (:func:`~sketchauth_service.store.sqlite.sqlite_in_use`). PostgreSQL: sessions of the store on
    this schema (its connections are named ``sketchauth:<schema>``:
    :meth:`~sketchauth_service.store.postgres.PostgresStore.other_sessions`).
    """
    if _backend(url) == "sqlite":
        busy = sqlite_in_use(sqlite_path(url))
    else:
        with _opened(url, schema) as store:
            busy = bool(store.other_sessions())  # type: ignore[attr-defined]  # PostgresStore
    if busy:
        raise DatabaseInUse(
            f"the database at {_redacted(url)} is in use (a running service has it open): stop the service, "
            "then restore"
        )


# -- SQLite --------------------------------------------------------------------------------------------


def _create_private(path: Path) -> None:
    """Create ``path`` empty, readable and writable by its owner only (it will hold hashes and helper data)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _checked_file(path: Path, what: str) -> SchemaStatus:
    """The schema status of the SQLite file at ``path`` after SQLite's integrity check (:class:`BackupError`)."""
    try:
        return _status_of("sqlite", sqlite_file_migrations(path))
    except SQLiteFileError as exc:
        raise BackupError(f"{what} {exc}") from None


def _sqlite_backup(database: Path, out: Path) -> SchemaStatus:
    if not database.is_file():
        raise BackupError(f"no SQLite database at {database}")
    _create_private(out)
    sqlite_copy(database, out, journal_mode="DELETE")  # one self-contained file: no -wal beside the backup
    return _checked_file(out, "the backup")


def _sqlite_restore(backup_file: Path, database: Path) -> None:
    _checked_file(backup_file, f"backup {backup_file}").refuse_if_newer(f"backup {backup_file}")
    if not database.exists():
        _create_private(database)
    sqlite_copy(backup_file, database, journal_mode="WAL")  # the store's mode (it also sets it when it opens)


# -- PostgreSQL ----------------------------------------------------------------------------------------


def _pg_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(
            f"{name} is not on PATH: install PostgreSQL's client tools (Debian: postgresql-client) "
            "of the server's major version or newer"
        )
    return path


def _pg_connection(url: str) -> tuple[str, dict[str, str]]:
    """``--dbname`` for the PostgreSQL tools, and their environment carrying the password, if any."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # optional dependency (postgres extra)

    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    env = dict(os.environ)
    password = params.pop("password", None)
    if password is not None:
        env["PGPASSWORD"] = password
    return make_conninfo(**params), env


def _run_pg(command: list[str], env: dict[str, str]) -> str:
    try:
        done = subprocess.run(  # fixed tool, arguments built here, no shell
            command, env=env, capture_output=True, text=True, timeout=PG_TOOL_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise BackupError(f"{Path(command[0]).name} ran longer than {PG_TOOL_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        raise BackupError(f"{Path(command[0]).name} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.stdout


def _pg_backup(url: str, schema: str, out: Path) -> SchemaStatus:
    result = status(url, schema=schema)
    if not result.applied:
        raise BackupError(f"schema {schema!r} holds no sketchauth tables: check --db and SKETCHAUTH_SCHEMA")
    dbname, env = _pg_connection(url)
    _create_private(out)
    _run_pg([_pg_tool("pg_dump"), "--format=custom", f"--schema={schema}", f"--file={out}", f"--dbname={dbname}"], env)
    _pg_dump_status(out, schema)  # the dump reads back, and holds the store's schema
    return result


#: A table's entry in ``pg_restore --list``: ``215; 1259 16675 TABLE <schema> <name> <owner>``.
_TOC_TABLE = re.compile(r"^\d+; \d+ \d+ TABLE (?!DATA )(\S+) ", re.MULTILINE)
#: The schema's own entries (``SCHEMA - name``, ``COMMENT - SCHEMA name``).
_TOC_SCHEMA = re.compile(r"^\d+; \d+ \d+ (?:SCHEMA|COMMENT) - ")


def _pg_dump_status(dump: Path, schema: str) -> SchemaStatus:
    """The schema status recorded in a ``pg_dump`` custom-format file (its ``schema_migrations`` rows)."""
    env = dict(os.environ)
    listing = _run_pg([_pg_tool("pg_restore"), "--list", str(dump)], env)
    schemas = {match[1] for match in _TOC_TABLE.finditer(listing)}
    if schemas and schemas != {schema}:
        raise BackupError(
            f"{dump} holds schema {', '.join(sorted(schemas))}, not {schema!r}: pg_restore restores a schema "
            "under its own name; set SKETCHAUTH_SCHEMA (or --schema) to the dumped one"
        )
    text = _run_pg(
        [
            _pg_tool("pg_restore"),
            "--data-only",
            f"--schema={schema}",
            "--table=schema_migrations",
            "--file=-",
            str(dump),
        ],
        env,
    )
    return _status_of("postgres", _copy_rows(text))


def _copy_rows(text: str) -> list[tuple[int, str, float]]:
    """The ``schema_migrations`` rows of a ``COPY … FROM stdin`` block in a plain-text dump."""
    rows: list[tuple[int, str, float]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("COPY "):
            inside = True
        elif line == "\\.":
            inside = False
        elif inside:
            version, description, applied_at = line.split("\t")
            rows.append((int(version), description, float(applied_at)))
    if not rows:
        raise BackupError("the dump holds no schema_migrations rows: it is not a backup of a sketchauth store")
    return sorted(rows)


def _pg_restore(url: str, schema: str, dump: Path) -> None:
    """``pg_restore`` of the dump's tables into ``schema``, in one transaction.

    The dump's own ``SCHEMA`` entry is left out of the restore list: with ``--clean`` it would
    ``DROP SCHEMA``, which fails on a schema that holds anything else (``public`` usually does);
    the schema is created if missing instead, and only the store's tables are dropped and restored.
    """
    _pg_dump_status(dump, schema).refuse_if_newer(f"backup {dump}")
    listing = _run_pg([_pg_tool("pg_restore"), "--list", str(dump)], dict(os.environ))
    entries = "".join(line + "\n" for line in listing.splitlines() if not _TOC_SCHEMA.match(line))
    dbname, env = _pg_connection(url)
    _create_schema(url, schema)
    with _owner_only_file(dump.name + ".list", entries) as entry_list:
        _run_pg(
            [
                _pg_tool("pg_restore"),
                "--clean",
                "--if-exists",
                "--no-owner",
                "--no-privileges",
                "--single-transaction",
                "--exit-on-error",
                f"--use-list={entry_list}",
                f"--dbname={dbname}",
                str(dump),
            ],
            env,
        )


def _create_schema(url: str, schema: str) -> None:
    ensure_schema(url, schema)


@contextlib.contextmanager
def _owner_only_file(name: str, text: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sketchauth-") as directory:
        path = Path(directory) / name
        path.write_text(text, encoding="utf-8")
        yield path
