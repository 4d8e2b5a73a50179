"""Versioned schema of both stores: an ordered list of migrations and the table that tracks them.

``schema_migrations(version, description, applied_at)`` records every applied migration; a store
applies, in order and each in its own transaction, the migrations newer than the newest recorded
one. Migrations are append-only: a released one is never edited, only followed by another.
The SQL is written once with ``?`` placeholders and dialect-specific column types substituted.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LATEST_VERSION", "MIGRATIONS", "TYPES", "Migration", "statements"]

#: Column types per dialect: the only place where the two schemas differ.
TYPES: dict[str, dict[str, str]] = {
    "sqlite": {
        "blob": "BLOB",
        "bool": "INTEGER",
        "float": "REAL",
        "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "bigint": "INTEGER",
    },
    "postgres": {
        "blob": "BYTEA",
        "bool": "BOOLEAN",
        "float": "DOUBLE PRECISION",
        "serial": "BIGSERIAL PRIMARY KEY",
        "bigint": "BIGINT",
    },
}

TRACKING_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at {float} NOT NULL
)"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    sql: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "users (helper data, argon2id hash, report, throttling) and audit (time, user, event)",
        (
            """CREATE TABLE users (
                user_id TEXT PRIMARY KEY,
                scheme TEXT NOT NULL,
                params TEXT NOT NULL,
                helper {blob} NOT NULL,
                secret_hash TEXT NOT NULL,
                report TEXT NOT NULL,
                has_pin {bool} NOT NULL,
                failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
                locked_until {float} NOT NULL DEFAULT 0,
                disabled {bool} NOT NULL DEFAULT FALSE,
                enrolled_at {float} NOT NULL
            )""",
            """CREATE TABLE audit (
                id {serial},
                at {float} NOT NULL,
                user_id TEXT NOT NULL,
                event TEXT NOT NULL
            )""",
            "CREATE INDEX audit_user_at ON audit (user_id, at)",
        ),
    ),
    Migration(
        2,
        "users.pipeline and users.pipeline_sha256: the feature pipeline (name, configuration hash) an enrolment used",
        (
            "ALTER TABLE users ADD COLUMN pipeline TEXT",
            "ALTER TABLE users ADD COLUMN pipeline_sha256 TEXT",
        ),
    ),
    Migration(
        3,
        "users.key_params: public argon2id costs and salt of key release (NULL for older enrolments: set at first use)",
        ("ALTER TABLE users ADD COLUMN key_params TEXT",),
    ),
    Migration(
        4,
        "probes: throttling state of verification attempts against user ids with no enrolment",
        (
            """CREATE TABLE probes (
                user_id TEXT PRIMARY KEY,
                failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
                locked_until {float} NOT NULL DEFAULT 0,
                disabled {bool} NOT NULL DEFAULT FALSE
            )""",
        ),
    ),
    Migration(
        5,
        "audit.client: the name of the API key on whose behalf the change was made",
        ("ALTER TABLE audit ADD COLUMN client TEXT",),
    ),
    # -- pepper (sketchauth.pepper): version 6 -------------------------------------------------------
    Migration(
        6,
        "users.pepper_id and users.pepper_nonce: which pepper generation wrapped the helper and the "
        "per-enrolment nonce of its pad (both NULL: a helper stored in clear, as before peppers), indexed by pepper id",
        (
            "ALTER TABLE users ADD COLUMN pepper_id TEXT",
            "ALTER TABLE users ADD COLUMN pepper_nonce {blob}",
            # The start-up census (records per pepper id) reads the index, not the table.
            "CREATE INDEX users_pepper_id ON users (pepper_id)",
        ),
    ),
    # -- end pepper --------------------------------------------------------------------------------
    # -- record integrity (sketchauth_service.store.records): version 7 ------------------------------------------
    Migration(
        7,
        "users.record_version: the per-user record version bound into the seal's associated data (raised by "
        "every write of the record; a rollback ledger outside the database keeps its high-water mark)",
        ("ALTER TABLE users ADD COLUMN record_version {bigint} NOT NULL DEFAULT 0",),
    ),
    # -- end record integrity ------------------------------------------------------------------------
)

LATEST_VERSION = MIGRATIONS[-1].version


def statements(migration: Migration, dialect: str) -> list[str]:
    """The migration's SQL with the dialect's column types filled in."""
    return [sql.format(**TYPES[dialect]) for sql in migration.sql]


def tracking_table(dialect: str) -> str:
    return TRACKING_TABLE.format(**TYPES[dialect])
