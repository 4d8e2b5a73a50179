"""``sketchauth db``: the service database's schema status, migration, backup and restore.

Argument parsing only; the work is in :mod:`sketchauth_service.dbadmin` (the ``service`` extra, plus
``postgres`` and PostgreSQL's client tools ``pg_dump``/``pg_restore`` for a PostgreSQL
database). The database is the service's: ``--db`` or ``$SKETCHAUTH_DATABASE_URL``, and on
PostgreSQL the schema ``--schema`` or ``$SKETCHAUTH_SCHEMA``.

* ``status``: JSON with the applied and pending migrations; exit status 1 when migrations are
  pending or the schema is newer than this release (a check for deployment scripts);
* ``migrate``: apply the pending migrations (refused for a newer schema);
* ``backup OUT``: a consistent online copy (SQLite backup API; ``pg_dump`` custom format);
* ``restore IN``: into an empty database (``--force`` replaces one that holds enrolments);
  refused for a backup newer than this release, and while a service has the database open.

Every failure is one ``sketchauth: error: ...`` line and exit status 2: an unreachable server, a
missing SQLite file, a refused restore, and anything the database driver raises.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Callable

from sketchauth.cli._common import SubParsers
from sketchauth.errors import SketchAuthError

__all__ = ["add"]

_DB_HELP = "database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)"
_SCHEMA_HELP = "PostgreSQL schema of the tables (default $SKETCHAUTH_SCHEMA or public)"


def _target(args: argparse.Namespace) -> tuple[str, str]:
    url = args.db or os.environ.get("SKETCHAUTH_DATABASE_URL") or "sqlite:///./sketchauth.db"
    schema = args.schema or os.environ.get("SKETCHAUTH_SCHEMA") or "public"
    return url, schema


class DatabaseCommandError(SketchAuthError):
    """A ``sketchauth db`` action failed in a way its own checks did not name (a driver's error)."""


def _one_line(action: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``action`` with every failure a :class:`~sketchauth.errors.SketchAuthError` (one line, exit 2)."""

    @functools.wraps(action)
    def run(args: argparse.Namespace) -> int:
        try:
            return action(args)
        except (SketchAuthError, KeyboardInterrupt):
            raise
        except Exception as exc:
            first = str(exc).strip().splitlines()[:1]
            detail = type(exc).__name__ + (f": {first[0][:200]}" if first else "")
            raise DatabaseCommandError(f"db {args.db_command} failed ({detail})") from None

    return run


@_one_line
def _status(args: argparse.Namespace) -> int:
    from sketchauth_service import dbadmin  # optional dependency: the service extra, loaded when the command runs

    url, schema = _target(args)
    result = dbadmin.status(url, schema=schema)
    print(json.dumps(result.to_dict(), indent=2))
    return 0 if result.state == "current" else 1


@_one_line
def _migrate(args: argparse.Namespace) -> int:
    from sketchauth_service import dbadmin  # optional dependency: the service extra, loaded when the command runs

    url, schema = _target(args)
    before, after = dbadmin.migrate(url, schema=schema)
    applied = [m.version for m in after.applied if m.version > before.current]
    print(
        f"schema version {before.current} -> {after.current}" + (f" (applied {applied})" if applied else " (current)")
    )
    return 0


@_one_line
def _backup(args: argparse.Namespace) -> int:
    from sketchauth_service import dbadmin  # optional dependency: the service extra, loaded when the command runs

    url, schema = _target(args)
    result = dbadmin.backup(url, args.out, schema=schema, force=args.force)
    print(f"backup of schema version {result.current} ({result.backend}) -> {args.out}")
    return 0


@_one_line
def _restore(args: argparse.Namespace) -> int:
    from sketchauth_service import dbadmin  # optional dependency: the service extra, loaded when the command runs

    url, schema = _target(args)
    result = dbadmin.restore(url, args.backup, schema=schema, force=args.force)
    print(f"restored {args.backup}: schema version {result.current} ({result.state})")
    if result.state == "behind":
        print("migrations are pending: run 'sketchauth db migrate' (or start the service, which migrates)")
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=_DB_HELP)
    parser.add_argument("--schema", help=_SCHEMA_HELP)


def add(sub: SubParsers[argparse.ArgumentParser]) -> None:
    """Register ``sketchauth db status|migrate|backup|restore``."""
    p = sub.add_parser(
        "db",
        help="the service database: schema status, migrate, backup, restore (needs the 'service' extra)",
        description="Operations on the service's database (SQLite file or PostgreSQL schema). PostgreSQL "
        "backups use pg_dump/pg_restore, which must be on PATH.",
    )
    commands = p.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    status = commands.add_parser(
        "status", help="applied and pending migrations as JSON (exit 1 unless the schema is current)"
    )
    _common(status)
    status.set_defaults(func=_status)
    migrate = commands.add_parser(
        "migrate", help="apply the pending migrations (refused when the schema is newer than this release)"
    )
    _common(migrate)
    migrate.set_defaults(func=_migrate)
    backup = commands.add_parser(
        "backup",
        help="consistent online backup to a file (SQLite backup API; pg_dump custom format)",
    )
    backup.add_argument("out", help="the backup file to write (owner-only permissions)")
    backup.add_argument("--force", action="store_true", help="replace OUT if it exists")
    _common(backup)
    backup.set_defaults(func=_backup)
    restore = commands.add_parser(
        "restore",
        help="replace the database's contents with a backup (stop the service first)",
        description="Restore a backup made by 'sketchauth db backup'. Refused when the backup's schema is "
        "newer than this release, and when the database holds enrolments unless --force.",
    )
    restore.add_argument("backup", help="the backup file")
    restore.add_argument("--force", action="store_true", help="replace a database that holds enrolments")
    _common(restore)
    restore.set_defaults(func=_restore)
