"""The exception and warning hierarchy of sketchauth.

Every error the library raises derives from :class:`SketchAuthError`, so callers can catch one
root. Errors about values a caller passed are also :class:`ValueError` s.
"""

from __future__ import annotations

__all__ = [
    "DecodeError",
    "MixingWarning",
    "NativeBackendWarning",
    "ParameterError",
    "SampleError",
    "SketchAuthError",
    "SketchAuthWarning",
    "SketchFormatError",
]


class SketchAuthError(Exception):
    """Root of every error raised by sketchauth."""


class ParameterError(SketchAuthError, ValueError):
    """Scheme parameters or function arguments are invalid (checked once, at construction)."""


class SampleError(SketchAuthError, ValueError):
    """A secret or sample is malformed: wrong shape or type, NaN/inf, out of range, duplicates."""


class SketchFormatError(SketchAuthError, ValueError):
    """Helper data is malformed, truncated, oversized, tampered or made for another scheme."""


class DecodeError(SketchAuthError):
    """The sample is too far from the enrolled secret for the sketch to recover it."""


class SketchAuthWarning(UserWarning):
    """Root of every warning issued by sketchauth."""


class MixingWarning(SketchAuthWarning):
    """A cascade is configured against the guidelines of Fang's thesis, ch. 7 (the message says why)."""


class NativeBackendWarning(SketchAuthWarning):
    """The compiled extension is not installed, so the numpy implementation runs (same results, slower).

    Issued once per process, the first time an object takes the default backend without it.
    Install a wheel (``pip install --only-binary sketchauth sketchauth``) or reinstall where a C
    compiler and Python's headers exist; ``backend="numpy"`` asked for explicitly issues none.
    """
