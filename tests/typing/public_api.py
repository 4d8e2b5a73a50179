"""Checked by mypy (tests/test_typing.py), not run: what a user's type checker sees of the public API.

Every name a user imports from the top-level namespace must have its real type (the namespace is
loaded lazily, so without the ``TYPE_CHECKING`` imports in ``sketchauth/__init__.py`` these would
all be ``Any`` and this file would type-check whatever it says).
"""

from __future__ import annotations

from typing import assert_type

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
assert_type(load_sketch(helper), SecureSketch)
assert_type(IntervalSketch(n=4, v=2, step=1), IntervalSketch)
assert_type(sketchauth.__version__, str)

kinds: list[type[SecureSketch]] = [PinSketch, FuzzyVault, CodeOffsetSketch]
kinds += [WeightedFuzzyVault, AsymmetricIntervalSketch]

try:
    pin.decode(helper, {1, 2, 4})
except SketchAuthError as exc:
    assert_type(exc, SketchAuthError)

# A wrong call must be an error: this line is expected to fail (and the test checks that mypy says so).
pin.encode(42, 43)  # type: ignore[call-arg]
