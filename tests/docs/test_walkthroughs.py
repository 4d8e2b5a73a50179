"""Every shell and Python block of README.md and docs/embeddings.md runs verbatim.

``tests/test_docs.py`` runs the ``pycon`` blocks of every page (doctests) and the Python blocks
written at the left margin. The walk-throughs are mostly shell commands inside numbered steps
(indented fences), and those ran nowhere: the guide's own ``serve`` command was refused for a
weak API key and nothing noticed. Here each page's ``sh``/``bash``/``console`` and ``python``
blocks, indented or not, run in order in one temporary directory (later steps read the files
earlier ones wrote), shell blocks with ``bash -e -o pipefail`` and the repository's Python and
``sketchauth`` first on ``PATH``. Processes a block leaves in the background (a server started
with ``&``) are stopped when the page ends.

A block whose first line is a marker comment is treated as the marker says — the reason is in
the doc, where the reader sees it:

* ``# needs: <what>`` — not run, only checked for syntax (``bash -n``, ``compile``): it needs
  something the test cannot provide (a fresh virtualenv and the network, a server started by
  hand, your own model);
* ``# given: name, name — <what>`` (Python) — run verbatim with those names defined by the test,
  from :data:`GIVEN` (e.g. ``embeddings``: synthetic 512-D unit vectors standing in for a model's).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "embeddings.md"]
#: A fenced block at any indentation (list items indent theirs): indentation, language, body.
FENCE = re.compile(r"^([ \t]*)```(\w+)[^\n]*\n(.*?)^\1```[ \t]*$", re.MULTILINE | re.DOTALL)
SHELL = ("sh", "bash", "console", "shell")
#: Seconds one block may take (a walk-through step fits and calibrates on a few hundred people).
BLOCK_TIMEOUT = 1800


def blocks(text: str) -> list[tuple[str, str]]:
    """``(language, dedented body)`` of every fenced block, in order."""
    return [(m.group(2), textwrap.dedent(m.group(3))) for m in FENCE.finditer(text)]


def _embeddings(people: int, captures: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit 512-D float32 vectors around a per-person direction (cosine ≈ 0.9 within a person)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(people, 512))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, captures, axis=0) + rng.normal(scale=0.015, size=(people * captures, 512))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32), np.repeat([f"p{seed}-{i}" for i in range(people)], captures)


def _given_embeddings() -> dict[str, Any]:
    embeddings, labels = _embeddings(60, 4, seed=1)
    other_embeddings, other_labels = _embeddings(20, 3, seed=2)
    return {
        "embeddings": embeddings,
        "labels": labels,
        "other_embeddings": other_embeddings,
        "other_labels": other_labels,
    }


#: What ``# given:`` names may ask for, and how the test makes it.
GIVEN: dict[str, Callable[[], dict[str, Any]]] = {
    name: _given_embeddings for name in ("embeddings", "labels", "other_embeddings", "other_labels")
}


def marker(body: str) -> tuple[str, str] | None:
    """``("needs" | "given", text)`` from a block's first line, or ``None``."""
    first = body.lstrip().splitlines()[0] if body.strip() else ""
    found = re.match(r"#\s*(needs|given):\s*(.+)", first)
    return (found.group(1), found.group(2)) if found else None


def test_fences_are_found_at_any_indentation() -> None:
    text = "1. step\n\n    ```sh\n    echo a\n    ```\n\n```python\nx = 1\n```\n"
    assert blocks(text) == [("sh", "echo a\n"), ("python", "x = 1\n")]
    assert marker("# needs: a server\ncurl x\n") == ("needs", "a server")
    assert marker("# given: embeddings, labels — a model\n") == ("given", "embeddings, labels — a model")


def _environment(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HOME"] = str(home)
    for name in [n for n in env if n.startswith("SKETCHAUTH_")]:
        del env[name]  # the blocks set what they need, as a reader's fresh shell would
    return env


def _run_shell(body: str, cwd: Path, env: dict[str, str], groups: list[int]) -> None:
    # Output to files, not pipes: a server the block leaves running in the background keeps its
    # inherited descriptors open, and reading a pipe to its end would wait for the server.
    out_path, err_path = cwd / f".block-{len(groups)}.out", cwd / f".block-{len(groups)}.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        process = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", body],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        groups.append(process.pid)
        try:
            process.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    report = (
        f"block failed ({process.returncode}):\n{body}\n--- stdout\n{out_path.read_text()}\n"
        f"--- stderr\n{err_path.read_text()}"
    )
    assert process.returncode == 0, report


def _run_python(body: str, namespace: dict[str, Any]) -> None:
    found = marker(body)
    if found is not None and found[0] == "given":
        names = [n.strip() for n in re.split(r"[—(]", found[1])[0].split(",") if n.strip()]
        unknown = [n for n in names if n not in GIVEN]
        assert not unknown, f"'# given:' names {unknown} the test cannot provide; known: {sorted(GIVEN)}"
        for name in names:
            namespace.setdefault(name, GIVEN[name]()[name])
    exec(compile(body, "<doc block>", "exec"), namespace)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_walkthrough_runs_verbatim(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = [(lang, body) for lang, body in blocks(page.read_text(encoding="utf-8")) if lang in (*SHELL, "python")]
    assert found, f"{page.name} has no shell or Python block"
    monkeypatch.chdir(tmp_path)
    env = _environment(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    groups: list[int] = []
    try:
        for lang, body in found:
            needs = marker(body) is not None and marker(body)[0] == "needs"  # type: ignore[index]
            if lang in SHELL:
                if needs:
                    subprocess.run(["bash", "-n", "-c", body], check=True)
                else:
                    _run_shell(body, tmp_path, env, groups)
            elif needs:
                compile(body, "<doc block>", "exec")
            else:
                _run_python(body, namespace)
    finally:
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_that_does_not_run_says_why(page: Path) -> None:
    """The blocks left out carry their reason in the doc; the rest runs (above)."""
    for lang, body in blocks(page.read_text(encoding="utf-8")):
        if lang not in (*SHELL, "python"):
            continue
        found = marker(body)
        if found is not None:
            assert len(found[1].strip()) >= 10, f"a '# {found[0]}:' marker must say what, in words: {body[:80]!r}"


def test_the_embeddings_guide_serves_with_a_key_the_service_accepts() -> None:
    """Step 4 of docs/embeddings.md: the API key it starts the service with carries >= 128 bits (or dev mode)."""
    text = (ROOT / "docs" / "embeddings.md").read_text(encoding="utf-8")
    serves = [body for lang, body in blocks(text) if lang in SHELL and "sketchauth serve" in body]
    assert serves
    for body in serves:
        assert "SKETCHAUTH_DEV_MODE=1" in body or "secrets.token_urlsafe(32)" in body.split("sketchauth serve")[0]
