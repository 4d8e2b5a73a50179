"""Strict conversion of caller-supplied secrets and samples into numpy arrays.

Every scheme takes feature vectors or element sets from outside; this module is the one place
that turns them into validated arrays and raises :class:`SampleError` with a clear message for
wrong dimensions, NaN/inf, non-integers, out-of-range values and duplicates. Nothing here ever
echoes the offending values back (they may be biometric data): messages name positions and the
allowed range only.

**Quantisation (the interval family).** :class:`Quantiser` is the one place where a real
measurement becomes a lattice level. With a ``step`` ``δ > 0`` and an ``offset`` ``o`` (the real
value of level 0; default 0) a value ``x`` has the level

    ``ℓ(x) = ⌊(x − o)/δ + 1/2⌋``  (round to nearest, halves up),

so level ``k`` is the cell ``[o + (k − ½)δ, o + (k + ½)δ)`` centred on the grid point ``o + kδ``,
and a sketch over ``n`` levels takes exactly the values of ``[o − δ/2, o + (n − ½)δ)``; anything
outside is refused with :class:`SampleError` naming the feature and that range. Rounding to the
nearest grid point (rather than flooring) keeps values that sit *on* the grid — the common case
for data recorded at the step's resolution — away from cell boundaries, where the last bit of a
floating-point division would decide the level. Without a step and with an integer ``offset``
the level is ``x − o`` (integer features with a known range, e.g. ``[−128, 128)``). Without
either, integer input *is* the level and is taken as it is.

Levels are returned as :class:`Levels`, an ``int64`` array type that marks a vector as already
quantised: a :class:`Quantiser` (and every interval-family method) passes :class:`Levels` through
unchanged instead of quantising them a second time, so normalising a secret twice — ``enrol`` then
``encode``, a cascade then its component — is harmless (quantisation is idempotent on its own
output). Arithmetic on :class:`Levels` gives plain arrays (a shifted vector is no longer known to
be a level vector of anything).

Sets and integer sequences come as whatever the caller naturally holds (:func:`as_collection`):
``set``, ``frozenset``, ``dict.keys()``, lists, tuples, ranges, generators (read exactly once,
here), numpy and galois arrays, with numpy integer scalars or integral floats as elements.
What is refused is refused with the remedy: a ``str`` or ``bytes`` (iterable, but of
characters), a mapping, nested collections, booleans, non-integral numbers.

Example::

    >>> q = Quantiser(n=8, step=0.5, offset=-2.0)
    >>> q.levels([-2.0, -1.3, 1.49], 3).tolist()
    [0, 1, 7]
    >>> q.value_range()
    (-2.25, 1.75)
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import sys
from collections.abc import Iterable, Mapping, Sized
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches._backend import native_or_none
from sketchauth.sketches.params import check_positive_float

__all__ = [
    "Levels",
    "Quantiser",
    "as_batch",
    "as_collection",
    "as_element_set",
    "as_feature_vector",
    "as_integers",
    "as_levels",
    "quantise",
]

# Integer samples beyond this magnitude are surely garbage and would overflow int64 arithmetic.
_INT_LIMIT = 2**53
#: Bounds ``[low, high)`` with ``0 ≤ low`` and ``2^63 < high ≤ 2^64`` are read as uint64 (set
#: elements of GF(2^64)); every other bounded range as int64.
_UINT64_END = 2**64


class Levels(np.ndarray):
    """A vector of lattice levels (``int64``) that is already quantised.

    What :meth:`Quantiser.levels` returns, and with it ``check_secret`` and ``decode`` of the
    interval sketches. Handing a :class:`Levels` back to any of them never quantises it again.
    Views, slices and copies stay :class:`Levels`; results of arithmetic are plain arrays.
    Build one from integers you know to be levels with :func:`as_levels`.
    """

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = tuple(x.view(np.ndarray) if isinstance(x, Levels) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, Levels) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)


def as_levels(values: Any) -> Levels:
    """Mark a one-dimensional vector of integers as lattice levels (``SampleError`` otherwise)."""
    if isinstance(values, Levels):
        return values
    arr = _numbers(values, None, "levels")
    if arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
        raise SampleError(f"levels feature {int(np.flatnonzero(arr != np.round(arr))[0])} is not an integer")
    arr = _integers(arr, "levels")
    return arr.view(Levels)


def _grid_levels(values: np.ndarray, step: float, offset: float) -> tuple[np.ndarray, np.ndarray]:
    """``⌊(x − offset)/step + 1/2⌋`` element-wise, and where ``|(x − offset)/step| ≥ 2^53``.

    The quantisation formula, written once. Entries flagged in the mask (a level that could not
    be represented exactly, or a non-finite value) are 0 in the levels.
    """
    scaled = (np.asarray(values, dtype=np.float64) - offset) / step
    big = ~(np.abs(scaled) < _INT_LIMIT)
    return np.floor(np.where(big, 0.0, scaled) + 0.5).astype(np.int64), big


def quantise(values: Any, step: float, offset: float = 0.0) -> np.ndarray:
    """``⌊(x − offset)/step + 1/2⌋`` element-wise (nearest grid point, halves up), as int64.

    The formula of :class:`Quantiser` without its validation and range check, for callers that
    hold plain arrays. ``SampleError`` if a level would reach 2^53 in magnitude.
    """
    levels, big = _grid_levels(values, step, offset)
    if big.any():
        raise SampleError("a feature is too large to quantise with this step")
    return levels


def _numbers(x: Any, features: int | None, name: str) -> np.ndarray:
    """``x`` as a one-dimensional finite numeric array (float64 or integer dtype) of ``features``."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise SampleError(f"{name} is not an array of numbers") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise SampleError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise SampleError(f"{name} must be real-valued")
    if arr.ndim != 1 or (features is not None and arr.shape[0] != features):
        if features is None:
            raise SampleError(f"{name} must be a vector, got shape {arr.shape}")
        hint = (
            f"; if your vectors have {arr.shape[0]} features, build the sketch with features={arr.shape[0]}"
            if arr.ndim == 1
            else ""
        )
        raise SampleError(
            f"{name} must be a vector of {features} feature{'s' * (features != 1)}, got shape {arr.shape}{hint}"
        )
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise SampleError(f"{name} has a NaN or infinite value at feature {int(bad[0])}")
    elif arr.dtype == bool:
        arr = arr.astype(np.int64)
    return arr


