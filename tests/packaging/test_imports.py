"""Function-level imports name their reason (docs/development.md, "Imports").

Imports go at the top of a module. An import inside a function, method or class body is allowed
for three reasons only, and a comment on the import line, or on the line just above it, says
which with one of these phrases:

* ``optional dependency`` — matplotlib, fastapi/uvicorn, psycopg: the module imports without it;
* ``start-up`` — command-line start-up cost (the ``sketchauth`` parser loads only the standard
  library; numpy and the evaluation load inside the handler that runs);
* ``cycle: a.b <-> c.d`` — the two modules of an import cycle.

A comment of several lines counts as the line above. One comment covers a run of consecutive
import statements (blank lines between them allowed), as in a command handler that opens with its
imports. ``if TYPE_CHECKING:`` blocks and module-level ``try: … except ImportError:`` are module
level, so they need no comment.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("sketchauth", "service/sketchauth_service")

#: The fixed vocabulary: a reason comment contains one of these (case-insensitive).
REASON = re.compile(r"optional dependency|start-up|cycle: [\w.]+ <-> [\w.]+", re.IGNORECASE)

#: Files not yet brought in line, with their count of function-level imports without a reason.
#: This list must only shrink: a new offender fails the test, and so does an entry larger than
#: its file's count (lower it, or remove it at zero). Nothing may be added to it.
PENDING: dict[str, int] = {}

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


@dataclass(frozen=True)
class Offender:
    """A function-level import without a reason comment."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def _comments(source: str) -> dict[int, str]:
    """The comment on each line (tokenize, so a ``#`` inside a string is not a comment)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0]: tok.string for tok in tokens if tok.type == tokenize.COMMENT}


def _nested_bodies(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every statement list that lies inside a function, method or class (at any depth)."""
    bodies: list[list[ast.stmt]] = []

    def visit(node: ast.AST, nested: bool) -> None:
        inner = nested or isinstance(node, _SCOPES)
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if inner and isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                bodies.append(stmts)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return bodies


def _has_reason(stmt: ast.stmt, comments: dict[int, str], lines: list[str]) -> bool:
    """A reason phrase on one of the statement's lines or in the comment just above it.

    The comment above may span several lines (every line of it a comment, none blank).
    """
    first = stmt.lineno
    while first > 1 and lines[first - 2].lstrip().startswith("#"):
        first -= 1
    end = stmt.end_lineno or stmt.lineno
    return any(REASON.search(comments.get(line, "")) for line in range(first, end + 1))


def offenders(source: str, path: str) -> list[Offender]:
    """The function-level imports of ``source`` that no reason comment covers."""
    tree = ast.parse(source)
    comments = _comments(source)
    lines = source.splitlines()
    found: list[Offender] = []
    for body in _nested_bodies(tree):
        covered = False  # a reason above the first import of a run covers the run
        for stmt in body:
            if not isinstance(stmt, _IMPORTS):
                covered = False
                continue
            covered = covered or _has_reason(stmt, comments, lines)
            if not covered:
                found.append(Offender(path, stmt.lineno, lines[stmt.lineno - 1].strip()))
    return sorted(found, key=lambda o: o.line)


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def _all_offenders() -> list[Offender]:
    found: list[Offender] = []
    for module in _modules():
        found += offenders(module.read_text(encoding="utf-8"), module.relative_to(REPO).as_posix())
    return found


def test_function_level_imports_name_their_reason() -> None:
    found = _all_offenders()
    counts = Counter(o.path for o in found)
    over = sorted(path for path, n in counts.items() if n > PENDING.get(path, 0))
    listing = "\n".join(str(o) for o in found if o.path in over)
    assert not over, (
        "function-level imports without a reason comment ('optional dependency', 'start-up' or "
        "'cycle: <module> <-> <module>' on the import line or the line above; see docs/development.md, Imports). "
        "Hoist the import to the top of the module, or name the reason:\n" + listing
    )


def test_pending_list_only_shrinks() -> None:
    counts = Counter(o.path for o in _all_offenders())
    stale = {path: (n, counts.get(path, 0)) for path, n in PENDING.items() if n > counts.get(path, 0)}
    assert not stale, "lower PENDING in tests/packaging/test_imports.py to the counts now found: " + ", ".join(
        f"{path}: {n} -> {now}" for path, (n, now) in sorted(stale.items())
    )


def test_pending_names_existing_modules() -> None:
    missing = sorted(path for path in PENDING if not (REPO / path).is_file())
    assert not missing, f"PENDING names files that do not exist: {missing}"


SAMPLE = """\
from typing import TYPE_CHECKING

try:
    import matplotlib
except ImportError:
    matplotlib = None

if TYPE_CHECKING:
    from numpy import ndarray


def plain():
    import json
    return json


def with_reason():
    # optional dependency: matplotlib (extra "plots")
    import matplotlib.pyplot as plt

    from sketchauth.evaluate.report import figures
    x = "# start-up"
    import os
    return plt, figures, os, x


def trailing():
    import numpy as np  # start-up: numpy loads only when the command runs
    import csv  # Start-Up cost
    from a import b  # cycle: sketchauth.a <-> sketchauth.c
    return np, csv, b


class Holder:
    import decimal

    def method(self):
        if True:
            import fractions
        return fractions

    lazy = lambda: __import__("x")
"""


@pytest.mark.parametrize(
    ("line", "text"),
    [(13, "import json"), (23, "import os"), (35, "import decimal"), (39, "import fractions")],
)
def test_checker_finds_each_unexplained_import(line: int, text: str) -> None:
    found = offenders(SAMPLE, "sample.py")
    assert Offender("sample.py", line, text) in found


def test_checker_accepts_reasons_and_module_level_forms() -> None:
    assert [o.line for o in offenders(SAMPLE, "sample.py")] == [13, 23, 35, 39]


@pytest.mark.parametrize("comment", ["# cycle:", "# cycle: a.b", "# import cycle"])
def test_cycle_reason_must_name_both_modules(comment: str) -> None:
    source = f"def f():\n    import a  {comment}\n"
    assert offenders(source, "m.py") == [Offender("m.py", 2, f"import a  {comment}")]
