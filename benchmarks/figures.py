"""Speed and memory figures in the docs, generated from the benchmarks' JSON: one source, checked.

A figure on a page is a marked span whose text is written by this script from a benchmark result
(``benchmarks/results/*.json``), never typed::

    <!-- figure: bench_service.json#results[backend=sqlite].production.ratio .2f -->0.96<!-- /figure -->

* ``bench_service.json`` — a file of ``benchmarks/results/``;
* ``#results[backend=sqlite].production.ratio`` — where the value is: member names separated by
  dots; ``name[key=value]`` picks the one object of list ``name`` whose ``key`` is ``value``
  (``[key=value,other=value]``: all of them; the order of a list may change, its labels do not);
  ``name{key=value}`` keeps every object of list ``name`` that matches (a list); a member name
  read from a list reads it from every item (a list); a number picks by position; a last segment
  ``min()``, ``max()``, ``mean()`` or ``len()`` reduces a list
  (``results{m=64}.ratio.max()``: the largest ratio of the results at ``m = 64``);
* `` .2f`` — optional, after a space: a Python format specification, optionally preceded by a
  scale (``*1000 .1f`` turns seconds into milliseconds); without it the value is written as it
  is. (No ``|`` anywhere: a span must fit in a Markdown table cell.)

The unit stays outside the span (``<!-- figure: ... -->38.7<!-- /figure --> ms``).

``render`` rewrites every span's text from its JSON; ``check`` fails (exit 1) when a span's text
differs from what its JSON gives, when a span names a file or a value that does not exist, or
when a page holds a number that looks like a speed or memory measurement (a number next to
``ms``, ``µs``, ``×``, ``MB``, ``/s``, ``per second`` …) outside a span and not on the page's
allow-list (:data:`ALLOWED`: configuration values, sizes of inputs, bounds that are
requirements rather than measurements). ``tests/docs/test_figures.py`` runs the check.

    python3 benchmarks/figures.py render             # after re-running a benchmark
    python3 benchmarks/figures.py check              # what the test runs
    python3 benchmarks/figures.py scan docs/x.md     # the unmarked measurement-like numbers of a page

Pages listed in :data:`PENDING` hold figures not converted yet: their spans are checked, their
unmarked numbers are not. The list only shrinks: convert a page (spans, or remove figures no JSON
backs), then delete it from the list.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: The pages whose figures are checked: the README and every Markdown page of the docs.
PAGES = ("README.md", "docs")

SPAN = re.compile(
    r"<!-- figure: (?P<file>[\w.\-]+\.json)#(?P<path>\S+?)(?:\s+(?P<format>[^>]*?))?\s*-->"
    r"(?P<text>.*?)<!-- /figure -->",
    re.DOTALL,
)

#: Numbers next to a unit of time, speed, memory or a speed-up: what a measurement looks like.
MEASUREMENT = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:(?:–|-|to)\s?\d[\d,]*(?:\.\d+)?\s?)?"
    r"(?:ms\b|µs\b|μs\b|ns\b|×|x\b|MB\b|GB\b|kB\b|KB\b|[A-Za-z-]*/s\b|per (?:CPU-)?second\b|s\b(?= of CPU))"
)

#: Pages whose unmarked figures are not checked yet (their spans are). Convert, then remove.
PENDING: frozenset[str] = frozenset()

#: Per page, text that holds a measurement-like number that is not a measurement: a setting, the
#: size of an input, a requirement. A hit is allowed when it lies inside one of these snippets.
ALLOWED: dict[str, tuple[str, ...]] = {
    # the goals the measurements are held to (requirements, not measurements)
    "docs/benchmarks.md": (
        "at most 1.2× `import numpy`",
        "at most 1.5× minisketch's time",
        "within 3× of minisketch",
        "within 2× of minisketch",
        "at most 2.5× `m = 16`",
        "at most 48 MB",
        "within 3× of a naive C loop",
        "within 2× of the previous floor",
    ),
    # PostgreSQL's out-of-line threshold (a setting) and the size of a stored helper
    "docs/security.md": ("a row over about 2 KB", "a 131 KB complete vault"),
    # sizes of helper data computed from the parameters, not measured
    "docs/schemes/asymmetric.md": ("about 1.1 kB", "about 32 kB"),
    # the calibration criterion (realised FMR within 2x of the target), the code-size goal against
    # the capacity floor, and the frame length of the UCI Japanese Vowels recordings (an input)
    "docs/embeddings.md": (
        "within 2× of the target",
        "never above 2×",
        "The 1.10× target",
        "per 10 ms frame",
    ),
    # the goals the angular measurements are held to (FNMR within 1.25x of cosine, decode within
    # 2 ms, realised FMR within 2x of the target) and the FNMR that goal allows, computed from it
    "docs/schemes/angular.md": (
        'the "≤ 1.25× cosine" target',
        "(target ≤ 2 ms)",
        "1.25 × 6.1% = 7.6% allowed",
        "the 1.25× target",
        "within 2× of the background's target",
    ),
    # the shape of an array
    "docs/schemes/weighted-vault.md": ("a 2×2 array",),
    # the metrics' histogram buckets (a setting)
    "docs/service/index.md": ("buckets from 1 ms to 10 s",),
    # how often the load benchmark probes /livez and samples the resident set (its settings)
    "docs/service/limits.md": ("probed every 25 ms", "sampled every 10 ms"),
}

_REDUCERS: dict[str, Callable[[list[Any]], Any]] = {
    "min()": min,
    "max()": max,
    "mean()": statistics.fmean,
    "len()": len,
}
_SELECT = re.compile(r"(?P<name>[^\[\]]*)\[(?P<where>[^\]]+=[^\]]*)\]")
_FILTER = re.compile(r"(?P<name>[^{}]*)\{(?P<where>[^}]+=[^}]*)\}")


class FigureError(ValueError):
    """A span that names a file or value that does not exist, or a format that does not apply."""


@dataclass(frozen=True, slots=True)
class Span:
    """One marked figure of a page: where its value comes from, how it is written, what the page says."""

    page: str
    line: int
    file: str
    path: str
    format: str
    text: str

    @property
    def source(self) -> str:
        return f"{self.file}#{self.path}"


def resolve(document: Any, path: str) -> Any:
    """The value at ``path`` (``a.b[key=value].c``, ``a{key=value}.c.max()``, ``list.0``) of a JSON document."""
    value = document
    for segment in path.strip().split("."):
        if segment in _REDUCERS:
            if not isinstance(value, list) or not value:
                raise FigureError(f"{segment} needs a non-empty list at {path!r}")
            value = _REDUCERS[segment](value)
            continue
        chosen = _SELECT.fullmatch(segment) or _FILTER.fullmatch(segment)
        if chosen:
            items = _member(value, chosen["name"], path) if chosen["name"] else value
            matches = _matching(items, chosen["where"], segment)
            if chosen.re is _FILTER:
                if not matches:
                    raise FigureError(f"no item matches {segment!r} in {path!r}")
                value = matches
                continue
            if len(matches) != 1:
                raise FigureError(f"{len(matches)} items match {segment!r} in {path!r}")
            value = matches[0]
        elif isinstance(value, list) and segment.lstrip("-").isdigit():
            try:
                value = value[int(segment)]
            except IndexError:
                raise FigureError(f"no item {segment} in {path!r}") from None
        elif isinstance(value, list):
            value = [_member(item, segment, path) for item in value]
        else:
            value = _member(value, segment, path)
    return value


def _matching(items: Any, where: str, segment: str) -> list[Any]:
    """The objects of list ``items`` whose members have the values ``where`` (``key=value,...``) names."""
    wanted = [pair.split("=", 1) for pair in where.split(",")]
    if any(len(pair) != 2 for pair in wanted):
        raise FigureError(f"a selection is [key=value,key=value...]: {segment!r}")
    if not isinstance(items, list):
        raise FigureError(f"{segment!r} selects from a list")
    return [x for x in items if isinstance(x, dict) and all(str(x.get(k)) == v for k, v in wanted)]


def _member(value: Any, name: str, path: str) -> Any:
    if not isinstance(value, dict) or name not in value:
        raise FigureError(f"no member {name!r} in {path!r}")
    return value[name]


def written(value: Any, spec: str) -> str:
    """``value`` as the page writes it: ``spec`` is ``[*scale ]format`` (``*1000 .1f``), or empty."""
    spec = spec.strip()
    if spec.startswith("*"):
        scale, _, spec = spec[1:].partition(" ")
        value = value * float(scale)
    try:
        return format(value, spec.strip()) if spec.strip() else str(value)
    except (TypeError, ValueError) as exc:
        raise FigureError(f"format {spec!r} does not apply to {value!r}: {exc}") from None


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    found: list[Path] = []
    for entry in PAGES:
        path = root / entry
        found += sorted(path.rglob("*.md")) if path.is_dir() else [path]
    return [p for p in found if p.is_file()]


_FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """Where ``text`` has fenced code blocks and inline code: spans there are examples, not figures."""
    fenced = [m.span() for m in _FENCED.finditer(text)]
    inline = [m.span() for m in _INLINE_CODE.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]
    return fenced + inline


def _figures(text: str) -> Iterator[re.Match[str]]:
    code = _code_ranges(text)
    return (m for m in SPAN.finditer(text) if not any(a <= m.start() < b for a, b in code))


def spans(text: str, page: str) -> Iterator[Span]:
    for m in _figures(text):
        yield Span(page, text.count("\n", 0, m.start()) + 1, m["file"], m["path"].strip(), m["format"] or "", m["text"])


class _Documents(dict[str, Any]):
    """Result files by name, each read once, at its first use."""

    def __init__(self, results: Path) -> None:
        super().__init__()
        self.results = results

    def __missing__(self, name: str) -> Any:
        path = self.results / name
        if not path.is_file():
            raise FigureError(f"no result file benchmarks/results/{name}")
        self[name] = json.loads(path.read_text(encoding="utf-8"))
        return self[name]


def render_text(text: str, page: str, results: Path = RESULTS) -> str:
    """``text`` with every span's text rewritten from its JSON (:class:`FigureError` on a bad span)."""
    documents = _Documents(results)

    def fill(m: re.Match[str]) -> str:
        value = written(resolve(documents[m["file"]], m["path"]), m["format"] or "")
        return m.group(0)[: m.start("text") - m.start()] + value + "<!-- /figure -->"

    out, last = [], 0
    for m in _figures(text):
        out += [text[last : m.start()], fill(m)]
        last = m.end()
    return "".join([*out, text[last:]])


