"""The types of the secrets and samples users hand to the sketches.

Each family takes what a caller naturally holds — the conversion and its strict checks live in
:mod:`sketchauth.sketches.samples` — and these aliases say so to a type checker. A sketch class is
generic in the secret it encodes and the sample it decodes with (``SecureSketch[SecretT, SampleT]``):
``PinSketch`` is a ``SecureSketch[ElementSet, ElementSet]``, so ``PinSketch(...).encode("abc")``
is a type error as well as a :class:`~sketchauth.errors.SampleError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import SupportsFloat, SupportsIndex, TypeAlias

import numpy as np

__all__ = [
    "ByteString",
    "ElementSet",
    "FeatureVector",
    "IntervalTemplate",
    "WeightedSet",
]

#: A set of integers: a ``set``, ``frozenset``, list, tuple, range, generator or integer numpy
#: array; elements are ints, numpy integers or integral floats (duplicates refused).
ElementSet: TypeAlias = Iterable[SupportsIndex | float] | np.ndarray

#: A feature vector: integer levels, or real values a quantiser maps to levels (``step``,
#: ``offset``); any sequence or iterable of numbers, or a numpy array.
FeatureVector: TypeAlias = Iterable[SupportsFloat] | np.ndarray

#: A byte string: ``bytes``, ``bytearray``, ``memoryview`` or a sequence of values in ``[0, 255]``.
ByteString: TypeAlias = bytes | bytearray | memoryview | Sequence[SupportsIndex] | np.ndarray

#: The asymmetric interval template ``(b, v)``: the template and its per-feature tolerances.
IntervalTemplate: TypeAlias = tuple[FeatureVector, FeatureVector] | Sequence[FeatureVector] | np.ndarray

#: A weighted set for the weighted vault: a mapping ``{element: weight}``, ``(element, weight)``
#: pairs, or parallel ``(elements, weights)`` (see :func:`sketchauth.sketches.vault.weighted_parts`).
WeightedSet: TypeAlias = (
    Mapping[int, int] | Iterable[tuple[SupportsIndex, SupportsIndex]] | tuple[ElementSet, ElementSet] | np.ndarray
)
