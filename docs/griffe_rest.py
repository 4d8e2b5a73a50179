"""Griffe extension: render the reStructuredText habits of the docstrings as Markdown.

The docstrings are written to read well in ``help()`` and to run as doctests: they use Sphinx
roles (``:class:`~sketchauth.mixing.Cascade```) and literal blocks introduced by ``::``. The API
reference renders docstrings as Markdown, so this extension rewrites, before rendering,

* a role ``:class:`X``` (any role) into the code span ``X`` — with ``~`` only the last dotted
  component is shown, as Sphinx does;
* a paragraph ending in ``::`` followed by an indented block into the paragraph ending in ``:``
  and a fenced code block (``pycon`` when the block is a doctest, plain text otherwise);
* a doctest paragraph (lines from ``>>>`` to the next blank line) into a fenced ``pycon`` block.

Nothing else changes: the docstrings themselves stay as they are.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).strip()
    if "<" in target and target.endswith(">"):  # :role:`title <target>`
        target = target.split("<", 1)[0].strip()
    elif short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _literal_blocks(text: str) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and not line.strip().startswith(">>>"):
            intro = line.rstrip()[:-1]
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block: list[str] = []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
                block.append(lines[j])
                j += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                body = textwrap.dedent("\n".join(block))
                language = "pycon" if body.lstrip().startswith(">>>") else "text"
                if intro.strip() == ":":
                    intro = ""
                out += [intro, "", f"```{language}", *body.splitlines(), "```", ""]
                i = j
                continue
        if line.lstrip().startswith(">>>") and (not out or not out[-1].strip()):
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            body = textwrap.dedent("\n".join(lines[i:j]))
            out += ["```pycon", *body.splitlines(), "```"]
            i = j
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def to_markdown(text: str) -> str:
    """The Markdown reading of a reStructuredText-flavoured docstring."""
    return _literal_blocks(ROLE.sub(_role, text))


class RestToMarkdown(griffe.Extension):
    """Rewrite every docstring once, when griffe loads the object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
