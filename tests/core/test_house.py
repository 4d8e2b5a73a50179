"""The shape of the house, measured: what no linter counts (ruff, mypy and import-linter do the rest).

* No function or method of the library or the service is longer than :data:`MAX_LINES` lines
  (ruff's PLR0913 and PLR0915 gate parameters and statements; a line count is what a reader
  sees).
* The public API — the ``__all__`` lists of the top-level package, its public subpackages and its
  public modules (:data:`PUBLIC`) — names at most :data:`MAX_PUBLIC_NAMES` distinct names. Every
  other module is internal to its package: importable, documented in its source, not promised.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = (REPO / "sketchauth", REPO / "service" / "sketchauth_service")
MAX_LINES = 80
MAX_PUBLIC_NAMES = 150

#: The public API: what the reference pages document and the service may import.
PUBLIC = (
    "sketchauth",
    "sketchauth.errors",
    "sketchauth.sketches",
    "sketchauth.entropy",
    "sketchauth.mixing",
    "sketchauth.enrolment",
    "sketchauth.templates",
    "sketchauth.pepper",
    "sketchauth.features",
    "sketchauth.client",
    "sketchauth.evaluate",
)


def _functions() -> list[tuple[int, str]]:
    found = []
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    assert node.end_lineno is not None
                    lines = node.end_lineno - node.lineno + 1
                    found.append((lines, f"{path.relative_to(REPO)}:{node.lineno} {node.name}"))
    return found


def test_no_function_is_longer_than_eighty_lines() -> None:
    functions = _functions()
    assert len(functions) > 500, "the scan found the sources"
    long = sorted((f for f in functions if f[0] > MAX_LINES), reverse=True)
    assert not long, "split these (lines, where):\n" + "\n".join(f"{n:4d} {w}" for n, w in long)


def test_the_public_api_is_small() -> None:
    names: set[str] = set()
    for module in PUBLIC:
        exported = getattr(importlib.import_module(module), "__all__", None)
        assert exported is not None, f"{module} has no __all__"
        names.update(f"{name}" for name in exported)
    assert len(names) <= MAX_PUBLIC_NAMES, f"{len(names)} public names (at most {MAX_PUBLIC_NAMES})"


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in imported.__all__ if not hasattr(imported, name)]
    assert not missing, f"{module}.__all__ names what it does not have: {missing}"
