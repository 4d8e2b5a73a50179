"""The sketchauth command: demo and argument handling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sketchauth.cli import main


def test_demo_verifies_genuine_and_rejects_impostor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--profile", "test", "--seed", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verify_genuine"] is True and out["verify_impostor"] is False
    assert out["report"]["loss_bound_bits"] == pytest.approx(16 * 3.9068905956085187)
    assert set(out["stored"]) == {"helper_bytes", "helper_hex_prefix", "secret_hash"}


def test_library_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--profile", "nope"]) == 2
    assert "unknown argon2 profile" in capsys.readouterr().err


def test_console_script_starts_without_heavy_imports() -> None:
    code = (
        "import sys, sketchauth.cli; sketchauth.cli.build_parser(); "
        "print(sorted(m for m in ('galois','numba','fastapi') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_only_the_command_line_imports_the_service() -> None:
    """The library never depends on the service: ``import sketchauth_service`` appears under sketchauth/cli/ only."""
    import re
    from pathlib import Path

    import sketchauth

    root = Path(sketchauth.__file__).parent
    pattern = re.compile(r"^\s*(from sketchauth_service[. ]|import sketchauth_service\b)", re.MULTILINE)
    importers = sorted(
        str(path.relative_to(root)) for path in root.rglob("*.py") if pattern.search(path.read_text(encoding="utf-8"))
    )
    assert importers, "the serve command imports the service"
    assert all(path.startswith("cli/") for path in importers), importers


def test_python_m_sketchauth_cli_runs_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "sketchauth.cli", "--help"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("usage: sketchauth")
