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
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of a Markdown text, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def test_fence_parser_sees_languages_and_bodies() -> None:
    text = "intro\n```pycon\n>>> 1 + 1\n2\n```\n\n```python\nx = 1\n```\n"
    assert blocks(text) == [("pycon", ">>> 1 + 1\n2\n"), ("python", "x = 1\n")]


def _has_examples(page: Path) -> bool:
    return any(lang in ("pycon", "python") for lang, _ in blocks(page.read_text(encoding="utf-8")))


EXAMPLE_PAGES = [page for page in PAGES if _has_examples(page)]


def test_pages_exist_and_readme_is_short() -> None:
    assert len(PAGES) > 20 and len(EXAMPLE_PAGES) > 15
    assert ROOT / "README.md" in EXAMPLE_PAGES
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = blocks(page.read_text(encoding="utf-8"))
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
            exec(compiled, namespace)


# -- the generators of the documentation site (docs/hooks.py, docs/griffe_rest.py) -----------------


def _load(name: str) -> object:
    """A module of docs/ by file name (docs/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_docs_{name}", ROOT / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hooks() -> object:
    return _load("hooks")


def _bench_tree(root: Path) -> Path:
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "bench_alpha.py").write_text('"""Speed of alpha.\n\nDetails."""\n')
    (root / "benchmarks" / "bench_beta.py").write_text('"""Speed of beta."""\n')
    results = root / "benchmarks" / "results"
    results.mkdir()
    return results


def test_benchmarks_without_results_say_so(hooks: object, tmp_path: Path) -> None:
    _bench_tree(tmp_path)
    page = hooks.render_benchmarks(tmp_path)  # type: ignore[attr-defined]
    assert page.count("No results recorded.") == 2
    assert "## `bench_alpha.py`" in page and "Speed of alpha." in page and "Details" not in page


def test_benchmark_results_render_provenance_and_tables(hooks: object, tmp_path: Path) -> None:
    results = _bench_tree(tmp_path)
    run = {
        "date": "2026-11-24T10:00:00Z",
        "commit": "abc1234",
        "cpu": "Test CPU @ 2 GHz",
        "cases": [{"case": "PinSketch(16, 8)", "decode_ms": 0.5812}, {"case": "PinSketch(32, 8)", "decode_ms": 1.6}],
        "cold_start": {"ms": 203.0},
    }
    (results / "bench_alpha-2026-11-24.json").write_text(json.dumps(run))
    (results / "other.json").write_text(json.dumps({"benchmark": "bench_beta.py", "value": 3}))
    page = hooks.render_benchmarks(tmp_path)  # type: ignore[attr-defined]
    assert page.count("No results recorded.") == 0
    assert "| commit | abc1234 |" in page and "| cpu | Test CPU @ 2 GHz |" in page
    assert "| case | decode_ms |" in page and "| PinSketch(16, 8) | 0.5812 |" in page
    assert "| ms | 203 |" in page
    # bench_beta's result names its script but records no provenance: flagged, not hidden
    assert "does not record: date, commit, cpu" in page


def test_unreadable_benchmark_result_is_reported(
    hooks: object, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    results = _bench_tree(tmp_path)
    (results / "bench_alpha-broken.json").write_text("{not json")
    page = hooks.render_benchmarks(tmp_path)  # type: ignore[attr-defined]
    assert page.count("No results recorded.") == 2
    assert "bench_alpha-broken.json is not readable JSON" in caplog.text


def test_settings_table_lists_every_setting_with_its_variable(hooks: object) -> None:
    import dataclasses

    from sketchauth_service.settings import Settings

    table = hooks.render_settings()  # type: ignore[attr-defined]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| `")]
    names = (
        [f.name for f in dataclasses.fields(Settings)]
        if dataclasses.is_dataclass(Settings)
        else list(Settings.model_fields)
    )
    assert [row.split("`")[1] for row in rows] == names
    assert "| `database_url` | `SKETCHAUTH_DATABASE_URL` |" in table
    assert "| `postgres_schema` | `SKETCHAUTH_SCHEMA` |" in table
    assert "`--pin-min-entropy`" in table


def test_openapi_page_covers_every_operation_and_schema(hooks: object) -> None:
    document = hooks.openapi_document()  # type: ignore[attr-defined]
    page = hooks.render_openapi(document)  # type: ignore[attr-defined]
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"#### `{method.upper()} {path}`" in page
    for name in document["components"]["schemas"]:
        assert f"#### {name}\n" in page
    assert "pipeline:&lt;name&gt;" in page  # descriptions are text, not HTML


def test_cli_page_covers_every_command(hooks: object) -> None:
    page = hooks.render_cli()  # type: ignore[attr-defined]
    for command in ("sketchauth demo", "sketchauth serve", "sketchauth evaluate report", "sketchauth features fit"):
        assert f"`{command}`" in page
    assert "`--pin-min-entropy BITS`" in page


def test_reference_check_flags_internal_citations_only(hooks: object) -> None:
    forbidden = hooks.FORBIDDEN  # type: ignore[attr-defined]
    # Built from parts so that this file itself cites no internal document.
    spec, issue = "SP" + "EC", "iss" + "ue"
    for text in (
        f"({spec} §2.1)",
        f"as the {spec} states",
        f"see {issue} 12",
        f"{issue.title()} #3",
        f"../shared/{spec}.md",
    ):
        assert forbidden.search(text), text
    for text in ("the OpenAPI specification", "a spec of the API", "Dodis et al. §6.3", "issued 12 keys"):
        assert not forbidden.search(text), text


def test_docstring_rest_becomes_markdown() -> None:
    pytest.importorskip("griffe")
    rest = _load("griffe_rest")
    text = (
        "See :class:`~sketchauth.mixing.Cascade` and :func:`sketchauth.entropy.min_entropy`.\n\n"
        "Example::\n\n    >>> 1 + 1\n    2\n"
    )
    assert rest.to_markdown(text) == (  # type: ignore[attr-defined]
        "See `Cascade` and `sketchauth.entropy.min_entropy`.\n\nExample:\n\n```pycon\n>>> 1 + 1\n2\n```\n"
    )
    assert rest.to_markdown("Intro.\n\n>>> f()\n[0.0, 0.037]\n") == "Intro.\n\n```pycon\n>>> f()\n[0.0, 0.037]\n```"  # type: ignore[attr-defined]


def test_readme_links_point_at_existing_files() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert len(targets) > 15
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_settings_table_understands_a_pydantic_settings_model(hooks: object) -> None:
    from pydantic import BaseModel, ConfigDict, Field

    class Model(BaseModel):
        model_config = ConfigDict(env_prefix="SKETCHAUTH_")  # type: ignore[typeddict-unknown-key]

        database_url: str = Field("sqlite:///./x.db", description="where the data lives")
        postgres_schema: str = Field("public", validation_alias="SKETCHAUTH_SCHEMA", description="schema name")
        port: int = Field(8000)

    rows = hooks._settings_rows_pydantic(Model)  # type: ignore[attr-defined]
    assert rows[0] == (
        "`database_url`",
        "`SKETCHAUTH_DATABASE_URL`",
        "`'sqlite:///./x.db'`",
        "`--db`",
        "where the data lives",
    )
    assert rows[1][:2] == ("`postgres_schema`", "`SKETCHAUTH_SCHEMA`")
    assert rows[2][:4] == ("`port`", "`SKETCHAUTH_PORT`", "`8000`", "`--port`")
    assert rows[2][4].startswith("port")  # no description: the flag's help text stands in


def test_nested_benchmark_results_become_readable_tables(hooks: object, tmp_path: Path) -> None:
    results = _bench_tree(tmp_path)
    timing = {"min_ms": 0.03, "median_ms": 0.032, "runs": 6000}
    run = {
        "benchmark": "bench_alpha.py",
        "date": "2026-11-24",
        "commit": "f3faf82",
        "cpu": {"model": "AMD EPYC", "logical_cpus": 2, "flags": ["avx2", "pclmulqdq"]},
        # narrow once flattened (t + 2 x 2 columns): one table
        "ratios": [{"t": 8, "typical": {"min": 1.04, "median": 1.03}, "worst": {"min": 1.1, "median": 1.2}}],
        # wide: one section per record, each mapping of timings a 2-D table
        "cases": [
            {
                "m": 16,
                "t": 8,
                "decode": {"ours": timing, "peer": timing, "ratio": {"min": 4.8, "median": 4.9}},
                "encode": {"ours": timing, "peer": timing},
            }
        ],
    }
    (results / "alpha.json").write_text(json.dumps(run))
    page = hooks.render_benchmarks(tmp_path)  # type: ignore[attr-defined]
    assert "| cpu | model: AMD EPYC; logical_cpus: 2; flags: avx2, pclmulqdq |" in page
    assert "| t | typical.min | typical.median | worst.min | worst.median |" in page
    assert "##### m = 16, t = 8" in page
    assert "|  | min_ms | median_ms | runs | min | median |" in page
    assert "| ours | 0.03 | 0.032 | 6000 |  |  |" in page and "| ratio |  |  |  | 4.8 | 4.9 |" in page
