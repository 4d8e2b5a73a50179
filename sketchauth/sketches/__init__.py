"""Secure sketches, one module per family, on a shared base (:mod:`.base`, :mod:`.format`).

Names are imported lazily so that ``import sketchauth`` stays fast: a family whose fast path
needs heavier set-up pays for it only when it is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from sketchauth.sketches._backend import backend
    from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
    from sketchauth.sketches.base import EntropyReport, SecureSketch, SymbolSpace, load_sketch, scheme_class
    from sketchauth.sketches.chaff import ChaffPointSketch
    from sketchauth.sketches.code_offset import CodeOffsetSketch
    from sketchauth.sketches.interval import IntervalSketch
    from sketchauth.sketches.pinsketch import PinSketch
    from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

__all__ = [
    "AsymmetricIntervalSketch",
    "ChaffPointSketch",
    "CodeOffsetSketch",
    "EntropyReport",
    "FuzzyVault",
    "IntervalSketch",
    "PinSketch",
    "SecureSketch",
    "SymbolSpace",
    "WeightedFuzzyVault",
    "backend",
    "load_sketch",
    "scheme_class",
]

_WHERE = {
    "EntropyReport": "base",
    "SecureSketch": "base",
    "SymbolSpace": "base",
    "load_sketch": "base",
    "scheme_class": "base",
    "IntervalSketch": "interval",
    "CodeOffsetSketch": "code_offset",
    "PinSketch": "pinsketch",
    "FuzzyVault": "vault",
    "WeightedFuzzyVault": "vault",
    "AsymmetricIntervalSketch": "asymmetric",
    "ChaffPointSketch": "chaff",
    "backend": "_backend",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