def _unmarked(text: str) -> str:
    """``text`` with spans, fenced code blocks, inline code and HTML comments blanked (line numbers kept)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = _FENCED.sub(blank, text)
    text = _INLINE_CODE.sub(blank, text)
    text = SPAN.sub(blank, text)
    return re.sub(r"<!--.*?-->", blank, text, flags=re.DOTALL)


def stray(text: str, page: str) -> list[tuple[int, str]]:
    """Measurement-like numbers of ``text`` outside spans, code and the page's allow-list: (line, text)."""
    allowed = ALLOWED.get(page, ())
    clean = _unmarked(text)
    found = []
    for m in MEASUREMENT.finditer(clean):
        start = clean.rfind("\n", 0, m.start()) + 1
        end = clean.find("\n", m.end())
        line = text[start : end if end >= 0 else len(text)]
        col = m.start() - start
        if any(_covers(line, snippet, col, m.end() - m.start()) for snippet in allowed):
            continue
        found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return found


def _covers(line: str, snippet: str, col: int, width: int) -> bool:
    at = line.find(snippet)
    while at >= 0:
        if at <= col and col + width <= at + len(snippet):
            return True
        at = line.find(snippet, at + 1)
    return False


def check(root: Path = ROOT, results: Path = RESULTS) -> list[str]:
    """Every disagreement between the pages and their JSON, and every unmarked figure: one line each."""
    problems: list[str] = []
    for path in pages(root):
        page = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        documents = _Documents(results)
        for span in spans(text, page):
            try:
                expected = written(resolve(documents[span.file], span.path), span.format)
            except FigureError as exc:
                problems.append(f"{page}:{span.line}: {span.source}: {exc}")
                continue
            if span.text != expected:
                problems.append(
                    f"{page}:{span.line}: says {span.text!r}, {span.source} gives {expected!r} "
                    "(python3 benchmarks/figures.py render)"
                )
        if page not in PENDING:
            problems += [
                f"{page}:{line}: {found!r} looks like a measurement outside a figure span "
                "(mark it with <!-- figure: file.json#path -->, or allow-list it in benchmarks/figures.py)"
                for line, found in stray(text, page)
            ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["render", "check", "scan"])
    parser.add_argument("pages", nargs="*", type=Path, help="scan: the pages (default: all)")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check()
        for problem in problems:
            print(problem)
        print(f"figures: {len(problems)} problem(s)" if problems else "figures: every page agrees with its JSON")
        return 1 if problems else 0
    targets = [p.resolve() for p in args.pages] or pages()
    for path in targets:
        page = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if args.command == "scan":
            for line, found in stray(text, page):
                print(f"{page}:{line}: {found}")
            continue
        try:
            new = render_text(text, page)
        except FigureError as exc:
            print(f"{page}: {exc}", file=sys.stderr)
            return 1
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rendered {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
