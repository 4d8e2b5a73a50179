"""The container image (deploy/Containerfile): it builds, and its own Python enrols and verifies.

Containers cannot be *run* where these tests run, so the image is built with podman's chroot
isolation from a base made by debootstrap (deploy/make-base-image.sh, cached in
``$SKETCHAUTH_BASE_CACHE``, default /var/cache/sketchauth-base), mounted with ``podman mount``, and
deploy/smoke.py runs in it under ``chroot`` as the image's user, with the image's environment.

Needs root, podman and debootstrap, and Debian's archive and PyPI for the build; skipped, with the
reason, otherwise. The image is built once per test session (the tag below); podman's layer cache
makes a rebuild after a source change take about a minute (dependencies and apt layers reused) and
one without changes a few seconds. A cold build (no base, no layers) takes about four minutes here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
IMAGE = "localhost/sketchauth:test"
BASE_IMAGE = "localhost/debian:bookworm-minbase"
#: Upper bound of one build step (a cold build takes ~4 minutes on 2 cores).
BUILD_TIMEOUT_SECONDS = 1200
#: Where pip inside the build finds the CA of a TLS-inspecting proxy, if the host has one.
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "building and mounting the image with podman and debootstrap needs root"
    for tool in ("podman", "debootstrap", "chroot"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install podman debootstrap)"
    return None


def _run(*command: str, timeout: float = 120, **kwargs: Any) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="session")
def image() -> str:
    """The image, built (or found up to date in podman's layer cache) once per session."""
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    _run(str(REPO / "deploy" / "make-base-image.sh"), timeout=BUILD_TIMEOUT_SECONDS)
    ca = (
        ["-v", f"{HOST_CA}:/run/host-ca.crt:ro", "--build-arg", "PIP_CERT=/run/host-ca.crt"]
        if HOST_CA.is_file()
        else []
    )
    _run(
        "podman", "build", "--isolation=chroot", "--format", "docker",
        "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", *ca,
        "-f", "deploy/Containerfile", "-t", IMAGE, ".",
        cwd=REPO, timeout=BUILD_TIMEOUT_SECONDS,
    )  # fmt: skip
    return IMAGE


@pytest.fixture
def mounted(image: str) -> Iterator[Path]:
    """The root file system of a fresh container of the image (its own writable layer)."""
    container = _run("podman", "create", "--no-healthcheck", image).strip()
    try:
        yield Path(_run("podman", "mount", container).strip())
    finally:
        subprocess.run(["podman", "rm", "--force", container], capture_output=True, timeout=120, check=False)


def _inspect(image: str) -> dict[str, Any]:
    inspected: dict[str, Any] = json.loads(_run("podman", "image", "inspect", image))[0]
    return inspected


def _config(image: str) -> dict[str, Any]:
    config: dict[str, Any] = _inspect(image)["Config"]
    return config


def test_image_enrols_and_verifies_with_its_own_python(image: str, mounted: Path) -> None:
    config = _config(image)
    user = config["User"]
    environment = dict(entry.split("=", 1) for entry in config["Env"])
    smoke = (REPO / "deploy" / "smoke.py").read_text(encoding="utf-8")
    out = _run(
        "chroot", f"--userspec={user}", str(mounted), "/usr/bin/env", "-i",
        *(f"{k}={v}" for k, v in environment.items()), "HOME=/var/lib/sketchauth",
        "python3", "-",
        input=smoke, timeout=300,
    )  # fmt: skip
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["backend"] == "native"
    assert seen["library"] == [True, False]
    assert seen["service"] == "ok"
    assert seen["uid"] == 10001


def test_image_runs_unprivileged_with_a_health_check_and_no_compiler(image: str, mounted: Path) -> None:
    config = _config(image)
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["sketchauth"] and config["Cmd"] == ["serve"]
    check = _inspect(image)["Healthcheck"]["Test"]
    assert check[0] == "CMD" and any("/healthz" in part for part in check)
    environment = dict(entry.split("=", 1) for entry in config["Env"])
    assert environment["SKETCHAUTH_HOST"] == "0.0.0.0"
    assert environment["SKETCHAUTH_DATABASE_URL"].startswith("sqlite:////var/lib/sketchauth/")
    assert "PIP_CERT" not in environment and "DEBIAN_FRONTEND" not in environment  # build arguments only
    # multi-stage: the runtime has the interpreter and the venv, not the build tools
    assert (mounted / "opt/sketchauth/bin/sketchauth").is_file()
    assert not list((mounted / "usr/bin").glob("gcc*"))
    assert not (mounted / "usr/include/python3.11/Python.h").exists()
    assert not list((mounted / "opt/sketchauth").rglob("_native.c"))
    owner = (mounted / "var/lib/sketchauth").stat()
    assert (owner.st_uid, owner.st_gid) == (10001, 10001)
