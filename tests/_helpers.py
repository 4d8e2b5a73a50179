"""Helpers the tests share: the command-line runs many tests make the same way.

Importable as ``_helpers`` from every test module: pytest puts ``tests/`` on ``sys.path`` when it
loads ``tests/conftest.py`` (the default ``prepend`` import mode; the test folders have no
``__init__.py``).
"""

from __future__ import annotations

from pathlib import Path

from sketchauth.cli import main


def features_fit(data: Path, out: Path, *args: str) -> int:
    """``sketchauth features fit --data DATA --out OUT ARGS``: its exit status."""
    return main(["features", "fit", "--data", str(data), "--out", str(out), *args])


def features_evaluate(transform: Path, background: Path, out: Path, *args: str) -> int:
    """``sketchauth features evaluate --transform T --background B --out OUT ARGS``: its exit status."""
    return main(
        [
            "features",
            "evaluate",
            "--transform",
            str(transform),
            "--background",
            str(background),
            "--out",
            str(out),
            *args,
        ]
    )


def evaluate_report(out: Path, *args: str) -> int:
    """``sketchauth evaluate report ARGS --out OUT`` as tests run it: no plots, quiet, fast ``test`` hash profile."""
    return main(["evaluate", "report", *args, "--out", str(out), "--no-plots", "--quiet", "--profile", "test"])
