"""Secrets and samples in the forms callers naturally hold, and errors that say what to change.

Every set scheme used to refuse a Python ``set`` (``PinSketch(16, 8).encode({11, 22, 33})`` raised
"secret must be a collection of integers": the input went through ``np.asarray``, which makes a
set a 0-d object array). These tests go through the public doors: ``encode``/``decode``, the
batch APIs, ``enrol``/``verify`` and ``Cascade``.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.errors import ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, Chaining, Concatenate, ExactKey, Fanning
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault, weighted_parts

HASHER = hasher("test")
SET = [11, 22, 33]


def _forms(elements: list[int]) -> dict[str, Any]:
    """The same set in every natural form (generators are made fresh by the caller)."""
    return {
        "list": list(elements),
        "tuple": tuple(elements),
        "set": set(elements),
        "frozenset": frozenset(elements),
        "dict.keys": dict.fromkeys(elements).keys(),
        "range-like reversed list": list(reversed(elements)),
        "int64 array": np.array(elements, dtype=np.int64),
        "uint16 array": np.array(elements, dtype=np.uint16),
        "integral float array": np.array(elements, dtype=np.float64),
        "numpy scalars": [np.int32(e) for e in elements],
        "integral floats": [float(e) for e in elements],
        "Fraction and Decimal": [Fraction(elements[0]), Decimal(elements[1]), *elements[2:]],
    }


#: A galois array too; built only when its test runs (importing galois costs seconds per process).
FORM_NAMES = [*_forms(SET), "galois array"]


def _fresh(form: str, elements: list[int]) -> Any:
    if form == "galois array":
        import galois  # start-up: collecting the suite (in every xdist worker) skips its JIT

        return galois.GF(2**16)(elements)
    return _forms(elements)[form]


# -- the reported instance and its siblings -------------------------------------------------------------


def test_pinsketch_encodes_a_python_set() -> None:
    sk = PinSketch(16, 8)
    assert sk.encode({11, 22, 33}) == sk.encode([11, 22, 33])
    assert sk.decode(sk.encode({11, 22, 33}), {11, 22, 34}).tolist() == [11, 22, 33]


@pytest.mark.parametrize("form", FORM_NAMES)
def test_pinsketch_takes_every_natural_form(form: str) -> None:
    sk = PinSketch(16, 4)
    reference = sk.encode(SET)  # deterministic: equal helpers prove equal canonical secrets
    assert sk.encode(_fresh(form, SET)) == reference
    assert sk.decode(reference, _fresh(form, [11, 22, 34])).tolist() == SET
    assert sk.decode(reference, (x for x in [11, 22, 34, 35])).tolist() == SET
    assert sk.secret_bytes(_fresh(form, SET)) == sk.secret_bytes(SET)


def test_pinsketch_batches_take_iterables_of_natural_sets() -> None:
    sk = PinSketch(16, 4)
    secrets = [{1, 2, 3}, frozenset({5, 6}), (x for x in [9, 10]), dict.fromkeys([7]).keys()]
    helpers = sk.encode_many(iter(secrets))
    assert helpers == [sk.encode([1, 2, 3]), sk.encode([5, 6]), sk.encode([9, 10]), sk.encode([7])]
    samples = ({1, 2, 4}, frozenset({5, 6, 8}), (x for x in [9]), {7}.__iter__())
    out = sk.decode_many((h for h in helpers), samples)
    assert [s.tolist() for s in out] == [[1, 2, 3], [5, 6], [9, 10], [7]]
    with pytest.raises(ParameterError, match="decode\\(\\) takes one"):
        sk.decode_many(helpers[0], [{1}])


@pytest.mark.parametrize("form", FORM_NAMES)
def test_fuzzy_vault_takes_every_natural_form(form: str) -> None:
    vault = FuzzyVault(p=13, m=3, t=1)
    helper = vault.encode(_fresh(form, [1, 4, 6]))
    assert vault.decode(helper, _fresh(form, [1, 4, 9])).tolist() == [1, 4, 6]
    assert vault.secret_bytes(_fresh(form, [1, 4, 6])) == vault.secret_bytes([1, 4, 6])
    batch = vault.decode_many(iter([helper, helper]), ({1, 4, 6}, (x for x in (6, 4, 2))))
    assert [b.tolist() for b in batch] == [[1, 4, 6], [1, 4, 6]]
    helpers = vault.encode_many(x for x in [{1, 4, 6}, frozenset({2, 3, 5})])
    assert [vault.decode(h, s).tolist() for h, s in zip(helpers, [{1, 4, 6}, {2, 3, 5}], strict=False)] == [
        [1, 4, 6],
        [2, 3, 5],
    ]


@pytest.mark.parametrize("form", FORM_NAMES)
def test_weighted_vault_samples_take_every_natural_form(form: str) -> None:
    vault = WeightedFuzzyVault(p=50, q=4, g=9, t=3)
    helper = vault.encode({3: 3, 17: 3, 40: 3})
    elements, weights = vault.decode(helper, _fresh(form, [3, 17]))
    assert (elements.tolist(), weights.tolist()) == ([3, 17, 40], [3, 3, 3])
    out = vault.decode_many(iter([helper]), [(x for x in [17, 40])])
    assert [(e.tolist(), w.tolist()) for e, w in out] == [([3, 17, 40], [3, 3, 3])]


def test_chaff_point_takes_a_lone_integer_where_one_value_is_natural() -> None:
    sk = ChaffPointSketch(universe=30, min_distance=3)
    for secret in (5, np.int64(5), np.array(5), [5], {5}, (x for x in [5]), 5.0):
        helper = sk.encode(secret)
        assert sk.decode(helper, 6).tolist() == [5]
        assert sk.decode(helper, {4}).tolist() == [5]
        assert sk.decode(helper, np.uint8(5)).tolist() == [5]
    two = ChaffPointSketch(universe=30, min_distance=3, points=2)
    helper = two.encode({4, 12})
    assert two.decode(helper, {13, 5}).tolist() == [4, 12]
    assert two.decode(helper, (x for x in [12, 4])).tolist() == [4, 12]
    with pytest.raises(SampleError, match="must have 2 points"):
        two.encode(4)
    with pytest.raises(SampleError, match="must have 2 values"):
        two.decode(helper, 4)


# -- the weighted vault's secret forms ----------------------------------------------------------------------


WEIGHTED_FORMS: dict[str, Any] = {
    "parallel tuple": lambda: ([3, 17, 40], [2, 3, 4]),
    "parallel list (JSON)": lambda: [[3, 17, 40], [2, 3, 4]],
    "tuple of arrays": lambda: (np.array([40, 3, 17]), np.array([4, 2, 3])),
    "mapping": lambda: {17: 3, 3: 2, 40: 4},
    "Counter": lambda: Counter({3: 2, 17: 3, 40: 4}),
    "pairs": lambda: [(3, 2), (17, 3), (40, 4)],
    "dict.items": {3: 2, 17: 3, 40: 4}.items,
    "zip": lambda: zip([3, 17, 40], [2, 3, 4], strict=False),
    "generator of pairs": lambda: ((e, w) for e, w in [(40, 4), (3, 2), (17, 3)]),
    "set of pairs": lambda: {(3, 2), (17, 3), (40, 4)},
    "(N, 2) array": lambda: np.array([[3, 2], [17, 3], [40, 4]]),
    "(2, N) array": lambda: np.array([[3, 17, 40], [2, 3, 4]]),
    "weight-0 element dropped": lambda: {3: 2, 17: 3, 40: 4, 41: 0},
}


@pytest.mark.parametrize("form", list(WEIGHTED_FORMS))
def test_weighted_vault_takes_pairs_a_mapping_or_parallel_sequences(form: str) -> None:
    vault = WeightedFuzzyVault(p=50, q=5, g=9, t=2)
    elements, weights = vault.check_secret(WEIGHTED_FORMS[form]())
    assert (elements.tolist(), weights.tolist()) == ([3, 17, 40], [2, 3, 4])
    record = enrol(vault, WEIGHTED_FORMS[form](), password_hasher=HASHER)
    # The whole template: c = 2 + 3 + 4 = 9 genuine of 3 * 5 candidate slots, w = 6; c - w = 3 < g - 2t = 5.
    assert verify(vault, record, {3, 17, 40}, password_hasher=HASHER) is False
    roomy = WeightedFuzzyVault(p=50, q=5, g=9, t=4)  # g - 2t = 1
    record = enrol(roomy, WEIGHTED_FORMS[form](), password_hasher=HASHER)
    assert verify(roomy, record, {17, 40}, password_hasher=HASHER) is True  # c - w = 7 - 3 = 4 >= 1
    assert verify(roomy, record, {3, 5}, password_hasher=HASHER) is False  # c - w = 2 - 8 < 1


@pytest.mark.parametrize(
    ("secret", "needle"),
    [
        ([[3, 4], [17, 5]], "ambiguous"),  # (elements, weights) or two pairs?
        (((3, 4), (17, 5)), "ambiguous"),
        (np.array([[3, 4], [17, 5]]), "ambiguous"),
        (({3, 17}, [4, 5]), "no order"),  # a set of elements cannot line up with its weights
        ([3, 17], "needs a weight for each element"),
        (5, "needs a weight for each element"),
        ([(3, 4), 17], "mixes numbers and collections"),
        ([(3, 4, 1), (17, 5, 1)], "not an (element, weight) pair"),
        (([3, 17], [4]), "2 elements but 1 weights"),
        ([(3, True), (17, 5)], "not booleans"),
        ({"3": 4, "17": 5}, "is a str, not an integer"),
        ("3:4,17:5", "not a str"),
        (np.zeros((3, 3), dtype=int), "shape (N, 2)"),
    ],
)
def test_weighted_vault_refuses_what_it_cannot_read_unambiguously(secret: Any, needle: str) -> None:
    vault = WeightedFuzzyVault(p=50, q=6, g=9, t=2)
    with pytest.raises(SampleError, match=needle.replace("(", "\\(").replace(")", "\\)")):
        vault.check_secret(secret)


def test_weighted_parts_prefers_the_documented_reading_of_two_by_two_inputs() -> None:
    assert weighted_parts(([3, 17], [4, 5])) == ([3, 17], [4, 5])
    assert weighted_parts([(3, 4), (17, 5)]) == ([3, 17], [4, 5])
    assert weighted_parts({3: 4, 17: 5}.items()) == ([3, 17], [4, 5])


# -- code-offset: ordered bytes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        bytes,
        bytearray,
        lambda b: memoryview(bytes(b)),
        list,
        tuple,
        lambda b: np.frombuffer(bytes(b), dtype=np.uint8),
        lambda b: np.array(list(b), dtype=np.int64),
        lambda b: (x for x in b),
        lambda b: [float(x) for x in b],
    ],
    ids=["bytes", "bytearray", "memoryview", "list", "tuple", "uint8 array", "int64 array", "generator", "floats"],
)
def test_code_offset_takes_bytes_or_any_ordered_integers(make: Any) -> None:
    sk = CodeOffsetSketch(n=16, t=2)
    w = bytes(range(100, 116))
    noisy = bytes([1]) + w[1:15] + bytes([2])
    helper = sk.encode(make(w))
    assert sk.decode(helper, make(noisy)) == w
    record = enrol(sk, make(w), password_hasher=HASHER)
    assert verify(sk, record, make(noisy), password_hasher=HASHER) is True


@pytest.mark.parametrize(
    ("sample", "needle"),
    [
        ("p" * 16, "encode text first"),
        (set(range(16)), "no order"),
        (list(range(15)), "16 bytes long, got 15"),
        (iter(range(10**9)), "more than the 16"),
        ([256] * 16, "outside \\[0, 256\\)"),
        ([1.5] * 16, "not an integer"),
    ],
)
def test_code_offset_refusals_say_what_to_pass(sample: Any, needle: str) -> None:
    sk = CodeOffsetSketch(n=16, t=2)
    with pytest.raises(SampleError, match=needle):
        sk.decode(sk.encode(bytes(16)), sample)


# -- refusals name the remedy ------------------------------------------------------------------------------


BAD_SETS = [
    ("11,22,33", "not a str"),
    (b"\x0b\x16", "list\\(data\\)"),
    (bytearray(b"\x0b"), "list\\(data\\)"),
    ({11: "a", 22: "b"}, "not a mapping: pass list\\(mapping\\)"),
    (11, "not a single number: pass \\[x\\]"),
    ([True, 11], "not booleans"),
    ([11, 22.5], "element 1 is not an integer"),
    ([Fraction(5, 2)], "element 0 is not an integer"),
    ([Decimal("2.5")], "element 0 is not an integer"),
    ([float("nan")], "not an integer"),
    ([1 + 2j], "not an integer"),
    ([11, [22]], "element 1 is itself a collection"),
    ([11, "22"], "element 1 is a str"),
    ([[11, 22], [33, 44]], "flat collection"),
    (np.array([[11, 22]]), "flat collection"),
    (np.array([True, False]), "not booleans"),
    (np.array(["11"]), "dtype"),
    ([11, 11], "duplicate"),
    ([0, 11], "outside \\[1, 256\\)"),
    ([2**70], "outside"),
    (itertools.count(1), "more than the 255"),  # an endless iterator costs bounded time
    (object(), "not object"),
]


@pytest.mark.parametrize(
    ("bad", "needle"), BAD_SETS, ids=[type(b).__name__ if " at 0x" in repr(b) else repr(b)[:30] for b, _ in BAD_SETS]
)
def test_set_schemes_refuse_non_sets_saying_what_to_pass(bad: Any, needle: str) -> None:
    sk = PinSketch(8, 2)
    helper = sk.encode([11, 22, 33])
    for call in (lambda: sk.encode(bad), lambda: sk.decode(helper, bad)):
        with pytest.raises(SampleError, match=needle) as info:
            call()
        assert "11" not in str(info.value).replace("[11, 22, 33]", "")  # no value is echoed back


def test_generators_are_read_once_through_enrol_and_verify() -> None:
    reads = []

    def elements(values: list[int]) -> Any:
        for v in values:
            reads.append(v)
            yield v

    sk = PinSketch(16, 2)
    record = enrol(sk, elements([5, 6, 7]), password_hasher=HASHER)
    assert reads == [5, 6, 7]
    assert verify(sk, record, elements([5, 6, 8]), password_hasher=HASHER) is True
    assert reads == [5, 6, 7, 5, 6, 8]
    assert verify(sk, record, elements([1, 2, 3, 4]), password_hasher=HASHER) is False


# -- mixing: secrets of every structure ---------------------------------------------------------------------


def _quiet(build: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build()


def test_cascade_takes_natural_secrets_and_any_ordered_outer_collection() -> None:
    cascade = _quiet(lambda: Cascade(PinSketch(16, 8), pin=ExactKey("test")))
    record = enrol(cascade, ({11, 22, 33}, "0042"), password_hasher=HASHER)
    for sample in (
        [{11, 22, 34}, "0042"],
        ((x for x in [33, 22, 11]), "0042"),
        (s for s in [frozenset({11, 22}), "0042"]),
    ):
        assert verify(cascade, record, sample, password_hasher=HASHER) is True
    assert verify(cascade, record, [{11, 22, 33}, "0043"], password_hasher=HASHER) is False
    with pytest.raises(SampleError, match="leading zeros"):
        cascade.encode([{11}, 42])
    with pytest.raises(SampleError, match="one entry per component: \\[pinsketch, pin\\] \\(a set has no order\\)"):
        cascade.encode({frozenset({11}), "0042"})
    with pytest.raises(SampleError, match="one entry per component: \\[pinsketch, pin\\]"):
        cascade.encode({11, 22})
    with pytest.raises(SampleError, match="2 entries, one per component"):
        cascade.encode([{11, 22, 33}])


@pytest.mark.parametrize("structure", ["concatenate", "fanning", "chaining"])
def test_other_structures_take_natural_component_secrets(structure: str) -> None:
    a, b = PinSketch(12, 2), FuzzyVault(p=13, m=3, t=1)
    build = {"concatenate": Concatenate, "fanning": Fanning, "chaining": Chaining}[structure]
    sketch = _quiet(lambda: build(a, b))
    helper = sketch.encode(((x for x in [7, 8, 9]), frozenset({1, 4, 6})))
    got = sketch.decode(helper, [{7, 8}, {1, 4, 9}])
    assert [g.tolist() for g in got] == [[7, 8, 9], [1, 4, 6]]


# -- messages that say what to change ---------------------------------------------------------------------------


def test_interval_feature_count_message_says_to_pass_features() -> None:
    sk = IntervalSketch(n=256, v=8)
    with pytest.raises(SampleError, match=r"vector of 1 feature, got shape \(4,\); .*features=4"):
        sk.encode([1, 2, 3, 4])
    record = enrol(IntervalSketch(n=256, v=8, features=4), [1, 2, 3, 4], password_hasher=HASHER)
    assert verify(IntervalSketch(n=256, v=8, features=4), record, [1, 2, 3, 4], password_hasher=HASHER) is True


def test_helper_of_another_scheme_names_that_scheme() -> None:
    helper = PinSketch(16, 8).encode({1, 2, 3})
    with pytest.raises(SketchFormatError, match=r"made by scheme 'pinsketch' \(id 3\), not interval: .*load_sketch"):
        IntervalSketch(n=256, v=8).decode(helper, [1])
    with pytest.raises(SketchFormatError, match=r"different parameters \(t=8 in the helper, 4 here\)"):
        PinSketch(16, 4).decode(helper, [1])
    assert load_sketch(helper) == PinSketch(16, 8)
    with pytest.raises(SketchFormatError, match=r"unknown scheme id 99 \(known: 1 \(interval\), .*16 \(mixed\)\)"):
        load_sketch(pack_helper(99, {}, b""))
    with pytest.raises(SketchFormatError, match="unknown scheme id 99, not pinsketch"):
        PinSketch(16, 4).decode(pack_helper(99, {}, b""), [1])


def test_fuzzy_vault_sample_size_message_names_m() -> None:
    vault = FuzzyVault(p=13, m=3, t=0)
    helper = vault.encode({1, 4, 6})
    with pytest.raises(SampleError, match="exactly 3 elements \\(the vault's m\\), got 2"):
        vault.decode(helper, {1, 4})
