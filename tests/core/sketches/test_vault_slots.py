"""The weighted vault's slot engine (``slot_field_size``, ``lock_slots``, ``unlock_slots``) at and beyond its limit."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches.vault import lock_slots, slot_field_size, unlock_slots


def _vault(slots: int, genuine: list[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    field = slot_field_size(slots)
    coefficients = np.array([secrets.randbelow(field) for _ in range(k)], dtype=np.int64)
    offsets = np.array([secrets.randbelow(field - 1) for _ in range(slots - len(genuine))], dtype=np.int64)
    return lock_slots(coefficients, np.array(genuine), offsets, slots), coefficients


def test_field_size_is_the_next_prime() -> None:
    assert [slot_field_size(n) for n in (2, 20, 23, 20_000)] == [2, 23, 23, 20011]
    with pytest.raises(ParameterError):
        slot_field_size(1)


def test_locked_values_carry_f_exactly_at_the_genuine_slots() -> None:
    slots, genuine, k = 64, [1, 5, 9, 20, 33, 40, 41, 63], 3
    values, coefficients = _vault(slots, genuine, k)
    field = slot_field_size(slots)
    f = [sum(int(c) * pow(x, j, field) for j, c in enumerate(coefficients)) % field for x in range(slots)]
    assert [x for x in range(slots) if values[x] == f[x]] == genuine  # chaff never equals F


def test_unlock_at_and_beyond_the_unique_decoding_radius() -> None:
    slots, genuine, k = 200, list(range(0, 40, 2)), 6  # 20 slots carry F
    values, _ = _vault(slots, genuine, k)
    # n candidates decode iff at least ceil((n + k)/2) of them carry F: 20 of 34 needs 20.
    at_limit = np.array(genuine + list(range(101, 115)))
    assert list(unlock_slots(values, at_limit, k)) == genuine
    beyond = np.array(genuine[:-1] + list(range(101, 116)))  # 19 of 34 carry F, 20 needed
    with pytest.raises(DecodeError):
        unlock_slots(values, beyond, k)


def test_bad_arguments_are_refused() -> None:
    values, _ = _vault(32, [0, 1, 2, 3], 2)
    with pytest.raises(ParameterError):
        unlock_slots(values, np.array([0, 0, 1, 2]), 2)  # repeated slots
    with pytest.raises(ParameterError):
        unlock_slots(values, np.array([0, 1, 99]), 2)  # outside the vault
    with pytest.raises(ParameterError):
        lock_slots(np.array([1, 2]), np.array([3, 1]), np.zeros(30, dtype=np.int64), 32)  # not increasing
    with pytest.raises(ParameterError):
        lock_slots(np.array([1, 2]), np.array([1, 3]), np.zeros(29, dtype=np.int64), 32)  # offsets short