def _integers(arr: np.ndarray, name: str) -> np.ndarray:
    """An integer-valued numeric array as int64 (``SampleError`` beyond ``±2^53``)."""
    if arr.dtype.kind == "f":
        if np.any(np.abs(arr) >= _INT_LIMIT):
            raise SampleError(f"{name} has a value out of the representable range")
        return arr.astype(np.int64)
    if arr.dtype == np.uint64 and np.any(arr >= np.uint64(_INT_LIMIT)):
        raise SampleError(f"{name} has a value out of the representable range")
    out = arr.astype(np.int64)
    # Not np.abs: |-2^63| wraps to -2^63 in int64 and would pass.
    if np.any((out >= _INT_LIMIT) | (out <= -_INT_LIMIT)):
        raise SampleError(f"{name} has a value out of the representable range")
    return out


def as_feature_vector(x: Any, features: int, *, name: str = "sample") -> np.ndarray:
    """Validate an integer feature vector of length ``features`` and return it as int64.

    Integral floats are accepted; real values are not (quantising is :class:`Quantiser`'s job,
    the one place where values become levels). :class:`Levels` are returned as they are.
    """
    if isinstance(x, Levels):
        return _levels_shape(x, features, name)
    arr = _numbers(x, features, name)
    if arr.dtype.kind == "f":
        frac = np.flatnonzero(arr != np.round(arr))
        if frac.size:
            raise SampleError(f"{name} feature {int(frac[0])} is not an integer (no quantisation step set)")
    return _integers(arr, name)


