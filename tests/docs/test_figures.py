"""Speed and memory figures in README.md and docs/ come from the benchmarks' JSON (benchmarks/figures.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import figures  # noqa: E402

RESULT = {
    "results": [
        {"backend": "sqlite", "production": {"ratio": 0.9634, "rounds": [0.9, 1.0, 0.95]}},
        {"backend": "postgres", "production": {"ratio": 0.8812, "rounds": [0.8, 0.9]}},
    ],
    "seconds": 0.0387,
}


def _tree(tmp_path: Path, page: str) -> tuple[Path, Path]:
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "bench_x.json").write_text(json.dumps(RESULT))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(page)
    (tmp_path / "README.md").write_text("# x\n")
    return tmp_path, results


def test_every_page_agrees_with_its_json_and_holds_no_unmarked_figure() -> None:
    problems = figures.check()
    assert not problems, "\n".join(problems)


def test_no_page_is_pending_and_every_allow_list_names_a_page_and_matches_it() -> None:
    """Every page's unmarked numbers are checked; an allow-list entry that no longer matches is stale."""
    assert not figures.PENDING
    for page, snippets in figures.ALLOWED.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        assert [s for s in snippets if s not in text] == [], page


def test_a_figure_that_disagrees_with_its_json_is_reported(tmp_path: Path) -> None:
    span = "<!-- figure: bench_x.json#results[backend=sqlite].production.ratio .2f -->0.93<!-- /figure -->"
    root, results = _tree(tmp_path, f"SQLite: {span} of the ceiling.\n")
    problems = figures.check(root, results)
    assert len(problems) == 1 and "says '0.93'" in problems[0] and "'0.96'" in problems[0]


def test_render_writes_what_check_expects(tmp_path: Path) -> None:
    text = (
        "Ratio <!-- figure: bench_x.json#results[backend=postgres].production.ratio .2f -->?<!-- /figure -->, "
        "rounds <!-- figure: bench_x.json#results.0.production.rounds.min() .2f -->?<!-- /figure -->–"
        "<!-- figure: bench_x.json#results.0.production.rounds.max() .2f -->?<!-- /figure -->, "
        "<!-- figure: bench_x.json#seconds *1000 .1f -->?<!-- /figure --> ms a request.\n"
    )
    root, results = _tree(tmp_path, text)
    rendered = figures.render_text(text, "docs/page.md", results)
    assert ">0.88<" in rendered and ">0.90<" in rendered and ">1.00<" in rendered and ">38.7<" in rendered
    (root / "docs" / "page.md").write_text(rendered)
    assert figures.check(root, results) == []


def test_a_measurement_outside_a_span_is_reported_unless_allowed(tmp_path: Path) -> None:
    root, results = _tree(tmp_path, "A verification takes 38.7 ms; the bare endpoint does 2,300 req/s.\n")
    problems = figures.check(root, results)
    assert len(problems) == 2 and all("outside a figure span" in p for p in problems)
    # Code, comments and settings on the allow-list are not measurements.
    page = (
        "Run `bench --slice 2 ms`.\n\n```\n38.7 ms\n```\n<!-- 12 ms -->\nA 5 ms timeout.\n"
        "An example span: `<!-- figure: bench_gone.json#x -->3 ms<!-- /figure -->`.\n"
    )
    (root / "docs" / "page.md").write_text(page)
    figures.ALLOWED["docs/page.md"] = ("A 5 ms timeout",)
    try:
        assert figures.check(root, results) == []
    finally:
        del figures.ALLOWED["docs/page.md"]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("results[backend=mysql].production.ratio", "0 items match"),
        ("results.5.production", "no item 5"),
        ("results.0.production.speed", "no member 'speed'"),
        ("results{backend=mysql}.production.ratio.max()", "no item matches"),
        ("results.production.speed", "no member 'speed'"),
    ],
)
def test_a_span_naming_nothing_is_reported(tmp_path: Path, path: str, problem: str) -> None:
    root, results = _tree(tmp_path, f"<!-- figure: bench_x.json#{path} -->1<!-- /figure -->\n")
    problems = figures.check(root, results)
    assert len(problems) == 1 and problem in problems[0]


def test_a_span_naming_a_missing_file_is_reported(tmp_path: Path) -> None:
    root, results = _tree(tmp_path, "<!-- figure: bench_gone.json#a -->1<!-- /figure -->\n")
    assert "no result file" in figures.check(root, results)[0]


def test_a_filter_keeps_every_match_and_a_member_is_read_across_a_list() -> None:
    document = {
        "results": [
            {"m": 8, "op": "encode", "ratio": 0.3},
            {"m": 8, "op": "decode", "ratio": 0.7},
            {"m": 16, "op": "encode", "ratio": 0.2},
        ]
    }
    assert figures.resolve(document, "results{m=8}.ratio") == [0.3, 0.7]
    assert figures.resolve(document, "results{m=8}.ratio.max()") == 0.7
    assert figures.resolve(document, "results{op=encode}.ratio.min()") == 0.2
    assert figures.resolve(document, "results{m=8,op=decode}.ratio") == [0.7]
    assert figures.resolve(document, "results.ratio.len()") == 3
    # a selection still wants exactly one
    with pytest.raises(figures.FigureError, match="2 items match"):
        figures.resolve(document, "results[m=8].ratio")
