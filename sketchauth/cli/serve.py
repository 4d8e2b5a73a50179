"""``sketchauth serve``: run the enrolment/verification service (:mod:`sketchauth_service`, uvicorn).

This is the only module of :mod:`sketchauth` that imports the ``sketchauth_service`` package (when the command
runs): the library never depends on the service.
"""

from __future__ import annotations

import argparse
import os
import sys

from sketchauth.cli._common import DEFAULT_PROFILE_NAME, SubParsers

__all__ = ["add"]


def _serve(args: argparse.Namespace) -> int:
    # Function-level imports (here and below): the service is an optional dependency (fastapi and
    # uvicorn, extra "service") and a command-line start-up cost; the web framework loads only once
    # the settings are valid. Only the command line imports the service; the library never does.
    from sketchauth_service.observability import json_line
    from sketchauth_service.settings import TEST_PROFILE_WARNING, Settings, SettingsError, env_name

    # Flags override the environment (settings fields; None: flag not given).
    overrides: dict[str, object] = {
        "database_url": args.db,
        "hash_profile": args.hash_profile,
        "allow_test_profile": True if args.allow_insecure_test_profile else None,
        # Absolute, so every worker reads the same directory whatever it resolves against.
        "pipelines_dir": None if args.pipelines is None else os.path.abspath(args.pipelines),
        "pin_min_entropy": args.pin_min_entropy,
        "host": args.host,
        "port": args.port,
        "workers": args.workers,
        "access_log": False if args.no_access_log else None,
    }
    given = {field: value for field, value in overrides.items() if value is not None}
    try:
        settings = Settings.from_env().replace(**given).validate()
        # Refuse to start on a bad pipeline file here, with its name, not in every worker
        # (optional dependency: the service, as above).
        from sketchauth_service.pipelines import load_configured

        load_configured(settings)
        # The database, its schema and the peppers, checked once here: a refusal is one line,
        # not a traceback from every worker (optional dependency: the service, as above).
        from sketchauth_service.app import preflight, run_server

        preflight(settings)
    except SettingsError as exc:
        # One JSON line like every other line the service writes: what is wrong and what to set.
        print(json_line("error", "sketchauth.serve", f"sketchauth serve: {exc}"), file=sys.stderr)
        return 2
    if settings.insecure_hash_profile:
        print(json_line("warning", "sketchauth.serve", f"WARNING: {TEST_PROFILE_WARNING}"), file=sys.stderr)
    # Workers are separate processes that build their settings from the environment.
    os.environ.update({env_name(field): "1" if value is True else str(value) for field, value in given.items()})

    return run_server(settings, log_level=args.log_level, access_log=not args.no_access_log)


def add(sub: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to the top-level parser."""
    p = sub.add_parser(
        "serve",
        help="run the enrolment/verification service (needs the 'service' extra)",
        description="Run the HTTP service. Settings come from SKETCHAUTH_* environment variables "
        "(an API key of at least 128 bits in SKETCHAUTH_API_KEYS or SKETCHAUTH_API_KEY_FILE is required); "
        "these flags override them.",
    )
    p.add_argument("--db", help="database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)")
    p.add_argument("--host", help="address to listen on (default $SKETCHAUTH_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default $SKETCHAUTH_PORT or 8000)")
    p.add_argument("--workers", type=int, help="worker processes (default $SKETCHAUTH_WORKERS or 1)")
    p.add_argument(
        "--hash-profile", help=f"argon2 profile (default $SKETCHAUTH_HASH_PROFILE or {DEFAULT_PROFILE_NAME})"
    )
    p.add_argument(
        "--allow-insecure-test-profile",
        action="store_true",
        help="allow --hash-profile test (argon2id t=1, m=8 KiB: stolen hashes cost nothing to attack); "
        "for tests only, refused without this flag or $SKETCHAUTH_ALLOW_TEST_PROFILE=1",
    )
    p.add_argument(
        "--pipelines",
        metavar="DIR",
        help="feature pipelines offered as 'pipeline:<name>' "
        "(<name>.json from 'sketchauth features fit --pipelines DIR'; "
        "default $SKETCHAUTH_PIPELINES)",
    )
    p.add_argument(
        "--pin-min-entropy",
        metavar="BITS",
        help="declared min-entropy of PINs, for the entropy report "
        "(default $SKETCHAUTH_PIN_MIN_ENTROPY; unset: undeclared)",
    )
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument(
        "--no-access-log",
        action="store_true",
        help="do not write the JSON request log (one line per request; $SKETCHAUTH_ACCESS_LOG=0)",
    )
    p.set_defaults(func=_serve)
