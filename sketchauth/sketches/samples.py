"""Strict conversion of caller-supplied secrets and samples into numpy arrays.

Every scheme takes feature vectors or element sets from outside; this module is the one place
that turns them into validated arrays and raises :class:`SampleError` with a clear message for
wrong dimensions, NaN/inf, non-integers, out-of-range values and duplicates. Nothing here ever
echoes the offending values back (they may be biometric data): messages name positions only.

Sets and integer sequences come as whatever the caller naturally holds (:func:`as_collection`):
``set``, ``frozenset``, ``dict.keys()``, lists, tuples, ranges, generators (read exactly once,
here), numpy and galois arrays, with numpy integer scalars or integral floats as elements.
What is refused is refused with the remedy: a ``str`` or ``bytes`` (iterable, but of
characters), a mapping, nested collections, booleans, non-integral numbers.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from collections.abc import Iterable, Mapping, Sized
from collections.abc import Set as AbstractSet
from decimal import Decimal
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError

__all__ = ["as_feature_vector", "as_element_set", "as_integers", "as_collection", "as_batch", "quantise"]

# Integer samples beyond this magnitude are surely garbage and would overflow int64 arithmetic.
_INT_LIMIT = 2**53


def quantise(values: np.ndarray, step: float) -> np.ndarray:
    """Round ``values / step`` to the nearest integer (halves away from zero), as int64."""
    scaled = values / step
    if np.any(np.abs(scaled) >= _INT_LIMIT):
        raise SampleError("a feature is too large to quantise with this step")
    return (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int64)


def as_feature_vector(
    x: Any, features: int, *, step: float | None = None, name: str = "sample"
) -> np.ndarray:
    """Validate a feature vector of length ``features`` and return it as int64.

    With ``step`` the values may be real and are quantised by :func:`quantise`; without it they
    must be integers (integral floats are accepted).
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise SampleError(f"{name} is not an array of numbers") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise SampleError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise SampleError(f"{name} must be real-valued")
    if arr.ndim != 1 or arr.shape[0] != features:
        hint = f"; if your vectors have {arr.shape[0]} features, build the sketch with features={arr.shape[0]}" if arr.ndim == 1 else ""
        raise SampleError(f"{name} must be a vector of {features} feature{'s' * (features != 1)}, got shape {arr.shape}{hint}")
    arr = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise SampleError(f"{name} has a NaN or infinite value at feature {int(bad[0])}")
        if step is not None:
            return quantise(arr, step)
        frac = np.flatnonzero(arr != np.round(arr))
        if frac.size:
            raise SampleError(f"{name} feature {int(frac[0])} is not an integer (no quantisation step set)")
        if np.any(np.abs(arr) >= _INT_LIMIT):
            raise SampleError(f"{name} has a value out of the representable range")
        return arr.astype(np.int64)
    if step is not None:
        return quantise(arr.astype(np.float64), step)
    if arr.dtype == np.uint64 and np.any(arr >= np.uint64(_INT_LIMIT)):
        raise SampleError(f"{name} has a value out of the representable range")
    arr = arr.astype(np.int64)
    # Not np.abs: |-2^63| wraps to -2^63 in int64 and would pass.
    if np.any((arr >= _INT_LIMIT) | (arr <= -_INT_LIMIT)):
        raise SampleError(f"{name} has a value out of the representable range")
    return arr