def _levels_shape(x: Levels, features: int, name: str) -> Levels:
    if x.ndim != 1 or x.shape[0] != features:
        raise SampleError(f"{name} must be a vector of {features} features, got shape {x.shape}")
    if x.dtype != np.int64:
        raise SampleError(f"{name} levels must be int64, got dtype {x.dtype}")
    return x


@dataclass(frozen=True, slots=True)
class Quantiser:
    """Real measurements → lattice levels ``[0, n)`` of the interval sketches (formula above).

    ``n`` the number of levels; ``step`` the quantisation step (``None``: integer input);
    ``offset`` the value of level 0 (``None`` or 0: level 0 is the value 0; without a step it
    must be an integer). A quantiser with a step or an offset is *measuring*: values are real
    measurements in a declared range, and anything outside it is refused. Without either, integer
    input is the level itself and is not range-checked here (a lattice decoder is defined on
    every integer; the sketch checks its *secrets* against ``[0, n)``).
    """

    n: int
    step: float | None = None
    offset: float | int | None = None

    def __post_init__(self) -> None:
        step, offset = self.step, self.offset
        if step is not None:
            object.__setattr__(self, "step", check_positive_float("step", step))
        if offset is not None:
            offset = _check_offset(offset, integer=step is None)
            # 0 is the default: one canonical form, so the parameters never carry "offset": 0.
            object.__setattr__(self, "offset", None if offset == 0 else offset)

    @classmethod
    def covering(cls, low: float, high: float, step: float) -> Quantiser:
        """The quantiser of step ``step`` whose levels cover at least ``[low, high]``.

        ``offset = low`` and ``n = max(2, ⌊(high − low)/step + 1/2⌋ + 1)``: ``low`` is level 0 and
        ``high`` level ``⌊(high − low)/step + 1/2⌋`` (``n − 1`` unless the range is under half a
        step) — computed with the very operations :meth:`levels` uses, so both ends are accepted
        whatever the rounding. The values accepted are ``[low − step/2, low + (n − ½)·step)``.
        """
        lo, hi = _check_offset(low, integer=False, name="low"), _check_offset(high, integer=False, name="high")
        if not hi > lo:
            raise ParameterError(f"high must be greater than low, got [{low!r}, {high!r}]")
        probe = cls(2, step, None)
        top = math.floor((hi - lo) / probe.step + 0.5)  # type: ignore[operator]
        if top + 1 > 2**52:
            raise ParameterError("the range holds more than 2^52 steps: use a larger step")
        return cls(max(2, top + 1), probe.step, lo if lo != 0 else None)

    @property
    def measuring(self) -> bool:
        """Whether input values are measurements in a declared range (a step or an offset is set)."""
        return self.step is not None or self.offset is not None

    def value_range(self) -> tuple[float, float]:
        """The half-open range ``[low, high)`` of values this quantiser maps into ``[0, n)``."""
        o = self.offset or 0
        if self.step is None:
            return (o, o + self.n)
        return (o - self.step / 2, o + (self.n - 0.5) * self.step)

    def describe(self) -> str:
        """The accepted range and how it arises, for error messages."""
        low, high = self.value_range()
        if self.step is None:
            how = f"integers, offset {self.offset or 0}, {self.n} levels"
        else:
            how = f"step {self.step:g}, offset {self.offset or 0:g}, {self.n} levels"
        return f"[{low:g}, {high:g}) ({how})"

    # -- the mapping ------------------------------------------------------------------------------
    def _problems(self, arr: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Levels of a finite numeric array (any shape) and masks of the values that have none.

        Masks: ``"fraction"`` (a non-integer without a step), ``"magnitude"`` (beyond ``±2^53``
        before or after scaling), ``"range"`` (a measuring quantiser's level outside ``[0, n)``).
        Masked entries of the returned levels are 0.
        """
        masks: dict[str, np.ndarray] = {}
        if self.step is None:
            if arr.dtype.kind == "f":
                masks["fraction"] = arr != np.round(arr)
                big = np.abs(arr) >= _INT_LIMIT
            elif arr.dtype == np.uint64:
                big = arr >= np.uint64(_INT_LIMIT)
            else:
                wide = arr.astype(np.int64)
                big = (wide >= _INT_LIMIT) | (wide <= -_INT_LIMIT)
            masks["magnitude"] = big
            bad = big | masks.get("fraction", np.zeros(arr.shape, dtype=bool))
            levels = np.where(bad, 0, arr).astype(np.int64) - int(self.offset or 0)
        else:
            levels, big = _grid_levels(arr, self.step, float(self.offset or 0.0))
            masks["magnitude"] = big
            bad = big
        if self.measuring:
            masks["range"] = ~bad & ((levels < 0) | (levels >= self.n))
            bad = bad | masks["range"]
        return np.where(bad, 0, levels), masks

    def levels(self, x: Any, features: int, *, name: str = "sample") -> Levels:
        """The levels of one feature vector of length ``features``, as :class:`Levels`.

        :class:`Levels` pass through unchanged (shape-checked). ``SampleError`` names the first
        feature that is not a number, not finite, not an integer (without a step), too large, or
        — for a measuring quantiser — outside :meth:`value_range`.
        """
        if isinstance(x, Levels):
            return _levels_shape(x, features, name)
        arr = _numbers(x, features, name)
        levels, masks = self._problems(arr)
        if "fraction" in masks and masks["fraction"].any():
            raise SampleError(
                f"{name} feature {int(np.flatnonzero(masks['fraction'])[0])} is not an integer "
                "(no quantisation step set: give the sketch a step to take real values)"
            )
        if masks["magnitude"].any():
            raise SampleError(
                f"{name} has a value out of the representable range "
                f"at feature {int(np.flatnonzero(masks['magnitude'])[0])}"
            )
        if "range" in masks and masks["range"].any():
            raise SampleError(
                f"{name} feature {int(np.flatnonzero(masks['range'])[0])} lies outside {self.describe()}, "
                "the values this sketch quantises: choose offset and n (or a range) that cover your features"
            )
        return levels.view(Levels)

    def levels_many(self, x: Any, features: int) -> tuple[np.ndarray, np.ndarray]:
        """Levels of the rows of an ``N × features`` array, and which rows :meth:`levels` refuses.

        Row ``i`` is refused (``malformed[i]``) exactly when ``levels(x[i])`` would raise
        :class:`SampleError`; its levels are then 0. The whole batch is refused (``SampleError``)
        if it is not a 2-D numeric array of ``features`` columns.
        """
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError):
            raise SampleError("samples are not a matrix of numbers") from None
        if (
            arr.dtype == object
            or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool)
            or np.iscomplexobj(arr)
        ):
            raise SampleError(f"samples must be real numbers, got dtype {arr.dtype}")
        if arr.ndim != 2 or arr.shape[1] != features:
            raise SampleError(f"samples must be rows of {features} features, got shape {arr.shape}")
        if arr.dtype == bool:
            arr = arr.astype(np.int64)
        bad: np.ndarray = np.zeros(arr.shape, dtype=bool)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
            bad = ~np.isfinite(arr)
            arr = np.where(bad, 0.0, arr)
        levels, masks = self._problems(arr)
        for mask in masks.values():
            bad |= mask
        malformed = np.asarray(bad.any(axis=1), dtype=bool)
        return np.where(malformed[:, None], 0, levels), malformed


def _check_offset(value: Any, *, integer: bool, name: str = "offset") -> float | int:
    """A finite offset (or range end): an int below 2^53 in magnitude when ``integer``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if integer:
        if not isinstance(value, (int, np.integer)):
            raise ParameterError(f"{name} must be an integer when there is no step (the features are integers)")
        value = int(value)
        if abs(value) >= _INT_LIMIT:
            raise ParameterError(f"{name} must be below 2^53 in magnitude, got {value}")
        return cast("float | int", value)
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be a finite number, got {value!r}")
    return float(value)


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
        return _array_collection(values, name, what=what, max_size=max_size, allow_scalar=allow_scalar)
    _refuse_character_or_mapping(values, name, what)
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
    if max_size is None:
        return list(iterator)
    if isinstance(values, Sized) and len(values) > max_size:
        raise SampleError(f"{name} has {len(values)} elements, more than the {max_size} allowed")
    # islice takes at most sys.maxsize; no list can be that long anyway (GF(2^64) sets allow 2^64 − 1)
    items = list(itertools.islice(iterator, min(max_size + 1, sys.maxsize)))
    if len(items) > max_size:
        raise SampleError(f"{name} has more than the {max_size} elements allowed")
    return items


def _array_collection(
    values: np.ndarray, name: str, *, what: str, max_size: int | None, allow_scalar: bool
) -> np.ndarray:
    """A numpy array as :func:`as_collection` takes it: itself, or one element when a scalar is allowed."""
    if values.ndim == 0:
        if allow_scalar:
            return values.reshape(1)
        raise SampleError(_one_number(name, what))
    if max_size is not None and values.shape[0] > max_size:
        raise SampleError(f"{name} has {values.shape[0]} elements, more than the {max_size} allowed")
    return values


def _refuse_character_or_mapping(values: Any, name: str, what: str) -> None:
    """Refuse the iterables that are not collections of elements: ``str``, bytes-likes and mappings."""
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
    Without bounds the values must fit the representable range ``(−2^53, 2^53)``. Bounds within
    ``[0, 2^64)`` reaching past ``2^63`` (the elements of GF(2^64)) give a uint64 array instead;
    bounds past ``2^64`` are refused (:class:`ParameterError`).
    """
    if high is not None and high > _UINT64_END:
        raise ParameterError(f"{name}: integers are read up to 2^64, got an upper bound of {high}")
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
    """A set of distinct integers in ``[low, high)`` from any collection: sorted unique int64 array
    (uint64 when ``high`` passes 2^63 and ``low ≥ 0``: the elements of GF(2^64)).

    Takes whatever a caller naturally holds (:func:`as_integers`): a Python ``set`` or
    ``frozenset``, a list or tuple, ``dict.keys()``, a generator (read once), a numpy or galois
    array; with ``allow_scalar`` a lone number is a one-element set. Duplicates are an error
    rather than silently merged: a caller that sends the same element twice has a bug we should
    not hide.
    """
    fast = _plain_element_set(elements, low, high, max_size)
    if fast is not None:
        return fast
    out = np.sort(as_integers(elements, name, low=low, high=high, max_size=max_size, allow_scalar=allow_scalar))
    if out.size > 1 and np.any(out[1:] == out[:-1]):
        raise SampleError(f"{name} contains duplicate elements: list each element once (or pass a set)")
    return out


#: The containers :func:`_plain_element_set` reads directly (exact types: no subclass overrides).
_PLAIN_CONTAINERS = (list, tuple, set, frozenset)
_INT64_MIN, _INT64_END = -(2**63), 2**63
_NATIVE = native_or_none()


def _plain_element_set(elements: Any, low: int, high: int, max_size: int | None) -> np.ndarray | None:
    """:func:`as_element_set` of the inputs callers usually hold, when they are plainly valid.

    A ``list``, ``tuple``, ``set`` or ``frozenset`` of Python ``int`` s, or a one-dimensional
    integer ``numpy.ndarray`` (exact types), with every element in ``[low, high)``, no duplicate
    and at most ``max_size`` of them: the sorted int64 array, from one sort and a look at its
    ends. ``None`` for anything else and for every defect, so the general path alone decides what
    is refused and says why (one wording for each error).
    """
    if not (low >= _INT64_MIN and high < _INT64_END):
        return None
    kind = type(elements)
    if _NATIVE is not None and (kind in _PLAIN_CONTAINERS or (kind is np.ndarray and _words_vector(elements))):
        # the same checks, in one compiled pass
        words = _NATIVE.plain_element_set(elements, low, high, -1 if max_size is None else max_size)
        return None if words is None else np.frombuffer(words, dtype=np.int64)
    if kind is np.ndarray:
        if elements.ndim != 1 or elements.dtype.kind not in "iu" or not elements.size:
            return None
        if max_size is not None and elements.shape[0] > max_size:
            return None
        out = np.sort(elements)
        if int(out[0]) < low or int(out[-1]) >= high:
            return None
        out = out.astype(np.int64, copy=False)
        return None if out.size > 1 and (out[1:] == out[:-1]).any() else out
    if kind not in _PLAIN_CONTAINERS or not elements or (max_size is not None and len(elements) > max_size):
        return None
    if set(map(type, elements)) != {int}:  # bool, numpy scalars, floats: the general path
        return None
    ordered = sorted(elements)
    if ordered[0] < low or ordered[-1] >= high:
        return None
    if kind is not set and kind is not frozenset and len(set(ordered)) != len(ordered):
        return None
    return np.array(ordered, dtype=np.int64)


def _words_vector(arr: np.ndarray) -> bool:
    """A contiguous one-dimensional vector of 64-bit integers (what the compiled check reads)."""
    return arr.ndim == 1 and arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 and arr.flags.c_contiguous


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
    # Decimal registers itself as a numbers.Number when its module loads.
    return isinstance(value, (numbers.Number, np.generic))


def _is_decimal(value: Any) -> bool:
    """Whether ``value`` is a :class:`decimal.Decimal`, without importing :mod:`decimal` (~1 ms).

    A Decimal exists only once its module is imported, so an absent module answers no.
    """
    decimal = sys.modules.get("decimal")
    return decimal is not None and isinstance(value, decimal.Decimal)


def _bounds(low: int | None, high: int | None) -> tuple[int, int]:
    return (-_INT_LIMIT + 1 if low is None else low), (_INT_LIMIT if high is None else high)


def _word_type(low: int | None, high: int | None) -> type[np.integer[Any]]:
    """uint64 for non-negative ranges reaching past 2^63, int64 otherwise."""
    unsigned = low is not None and low >= 0 and high is not None and high > _INT64_END
    return np.uint64 if unsigned else np.int64


def _checked_ints(ints: list[int], name: str, low: int | None, high: int | None) -> np.ndarray:
    lo, hi = _bounds(low, high)
    if ints and (min(ints) < lo or max(ints) >= hi):
        raise SampleError(_out_of_range(name, low, high))
    return np.array(ints, dtype=_word_type(low, high))


def _array_integers(arr: np.ndarray, name: str, low: int | None, high: int | None) -> np.ndarray:
    """The int64 form of a 1-D numpy array of exact integers in ``[low, high)`` (uint64 for
    ranges past 2^63, see :func:`_word_type`)."""
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
    return arr.astype(_word_type(low, high))


def _integral_value(value: Any) -> int | None:
    """A rational, ``Decimal`` or real number as an int when it is exactly integral, else ``None``."""
    if isinstance(value, numbers.Rational):
        if value.denominator == 1:
            return int(value.numerator)
    elif _is_decimal(value):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
    elif isinstance(value, numbers.Real):  # float, numpy floats
        try:
            if math.isfinite(value) and value == math.floor(value):
                return int(float(value))
        except (TypeError, ValueError, OverflowError):
            pass
    return None


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
    integral = _integral_value(value)
    if integral is not None:
        return integral
    if _is_number(value):
        # Non-integral, non-finite or complex (int() of a numpy complex silently drops the
        # imaginary part, so it is never tried).
        raise SampleError(f"{name} element {index} is not an integer")
    if isinstance(value, (Iterable, np.ndarray)):
        raise SampleError(f"{name} element {index} is itself a collection: pass a flat collection of integers")
    raise SampleError(f"{name} element {index} is a {type(value).__name__}, not an integer")
