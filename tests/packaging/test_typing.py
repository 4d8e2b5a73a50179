"""The public API as a user's type checker sees it (PEP 561: ``sketchauth/py.typed``).

``tests/packaging/typing/public_api.py`` uses the top-level names with ``assert_type``; mypy must accept it
with ``warn_unused_ignores`` (so its deliberate ``type: ignore`` on a wrong call proves the checker
really sees the signatures: if the names were ``Any``, the ignore would be unused and mypy fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

REPO = Path(__file__).resolve().parents[2]


def test_package_ships_py_typed() -> None:
    assert (REPO / "sketchauth" / "py.typed").is_file()


def test_public_api_is_typed_for_users() -> None:
    target = REPO / "tests" / "packaging" / "typing" / "public_api.py"
    stdout, stderr, status = api.run(
        [
            "--no-incremental",
            "--cache-dir=/dev/null",
            "--warn-unused-ignores",
            "--strict-equality",
            "--python-version=3.11",
            str(target),
        ]
    )
    assert status == 0, stdout + stderr
