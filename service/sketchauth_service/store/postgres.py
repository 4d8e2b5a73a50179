"""PostgreSQL store: several service processes or replicas share one database (scale-out).

psycopg 3 with a :class:`psycopg_pool.ConnectionPool` (extra ``postgres``). Each method borrows a
connection for exactly one transaction (the pool commits on success, rolls back on error).
Tables live in the schema named by settings (``public`` by default), via the connection's
``search_path``, so test runs can use a throw-away schema each. Concurrent migrators (two
replicas starting at once) serialise on a transaction-scoped advisory lock.

Remnants: a ``DELETE`` or ``UPDATE`` leaves the old row version in the table's pages as a dead
tuple; ``VACUUM`` (and autovacuum) marks its space free but does not overwrite the bytes, which
stay readable in the relation files until new rows reuse the space. ``VACUUM FULL users``
rewrites the table into new files; the write-ahead log, archives, replicas and backups keep
their own copies for as long as they are retained. The store cannot do better from a request
(``VACUUM FULL`` takes an exclusive lock on the table), so revoked records are an operator's
job, documented with the commands to run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sketchauth_service.store.sql import SqlStore

__all__ = ["SCHEMA_NAME", "PostgresStore", "ensure_schema", "session_name", "valid_schema_name"]

#: Schema names the store accepts: lower-case ASCII identifiers PostgreSQL needs no quotes for.
#: The name is spliced into ``CREATE SCHEMA "…"`` and ``search_path`` (identifiers cannot be
#: bound as parameters), so nothing else may pass; upper case would also fail at run time, as
#: ``search_path`` folds an unquoted name to lower case while ``CREATE SCHEMA "…"`` keeps it.
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def session_name(schema: str) -> str:
    """The ``application_name`` of the store's connections on ``schema``."""
    return f"sketchauth:{schema}"


def ensure_schema(url: str, schema: str) -> None:
    """Create ``schema`` in the database at ``url`` if it does not exist (a restore's target)."""
    if not valid_schema_name(schema):
        raise ValueError("schema must be a lower-case identifier: a-z, 0-9 and _, not starting with a digit")
    psycopg, _ = _pool_classes()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')  # a checked identifier


def valid_schema_name(schema: str) -> bool:
    return SCHEMA_NAME.fullmatch(schema) is not None


def _pool_classes() -> tuple[Any, Any]:
    try:
        import psycopg  # optional dependency (the 'postgres' extra)
        import psycopg_pool  # optional dependency
    except ImportError:
        raise RuntimeError(
            "PostgreSQL support needs the 'postgres' extra: pip install 'sketchauth[postgres]'"
        ) from None
    return psycopg, psycopg_pool


class PostgresStore(SqlStore):
    """:class:`~sketchauth_service.store.base.Store` on PostgreSQL (atomic counters hold across replicas)."""

    dialect = "postgres"
    # Read committed: a refused claim re-reads the user's row locked, hence current.
    _row_lock = " FOR UPDATE"

    def __init__(
        self, url: str, *, schema: str = "public", min_size: int = 1, max_size: int = 8, timeout: float = 10.0
    ) -> None:
        if not valid_schema_name(schema):
            raise ValueError("schema must be a lower-case identifier: a-z, 0-9 and _, not starting with a digit")
        _, psycopg_pool = _pool_classes()
        self.schema = schema
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            # Named after the schema: ``sketchauth db restore`` finds the sessions of a running service.
            kwargs={
                "autocommit": False,
                "options": f"-c search_path={schema}",
                "application_name": session_name(schema),
            },
            open=True,
            timeout=timeout,
        )

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._pool.connection() as conn, conn.cursor() as cur:
            yield cur

    @contextmanager
    def _outcome_transaction(self) -> Iterator[Any]:
        # The outcome of a claimed attempt commits without waiting for the WAL flush (about
        # 3.7 ms per commit measured on the benchmark machine, the largest cost of a request):
        # the claim before it was flushed, and a server crash can only lose the outcome whole
        # (the count stays, as for a request that died mid-way; see sketchauth_service.store.sql).
        with self._transaction() as cur:
            cur.execute("SET LOCAL synchronous_commit TO OFF")
            yield cur

    @contextmanager
    def _locked_migration(self) -> Iterator[Any]:
        with self._pool.connection() as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sketchauth-migrate:{self.schema}",))
            cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            yield cur

    def _sql(self, query: str) -> str:
        return query.replace("?", "%s")

    def _lock_user(self, cur: Any, user_id: str) -> None:
        # Enrolments and revocations of one user take turns (a transaction-scoped advisory lock
        # on a 64-bit hash of schema and id; a collision only makes two users take turns).
        key = f"sketchauth-user:{self.schema}:{user_id}"
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))

    def other_sessions(self) -> int:
        """Sessions of stores on this schema other than this one's (a running service's pool)."""
        with self._read() as cur:
            row = cur.execute(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = %s AND pid <> pg_backend_pid()",
                (session_name(self.schema),),
            ).fetchone()
        return int(row[0])

    def drop_schema(self) -> None:
        """Drop the store's schema and everything in it (tests; never ``public``)."""
        if self.schema == "public":
            raise ValueError("refusing to drop the public schema")
        with self._pool.connection() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    def close(self) -> None:
        self._pool.close()
