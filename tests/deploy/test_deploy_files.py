"""The deployment files agree with the code: the settings example lists every setting with its
default, and the compose file's settings, secrets and build are the ones the service reads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from sketchauth_service.settings import ENV_PREFIX, Settings, env_name

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
LINE = re.compile(r"^#?(SKETCHAUTH_[A-Z0-9_]+)=(.*)$")


def _example() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (DEPLOY / "sketchauth.env.example").read_text(encoding="utf-8").splitlines():
        match = LINE.match(line)
        if match:
            assert match[1] not in found, f"{match[1]} listed twice"
            found[match[1]] = match[2]
    return found


def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


def test_the_example_lists_every_setting_once_with_a_meaning() -> None:
    listed = _example()
    assert set(listed) == {env_name(field) for field in Settings.model_fields}
    text = (DEPLOY / "sketchauth.env.example").read_text(encoding="utf-8")
    for name in listed:
        comment = text.split(f"#{name}=")[0].rstrip().splitlines()[-1]
        assert comment.startswith("# ") and len(comment) > 10, f"{name} has no explanation above it"


def test_the_example_values_are_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_environment(monkeypatch)
    defaults = Settings.from_env().model_dump()
    for name, value in _example().items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env().model_dump() == defaults


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def test_compose_runs_postgres_a_migration_and_two_replicas_of_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    services = _compose()["services"]
    replicas = [name for name, service in services.items() if service.get("command") is None and "build" in service]
    assert len(replicas) == 2
    assert services["migrate"]["command"] == ["db", "migrate"]
    assert services["postgres"]["healthcheck"]
    for name in [*replicas, "migrate"]:
        service = services[name]
        assert service["build"]["dockerfile"] == "deploy/Containerfile"
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        assert service["depends_on"]
        environment = service["environment"]
        assert environment["SKETCHAUTH_DATABASE_URL"].startswith("postgresql://")
        assert ":" not in environment["SKETCHAUTH_DATABASE_URL"].split("//", 1)[1].split("@")[0]  # no password
        # every SKETCHAUTH_ variable is one the service reads, with a value it accepts
        _clean_environment(monkeypatch)
        for key, value in environment.items():
            monkeypatch.setenv(key, str(value))
        settings = Settings.from_env()
        assert settings.require_pepper and settings.pepper_file and settings.api_key_file
        assert settings.deployment_id != "default"
    ports = {services[name]["ports"][0] for name in replicas}
    assert len(ports) == 2 and all(port.startswith("127.0.0.1:") for port in ports)


def test_deployment_secrets_stay_out_of_git_and_of_the_image() -> None:
    secret_files = [spec["file"] for spec in _compose()["secrets"].values()]
    paths = [str((DEPLOY / f).resolve().relative_to(REPO)) for f in secret_files] + ["deploy/sketchauth.env"]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True, check=False)
    assert sorted(ignored.stdout.split()) == sorted(paths)
    context_ignore = (REPO / ".containerignore").read_text(encoding="utf-8").split()
    assert "secrets" in context_ignore and "deploy/sketchauth.env" in context_ignore
    assert (REPO / ".dockerignore").read_text(encoding="utf-8") == (REPO / ".containerignore").read_text(
        encoding="utf-8"
    )
