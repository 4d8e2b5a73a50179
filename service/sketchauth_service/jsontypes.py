"""JSON value types the request models share: what JSON Schema publishes is what pydantic takes.

JSON Schema's ``"type": "integer"`` is any number with a zero fractional part, so a schema that
says ``integer`` admits ``8.0`` — as numpy-backed clients write integers — and a generated client
may send it. pydantic's strict ``int`` refuses ``8.0`` and its lax ``int`` takes ``"8"`` and
``true``, neither what the schema says. :data:`Integral` takes exactly the schema's integers:
``8`` and ``8.0`` (as ``8``), never ``8.5``, ``"8"``, ``true`` or ``null``. Bounds go through
:func:`integral`, so that the schema publishes them as ``minimum``/``maximum`` (a bound added
around the type would come out as pydantic's own ``ge``/``le``, which JSON Schema does not know).

>>> from pydantic import TypeAdapter
>>> TypeAdapter(Integral).validate_python(8.0)
8
>>> TypeAdapter(integral(ge=1, le=10)).json_schema()
{'maximum': 10, 'minimum': 1, 'type': 'integer'}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict
from pydantic_core import PydanticCustomError

__all__ = ["AS_INTEGER", "Integral", "integral"]


def _integral(value: Any) -> Any:
    """``value`` as an ``int`` when it is a JSON integer (``3`` or ``3.0``); otherwise an ``int_type`` error."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        raise PydanticCustomError("int_from_float", "must be a whole number (no fractional part)")
    raise PydanticCustomError("int_type", "must be a whole number, not {kind}", {"kind": _kind(value)})


def _kind(value: Any) -> str:
    """The JSON kind of ``value`` as a caller wrote it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


#: The conversion alone, for a model field written out by hand:
#: ``Annotated[int, Strict(), Field(ge=1), AS_INTEGER]`` (the bounds before it, as in :func:`integral`).
AS_INTEGER = BeforeValidator(_integral)


def integral(**bounds: Any) -> Any:
    """A JSON integer within ``bounds`` (``ge``, ``gt``, ``le``, ``lt`` of :func:`pydantic.Field`).

    The bounds sit on the ``int`` inside the conversion, where the schema can state them.
    """
    return Annotated[int, Strict(), Field(**bounds), AS_INTEGER]


#: A JSON integer: ``8`` or ``8.0`` (taken as ``8``); not a fraction, a string, a boolean or null.
Integral = integral()
