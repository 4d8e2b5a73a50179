"""The prime-field arithmetic an attack on a vault needs, as checked public functions.

The vaults (:mod:`sketchauth.sketches.vault`) compute in ``F_p`` through the private
:mod:`sketchauth.sketches._prime_field`, which trusts its callers. Code outside the sketches —
the evaluation's attacks — uses these instead: the same arithmetic, with the field checked.

>>> import numpy as np
>>> inverse_mod(np.array([1, 2, 3, 0]), 7).tolist()
[1, 4, 5, 0]
"""

from __future__ import annotations

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.sketches._prime_field import inv_mod, is_prime
from sketchauth.sketches.params import check_int

__all__ = ["inverse_mod"]

#: Products of two field elements stay below 2^63 in int64 arithmetic.
_MAX_PRIME = (1 << 31) - 1


def inverse_mod(values: np.ndarray, p: int) -> np.ndarray:
    """Elementwise inverse modulo the prime ``p`` (0 maps to 0), as int64 values in ``[0, p)``."""
    p = check_int("p", p, 2, _MAX_PRIME)
    if not is_prime(p):
        raise ParameterError(f"p must be a prime, got {p}")
    return inv_mod(np.asarray(values, dtype=np.int64) % p, p)
