"""Secure sketches, one module per family, on a shared base (:mod:`.base`, :mod:`.format`).

Names are imported lazily so that ``import sketchauth`` stays fast: a family whose fast path
needs heavier set-up pays for it only when it is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from sketchauth.sketches._backend import backend
    from sketchauth.sketches.angular import AngularSketch
    from sketchauth.sketches.angular_polar import PolarAngularSketch
    from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
    from sketchauth.sketches.base import (
        EntropyReport,
        SchemeDescriptor,
        SecureSketch,
        SymbolSpace,
        load_sketch,
        scheme_class,
    )
    from sketchauth.sketches.chaff import ChaffPointSketch
    from sketchauth.sketches.code_offset import CodeOffsetSketch
    from sketchauth.sketches.interval import IntervalSketch
    from sketchauth.sketches.pinsketch import PinSketch
    from sketchauth.sketches.registry import descriptors, registrations, scheme_descriptor
    from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

__all__ = [
    "AngularSketch",
    "AsymmetricIntervalSketch",
    "ChaffPointSketch",
    "CodeOffsetSketch",
    "EntropyReport",
    "FuzzyVault",
    "IntervalSketch",
    "PinSketch",
    "PolarAngularSketch",
    "SchemeDescriptor",
    "SecureSketch",
    "SymbolSpace",
    "WeightedFuzzyVault",
    "backend",
    "descriptors",
    "load_sketch",
    "registrations",
    "scheme_class",
    "scheme_descriptor",
]

_BASE = ("EntropyReport", "SecureSketch", "SymbolSpace", "SchemeDescriptor", "load_sketch", "scheme_class")
_REGISTRY = ("registrations", "scheme_descriptor", "descriptors")
_PREFIX = f"{__name__}."
#: exported name -> module under this package; the scheme classes come from the registry.
_WHERE = {**dict.fromkeys(_BASE, "base"), **dict.fromkeys(_REGISTRY, "registry"), "backend": "_backend"}


def scheme_module(name: str) -> str | None:
    """The module of the registered scheme class called ``name`` (the registry is the one list)."""
    from sketchauth.sketches.registry import registrations  # start-up: the registry on first use

    for entry in registrations():
        if entry.class_name == name:
            return entry.module
    return None


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    module = scheme_module(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
