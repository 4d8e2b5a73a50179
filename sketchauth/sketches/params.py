"""Validation of scheme parameters (checked once, at construction, with ``ParameterError``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError

__all__ = ["check_int", "check_positive_float"]


def check_int(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; booleans and non-integers are rejected."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ParameterError(f"{name} must be in {bounds}, got {value}")
    return value


def check_positive_float(name: str, value: Any) -> float:
    """``value`` as a positive finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)
