"""The one registry of schemes: a line per scheme, from which every per-scheme table derives.

A line names the scheme, its id (part of the helper format: ids are never reused) and where its
class lives (imported lazily, so ``import sketchauth`` stays cheap). Everything else the other
layers need to know about a scheme — its sample kind, its parameters and their limits, how a
template is made from several captures, its default evaluation sweep, a small exactly
enumerable instance, the attacks that apply to it — is on the class's
:class:`~sketchauth.sketches.base.SchemeDescriptor` (``cls.descriptor``), next to the code it
describes. :data:`~sketchauth.sketches.base.SCHEMES`, :func:`scheme_class`,
:func:`~sketchauth.sketches.base.load_sketch` and the lazy exports of :mod:`sketchauth.sketches`
derive from :data:`REGISTRY`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sketchauth.errors import ParameterError

if TYPE_CHECKING:
    from sketchauth.sketches.base import SchemeDescriptor, SecureSketch

__all__ = [
    "REGISTRY",
    "SCHEMES",
    "Registration",
    "descriptors",
    "scheme_class",
    "scheme_descriptor",
    "scheme_name_of",
]


@dataclass(frozen=True, slots=True)
class Registration:
    """One registered scheme: ``name``, helper-format ``scheme_id`` and ``"module:Class"``."""

    name: str
    scheme_id: int
    target: str
    #: A composite of other schemes' sketches (mixing): no descriptor of its own.
    composite: bool = False

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def class_name(self) -> str:
        return self.target.partition(":")[2]


REGISTRY: tuple[Registration, ...] = (
    Registration("interval", 1, "sketchauth.sketches.interval:IntervalSketch"),
    Registration("code-offset", 2, "sketchauth.sketches.code_offset:CodeOffsetSketch"),
    Registration("pinsketch", 3, "sketchauth.sketches.pinsketch:PinSketch"),
    Registration("fuzzy-vault", 4, "sketchauth.sketches.vault:FuzzyVault"),
    Registration("asymmetric-interval", 5, "sketchauth.sketches.asymmetric:AsymmetricIntervalSketch"),
    Registration("weighted-vault", 6, "sketchauth.sketches.vault:WeightedFuzzyVault"),
    Registration("chaff-point", 7, "sketchauth.sketches.chaff:ChaffPointSketch"),
    Registration("angular", 8, "sketchauth.sketches.angular:AngularSketch"),
    Registration("angular-polar", 9, "sketchauth.sketches.angular_polar:PolarAngularSketch"),
    Registration("mixed", 16, "sketchauth.mixing:MixedSketch", composite=True),
)

# name -> (scheme id, "module:Class"), derived from REGISTRY (the shape older callers read).
SCHEMES: dict[str, tuple[int, str]] = {r.name: (r.scheme_id, r.target) for r in REGISTRY}
_BY_NAME = {r.name: r for r in REGISTRY}


def _check_registry() -> None:
    ids = [r.scheme_id for r in REGISTRY]
    if len(set(ids)) != len(ids) or len(_BY_NAME) != len(REGISTRY):
        raise RuntimeError("scheme names and ids must be unique in REGISTRY")


_check_registry()


def registration(name: str) -> Registration:
    """The registry line of ``name`` (``ParameterError`` naming the known schemes)."""
    if not isinstance(name, str) or name not in _BY_NAME:
        shown = repr(name) if isinstance(name, str) else f"of type {type(name).__name__}"
        raise ParameterError(f"unknown scheme {shown}; known: {', '.join(sorted(_BY_NAME))}")
    return _BY_NAME[name]


def scheme_class(name: str) -> type[SecureSketch]:
    """The sketch class registered under ``name`` (imported lazily: no start-up cost)."""
    entry = registration(name)
    return getattr(importlib.import_module(entry.module), entry.class_name)


def scheme_name_of(scheme_id: int) -> str | None:
    """The registered name of a scheme id (``None`` if no scheme has it)."""
    for entry in REGISTRY:
        if entry.scheme_id == scheme_id:
            return entry.name
    return None


def scheme_descriptor(name: str) -> SchemeDescriptor:
    """The descriptor of a registered sketch family (``ParameterError`` for a composite)."""
    entry = registration(name)
    if entry.composite:
        raise ParameterError(f"{name!r} composes other schemes' sketches and has no descriptor of its own")
    return scheme_class(name).descriptor


def descriptors() -> dict[str, SchemeDescriptor]:
    """Every sketch family's descriptor, in registry order (imports every scheme module)."""
    return {r.name: scheme_descriptor(r.name) for r in REGISTRY if not r.composite}
