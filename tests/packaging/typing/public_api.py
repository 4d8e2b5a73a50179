"""Checked by mypy (tests/packaging/test_typing.py), not run: what a user's type checker sees of the public API.

Every name a user imports from the top-level namespace must have its real type (the namespace is
loaded lazily, so without the ``TYPE_CHECKING`` imports in ``sketchauth/__init__.py`` these would
all be ``Any`` and this file would type-check whatever it says).
"""

from __future__ import annotations

from typing import Any, assert_type

import sketchauth
from sketchauth import (
    AsymmetricIntervalSketch,
    CodeOffsetSketch,
    EntropyReport,
    FuzzyVault,
    IntervalSketch,
    PinSketch,
    SketchAuthError,
    WeightedFuzzyVault,
    load_sketch,
)
from sketchauth.sketches import SecureSketch

pin = PinSketch(m=8, t=2)
assert_type(pin, PinSketch)
helper = pin.encode({1, 2, 3})
assert_type(helper, bytes)
assert_type(pin.report(), EntropyReport)
report = pin.report()
assert_type(report.loss_bound_bits, float)
assert_type(load_sketch(helper), SecureSketch[Any, Any])
assert_type(IntervalSketch(n=4, v=2, step=1), IntervalSketch)
assert_type(sketchauth.__version__, str)

kinds: list[type[SecureSketch[Any, Any]]] = [PinSketch, FuzzyVault, CodeOffsetSketch]
kinds += [WeightedFuzzyVault, AsymmetricIntervalSketch]

try:
    pin.decode(helper, {1, 2, 4})
except SketchAuthError as exc:
    assert_type(exc, SketchAuthError)

# A wrong call must be an error: this line is expected to fail (and the test checks that mypy says so).
pin.encode({1, 2}, 43)  # type: ignore[call-arg]

# Secrets and samples have the family's natural types (sketchauth.sketches.types): what a user
# holds passes, what cannot be the family's input is a type error as well as a SampleError.
import numpy as np  # noqa: E402

pin.encode([3, 5, 7])
pin.encode(np.arange(1, 5))
pin.encode(x for x in (1, 2, 3))
pin.encode({np.int64(3), np.int64(9)})
pin.encode("abc")  # type: ignore[arg-type]
interval = IntervalSketch(n=4, v=2, step=1)
interval.encode([0.5, 1.25])
interval.decode(b"", ["a", "b"])  # type: ignore[list-item]
CodeOffsetSketch(n=8, t=1).encode(b"\x00" * 8)
CodeOffsetSketch(n=8, t=1).encode(3.5)  # type: ignore[arg-type]
WeightedFuzzyVault(p=11, q=3, g=6, t=1).encode({1: 2, 3: 4})
