"""``sketchauth reproduce``: recompute the source papers' numbers and figures (:mod:`sketchauth.evaluate.reproduce`)."""

from __future__ import annotations

import argparse
import sys

from sketchauth.cli._common import SubParsers, add_quiet, show_progress

__all__ = ["add"]


def _reproduce(args: argparse.Namespace) -> int:
    """Run, show progress on a terminal, write, summarise."""
    # Function-level imports: command-line start-up cost (the reproduction loads the whole library).
    from tqdm import tqdm

    from sketchauth.evaluate.reproduce import STEPS, Options, output_directory, reproduce, summary_line, write_report

    output_directory(args.out)  # fail before the computation, not after it
    with tqdm(total=STEPS, unit="item", desc="reproduce", file=sys.stderr, disable=not show_progress(args)) as bar:
        rep = reproduce(Options(quick=args.quick), progress=lambda _name: bar.update(1))
    paths = write_report(rep, args.out, args.json)
    print(f"{summary_line(rep.summary())} ({rep.seconds:.1f} s) -> {paths['markdown']}, {paths['json']}")
    return 0


def add(sub: SubParsers) -> None:
    """Add ``reproduce`` to the top-level parser."""
    p = sub.add_parser(
        "reproduce",
        help="recompute the thesis' and Boreale-Paolini's numbers and figures, errata included",
        description="Write a Markdown report with PNG figures and a JSON file: per item the source, "
        "the printed value, the library's value and a verdict (agrees / differs / not reproducible / "
        "new finding) with an explanation.",
    )
    p.add_argument(
        "--out",
        default="reproduce",
        metavar="DIR",
        help="directory for reproduce.md and the figures (default ./reproduce)",
    )
    p.add_argument("--json", metavar="FILE", help="JSON file (default DIR/reproduce.json)")
    p.add_argument("--quick", action="store_true", help="smaller simulations and toy sets (for CI, seconds)")
    add_quiet(p)
    p.set_defaults(func=_reproduce)
