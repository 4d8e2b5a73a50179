"""sketchauth: authenticate by a biometric without storing it.

The library stores only *secure sketches* (public helper data from which a close sample recovers
the enrolled secret exactly) and reports, for every scheme, how much the sketch can leak.
See README.md for the tour; each scheme's module docstring gives its construction and accounting.
``sketchauth.__version__`` is the installed distribution's version (``sketchauth --version``).

Public entry points (imported lazily, so ``import sketchauth`` is cheap):

* sketches: :class:`IntervalSketch`, :class:`CodeOffsetSketch`, :class:`PinSketch`,
  :class:`FuzzyVault`, :class:`WeightedFuzzyVault`, :class:`AsymmetricIntervalSketch`,
  :class:`AngularSketch` and :class:`PolarAngularSketch` (float embeddings compared by angle);
  :func:`load_sketch` rebuilds a scheme from its helper data;
* :mod:`sketchauth.entropy`: min-entropy, leakage and exact evaluation of small sketches;
* :mod:`sketchauth.mixing`: cascaded mixing of several secrets;
* :mod:`sketchauth.evaluate`: offline evaluation (error rates, linkage, attacks).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sketchauth.errors import (
    DecodeError,
    MixingWarning,
    ParameterError,
    SampleError,
    SketchAuthError,
    SketchAuthWarning,
    SketchFormatError,
)

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from sketchauth.sketches.angular import AngularSketch
    from sketchauth.sketches.angular_polar import PolarAngularSketch
    from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
    from sketchauth.sketches.base import EntropyReport, load_sketch
    from sketchauth.sketches.chaff import ChaffPointSketch
    from sketchauth.sketches.code_offset import CodeOffsetSketch
    from sketchauth.sketches.interval import IntervalSketch
    from sketchauth.sketches.pinsketch import PinSketch
    from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

# The public names, a literal list for static tools: the errors, and the sketch families and
# helpers that sketchauth.sketches resolves lazily (from the one registry of schemes). A family
# registered later is reachable as sketchauth.<Class> too, without an entry here.
__all__ = [
    "AngularSketch",
    "AsymmetricIntervalSketch",
    "ChaffPointSketch",
    "CodeOffsetSketch",
    "DecodeError",
    "EntropyReport",
    "FuzzyVault",
    "IntervalSketch",
    "MixingWarning",
    "ParameterError",
    "PinSketch",
    "PolarAngularSketch",
    "SampleError",
    "SketchAuthError",
    "SketchAuthWarning",
    "SketchFormatError",
    "WeightedFuzzyVault",
    "__version__",
    "load_sketch",
]

__version__: str  # resolved on first use by __getattr__


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _installed_version()
    sketches = importlib.import_module("sketchauth.sketches")
    if name in __all__ or sketches.scheme_module(name) is not None:
        return getattr(sketches, name)
    raise AttributeError(f"module 'sketchauth' has no attribute {name!r}")


def _installed_version() -> str:
    """The version of the installed distribution: ``pyproject.toml`` is its one source.

    Read from the package metadata on first use (the lookup costs milliseconds, so plain
    ``import sketchauth`` does not pay it); ``0+unknown`` when the source tree is used without
    being installed.
    """
    from importlib.metadata import PackageNotFoundError, version  # start-up: only on first use

    try:
        return version("sketchauth")
    except PackageNotFoundError:
        return "0+unknown"
