"""The ``sketchauth`` command: all command-line code of the project, one module per command group.

* ``sketchauth demo`` (:mod:`~sketchauth.cli.demo`): enrol a synthetic user, verify a genuine and
  an impostor sample, show what is stored and the entropy report;
* ``sketchauth evaluate ...`` (:mod:`~sketchauth.cli.evaluate`): linkage, guessing and the
  evaluation report;
* ``sketchauth features ...`` (:mod:`~sketchauth.cli.features`): fit transforms, build and
  evaluate feature pipelines;
* ``sketchauth reproduce`` (:mod:`~sketchauth.cli.reproduce`): the source papers' numbers;
* ``sketchauth serve`` (:mod:`~sketchauth.cli.serve`): the enrolment/verification service
  (:mod:`sketchauth_service`, uvicorn) — the only place the library's code imports the service;
* ``sketchauth db ...`` (:mod:`~sketchauth.cli.db`): the service database's schema status,
  migration, backup and restore;
* ``sketchauth --version``: the installed version.

Building the parser imports only the standard library: each command imports what it needs when
it runs (numpy, the evaluation, fastapi, matplotlib), so ``sketchauth --help`` and every command
start fast.

Every ``--profile`` / ``--hash-profile`` defaults to the library's
:data:`sketchauth.enrolment.DEFAULT_HASH_PROFILE` (``owasp``), as ``hasher()`` and the service do.
The flags leave the default unset and resolve it when the command runs, so that building the
parser does not import the library.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import sketchauth
from sketchauth.cli import db, demo, evaluate, features, pepper, reproduce, serve
from sketchauth.cli._common import DEFAULT_PROFILE_NAME, SubParsers
from sketchauth.errors import SketchAuthError

__all__ = ["DEFAULT_PROFILE_NAME", "build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]

#: One entry per sub-command group; each adds its parser(s) and sets ``func``.
_COMMANDS: list[Callable[[SubParsers[argparse.ArgumentParser]], None]] = [
    demo.add,
    evaluate.add,
    serve.add,
    features.add,
    reproduce.add,
    pepper.add,
    db.add,
]


class _Version(argparse.Action):
    """``--version``: the installed distribution's version (read only when asked for)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"sketchauth {sketchauth.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sketchauth`` command."""
    parser = argparse.ArgumentParser(
        prog="sketchauth",
        description="Biometric authentication without storing the biometric.",
    )
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sketchauth`` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, SketchAuthError):
            print(f"sketchauth: error: {exc}", file=sys.stderr)
            return 2
        raise
