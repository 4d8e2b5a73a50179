"""What several sub-commands share: the default argon2 profile's name, progress and JSON output.

Imports only the standard library: every module of :mod:`sketchauth.cli` is imported to build
the parser, so ``sketchauth --help`` must not pay for numpy or the library.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

__all__ = ["DEFAULT_PROFILE_NAME", "SubParsers", "add_quiet", "emit_json", "profile", "show_progress"]

#: The sub-parsers object of an ``argparse`` command group (``add_subparsers()``).
SubParsers = argparse._SubParsersAction

#: What the help texts call the default argon2 profile; ``tests/cli/test_cli.py`` checks that it is
#: :data:`sketchauth.enrolment.DEFAULT_HASH_PROFILE` (importing that here would slow ``--help``).
DEFAULT_PROFILE_NAME = "owasp"


def profile(args: argparse.Namespace) -> str:
    """``--profile`` as given, or the library's default argon2 profile."""
    # Function-level import: command-line start-up cost (the library is not needed to build the parser).
    from sketchauth.enrolment import DEFAULT_HASH_PROFILE

    return args.profile or DEFAULT_HASH_PROFILE


def add_quiet(parser: argparse.ArgumentParser, what: str = "no progress bar") -> None:
    """``--quiet``, taken by every command that runs long enough to show progress."""
    parser.add_argument("--quiet", action="store_true", help=f"{what} (it is shown on a terminal only)")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress goes to stderr only on a terminal and without ``--quiet``."""
    return not args.quiet and sys.stderr.isatty()


def emit_json(result: dict[str, object], destination: str | None, summary: Callable[[], str]) -> None:
    """Print ``result`` as indented JSON, or write it to the file ``destination`` (``--json OUT``).

    With no destination (or ``-``) the JSON goes to stdout; otherwise stdout gets only the
    one-line ``summary()`` followed by ``-> OUT``, so a long run still ends with a readable result.
    """
    text = json.dumps(result, indent=2)
    if destination in (None, "-"):
        print(text)
        return
    with open(destination, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    print(f"{summary()} -> {destination}")