def as_collection(
    values: Any,
    name: str,
    *,
    what: str = "integers",
    max_size: int | None = None,
    allow_scalar: bool = False,
    ordered: bool = False,
) -> list[Any] | np.ndarray:
    """Any collection a caller naturally holds, read exactly once: a list, or the numpy array itself.

    Accepted: lists, tuples, ranges, sets, frozensets, dictionary views, generators and every
    other iterable, numpy arrays (galois ``FieldArray`` s included); with ``allow_scalar`` one
    number stands for a one-element collection. Refused with a :class:`SampleError` that says what
    to pass instead: ``str`` and bytes-likes (iterable, but of characters), mappings (keys or
    values?), a single number (unless ``allow_scalar``) and, with ``ordered``, sets and dictionary
    key/item views, whose order nothing guarantees. A generator is consumed here and nowhere
    else; with ``max_size`` at most ``max_size + 1`` items are read, so an endless iterator costs
    bounded time.
    """
    if isinstance(values, np.ndarray):
        if values.ndim == 0:
            if allow_scalar:
                return values.reshape(1)
            raise SampleError(_one_number(name, what))
        if max_size is not None and values.shape[0] > max_size:
            raise SampleError(f"{name} has {values.shape[0]} elements, more than the {max_size} allowed")
        return values
    if isinstance(values, str):
        raise SampleError(
            f"{name} must be a collection of {what}, not a str (a str is a sequence of characters): "
            "pass a list such as [11, 22, 33]"
        )
    if isinstance(values, (bytes, bytearray, memoryview)):
        raise SampleError(
            f"{name} must be a collection of {what}, not {type(values).__name__}: "
            "pass list(data) if you mean its byte values"
        )
    if isinstance(values, Mapping):
        raise SampleError(
            f"{name} must be a collection of {what}, not a mapping: pass list(mapping) for its keys "
            "or list(mapping.values()) for its values"
        )
    if _is_number(values):
        if allow_scalar:
            return [values]
        raise SampleError(_one_number(name, what))
    if ordered and isinstance(values, AbstractSet):
        raise SampleError(
            f"{name} must be an ordered collection (a list or tuple): a {type(values).__name__} has no order to rely on"
        )
    try:
        iterator = iter(values)
    except TypeError:
        raise SampleError(f"{name} must be a collection of {what}, not {type(values).__name__}") from None
    if max_size is not None and isinstance(values, Sized) and len(values) > max_size:
        raise SampleError(f"{name} has {len(values)} elements, more than the {max_size} allowed")
    if max_size is None:
        return list(iterator)
    items = list(itertools.islice(iterator, max_size + 1))
    if len(items) > max_size:
        raise SampleError(f"{name} has more than the {max_size} elements allowed")
    return items


def as_integers(
    values: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    max_size: int | None = None,
    allow_scalar: bool = False,
    ordered: bool = False,
) -> np.ndarray:
    """Exact integers in ``[low, high)`` from any collection (:func:`as_collection`), in its order, as int64.

    Elements may be Python or numpy integers, floats, ``Fraction`` s or ``Decimal`` s with an exact
    integer value; booleans, strings, non-integral or non-finite numbers and nested collections
    are refused, naming the element's position (never its value: it may be biometric data).
    Without bounds the values must fit the representable range ``(−2^53, 2^53)``.
    """
    items = as_collection(values, name, max_size=max_size, allow_scalar=allow_scalar, ordered=ordered)
    if isinstance(items, np.ndarray):
        return _array_integers(items, name, low, high)
    if not all(type(value) is int for value in items):  # fast path: plain ints (bool is a subclass)
        items = [_exact_int(value, name, i) for i, value in enumerate(items)]
    return _checked_ints(items, name, low, high)


def as_element_set(
    elements: Any,
    low: int,
    high: int,
    *,
    max_size: int | None = None,
    name: str = "set",
    allow_scalar: bool = False,
) -> np.ndarray:
    """A set of distinct integers in ``[low, high)`` from any collection: sorted unique int64 array.

    Takes whatever a caller naturally holds (:func:`as_integers`): a Python ``set`` or
    ``frozenset``, a list or tuple, ``dict.keys()``, a generator (read once), a numpy or galois
    array; with ``allow_scalar`` a lone number is a one-element set. Duplicates are an error
    rather than silently merged: a caller that sends the same element twice has a bug we should
    not hide.
    """
    out = np.sort(as_integers(elements, name, low=low, high=high, max_size=max_size, allow_scalar=allow_scalar))
    if out.size > 1 and np.any(out[1:] == out[:-1]):
        raise SampleError(f"{name} contains duplicate elements: list each element once (or pass a set)")
    return out


