"""Round-trip properties of the set schemes and code-offset, through ``enrol``/``verify`` and a PIN ``Cascade``.

For each scheme and parameter form, with secrets and samples in every natural input type (``set``,
``frozenset``, generator, list, numpy array, ``dict.keys()``, ...): the enrolment sample verifies, a
sample within tolerance verifies, and one beyond does not — exactly, where the scheme guarantees it:

* **PinSketch** ``(m, t)``: verifies iff ``|A Δ B| ≤ t``. Beyond ``t`` decode may return another set
  ``A'`` with ``|A' Δ B| ≤ t`` and the same sketch, never ``A`` itself, so the hash check fails.
* **FuzzyVault** ``(p, m, t)``, samples of ``m`` elements: verifies iff ``|d' \\ d| ≤ t``.
* **WeightedFuzzyVault** ``(p, q, g, t)``: verifies iff ``c − w ≥ g − 2t``, where ``c = Σ_{x ∈ d' ∩ d} v_x``
  counts the candidate slots carrying the polynomial and ``w = q·|d'| − c`` the others.
* **ChaffPointSketch** ``(N, d, points)``: verifies when every sample value is within ``⌊d/2⌋`` of its
  genuine point; never when a value inside ``[0, N)`` is more than ``d`` from every genuine point
  (the sketch is a *maximal* ``d``-separated set, so some point lies within ``d`` of every position:
  a chaff point is nearer); in between it verifies iff each value's nearest sketch point (ties to
  the smaller) is a distinct genuine point — checked exactly against the public sketch points.
* **CodeOffsetSketch** ``(n, t)``: verifies iff at most ``t`` bytes differ.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

HASHER = hasher("test")
PIN = "0815"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The forms a set arrives in. Generators are built per call, so each is read exactly once.
SET_FORMS: dict[str, Callable[[list[int]], Any]] = {
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "generator": lambda e: (x for x in e),
    "dict.keys": lambda e: dict.fromkeys(e).keys(),
    "int64 array": lambda e: np.array(e, dtype=np.int64),
    "uint64 array": lambda e: np.array(e, dtype=np.uint64),
    "numpy scalars": lambda e: [np.int64(x) for x in e],
    "integral floats": lambda e: [float(x) for x in e],
}
BYTE_FORMS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "list": list,
    "tuple": tuple,
    "uint8 array": lambda b: np.frombuffer(b, dtype=np.uint8).copy(),
    "int64 array": lambda b: np.array(list(b), dtype=np.int64),
    "generator": lambda b: (x for x in b),
}


def _cascade(sketch: SecureSketch) -> SecureSketch:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # randomised sketches under a short PIN: known, not the point here
        return Cascade(sketch, pin=ExactKey("test"))


class Door:
    """Enrol and verify through the library, directly or under a PIN cascade."""

    def __init__(self, sketch: SecureSketch, pin: bool) -> None:
        self.sketch = _cascade(sketch) if pin else sketch
        self.pin = pin

    def _wrap(self, value: Any) -> Any:
        return [value, PIN] if self.pin else value

    def enrol(self, secret: Any) -> Any:
        return enrol(self.sketch, self._wrap(secret), password_hasher=HASHER)

    def verify(self, record: Any, sample: Any) -> bool:
        return verify(self.sketch, record, self._wrap(sample), password_hasher=HASHER)


def _natural(data: st.DataObject, elements: list[int], forms: dict[str, Callable[[Any], Any]], label: str) -> Any:
    form = data.draw(st.sampled_from(sorted(forms)), label=f"{label} form")
    order = data.draw(st.permutations(elements), label=f"{label} order") if isinstance(elements, list) else elements
    return forms[form](order)


PIN_IDS = ["plain", "pin-cascade"]


# -- PinSketch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@pytest.mark.parametrize(("m", "max_t"), [(8, 8), (32, 16)], ids=["small-m", "large-m"])
@SETTINGS
@given(data=st.data())
def test_pinsketch_verifies_iff_the_set_difference_is_at_most_t(
    pin: bool, m: int, max_t: int, data: st.DataObject
) -> None:
    t = data.draw(st.integers(1, max_t), label="t")
    universe = st.integers(1, (1 << m) - 1)
    secret = data.draw(st.lists(universe, unique=True, max_size=24), label="A")
    door = Door(PinSketch(m, t), pin)
    record = door.enrol(_natural(data, secret, SET_FORMS, "secret"))
    assert door.verify(record, _natural(data, secret, SET_FORMS, "enrolment sample"))
    # B = A Δ D for a random D: |A Δ B| = |D| exactly.
    within = data.draw(st.lists(universe, unique=True, max_size=t), label="D within")
    sample = sorted(set(secret) ^ set(within))
    assert door.verify(record, _natural(data, sample, SET_FORMS, "close sample"))
    beyond = data.draw(st.lists(universe, unique=True, min_size=t + 1, max_size=t + 6), label="D beyond")
    sample = sorted(set(secret) ^ set(beyond))
    assert not door.verify(record, _natural(data, sample, SET_FORMS, "far sample"))


# -- the complete fuzzy vault ------------------------------------------------------------------------------


@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@SETTINGS
@given(data=st.data())
def test_fuzzy_vault_verifies_iff_at_most_t_elements_are_wrong(pin: bool, data: st.DataObject) -> None:
    p = data.draw(st.sampled_from([13, 31, 97, 257]), label="p")
    m = data.draw(st.integers(1, min(p - 1, 16)), label="m")
    t = data.draw(st.integers(0, (m - 1) // 2), label="t")
    secret = data.draw(st.lists(st.integers(0, p - 1), unique=True, min_size=m, max_size=m), label="d")
    door = Door(FuzzyVault(p=p, m=m, t=t), pin)
    record = door.enrol(_natural(data, secret, SET_FORMS, "secret"))
    assert door.verify(record, _natural(data, secret, SET_FORMS, "enrolment sample"))
    others = [x for x in range(p) if x not in secret]
    wrong = data.draw(st.integers(0, min(m, len(others))), label="wrong elements")
    kept = data.draw(st.permutations(secret), label="kept")[: m - wrong]
    replaced = data.draw(st.permutations(others), label="replacements")[:wrong]
    sample = kept + replaced  # |d'| = m, |d' \ d| = wrong
    assert door.verify(record, _natural(data, sample, SET_FORMS, "sample")) == (wrong <= t)


# -- the weighted vault ---------------------------------------------------------------------------------------


WEIGHTED_SECRET_FORMS: dict[str, Callable[[list[int], list[int]], Any]] = {
    "mapping": lambda e, w: dict(zip(e, w, strict=False)),
    "pairs": lambda e, w: list(zip(e, w, strict=False)),
    "dict.items": lambda e, w: dict(zip(e, w, strict=False)).items(),
    "generator of pairs": lambda e, w: ((x, v) for x, v in zip(e, w, strict=False)),
    "parallel tuple": lambda e, w: (list(e), list(w)),
    "tuple of arrays": lambda e, w: (np.array(e), np.array(w)),
}


@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@pytest.mark.parametrize("form", sorted(WEIGHTED_SECRET_FORMS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_weighted_vault_verifies_iff_c_minus_w_reaches_g_minus_2t(pin: bool, form: str, data: st.DataObject) -> None:
    p = data.draw(st.integers(8, 60), label="p")
    q = data.draw(st.integers(3, 6), label="q")
    size = data.draw(st.integers(1, min(p, 8)), label="template size")
    elements = data.draw(st.lists(st.integers(0, p - 1), unique=True, min_size=size, max_size=size), label="elements")
    weights = data.draw(st.lists(st.integers(1, q - 1), min_size=size, max_size=size), label="weights")
    g = sum(weights)
    t = data.draw(st.integers(0, (g - 1) // 2), label="t")
    door = Door(WeightedFuzzyVault(p=p, q=q, g=g, t=t), pin)
    record = door.enrol(WEIGHTED_SECRET_FORMS[form](elements, weights))
    weight_of = dict(zip(elements, weights, strict=False))

    def accepts(sample: list[int]) -> bool:
        c = sum(weight_of.get(x, 0) for x in sample)
        return c - (q * len(sample) - c) >= g - 2 * t

    assert door.verify(record, _natural(data, elements, SET_FORMS, "enrolment sample")) == accepts(elements)
    kept = data.draw(st.lists(st.sampled_from(elements), unique=True), label="kept")
    extra = data.draw(
        st.lists(st.integers(0, p - 1).filter(lambda x: x not in weight_of), unique=True, max_size=4), label="extra"
    )
    sample = kept + extra
    if sample:
        assert door.verify(record, _natural(data, sample, SET_FORMS, "sample")) == accepts(sample)


@pytest.mark.parametrize(
    ("sample", "accepted"),
    [
        ({3}, True),  # c = 4, w = 1: c - w = 3, exactly g - 2t
        ({3, 17, 40}, True),  # c = 9, w = 6: 3, exactly at the boundary
        ({3, 17}, True),  # c = 8, w = 2: 6
        ({3, 17, 5}, False),  # c = 8, w = 7: 1, just beyond
        ({3, 40}, False),  # c = 5, w = 5: 0
        ({40}, False),  # c = 1, w = 4: -3
    ],
)
def test_weighted_vault_acceptance_condition_at_and_beyond_the_boundary(sample: set[int], accepted: bool) -> None:
    # q = 5, template {3: 4, 17: 4, 40: 1}, g = 9, t = 3: accepted iff c - w = 2c - 5|d'| >= g - 2t = 3.
    for pin in (False, True):
        door = Door(WeightedFuzzyVault(p=50, q=5, g=9, t=3), pin)
        record = door.enrol([(3, 4), (17, 4), (40, 1)])
        assert door.verify(record, sample) is accepted
        assert door.verify(record, (x for x in sorted(sample))) is accepted


# -- the chaff point sketch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@pytest.mark.parametrize("points", [1, 3], ids=["one-point", "three-points"])
@SETTINGS
@given(data=st.data())
def test_chaff_point_verifies_within_half_the_distance_and_never_beyond_it(
    pin: bool, points: int, data: st.DataObject
) -> None:
    d = data.draw(st.integers(1, 6), label="min_distance")
    n = data.draw(st.integers(max(d + 1, (points - 1) * (d + 1) + 1), 120), label="universe")
    sketch = ChaffPointSketch(universe=n, min_distance=d, points=points)
    first = data.draw(st.integers(0, n - 1 - (points - 1) * (d + 1)), label="first point")
    secret = [first]
    for _ in range(points - 1):
        secret.append(
            data.draw(st.integers(secret[-1] + d + 1, n - 1 - (points - 1 - len(secret)) * (d + 1)), label="point")
        )
    door = Door(sketch, pin)
    lone = points == 1 and data.draw(st.booleans(), label="lone integer")
    record = door.enrol(secret[0] if lone else _natural(data, secret, SET_FORMS, "secret"))
    assert door.verify(record, _natural(data, secret, SET_FORMS, "enrolment sample"))
    half = d // 2
    close = [x + data.draw(st.integers(-half, half), label="offset") for x in secret]
    close = [min(max(x, 0), n - 1) for x in close]
    assert door.verify(record, _natural(data, close, SET_FORMS, "close sample"))
    # One value moved inside [0, n) to more than d from every genuine point: never accepted.
    far_candidates = [x for x in range(n) if all(abs(x - s) > d for s in secret)]
    if far_candidates:
        moved = data.draw(st.integers(0, points - 1), label="moved value")
        far = list(secret)
        far[moved] = data.draw(st.sampled_from(far_candidates), label="far value")
        assert not door.verify(record, far)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_chaff_point_acceptance_in_between_follows_the_nearest_sketch_point(data: st.DataObject) -> None:
    d = data.draw(st.integers(2, 6), label="min_distance")
    n = data.draw(st.integers(d + 2, 80), label="universe")
    sketch = ChaffPointSketch(universe=n, min_distance=d)
    secret = data.draw(st.integers(0, n - 1), label="point")
    record = enrol(sketch, secret, password_hasher=HASHER)
    x = data.draw(st.integers(max(0, secret - d), min(n - 1, secret + d)), label="sample")
    points = sketch.sketch_points(record.helper)
    nearest = int(points[np.abs(points - x).argmin()])  # argmin: ties go to the smaller point
    assert verify(sketch, record, x, password_hasher=HASHER) == (nearest == secret)


# -- code-offset ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@SETTINGS
@given(data=st.data())
def test_code_offset_verifies_iff_at_most_t_bytes_differ(pin: bool, data: st.DataObject) -> None:
    n = data.draw(st.integers(3, 64), label="n")
    t = data.draw(st.integers(1, (n - 1) // 2), label="t")
    w = data.draw(st.binary(min_size=n, max_size=n), label="w")
    door = Door(CodeOffsetSketch(n=n, t=t), pin)
    form = data.draw(st.sampled_from(sorted(BYTE_FORMS)), label="form")
    record = door.enrol(BYTE_FORMS[form](w))
    assert door.verify(record, BYTE_FORMS[form](w))
    errors = data.draw(st.integers(0, n), label="byte errors")
    where = data.draw(st.permutations(range(n)), label="positions")[:errors]
    noisy = bytearray(w)
    for i in where:
        noisy[i] ^= data.draw(st.integers(1, 255), label="flip")
    assert door.verify(record, BYTE_FORMS[form](bytes(noisy))) == (errors <= t)
