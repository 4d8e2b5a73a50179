"""``sketchauth pepper``: see and rotate the service's pepper (argparse; the work in :mod:`sketchauth_service.pepper`).

Peppers are secrets: they are **never** taken from the command line (argv is visible to every
local user in ``ps`` and lands in shell histories). Each is read from an environment variable
(``--new-env``/``--old-env``, by name) or from a file (``--new-file``/``--old-file``, first
line). Defaults: the new pepper from ``SKETCHAUTH_PEPPER``, the old ones from
``SKETCHAUTH_PEPPER_PREVIOUS`` (comma-separated) — the variables the service itself reads
during a rotation. ``SKETCHAUTH_DEPLOYMENT_ID`` and ``SKETCHAUTH_ROLLBACK_LEDGER`` are read as the
service reads them (they are bound into, and kept beside, every sealed record).

``convert`` seals a database stored in clear, once: explicit, audited (an audit event ``seal`` per
record and a log line), never a side effect of ``rotate``, which re-seals sealed records only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sketchauth.enrolment import DEFAULT_HASH_PROFILE

if TYPE_CHECKING:
    from sketchauth_service.store import Store

    from sketchauth.pepper import Pepper

__all__ = ["add"]


def _database_url(args: argparse.Namespace) -> str:
    return args.db or os.environ.get("SKETCHAUTH_DATABASE_URL") or "sqlite:///./sketchauth.db"


def _open(args: argparse.Namespace, new: Pepper | None = None, old: Sequence[Pepper] = ()) -> Store:
    """The store, migrated, reading and writing through the deployment's codec (its id, ledger and key bound)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperRing, peppered
    from sketchauth_service.settings import Settings
    from sketchauth_service.store import open_store

    store = open_store(_database_url(args), postgres_schema=os.environ.get("SKETCHAUTH_SCHEMA") or "public")
    store.migrate()
    settings = Settings.model_construct(
        deployment_id=os.environ.get("SKETCHAUTH_DEPLOYMENT_ID") or "default",
        rollback_ledger=(os.environ.get("SKETCHAUTH_ROLLBACK_LEDGER") or None) if new is not None else None,
        hash_profile=_profile(),
    )
    return peppered(store, PepperRing(new, tuple(old)), settings)


def _texts(env: str | None, path: str | None, default_env: str, *, many: bool, flag: str) -> list[str]:
    """The pepper text(s) named by ``--*-env`` / ``--*-file`` (or ``default_env``)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import read_pepper_file

    if path:
        return [read_pepper_file(path, flag)]
    value = os.environ.get(env or default_env, "").strip()
    if not value:
        return []
    return [v.strip() for v in value.split(",") if v.strip()] if many else [value]


def _new_pepper(args: argparse.Namespace) -> Pepper:
    """The pepper ``--new-env``/``--new-file`` name (default ``SKETCHAUTH_PEPPER``), judged (PepperSettingsError)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperSettingsError, parse_pepper

    texts = _texts(args.new_env, args.new_file, "SKETCHAUTH_PEPPER", many=False, flag="--new-file")
    if not texts:
        raise PepperSettingsError(
            f"no new pepper: set {args.new_env or 'SKETCHAUTH_PEPPER'} or give --new-file PATH "
            "(a pepper is never taken from the command line)"
        )
    return parse_pepper(texts[0], "new pepper")


def _rotate(args: argparse.Namespace) -> int:
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperSettingsError, parse_pepper, rotate

    try:
        new = _new_pepper(args)
        old = [
            parse_pepper(t, "old pepper", judge=False)
            for t in _texts(args.old_env, args.old_file, "SKETCHAUTH_PEPPER_PREVIOUS", many=True, flag="--old-file")
        ]
    except PepperSettingsError as exc:
        print(f"sketchauth pepper rotate: {exc}", file=sys.stderr)
        return 2
    store = _open(args, new, old)
    try:
        result = rotate(store, new, old, batch_size=args.batch_size, max_batches=args.max_batches)
    finally:
        store.close()
    print(json.dumps(result.to_dict(), indent=2))
    if result.unreadable:
        print(
            f"sketchauth pepper rotate: {result.unreadable} records were sealed by a pepper not given "
            "(--old-env/--old-file), or their seal does not open (altered, moved or rolled back in the database); "
            "they were left as they are",
            file=sys.stderr,
        )
        return 1
    return 0