def as_batch(helpers: Any, samples: Any) -> tuple[list[Any], list[Any]]:
    """The helpers and samples of a batch decode as lists, each iterable read exactly once.

    Both must be ordered (the i-th sample goes with the i-th helper); one helper record on its
    own (``bytes``) is refused with a pointer to ``decode``.
    """
    if isinstance(helpers, (bytes, bytearray, memoryview, str)):
        raise ParameterError("helpers must be a sequence of helper records, one per sample; decode() takes one")
    h = as_collection(helpers, "helpers", what="helper records", ordered=True)
    s = as_collection(samples, "samples", what="samples (one per helper)", ordered=True)
    return list(h), list(s)


def _one_number(name: str, what: str) -> str:
    return f"{name} must be a collection of {what}, not a single number: pass [x] for one element"


def _out_of_range(name: str, low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return f"{name} has an element out of the representable range (-2^53, 2^53)"
    return f"{name} has an element outside [{low}, {high})"


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Number, Decimal, np.generic))


def _bounds(low: int | None, high: int | None) -> tuple[int, int]:
    return (-_INT_LIMIT + 1 if low is None else low), (_INT_LIMIT if high is None else high)


def _checked_ints(ints: list[int], name: str, low: int | None, high: int | None) -> np.ndarray:
    lo, hi = _bounds(low, high)
    if ints and (min(ints) < lo or max(ints) >= hi):
        raise SampleError(_out_of_range(name, low, high))
    return np.array(ints, dtype=np.int64)


def _array_integers(arr: np.ndarray, name: str, low: int | None, high: int | None) -> np.ndarray:
    """The int64 form of a 1-D numpy array of exact integers in ``[low, high)``."""
    if type(arr) is not np.ndarray:
        # An ndarray subclass (a galois FieldArray: its integer representation is the label)
        # would keep its own arithmetic and casting rules downstream.
        arr = arr.view(np.ndarray)
    if arr.ndim != 1:
        raise SampleError(f"{name} must be a flat collection of integers, got an array of shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "O":
        return _checked_ints([_exact_int(value, name, i) for i, value in enumerate(arr.tolist())], name, low, high)
    if kind == "b":
        raise SampleError(f"{name} must contain integers, not booleans")
    if kind == "c":
        raise SampleError(f"{name} must contain integers, not complex numbers")
    if kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            raise SampleError(f"{name} element {int(bad[0])} is not an integer")
    elif kind not in "iu":
        raise SampleError(f"{name} must contain integers, got an array of dtype {arr.dtype}")
    lo, hi = _bounds(low, high)
    if arr.size and (arr.min() < lo or arr.max() >= hi):
        raise SampleError(_out_of_range(name, low, high))
    return arr.astype(np.int64)


def _exact_int(value: Any, name: str, index: int = 0) -> int:
    """``value`` as a Python int if it is exactly an integer (``SampleError`` naming ``index`` otherwise)."""
    if isinstance(value, (bool, np.bool_)):
        raise SampleError(f"{name} must contain integers, not booleans (element {index})")
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        raise SampleError(f"{name} element {index} is a {type(value).__name__}, not an integer: pass numbers")
    try:
        return operator.index(value)
    except TypeError:
        pass
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _exact_int(value.item(), name, index)
    if isinstance(value, numbers.Rational):
        if value.denominator == 1:
            return int(value.numerator)
    elif isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
    elif isinstance(value, numbers.Real):  # float, numpy floats
        try:
            if math.isfinite(value) and value == math.floor(value):
                return int(value)
        except (TypeError, ValueError, OverflowError):
            pass
    if _is_number(value):
        # Non-integral, non-finite or complex (int() of a numpy complex silently drops the
        # imaginary part, so it is never tried).
        raise SampleError(f"{name} element {index} is not an integer")
    if isinstance(value, (Iterable, np.ndarray)):
        raise SampleError(f"{name} element {index} is itself a collection: pass a flat collection of integers")
    raise SampleError(f"{name} element {index} is a {type(value).__name__}, not an integer")
