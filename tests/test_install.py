"""The install: run-time dependencies, the lock CI installs from, and what the library imports.

galois (with numba and llvmlite, ~220 MB) is a test-only oracle for the field arithmetic: the
library has its own plain-numpy fields, so galois sits in the ``dev`` extra, and no import of the
library or the service — nor one encode/decode of every scheme — may load it. ``constraints.txt``
pins every package of the ``dev`` install so that CI and the README's test command install the
same versions everywhere; ``.ci/run`` installs through it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: What the library needs at run time, and nothing else.
RUNTIME = {"numpy", "reedsolo", "argon2-cffi", "tqdm", "cryptography", "threadpoolctl"}
#: Heavy test-only packages that must never load when the library or the service is used.
TEST_ONLY_MODULES = ("galois", "numba", "llvmlite")


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_runtime_dependencies_exclude_the_test_oracle() -> None:
    assert _names(PYPROJECT["dependencies"]) == RUNTIME
    extras = PYPROJECT["optional-dependencies"]
    assert "galois" in _names(extras["dev"])
    for name, requirements in extras.items():
        if name not in ("dev", "test"):
            assert "galois" not in _names(requirements), f"extra {name!r} must not install galois"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_no_source_file_imports_a_test_only_package() -> None:
    # Every import statement, including function-level ones a run may never reach.
    sources = sorted((REPO / "sketchauth").rglob("*.py")) + sorted((REPO / "service").rglob("*.py"))
    assert len(sources) > 20
    offending = {str(p.relative_to(REPO)): sorted(_imports(p) & set(TEST_ONLY_MODULES)) for p in sources}
    assert {p: m for p, m in offending.items() if m} == {}


# Imports every module of the library and the service, then enrols and verifies once per scheme
# (and once through a PIN cascade), in a fresh interpreter; prints the test-only modules loaded.
_RUN_EVERYTHING = r"""
import importlib, pkgutil, sys, warnings
import sketchauth, sketchauth_service

for package in (sketchauth, sketchauth_service):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
import sketchauth_service.app

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.registry import registrations
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

cases = {
    "interval": (IntervalSketch(n=256, v=8, features=3), [10, 20, 30], [12, 18, 31]),
    "code-offset": (CodeOffsetSketch(n=8, t=2), bytes(range(8)), bytes([9, 1, 2, 3, 4, 5, 6, 9])),
    "pinsketch": (PinSketch(m=8, t=2), [11, 22, 33], [11, 22, 34]),
    "fuzzy-vault": (FuzzyVault(p=13, m=5, t=1), [1, 4, 6, 9, 11], [1, 4, 6, 9, 12]),
    "asymmetric-interval": (AsymmetricIntervalSketch(n=100, q=8, scheme="s2", features=2), ([40, 7], [3, 5]), [42, 3]),
    "weighted-vault": (WeightedFuzzyVault(p=50, q=4, g=9, t=3), ([3, 17, 40], [3, 3, 3]), [3, 17]),
    "chaff-point": (ChaffPointSketch(universe=30, min_distance=3), [12], [13]),
    "angular": (
        AngularSketch(dimension=8, alpha=2),
        [1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.25, 2.0],
        [1.0, -2.0, 0.5, 0.05, 3.0, -1.0, 0.25, 2.0],
    ),
    "angular-polar": (
        PolarAngularSketch(dimension=8, bits=2, list_size=4),
        [1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.25, 2.0],
        [1.0, -2.0, 0.5, 0.05, 3.0, -1.0, 0.25, 2.0],
    ),
}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pin = Cascade(IntervalSketch(n=256, v=8, features=3), pin=ExactKey("test"))
cases["mixed"] = (pin, [[10, 20, 30], "4711"], [[12, 18, 31], "4711"])
assert sorted(cases) == sorted(r.name for r in registrations()), sorted(cases)
ph = hasher("test")
for name, (sketch, secret, sample) in cases.items():
    record = enrol(sketch, secret, password_hasher=ph)
    assert verify(load_sketch(record.helper), record, sample, password_hasher=ph), name
print(",".join(m for m in TEST_ONLY_MODULES if m in sys.modules))
"""


def test_using_the_library_and_the_service_loads_no_test_only_package() -> None:
    pytest.importorskip("fastapi")
    if importlib.util.find_spec("galois") is None:
        pytest.skip("galois is not installed: nothing could load it")  # the check needs it present
    code = f"TEST_ONLY_MODULES = {TEST_ONLY_MODULES!r}\n" + _RUN_EVERYTHING
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


# -- the lock ----------------------------------------------------------------------------------------
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        match = _PIN.match(line)
        assert match, f"constraints.txt: {line!r} is not an exact pin 'name==version'"
        name = canonicalize_name(match[1])
        assert name not in pins, f"constraints.txt pins {name} twice"
        pins[name] = match[2]
    return pins


def _dev_install() -> set[str]:
    """Every distribution ``pip install -e '.[dev]'`` installs here (markers evaluated), without the project."""
    own = canonicalize_name(PYPROJECT["name"])
    extras = PYPROJECT["optional-dependencies"]
    pending = [(Requirement(r), frozenset()) for r in PYPROJECT["dependencies"] + extras["dev"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while pending:
        req, parent_extras = pending.pop()
        env = default_environment()
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in parent_extras or {""}):
            continue
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        if name == own:  # sketchauth[service,postgres,plots]: the project's own extras
            pending += [(Requirement(r), frozenset()) for e in req.extras for r in extras[e]]
            continue
        names.add(name)
        requires = importlib.metadata.distribution(req.name).requires or []
        pending += [(Requirement(r), frozenset(req.extras)) for r in requires]
    return names


def test_constraints_pin_every_package_of_the_dev_install() -> None:
    pins = _pins()
    assert canonicalize_name(PYPROJECT["name"]) not in pins
    missing = sorted(_dev_install() - set(pins))
    assert missing == [], f"not pinned in constraints.txt (refresh it with .ci/run --lock): {missing}"
    assert set(pins) >= RUNTIME and "galois" in pins


def test_constraints_header_says_how_to_refresh() -> None:
    header = (REPO / "constraints.txt").read_text(encoding="utf-8").split("\n\n")[0]
    assert "pip install -q -c constraints.txt -e '.[dev]'" in header
    assert ".ci/run --lock" in header and ".ci/run --latest" in header


def test_ci_installs_through_the_lock_and_fails_with_pytest() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert script.splitlines()[:1] == ["#!/usr/bin/env bash"] and "set -euo pipefail" in script
    # The README's test command, verbatim.
    readme_command = (
        "python3 -m venv .venv && . .venv/bin/activate && "
        "REEDSOLO_CYTHONIZE=1 pip install -q -c constraints.txt -e '.[dev]' "
        '&& pytest -n auto -m "not slow and not statistical"'
    )
    assert readme_command in script and readme_command in (REPO / "README.md").read_text(encoding="utf-8")
    # ... and then every test the quick run leaves out, one at a time.
    assert 'pytest -p no:xdist -m "slow or statistical"' in script
    assert subprocess.run(["bash", "-n", str(REPO / ".ci" / "run")], capture_output=True, check=False).returncode == 0
    usage = subprocess.run(
        ["bash", str(REPO / ".ci" / "run"), "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert usage.returncode == 0 and "--latest" in usage.stdout and "--lock" in usage.stdout
    wrong = subprocess.run(
        ["bash", str(REPO / ".ci" / "run"), "--bogus"], capture_output=True, text=True, timeout=30, check=False
    )
    assert wrong.returncode == 2 and "unknown argument '--bogus'" in wrong.stderr
