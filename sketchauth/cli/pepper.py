"""``sketchauth pepper``: see and rotate the service's pepper (argparse; the work in :mod:`sketchauth_service.pepper`).

Peppers are secrets: they are **never** taken from the command line (argv is visible to every
local user in ``ps`` and lands in shell histories). Each is read from an environment variable
(``--new-env``/``--old-env``, by name) or from a file (``--new-file``/``--old-file``, first
line). Defaults: the new pepper from ``SKETCHAUTH_PEPPER``, the old ones from
``SKETCHAUTH_PEPPER_PREVIOUS`` (comma-separated) — the variables the service itself reads
during a rotation. ``SKETCHAUTH_DEPLOYMENT_ID`` and ``SKETCHAUTH_ROLLBACK_LEDGER`` are read as the
service reads them (they are bound into, and kept beside, every sealed record).

``new`` prints a new pepper (``skp1_`` and base64url of 32 bytes from :mod:`secrets` with a
checksum): the only form the service accepts without ``SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER``.
``token-key`` generates the record key inside a PKCS#11 token (``SKETCHAUTH_PKCS11_*``), once.

``convert`` seals a database stored entirely in clear, once: explicit, audited (an audit event
``seal`` per record and a log line), never a side effect of ``rotate``, which re-seals sealed
records only; it refuses a database that already holds sealed records or clear rows it cannot
attribute. Refusals are one line ``sketchauth: error: ...`` and exit status 2.
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
    from sketchauth_service.keyring import TokenSettings
    from sketchauth_service.store import Store

    from sketchauth.pepper import Sealer

__all__ = ["add"]


def _database_url(args: argparse.Namespace) -> str:
    return args.db or os.environ.get("SKETCHAUTH_DATABASE_URL") or "sqlite:///./sketchauth.db"


def _open(args: argparse.Namespace, new: Sealer | None = None, old: Sequence[Sealer] = ()) -> Store:
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


def _new_pepper(args: argparse.Namespace) -> Sealer:
    """The sealer to write with: the PKCS#11 token key when ``SKETCHAUTH_PKCS11_MODULE`` is set, else the pepper
    ``--new-env``/``--new-file`` name (default ``SKETCHAUTH_PEPPER``) (PepperSettingsError)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import PepperSettingsError, parse_pepper

    texts = _texts(args.new_env, args.new_file, "SKETCHAUTH_PEPPER", many=False, flag="--new-file")
    token = _token() if not texts else None
    if token is not None:
        return token
    if not texts:
        raise PepperSettingsError(
            f"no new pepper: set {args.new_env or 'SKETCHAUTH_PEPPER'} or give --new-file PATH "
            "(a pepper is never taken from the command line), or SKETCHAUTH_PKCS11_MODULE for a token key"
        )
    pepper = parse_pepper(texts[0], "new pepper", unformatted=_flag("SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER"))
    if not texts[0].strip().startswith("skp1_"):
        print(
            "sketchauth: warning: INSECURE: the pepper is not one made by 'sketchauth pepper new' and is used only "
            "because SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER is on",
            file=sys.stderr,
        )
    return pepper


def _flag(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() in {"1", "true", "yes", "on"}


def _token_settings() -> TokenSettings | None:
    """The PKCS#11 settings of the environment (``None`` without ``SKETCHAUTH_PKCS11_MODULE``)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.keyring import TokenSettings

    module = os.environ.get("SKETCHAUTH_PKCS11_MODULE", "").strip()
    if not module:
        return None
    env = {
        k: (os.environ.get(f"SKETCHAUTH_PKCS11_{k}") or "").strip() or None
        for k in ("TOKEN_LABEL", "PIN", "PIN_FILE", "KEY_LABEL")
    }
    return TokenSettings.of(module, env["TOKEN_LABEL"], env["PIN"], env["PIN_FILE"], env["KEY_LABEL"])


def _token() -> Sealer | None:
    """The record key in the PKCS#11 token the environment names, or ``None``."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.keyring import open_token_key

    settings = _token_settings()
    return None if settings is None else open_token_key(settings)


def _fail(exc: Exception) -> int:
    print(f"sketchauth: error: {exc}", file=sys.stderr)
    return 2


def _refusals() -> tuple[type[Exception], ...]:
    """The service's refusals a pepper command reports in one line (settings, token, conversion)."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.keyring import TokenError
    from sketchauth_service.pepper import ConversionRefused, PepperSettingsError

    return (PepperSettingsError, TokenError, ConversionRefused)


def _rotate(args: argparse.Namespace) -> int:
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import parse_pepper, rotate

    try:
        new = _new_pepper(args)
        old = [
            parse_pepper(t, "old pepper", unformatted=True, judge=False)
            for t in _texts(args.old_env, args.old_file, "SKETCHAUTH_PEPPER_PREVIOUS", many=True, flag="--old-file")
        ]
    except _refusals() as exc:
        return _fail(exc)
    store = _open(args, new, old)
    try:
        result = rotate(store, new, old, batch_size=args.batch_size, max_batches=args.max_batches)
    finally:
        store.close()
    print(json.dumps(result.to_dict(), indent=2))
    if result.unreadable:
        print(
            f"sketchauth pepper rotate: {result.unreadable} records were sealed by a pepper not given "
            "(--old-env/--old-file), or were refused (altered, moved, rolled back or wrong-typed values in the "
            "database: audited 'integrity'); they were left as they are",
            file=sys.stderr,
        )
        return 1
    return 0


def _convert(args: argparse.Namespace) -> int:
    """Seal every record stored in clear under the pepper (``--new-env``/``--new-file``), once."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.pepper import convert

    try:
        pepper = _new_pepper(args)
    except _refusals() as exc:
        return _fail(exc)
    store = _open(args, pepper)
    try:
        result = convert(store, pepper, batch_size=args.batch_size)
    except _refusals() as exc:
        return _fail(exc)
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
    from sketchauth_service.pepper import census, hash_census, parse_pepper

    peppers: list[Sealer] = []
    if args.hashes:
        try:
            texts = _texts(None, None, "SKETCHAUTH_PEPPER", many=False, flag="")
            token = _token() if not texts else None
            unformatted = _flag("SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER")
            peppers = [token] if token else []
            peppers += [parse_pepper(texts[0], "SKETCHAUTH_PEPPER", unformatted=unformatted)] if texts else []
            peppers += [
                parse_pepper(t, "SKETCHAUTH_PEPPER_PREVIOUS", unformatted=True, judge=False)
                for t in _texts(None, None, "SKETCHAUTH_PEPPER_PREVIOUS", many=True, flag="")
            ]
        except _refusals() as exc:
            return _fail(exc)
    store = _open(args, *((peppers[0], peppers[1:]) if peppers else ()))
    try:
        counts = census(store)
        hashes = hash_census(store, _profile()) if args.hashes else None
    finally:
        store.close()
    records = {("clear" if k is None else k): v for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))}
    print(json.dumps(records if hashes is None else {"records": records, "hashes": hashes}))
    return 0