def _convert(args: argparse.Namespace) -> int:
    """Seal every record stored in clear under the pepper (``--new-env``/``--new-file``), once."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperSettingsError, convert

    try:
        pepper = _new_pepper(args)
    except PepperSettingsError as exc:
        print(f"sketchauth pepper convert: {exc}", file=sys.stderr)
        return 2
    store = _open(args, pepper)
    try:
        result = convert(store, pepper, batch_size=args.batch_size)
    finally:
        store.close()
    print(json.dumps({"sealed": result.rewrapped, "unreadable": result.unreadable, "pepper_id": result.new_id}))
    if result.unreadable:
        print(
            f"sketchauth pepper convert: {result.unreadable} records were left in clear: their key parameters ask "
            "for more than the deployment's argon2 profiles allow (altered in the database); re-enrol those users",
            file=sys.stderr,
        )
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperSettingsError, census, hash_census, parse_pepper

    peppers: list[Pepper] = []
    if args.hashes:
        try:
            texts = _texts(None, None, "SKETCHAUTH_PEPPER", many=False, flag="")
            peppers = [parse_pepper(texts[0], "SKETCHAUTH_PEPPER")] if texts else []
            peppers += [
                parse_pepper(t, "SKETCHAUTH_PEPPER_PREVIOUS", judge=False)
                for t in _texts(None, None, "SKETCHAUTH_PEPPER_PREVIOUS", many=True, flag="")
            ]
        except PepperSettingsError as exc:
            print(f"sketchauth pepper status: {exc}", file=sys.stderr)
            return 2
    store = _open(args, *((peppers[0], peppers[1:]) if peppers else ()))
    try:
        counts = census(store)
        hashes = hash_census(store, _profile()) if args.hashes else None
    finally:
        store.close()
    records = {("clear" if k is None else k): v for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))}
    print(json.dumps(records if hashes is None else {"records": records, "hashes": hashes}))
    return 0


def _profile() -> str:
    return os.environ.get("SKETCHAUTH_HASH_PROFILE") or DEFAULT_HASH_PROFILE


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``sketchauth pepper status``, ``sketchauth pepper convert`` and ``sketchauth pepper rotate``."""
    p = sub.add_parser(
        "pepper",
        help="see and rotate the service's pepper (needs the 'service' extra)",
        description="Pepper operations on the service's database. Peppers are read from environment "
        "variables or files, never from the command line.",
    )
    commands = p.add_subparsers(dest="pepper_command", required=True, metavar="ACTION")
    status = commands.add_parser("status", help="stored records per pepper id ('clear': not sealed)")
    status.add_argument("--db", help="database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)")
    status.add_argument(
        "--hashes",
        action="store_true",
        help="also count hashes made with the current argon2 profile ($SKETCHAUTH_HASH_PROFILE) and those re-made "
        "at their next successful verification; opens every record (SKETCHAUTH_PEPPER and _PREVIOUS as the "
        "service reads them)",
    )
    status.set_defaults(func=_status)
    conv = commands.add_parser(
        "convert",
        help="seal every record stored in clear, once (a clear database before its first pepper)",
        description="Explicit, one-time conversion of records stored in clear: each is sealed whole (helper, hash, "
        "report, key parameters) under the pepper as its next version and audited ('seal'). Run it with the "
        "service stopped: a peppered service refuses to start while clear records remain. A re-run finds nothing "
        "to do. Exit status 1 when some records could not be converted.",
    )
    conv.add_argument("--db", help="database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)")
    conv.add_argument(
        "--new-env", metavar="VAR", help="environment variable holding the pepper (default SKETCHAUTH_PEPPER)"
    )
    conv.add_argument("--new-file", metavar="PATH", help="file whose first line is the pepper")
    conv.add_argument("--batch-size", type=int, default=200, help="records per transaction (default 200)")
    conv.set_defaults(func=_convert)
    rotate = commands.add_parser(
        "rotate",
        help="re-seal every sealed record with a new pepper (no biometric needed; resumable)",
        description="Open each sealed record with its old pepper and seal it with the new one and a fresh nonce, "
        "one transaction per batch. Records in clear are left alone (see 'convert'). Records already sealed by "
        "the new pepper are skipped, so an interrupted rotation is resumed by running the command again. Exit "
        "status 1 when some records were sealed by a pepper not given.",
    )
    rotate.add_argument("--db", help="database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)")
    rotate.add_argument(
        "--new-env", metavar="VAR", help="environment variable holding the new pepper (default SKETCHAUTH_PEPPER)"
    )
    rotate.add_argument("--new-file", metavar="PATH", help="file whose first line is the new pepper")
    rotate.add_argument(
        "--old-env",
        metavar="VAR",
        help="environment variable holding the old pepper(s), comma-separated (default SKETCHAUTH_PEPPER_PREVIOUS)",
    )
    rotate.add_argument("--old-file", metavar="PATH", help="file whose first line is the old pepper")
    rotate.add_argument("--batch-size", type=int, default=200, help="records per transaction (default 200)")
    rotate.add_argument("--max-batches", type=int, default=None, help="stop after this many batches (default: all)")
    rotate.set_defaults(func=_rotate)
