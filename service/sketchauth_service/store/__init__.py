"""Storage behind one repository interface (:class:`Store`), chosen by a database URL.

``sqlite:///path`` → :class:`SQLiteStore` (default); ``postgresql://…`` → :class:`PostgresStore`
(imported only when used, so the SQLite path does not need psycopg).
"""

from __future__ import annotations

from sketchauth_service.store.base import (
    AUDIT_CLIENT,
    AlreadyEnrolled,
    Attempt,
    AttemptRefused,
    AuditEvent,
    FailureState,
    LockoutPolicy,
    NewEnrolment,
    Store,
    StoreError,
    UserNotFound,
    UserRecord,
)

__all__ = [
    "AUDIT_CLIENT",
    "AlreadyEnrolled",
    "Attempt",
    "AttemptRefused",
    "AuditEvent",
    "FailureState",
    "LockoutPolicy",
    "NewEnrolment",
    "Store",
    "StoreError",
    "UserNotFound",
    "UserRecord",
    "open_store",
]


def open_store(url: str, *, postgres_schema: str = "public", pool_size: int = 8, timeout: float = 10.0) -> Store:
    """Open (not migrate) the store a database URL names (``timeout``: PostgreSQL's wait for a connection)."""
    if url.startswith("sqlite:///"):
        from sketchauth_service.store.sqlite import SQLiteStore  # start-up: only the backend the URL names is loaded

        return SQLiteStore.from_url(url)
    if url.startswith(("postgresql://", "postgres://")):
        from sketchauth_service.store.postgres import (
            PostgresStore,  # start-up: only the backend the URL names is loaded
        )

        return PostgresStore(url, schema=postgres_schema, max_size=pool_size, timeout=timeout)
    raise ValueError(f"unsupported database URL scheme in {url.split(':', 1)[0]!r}")
