"""SQLite store: the default, so ``sketchauth serve`` needs no other server.

stdlib :mod:`sqlite3` in WAL mode (readers never block the writer, a killed process never leaves
a half-written transaction: the WAL is replayed or discarded as a whole). Every change is one
``BEGIN IMMEDIATE`` … ``COMMIT`` transaction, taking the write lock up front so that two worker
processes never deadlock upgrading a read lock; ``busy_timeout`` makes a second writer wait
instead of failing. One connection per store, serialised by a lock (SQLite allows one writer at
a time anyway; every statement here takes microseconds).

No remnants of revoked records: ``secure_delete`` zeroes deleted cells and freed pages, but only
in the page versions written from then on. In WAL mode every committed change appends whole
pages to ``-wal``, so the old hash and helper data stay there (once per change that touched
their page: the enrolment, each counted attempt) until a checkpoint copies the newest pages into
the database file and the log is truncated. After a revocation, a replacing enrolment or a
re-hash the store therefore runs ``PRAGMA wal_checkpoint(TRUNCATE)`` before returning: it waits
(``busy_timeout``) for readers of every process to leave older snapshots, copies the pages back
and truncates ``-wal`` to zero bytes. If a reader holds an old snapshot past the timeout the
erasure stays pending and is retried after the next write, at close and at the next start, and
a warning is logged. ``-shm`` is the WAL's page index (page numbers and checksums, no row data).
``temp_store = MEMORY`` keeps sorts and temporary tables out of temporary files.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sketchauth_service.store.base import StoreError
from sketchauth_service.store.sql import SqlStore

__all__ = [
    "SQLiteFileError",
    "SQLiteStore",
    "sqlite_copy",
    "sqlite_file_migrations",
    "sqlite_in_use",
    "sqlite_path",
]

#: How long a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_MS = 10_000

log = logging.getLogger(__name__)


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///relative/or/absolute/path`` URL (``sqlite:////abs`` also works)."""
    if not url.startswith("sqlite:///"):
        raise ValueError(f"not a sqlite URL: {url!r}")
    return Path(url[len("sqlite:///") :])


#: Byte of the ``-shm`` file every connection in WAL mode holds a shared lock on while it is open
#: (SQLite's "DMS" lock, ``UNIX_SHM_DMS`` in its os_unix.c: (22 + 8) * 4 + 8).
_SHM_DMS_BYTE = 128


def sqlite_in_use(path: Path) -> bool:
    """Whether another process has the WAL-mode database at ``path`` open (a running service).

    Every connection holds a shared POSIX lock on the ``DMS`` byte of ``-shm`` for as long as it
    is open; an exclusive lock on it is granted only when no other process holds one. Tried
    without waiting and released at once. Locks of this very process never conflict (POSIX), so
    call it with no connection of its own open on the database (closing the descriptor here
    drops this process's locks on ``-shm``).
    """
    shm = Path(f"{path}-shm")
    try:
        fd = os.open(shm, os.O_RDWR)
    except FileNotFoundError:
        return False  # no connection in WAL mode has it open
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS_BYTE)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _SHM_DMS_BYTE)
        return False
    finally:
        os.close(fd)


class SQLiteFileError(StoreError):
    """A file that is not a readable SQLite database, or fails SQLite's integrity check."""


@contextmanager
def _connected(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def sqlite_file_migrations(path: Path) -> list[tuple[int, str, float]]:
    """``(version, description, applied_at)`` of the migrations the SQLite file at ``path`` holds,
    after ``PRAGMA integrity_check`` (:class:`SQLiteFileError`); changes nothing."""
    with _connected(path) as conn:
        try:
            verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
            found = conn.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            ).fetchone()[0]
            rows = (
                conn.execute("SELECT version, description, applied_at FROM schema_migrations ORDER BY version")
                if found
                else None
            )
            applied = [] if rows is None else [(int(v), str(d), float(t)) for v, d, t in rows.fetchall()]
        except sqlite3.DatabaseError as exc:
            raise SQLiteFileError(f"is not a readable SQLite database: {exc}") from None
    if verdict != "ok":
        raise SQLiteFileError(f"fails SQLite's integrity check: {verdict}")
    return applied


def sqlite_copy(source: Path, destination: Path, *, journal_mode: str) -> None:
    """Copy the database ``source`` into ``destination`` with SQLite's online backup API (pages copied
    in one read snapshot while writers go on), leaving ``destination`` in ``journal_mode``."""
    if journal_mode not in ("DELETE", "WAL"):
        raise ValueError("journal_mode is DELETE (a self-contained file) or WAL (the store's mode)")
    with _connected(source) as src, _connected(destination) as dst:
        src.backup(dst)
        dst.execute(f"PRAGMA journal_mode = {journal_mode}")  # one of two literals, checked above


def _create_private(path: Path) -> None:
    """Create the database file readable and writable by its owner only (0600), if it is new.

    The file holds helper data and hashes: public in the scheme's model, but an offline guessing
    attack starts from the hashes, so other local users have no business reading them. SQLite
    gives its ``-wal`` and ``-shm`` files the database file's permissions. An existing file keeps
    the permissions its operator chose.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SQLiteStore(SqlStore):
    """:class:`~sketchauth_service.store.base.Store` on one SQLite file (WAL, one transaction per change)."""

    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        _create_private(self.path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL is durable against process crashes in WAL mode (only an OS crash can lose the
        # last commits, never corrupt the file).
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        # Revoking or replacing an enrolment must not leave its hash and helper data readable in
        # freed pages of the file: zero them (many builds default to this, not all).
        self._conn.execute("PRAGMA secure_delete = ON")
        self._conn.execute("PRAGMA temp_store = MEMORY")
        # A previous process may have died between a revocation's commit and its checkpoint.
        self._erase_pending = True
        with self._lock:
            self._erase_if_pending()

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        return cls(sqlite_path(url))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        yield from self._begun("BEGIN IMMEDIATE")
        if self._erase_pending:
            with self._lock:
                self._erase_if_pending()

    def _erase_remnants(self) -> None:
        """Checkpoint and truncate the WAL so that no old page version outlives the change."""
        with self._lock:
            self._erase_pending = True
            self._erase_if_pending()

    def _erase_if_pending(self) -> None:
        """One ``wal_checkpoint(TRUNCATE)`` if an erasure is pending (the caller holds the lock)."""
        if not self._erase_pending:
            return
        try:
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError:  # locked past busy_timeout
            busy = 1
        self._erase_pending = busy != 0
        if self._erase_pending:
            log.warning(
                "could not truncate the SQLite WAL of %s: a reader held an old snapshot for more than %d ms; "
                "revoked records stay in the -wal file until the next write retries",
                self.path,
                BUSY_TIMEOUT_MS,
            )

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Cursor]:
        # A deferred transaction takes no write lock: in WAL mode readers never block writers.
        yield from self._begun("BEGIN")

    def _begun(self, statement: str) -> Iterator[sqlite3.Cursor]:
        """The steps of one transaction opened by ``statement``, for a context manager to ``yield from``
        (one generator per transaction instead of a context manager inside another: two per
        verification). Yields the cursor; commits when resumed, rolls back when an exception is
        thrown in, and re-raises it."""
        with self._lock:
            cur = self._conn.cursor()
            cur.execute(statement)
            try:
                yield cur
            except BaseException:
                self._conn.rollback()
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def _locked_migration(self) -> Any:
        # BEGIN IMMEDIATE already excludes every other writer, migrators included.
        return self._transaction()

    def close(self) -> None:
        with self._lock:
            self._erase_if_pending()
            self._conn.close()
