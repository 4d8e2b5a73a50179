"""One list of schemes: a family registered in one place is found at every door, and gone after.

The toy family (tests/_toy_scheme.py) is defined outside the library; :func:`toy_registered` is
its one registration. Inside the block the library (its class by name, the lazy exports, helper
data loaded back, enrolment and verification), the service (the scheme list and its request
schema, enrolment and verification over HTTP through :class:`sketchauth.client.Client`), the
command line (``sketchauth evaluate report --scheme``) and the evaluation (its adapter) all
find it; outside it none does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _toy_scheme import TOY, ToyClearSketch, toy_registered

import sketchauth
import sketchauth.sketches
from sketchauth.cli import main
from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.evaluate.adapters import ADAPTERS, adapter
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.registry import registrations, scheme_class

GENUINE, IMPOSTOR = [1, 2, 3, 9], [7, 7, 7, 7]
KEY = "every-door-test-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}


def test_the_library_finds_a_registered_family() -> None:
    with toy_registered():
        assert scheme_class(TOY) is ToyClearSketch
        assert sketchauth.sketches.ToyClearSketch is ToyClearSketch
        assert sketchauth.ToyClearSketch is ToyClearSketch
        sketch = ToyClearSketch(4, 1)
        helper = sketch.encode(bytes([1, 2, 3, 4]))
        assert load_sketch(helper) == sketch
        record = enrol(sketch, bytes([1, 2, 3, 4]), password_hasher=hasher("test"))
        assert verify(sketch, record, bytes(GENUINE), password_hasher=hasher("test"))
        assert not verify(sketch, record, bytes(IMPOSTOR), password_hasher=hasher("test"))
    assert TOY not in {r.name for r in registrations()}
    with pytest.raises(ParameterError, match="unknown scheme 'toy-clear'"):
        scheme_class(TOY)
    with pytest.raises(SketchFormatError, match="unknown scheme id 99"):
        load_sketch(helper)
    with pytest.raises(AttributeError):
        _ = sketchauth.ToyClearSketch


def test_the_evaluation_finds_a_registered_family() -> None:
    with toy_registered():
        assert TOY in ADAPTERS and adapter(TOY).sweep == "t"
    assert TOY not in ADAPTERS


def test_the_command_line_finds_a_registered_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "report", "--scheme", TOY, "--params", '{"n": 8}', "--sweep", "1,2"]
    args += ["--synthetic", "identities=6,samples=3,error_rate=0.1", "--seed", "1", "--no-plots", "--quiet"]
    with toy_registered():
        assert main([*args, "--out", str(tmp_path / "in")]) == 0
    report = json.loads((tmp_path / "in" / "report.json").read_text())
    assert TOY in json.dumps(report)
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    assert "no evaluation adapter for scheme 'toy-clear'" in capsys.readouterr().err


def test_the_service_finds_a_registered_family(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from sketchauth_service.app import create_app
    from sketchauth_service.settings import Settings

    from sketchauth.client import Client, NotFound

    def settings(folder: Path) -> Settings:
        folder.mkdir(exist_ok=True)
        url = f"sqlite:///{folder / 'service.db'}"
        return Settings(database_url=url, api_keys=(KEY,), hash_profile="test", allow_test_profile=True)

    with toy_registered(), TestClient(create_app(settings(tmp_path / "with")), headers=AUTH) as http:
        client = Client(http_client=http)
        offered = client.schemes()["schemes"]
        names = [s["name"] for s in offered] if isinstance(offered, list) else list(offered)
        assert TOY in names
        client.enrol("alice", TOY, [[1, 2, 3, 4]], params={"n": 4, "t": 1})
        assert client.verify("alice", GENUINE)
        assert not client.verify("alice", IMPOSTOR)
    with TestClient(create_app(settings(tmp_path / "without")), headers=AUTH) as http:
        client = Client(http_client=http)
        offered = client.schemes()["schemes"]
        names = [s["name"] for s in offered] if isinstance(offered, list) else list(offered)
        assert TOY not in names
        with pytest.raises(NotFound):
            client.delete("alice")


def test_the_development_guide_shows_the_toy_family_as_it_is() -> None:
    """docs/development.md's "whole change" is this family's real code, not a copy that drifts."""
    import re

    import _toy_scheme

    page = (Path(__file__).resolve().parents[2] / "docs" / "development.md").read_text(encoding="utf-8")
    section = page[page.index("## Adding a scheme: the whole change") :]
    shown = re.search(r"```python\n(.*?)```", section, re.S)
    assert shown is not None
    source = Path(_toy_scheme.__file__).read_text(encoding="utf-8")
    real = source[source.index('TOY = "toy-clear"') : source.index("#: Its registry line")].rstrip() + "\n"
    needs, _, code = shown.group(1).partition("\n")
    assert needs.startswith("# needs:") and code == real
