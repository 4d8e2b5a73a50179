"""The ``fast`` extra delivers the compiled Reed–Solomon codec, not only its version number.

reedsolo 2.x ships ``creedsolo`` (Cython) in its binary wheels, but a build from its source
distribution (any Python without a wheel) leaves it out unless ``REEDSOLO_CYTHONIZE=1`` is set
during the install: the install then "succeeds" and code-offset quietly runs on pure Python.
When the installed reedsolo satisfies the ``fast`` extra's requirements (read from pyproject.toml),
this test fails unless creedsolo is an importable compiled extension and is the codec a
code-offset sketch picks; it is skipped only when the extra's requirements are not installed.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from sketchauth.sketches.code_offset import CodeOffsetSketch

REPO = Path(__file__).resolve().parents[2]
FAST = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["fast"]


def _fast_extra_installed() -> bool:
    """Every requirement of the ``fast`` extra is met by an installed distribution."""
    for line in FAST:
        requirement = Requirement(line)
        try:
            installed = Version(importlib.metadata.version(requirement.name))
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


fast_only = pytest.mark.skipif(not _fast_extra_installed(), reason="the 'fast' extra is not installed")


@fast_only
def test_creedsolo_is_a_compiled_extension() -> None:
    try:
        module = importlib.import_module("creedsolo.creedsolo")
    except ImportError as exc:
        pytest.fail(
            f"reedsolo {importlib.metadata.version('reedsolo')} is installed without creedsolo ({exc}): it was built "
            "from source without Cython. Reinstall with REEDSOLO_CYTHONIZE=1 pip install --no-cache-dir "
            "--force-reinstall --no-deps reedsolo (needs a C compiler), or from a wheel that ships it"
        )
    origin = module.__file__ or ""
    assert origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), f"creedsolo is not compiled: {origin}"


@fast_only
def test_code_offset_runs_on_the_compiled_codec() -> None:
    sketch = CodeOffsetSketch(32, 4)
    assert sketch.codec == "creedsolo"
    secret = bytes(range(32))
    noisy = bytes([secret[0] ^ 0xFF]) + secret[1:31] + bytes([7])
    assert sketch.decode(sketch.encode(secret), noisy) == secret
