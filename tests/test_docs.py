"""The examples in README.md and in the documentation site run, and print what they say.

Every fenced ``pycon`` block of a page is a doctest: the blocks of one page run in order in one
namespace (a page may build on its earlier examples) and their printed output is compared
exactly. Every fenced ``python`` block runs too, in the same namespace, unless its first line
is a ``# needs: ...`` comment naming what the test cannot provide (a running server, the files
an earlier shell step wrote); such a block is only compiled. Examples run in a temporary
directory, so nothing they write lands in the repository.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of a Markdown text, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def test_fence_parser_sees_languages_and_bodies() -> None:
    text = "intro\n```pycon\n>>> 1 + 1\n2\n```\n\n```python\nx = 1\n```\n"
    assert blocks(text) == [("pycon", ">>> 1 + 1\n2\n"), ("python", "x = 1\n")]


def test_pages_exist_and_readme_is_short() -> None:
    assert len(PAGES) > 20
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = blocks(page.read_text(encoding="utf-8"))
    if not any(lang in ("pycon", "python") for lang, _ in found):
        pytest.skip("no Python examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    for index, (lang, body) in enumerate(found):
        name = f"{page.name}[{index}]"
        if lang == "pycon":
            test = parser.get_doctest(body, namespace, name, str(page), 0)
            result = runner.run(test, clear_globs=False)
            namespace.update(test.globs)  # DocTest runs on a copy: keep what the block defined
            assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (output above)"
        elif lang == "python":
            compiled = compile(body, name, "exec")
            if body.lstrip().startswith("# needs:"):
                continue
            exec(compiled, namespace)  # noqa: S102 - the documentation's own examples