def _new(args: argparse.Namespace) -> int:
    """Print a new pepper (``skp1_...``); with ``--out PATH``, write it to a new file readable by its owner only."""
    # start-up: the parser loads the standard library only
    from sketchauth.pepper import new_pepper_text

    text = new_pepper_text()
    if args.out is None:
        print(text)
        return 0
    try:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return _fail(OSError(f"cannot create {args.out} ({exc.strerror}); it is never overwritten"))
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    print(json.dumps({"written": args.out}))
    return 0


def _token_key(args: argparse.Namespace) -> int:
    """Generate the record key inside the PKCS#11 token the ``SKETCHAUTH_PKCS11_*`` variables name."""
    # optional dependency: the service extra, loaded when the command runs
    from sketchauth_service.keyring import generate_token_key

    try:
        settings = _token_settings()
        if settings is None:
            return _fail(ValueError("set SKETCHAUTH_PKCS11_MODULE (and _TOKEN_LABEL, _PIN_FILE) to name the token"))
        key_id = generate_token_key(settings)
    except _refusals() as exc:
        return _fail(exc)
    print(json.dumps({"generated": settings.key_label, "id": key_id, "extractable": False}))
    return 0


def _profile() -> str:
    return os.environ.get("SKETCHAUTH_HASH_PROFILE") or DEFAULT_HASH_PROFILE


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sketchauth pepper new|token-key|status|convert|rotate``."""
    p = sub.add_parser(
        "pepper",
        help="see and rotate the service's pepper (needs the 'service' extra)",
        description="Pepper operations on the service's database. Peppers are read from environment "
        "variables or files, never from the command line.",
    )
    commands = p.add_subparsers(dest="pepper_command", required=True, metavar="ACTION")
    _add_keys(commands)
    _add_maintenance(commands)


def _add_keys(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``pepper new`` and ``pepper token-key``: make the key that seals records."""
    new = commands.add_parser(
        "new",
        help="print a new pepper (skp1_..., 256 bits from the OS), the form the service accepts",
        description="Draw 32 bytes from the operating system's generator and print them as a pepper text: skp1_ and "
        "base64url of the bytes and a checksum. Give it to the service as SKETCHAUTH_PEPPER_FILE.",
    )
    new.add_argument("--out", metavar="PATH", help="write it to this new file (mode 600) instead of printing it")
    new.set_defaults(func=_new)
    token = commands.add_parser(
        "token-key",
        help="generate the record key inside a PKCS#11 token, not extractable (SKETCHAUTH_PKCS11_*), once",
        description="Generate an AES-256 key inside the token named by SKETCHAUTH_PKCS11_MODULE, _TOKEN_LABEL and "
        "_PIN_FILE (or _PIN), labelled SKETCHAUTH_PKCS11_KEY_LABEL: not extractable, sensitive, not modifiable. "
        "Refuses when a key with that label exists.",
    )
    token.set_defaults(func=_token_key)


def _add_maintenance(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``pepper status``, ``pepper convert`` and ``pepper rotate``: the stored records under their keys."""
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
        "to do. Refused (exit status 2, nothing written) when the database already holds sealed records, was "
        "converted before, or holds clear records it cannot attribute to an enrolment. Exit status 1 when some "
        "records could not be converted.",
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
