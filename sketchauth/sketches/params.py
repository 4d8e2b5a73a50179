"""Validation of scheme parameters (checked once, at construction, with ``ParameterError``).

Every scheme declares the parameters its ``from_params`` takes as a :class:`ParameterSpec`
(``SecureSketch.parameters``), so one place turns a missing or unknown key into a
:class:`ParameterError` that names it and lists what the scheme takes; the constructors'
``check_*`` calls name a parameter of the wrong type or range.

A scheme's spec also describes each parameter (:class:`Parameter`: its type, its bounds taken
from the module's own constants, and what it means), so whoever publishes the parameters — the
service's request models, the command line's help — states the library's limits instead of
restating them. Bounds are the per-parameter ones; rules between parameters (``2t < n``,
``p`` prime) are in the descriptions and enforced by the constructor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from sketchauth.errors import ParameterError

__all__ = ["Parameter", "ParameterSpec", "check_int", "check_positive_float"]

#: What a parameter's value is: an integer in ``[low, high]``; an integer or a list of them, one
#: per feature (``per-feature``); a finite number (``number``), positive when ``low == 0`` and
#: ``exclusive_low``; or one of ``choices`` (``choice``).
ParameterKind = Literal["int", "per-feature", "number", "choice"]


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of a scheme: its kind, bounds and meaning (published as they are here).

    ``low``/``high`` are the bounds the constructor enforces on the parameter alone, taken from
    the scheme module's constants (``None``: unbounded); ``max_items`` bounds a per-feature list.
    ``required`` parameters must be in every parameters mapping (``params()`` always writes
    them); ``default`` is what the constructor assumes for a left-out optional one.
    """

    name: str
    kind: ParameterKind
    description: str
    low: int | float | None = None
    high: int | None = None
    exclusive_low: bool = False
    choices: tuple[str, ...] = ()
    max_items: int | None = None
    required: bool = True
    default: Any = None


@dataclass(frozen=True, slots=True)
class ParameterSpec:
    """The keys a scheme's parameters mapping may hold: ``required`` ones and ``optional`` ones.

    ``fields`` describes each of them (:class:`Parameter`) when the spec was built with
    :meth:`of`; specs of composite sketches (mixing) list only the keys.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    fields: tuple[Parameter, ...] = ()

    @classmethod
    def of(cls, *parameters: Parameter) -> ParameterSpec:
        """The spec of the given parameters, in this order (required first in :attr:`names`)."""
        names = [p.name for p in parameters]
        if len(set(names)) != len(names):
            raise ParameterError(f"duplicate parameter names in {names}")
        return cls(
            required=tuple(p.name for p in parameters if p.required),
            optional=tuple(p.name for p in parameters if not p.required),
            fields=tuple(parameters),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return self.required + self.optional

    def field(self, name: str) -> Parameter:
        """The description of parameter ``name`` (``ParameterError`` naming the known ones)."""
        for parameter in self.fields:
            if parameter.name == name:
                return parameter
        raise ParameterError(f"no described parameter {name!r} ({self.describe()})")

    def describe(self) -> str:
        """``"required: m, t"`` (and ``"; optional: …"``), for messages."""
        text = "required: " + (", ".join(self.required) or "none")
        return text + ("; optional: " + ", ".join(self.optional) if self.optional else "")

    def check(self, scheme: str, params: Any, *, where: str = "", note: str = "") -> Mapping[str, Any]:
        """``params`` if it is a mapping with every required key and no unknown one.

        Raises :class:`ParameterError` naming the missing or unknown keys and listing the
        scheme's parameters (the values themselves are checked by the scheme's constructor).
        ``where`` (e.g. ``"--params"``) and ``note`` only extend the messages.
        """
        place = f" in {where}" if where else ""
        listing = self.describe() + (f"; {note}" if note else "")
        if not isinstance(params, Mapping):
            raise ParameterError(
                f"{scheme} parameters{place} must be a mapping ({listing}), not {type(params).__name__}"
            )
        missing = [key for key in self.required if key not in params]
        if missing:
            raise ParameterError(f"{scheme} needs {_keys(missing)}{place} ({listing})")
        unknown = sorted((str(key) for key in params if key not in self.names), key=str)
        if unknown:
            raise ParameterError(f"unknown {scheme} {_keys(unknown)}{place} ({listing})")
        return params

    def check_swept(self, scheme: str, params: Any, swept: str | None, *, where: str = "--params") -> Mapping[str, Any]:
        """:meth:`check` for parameters that leave out ``swept``, which a sweep supplies per setting.

        Refuses ``swept`` in ``params`` (the sweep would silently override it), any other
        missing required key and any unknown key, naming them and listing what ``where`` needs.
        """
        if swept is None:
            return self.check(scheme, params, where=where)
        if isinstance(params, Mapping) and swept in params:
            raise ParameterError(
                f"{where} sets {swept!r}, the {scheme} parameter the sweep varies: "
                "remove it and give its values as the sweep"
            )
        rest = ParameterSpec(
            tuple(k for k in self.required if k != swept), tuple(k for k in self.optional if k != swept)
        )
        return rest.check(scheme, params, where=where, note=f"{swept!r} comes from the sweep")


def _keys(keys: list[str]) -> str:
    return ("parameter " if len(keys) == 1 else "parameters ") + ", ".join(repr(key) for key in keys)


def check_int(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; booleans and non-integers are rejected."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ParameterError(f"{name} must be in {bounds}, got {value}")
    return cast("int", value)


def check_positive_float(name: str, value: Any) -> float:
    """``value`` as a positive finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)
