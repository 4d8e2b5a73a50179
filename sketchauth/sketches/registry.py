"""The one registry of schemes: a line per scheme, from which every per-scheme table derives.

A line names the scheme, its id (part of the helper format: ids are never reused) and where its
class lives (imported lazily, so ``import sketchauth`` stays cheap). Everything else the other
layers need to know about a scheme — its sample kind, its parameters and their limits, how a
template is made from several captures, its default evaluation sweep, a small exactly
enumerable instance, the attacks that apply to it — is on the class's
:class:`~sketchauth.sketches.base.SchemeDescriptor` (``cls.descriptor``), next to the code it
describes. :func:`scheme_class`, :func:`~sketchauth.sketches.base.load_sketch`, the lazy exports
of :mod:`sketchauth.sketches`, the evaluation's adapters, the service's schemes and the command
line all read :func:`registrations` when asked, so adding a family is its module, its line in
:data:`BUILTIN` and its tests (a family defined elsewhere calls :func:`register`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sketchauth.errors import ParameterError

if TYPE_CHECKING:
    from sketchauth.sketches.base import SchemeDescriptor, SecureSketch

__all__ = [
    "BUILTIN",
    "Registration",
    "descriptors",
    "register",
    "registered",
    "registration",
    "registrations",
    "scheme_class",
    "scheme_descriptor",
    "scheme_id_of",
    "scheme_name_of",
    "unregister",
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


#: The schemes this library ships, one line each: the one list every door reads (through
#: :func:`registrations`). A new family adds its line here.
BUILTIN: tuple[Registration, ...] = (
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

_entries: list[Registration] = []
_by_name: dict[str, Registration] = {}
_by_id: dict[int, Registration] = {}


def _add(entry: Registration) -> None:
    if not isinstance(entry, Registration):
        raise ParameterError(f"a registration is a Registration, not {type(entry).__name__}")
    if entry.name in _by_name:
        raise ParameterError(f"a scheme named {entry.name!r} is already registered")
    if entry.scheme_id in _by_id:
        taken = _by_id[entry.scheme_id].name
        raise ParameterError(f"scheme id {entry.scheme_id} is already {taken!r}'s (ids are never reused)")
    if not 0 < entry.scheme_id < 256 or ":" not in entry.target:
        raise ParameterError(f"{entry.name}: the id must be in [1, 255] and the target 'module:Class'")
    _entries.append(entry)
    _by_name[entry.name] = entry
    _by_id[entry.scheme_id] = entry


for _entry in BUILTIN:
    _add(_entry)


def registrations() -> tuple[Registration, ...]:
    """Every registered scheme, in registration order (the built-in ones first)."""
    return tuple(_entries)


def register(entry: Registration) -> None:
    """Register a scheme defined outside this package (a plug-in, or a test's toy family).

    Its name and id must be new (``ParameterError`` otherwise); every door then finds it: the
    library (:func:`scheme_class`, :func:`~sketchauth.sketches.base.load_sketch`), the
    evaluation's adapters, the service's scheme list and request models, the command line.
    """
    _add(entry)


def unregister(name: str) -> None:
    """Remove a scheme added by :func:`register` (the built-in ones stay)."""
    entry = registration(name)
    if entry in BUILTIN:
        raise ParameterError(f"{name!r} is built in and cannot be unregistered")
    _entries.remove(entry)
    del _by_name[entry.name], _by_id[entry.scheme_id]


@contextmanager
def registered(entry: Registration) -> Iterator[Registration]:
    """:func:`register` ``entry`` for the duration of a ``with`` block."""
    register(entry)
    try:
        yield entry
    finally:
        unregister(entry.name)


def registration(name: str) -> Registration:
    """The registry line of ``name`` (``ParameterError`` naming the known schemes)."""
    if not isinstance(name, str) or name not in _by_name:
        shown = repr(name) if isinstance(name, str) else f"of type {type(name).__name__}"
        raise ParameterError(f"unknown scheme {shown}; known: {', '.join(sorted(_by_name))}")
    return _by_name[name]


def scheme_class(name: str) -> type[SecureSketch[Any, Any]]:
    """The sketch class registered under ``name`` (imported lazily: no start-up cost)."""
    entry = registration(name)
    return cast("type[SecureSketch[Any, Any]]", getattr(importlib.import_module(entry.module), entry.class_name))


def scheme_name_of(scheme_id: int) -> str | None:
    """The registered name of a scheme id (``None`` if no scheme has it)."""
    entry = _by_id.get(scheme_id)
    return None if entry is None else entry.name


def scheme_id_of(name: str) -> int:
    """The helper-format id of the scheme registered as ``name``."""
    return registration(name).scheme_id


def scheme_descriptor(name: str) -> SchemeDescriptor:
    """The descriptor of a registered sketch family (``ParameterError`` for a composite)."""
    entry = registration(name)
    if entry.composite:
        raise ParameterError(f"{name!r} composes other schemes' sketches and has no descriptor of its own")
    return scheme_class(name).descriptor


def descriptors() -> dict[str, SchemeDescriptor]:
    """Every sketch family's descriptor, in registry order (imports every scheme module)."""
    return {r.name: scheme_descriptor(r.name) for r in _entries if not r.composite}
