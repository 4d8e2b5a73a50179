"""Build of the optional C extension ``sketchauth.sketches._native`` (metadata: pyproject.toml).

The extension holds the GF(2^m) and prime-field kernels of PinSketch and the fuzzy vaults. It is
optional by design: when no C compiler is available (or the build fails for any other reason)
``pip install`` still succeeds, prints a warning, and the package uses its numpy implementations
(same results, slower). ``SKETCHAUTH_NO_EXTENSION=1`` at install time skips the extension on
purpose, which is how CI exercises the no-compiler path.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_EXTENSION = os.environ.get("SKETCHAUTH_NO_EXTENSION", "").strip().lower() not in ("", "0", "false", "no")


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns instead of failing: the package works without its extension."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._skip(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            # A module left in the build directory by an earlier build must not be shipped as if
            # this build had made it.
            stale = self.get_ext_fullpath(ext.name)
            if os.path.exists(stale):
                os.remove(stale)
            self._skip(exc)

    @staticmethod
    def _skip(exc: BaseException) -> None:
        print(
            f"WARNING: sketchauth's C extension was not built ({type(exc).__name__}: {exc}); "
            "the numpy implementation will be used (correct, but slower).",
            file=sys.stderr,
        )


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    return ["-O3", "-fvisibility=hidden"]


extensions = (
    []
    if NO_EXTENSION
    else [
        Extension(
            "sketchauth.sketches._native",
            sources=["sketchauth/sketches/_native.c"],
            # the GF(2^m) kernels, compiled twice by _native.c (m <= 32 and 32 < m <= 64)
            depends=["sketchauth/sketches/_native_gf2m.h"],
            extra_compile_args=_compile_args(),
            optional=True,
        )
    ]
)

setup(ext_modules=extensions, cmdclass={"build_ext": OptionalBuildExt})
