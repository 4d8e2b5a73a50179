"""Strict conversion of caller-supplied secrets and samples into numpy arrays.

Every scheme takes feature vectors or element sets from outside; this module is the one place
that turns them into validated arrays and raises :class:`SampleError` with a clear message for
wrong dimensions, NaN/inf, non-integers, out-of-range values and duplicates. Nothing here ever
echoes the offending values back (they may be biometric data): messages name positions only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.errors import SampleError

__all__ = ["as_feature_vector", "as_element_set", "quantise"]

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
        raise SampleError(f"{name} must be a vector of {features} features, got shape {arr.shape}")
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


def as_element_set(
    elements: Any,
    low: int,
    high: int,
    *,
    max_size: int | None = None,
    name: str = "set",
) -> np.ndarray:
    """Validate a set of integers in ``[low, high)``: sorted unique int64 array.

    Duplicates are an error rather than silently merged: a caller that sends the same element
    twice has a bug we should not hide. Accepts Python ints, numpy arrays, or anything whose
    elements convert with ``int()`` exactly (galois arrays included).
    """
    if isinstance(elements, (str, bytes, dict)):
        raise SampleError(f"{name} must be a collection of integers")
    try:
        arr = np.asarray(elements)
        if arr.dtype == object or arr.dtype.kind not in "iu":
            arr = np.asarray([_exact_int(e, name) for e in np.ravel(arr)], dtype=object)
    except (TypeError, ValueError):
        raise SampleError(f"{name} must be a collection of integers") from None
    if arr.ndim != 1:
        raise SampleError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if max_size is not None and arr.shape[0] > max_size:
        raise SampleError(f"{name} has {arr.shape[0]} elements, more than the {max_size} allowed")
    values = [int(v) for v in arr.tolist()] if arr.dtype == object else None
    if values is not None:
        if any(v < low or v >= high for v in values):
            raise SampleError(f"{name} has an element outside [{low}, {high})")
        out = np.array(values, dtype=np.int64)
    else:
        if arr.size and (int(arr.min()) < low or int(arr.max()) >= high):
            raise SampleError(f"{name} has an element outside [{low}, {high})")
        out = arr.astype(np.int64)
    out = np.sort(out)
    if out.size > 1 and np.any(out[1:] == out[:-1]):
        raise SampleError(f"{name} contains duplicate elements")
    return out


def _exact_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise SampleError(f"{name} must contain integers, not booleans")
    if isinstance(value, (complex, np.complexfloating)):
        # int() of a numpy complex silently drops the imaginary part.
        raise SampleError(f"{name} has a non-integer element")
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value) or value != int(value):
            raise SampleError(f"{name} has a non-integer element")
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SampleError(f"{name} has a non-integer element") from None
