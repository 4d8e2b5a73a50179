"""Private lattice arithmetic of the interval sketches (Fang's thesis, ch. 6; Fang's thesis §6.2 s1).

A feature ``b`` with tolerance ``v`` is sketched as its residue modulo ``M = 2v − 1``; the values
congruent to it form a lattice whose cells of length ``M`` are centred on lattice points. The
point nearest a sample ``d'`` is ``b`` exactly when ``|d' − b| < v``. Both functions work on whole
feature vectors (numpy int64 arrays, ``v`` per feature) with no loop over features.
"""

from __future__ import annotations

from typing import cast

import numpy as np

__all__ = ["lattice_offset", "nearest_lattice_point"]


def lattice_offset(b: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``b mod (2v − 1)`` per feature: which lattice of spacing ``2v − 1`` holds ``b``."""
    return cast("np.ndarray", b % (2 * v - 1))


def nearest_lattice_point(d: np.ndarray, offset: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The point ``≡ offset (mod 2v − 1)`` nearest ``d``, per feature.

    ``M = 2v − 1`` is odd, so the nearest point is unique: ``d − r`` when ``r = (d − offset) mod M``
    is at most ``v − 1``, else ``d − r + M``. It equals ``b`` iff ``|d − b| < v``.
    """
    moduli = 2 * v - 1
    r = (d - offset) % moduli
    return cast("np.ndarray", np.where(r <= v - 1, d - r, d - r + moduli))
