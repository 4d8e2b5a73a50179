"""Which implementation runs the field arithmetic: the compiled extension or numpy.

The choice is made once, when this module is first imported: ``"native"`` if the optional C
extension :mod:`sketchauth.sketches._native` was built when the package was installed (it is,
whenever a C compiler was available) and imports, else ``"numpy"``. Nothing changes it
afterwards — there is no global switch. Code that wants the other implementation asks for it
explicitly, per object: ``PinSketch(16, 8, backend="numpy")``, ``FuzzyVault(…, backend="numpy")``,
``binary_field(16, backend="numpy")``. Both implementations return identical results (the tests
check them against each other and against plain-integer references); the native one is faster
and allocates far less.

The public door is :func:`sketchauth.sketches.backend`. Without the extension, the first object
that takes the default backend issues one :class:`~sketchauth.errors.NativeBackendWarning` per
process (the numpy kernels are correct but PinSketch decoding is two orders of magnitude slower,
which a deployment should not discover from its latencies).
"""

from __future__ import annotations

import functools
import warnings
from types import ModuleType
from typing import Literal

from sketchauth.errors import NativeBackendWarning, ParameterError

__all__ = ["BACKENDS", "backend", "native_module", "native_or_none", "resolve"]

Backend = Literal["native", "numpy"]
BACKENDS: tuple[str, ...] = ("auto", "native", "numpy")

try:
    from sketchauth.sketches import _native as _NATIVE
except ImportError:  # not built (no compiler at install time, or SKETCHAUTH_NO_EXTENSION=1)
    _NATIVE = None

_DEFAULT: Backend = "native" if _NATIVE is not None else "numpy"
_FALLBACK_MESSAGE = (
    "sketchauth's compiled extension is not installed: the numpy implementation runs (same results, "
    "PinSketch decoding about 100x slower). Install a binary wheel (pip install --only-binary sketchauth "
    "sketchauth) or reinstall where a C compiler and Python's headers exist; pass backend='numpy' to "
    "choose it explicitly and silence this warning"
)


def backend() -> Backend:
    """``"native"`` when the compiled kernels are in use by default, else ``"numpy"``.

    >>> backend() in ("native", "numpy")
    True
    """
    return _DEFAULT


def resolve(requested: str) -> Backend:
    """The backend an object asked for: ``"auto"`` (the default), ``"native"`` or ``"numpy"``."""
    if requested == "auto":
        if _DEFAULT == "numpy":
            _warn_fallback()
        return _DEFAULT
    if requested == "numpy":
        return "numpy"
    if requested == "native":
        if _NATIVE is None:
            raise ParameterError(
                'backend="native" needs the compiled extension: reinstall sketchauth where a C compiler '
                'is available (without SKETCHAUTH_NO_EXTENSION), or use backend="auto"'
            )
        return "native"
    raise ParameterError(f"backend must be one of {', '.join(BACKENDS)}, got {requested!r}")


@functools.cache  # once per process
def _warn_fallback() -> None:
    """One :class:`NativeBackendWarning` per process, pointing at the caller's code."""
    warnings.warn(_FALLBACK_MESSAGE, NativeBackendWarning, stacklevel=4)


def native_module() -> ModuleType:
    """The extension module (only after :func:`resolve` returned ``"native"``)."""
    if _NATIVE is None:
        raise ParameterError("the compiled extension is not installed")
    return _NATIVE


def native_or_none() -> ModuleType | None:
    """The extension module if it is built, else ``None`` (for helpers that only get faster
    with it, such as input validation, whatever backend an object uses)."""
    return _NATIVE
