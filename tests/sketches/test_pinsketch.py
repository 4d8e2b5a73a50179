"""PinSketch (Dodis–Ostrovsky–Reyzin–Smith §6.3): known answers, recovery within t, clean failure beyond,
format, batches."""

from __future__ import annotations

import json
import math
import random
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import exact_sketch_loss
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches import _gf2m
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.pinsketch import MAX_T, PinSketch

KAT = json.loads((Path(__file__).parent / "vectors" / "pinsketch_kat.json").read_text())
M_VALUES = (8, 16, 24, 32)
PROPERTY_SETTINGS = settings(max_examples=40, deadline=None)


def _perturb(rng: random.Random, m: int, enrolled: list[int], distance: int) -> list[int]:
    """A sample at exactly ``distance`` from ``enrolled``: some removed, the rest new elements."""
    removed = rng.randint(max(0, distance - ((1 << m) - 1 - len(enrolled))), min(distance, len(enrolled)))
    kept = rng.sample(enrolled, len(enrolled) - removed)
    present = set(enrolled)
    extra: set[int] = set()
    while len(extra) < distance - removed:
        candidate = rng.randrange(1, 1 << m)
        if candidate not in present:
            extra.add(candidate)
    return kept + sorted(extra)


@st.composite
def cases(draw: st.DrawFn, beyond: bool) -> tuple[PinSketch, list[int], list[int]]:
    m = draw(st.sampled_from(M_VALUES))
    t = draw(st.integers(1, 8 if m == 8 else 20))
    rng = random.Random(draw(st.integers(0, 2**32)))  # the sets themselves: seeded, not shrunk
    size = draw(st.integers(0, 45))
    enrolled = rng.sample(range(1, 1 << m), size)
    distance = draw(st.integers(t + 1, 2 * t + 4)) if beyond else draw(st.integers(0, t))
    return PinSketch(m, t), enrolled, _perturb(rng, m, enrolled, distance)


# -- known answers (galois-made, see vectors/make_pinsketch_kat.py) ------------------------------------


def test_known_answer_sketches() -> None:
    sketch = PinSketch(KAT["m"], KAT["t"])
    assert _gf2m.PRIMITIVE_POLYNOMIALS[KAT["m"]] == KAT["polynomial"]
    for case in KAT["encode"]:
        helper = sketch.encode(case["set"])
        assert sketch.payload(helper).hex() == case["payload_hex"]
        assert sketch.syndromes(helper).tolist() == case["syndromes"]


def test_known_answer_decodes() -> None:
    sketch = PinSketch(KAT["m"], KAT["t"])
    for case in KAT["decode"]:
        assert sketch.decode(sketch.encode(case["set"]), case["sample"]).tolist() == case["expected"]
    for case in KAT["too_far"]:
        assert case["outcome"] == "DecodeError"
        with pytest.raises(DecodeError):
            sketch.decode(sketch.encode(case["set"]), case["sample"])


def test_hand_computed_syndromes_of_one_and_two() -> None:
    # {1, 2} in GF(2^8): s1 = 1+2 = 3, s3 = 1+8 = 9, s5 = 1+32 = 33 (no reduction below x^8)
    assert PinSketch(8, 3).payload(PinSketch(8, 3).encode([2, 1])) == bytes([3, 9, 33])


# -- properties -------------------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(cases(beyond=False))
def test_recovers_exactly_within_t(case: tuple[PinSketch, list[int], list[int]]) -> None:
    sketch, enrolled, sample = case
    recovered = sketch.decode(sketch.encode(enrolled), sample)
    assert recovered.dtype == np.int64
    assert recovered.tolist() == sorted(enrolled)


@PROPERTY_SETTINGS
@given(cases(beyond=True))
def test_beyond_t_fails_cleanly_or_returns_the_unique_valid_decoding(
    case: tuple[PinSketch, list[int], list[int]],
) -> None:
    sketch, enrolled, sample = case
    helper = sketch.encode(enrolled)
    try:
        other = sketch.decode(helper, sample)
    except DecodeError:
        return
    # Undetectable only in this way: another set within t of the sample with the same sketch.
    assert other.tolist() != sorted(enrolled)
    assert len(set(other.tolist()) ^ set(sample)) <= sketch.t
    assert sketch.encode(other) == helper


@PROPERTY_SETTINGS
@given(cases(beyond=False))
def test_helper_round_trip_and_symbols(case: tuple[PinSketch, list[int], list[int]]) -> None:
    sketch, enrolled, _ = case
    helper = sketch.encode(enrolled)
    assert load_sketch(helper) == sketch
    payload = sketch.payload(helper)
    assert len(payload) == sketch.t * ((sketch.m + 7) // 8)
    symbols, space = sketch.symbols(payload)
    assert space.kind == "xor" and space.bits == sketch.m
    assert sketch.with_symbols(helper, symbols) == helper
    assert np.all(symbols < (1 << sketch.m))


@PROPERTY_SETTINGS
@given(cases(beyond=False), st.data())
def test_corrupted_helper_is_rejected(case: tuple[PinSketch, list[int], list[int]], data: st.DataObject) -> None:
    sketch, enrolled, sample = case
    helper = bytearray(sketch.encode(enrolled))
    position = data.draw(st.integers(0, len(helper) - 1))
    helper[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(SketchFormatError):
        sketch.decode(bytes(helper), sample)


# -- exact failure semantics on a tiny field ----------------------------------------------------------------


def test_decode_error_exactly_when_no_set_within_t_has_the_sketch() -> None:
    """GF(2^8), t = 2: brute force over every set D of ≤ 2 elements (no BM, no root finding)."""
    sketch = PinSketch(8, 2)
    field = _gf2m.binary_field(8)
    elements = np.arange(1, 256, dtype=np.uint64)
    cubes = field.vmul(field.vsqr(elements), elements)
    rng = random.Random(8)
    failures = successes = 0
    for _ in range(150):
        enrolled = rng.sample(range(1, 256), 12)
        sample = _perturb(rng, 8, enrolled, rng.randint(3, 6))
        target = _gf2m.odd_power_sums(field, np.array(enrolled), 2) ^ _gf2m.odd_power_sums(field, np.array(sample), 2)
        s1, s3 = int(target[0]), int(target[1])
        singles = np.any((elements == s1) & (cubes == s3))
        pair_s1 = elements[:, None] ^ elements[None, :]
        pair_s3 = cubes[:, None] ^ cubes[None, :]
        pairs = np.any((pair_s1 == s1) & (pair_s3 == s3) & (elements[:, None] < elements[None, :]))
        exists = (s1 == 0 and s3 == 0) or bool(singles) or bool(pairs)
        helper = sketch.encode(enrolled)
        if exists:
            successes += 1
            other = sketch.decode(helper, sample)
            assert sketch.encode(other) == helper and len(set(other.tolist()) ^ set(sample)) <= 2
        else:
            failures += 1
            with pytest.raises(DecodeError):
                sketch.decode(helper, sample)
    # A far sample is detected with probability about 1 − (1 + 255 + C(255, 2)) / 2^16 ≈ 0.502
    # at t = 2 (≈ 1 − 1/t!): small t on a tiny field is weak, which is why the hash check exists.
    assert (failures, successes) == (75, 75)


# -- inputs ---------------------------------------------------------------------------------------------------


def test_sets_as_lists_numpy_arrays_and_any_order_give_one_helper() -> None:
    sketch = PinSketch(16, 4)
    reference = sketch.encode([5, 9, 65535])
    assert sketch.encode(np.array([65535, 5, 9], dtype=np.uint32)) == reference
    assert sketch.encode(np.array([9, 65535, 5], dtype=np.int64)) == reference
    assert sketch.encode((9, 5, 65535)) == reference
    assert sketch.secret_bytes([65535, 5, 9]) == bytes.fromhex("00050009ffff")
    assert PinSketch(24, 1).secret_bytes([1]) == bytes.fromhex("000001")


@pytest.mark.parametrize(
    "bad",
    [
        [0, 5],
        [5, 1 << 16],
        [-3],
        [5, 5],
        [1.5],
        "abc",
        [[1, 2], [3, 4]],
        [*list(range(1, 1 << 16)), 7],
    ],
)
def test_malformed_sets_are_sample_errors(bad: object) -> None:
    sketch = PinSketch(16, 2)
    with pytest.raises(SampleError):
        sketch.encode(bad)
    with pytest.raises(SampleError):
        sketch.decode(sketch.encode([1, 2]), bad)


def test_sets_larger_than_the_field_are_rejected() -> None:
    with pytest.raises(SampleError, match="more than the 255 allowed"):
        PinSketch(8, 1).encode(list(range(1, 257)))
    full = PinSketch(8, 1)
    assert full.decode(full.encode(range(1, 256)), range(2, 256)).tolist() == list(range(1, 256))


@pytest.mark.parametrize(("m", "t"), [(7, 1), (65, 1), (16, 0), (8, 128), (16, MAX_T + 1), (True, 2), (16, 2.0)])
def test_bad_parameters(m: object, t: object) -> None:
    with pytest.raises(ParameterError):
        PinSketch(m, t)  # type: ignore[arg-type]


def test_params_round_trip_and_strictness() -> None:
    sketch = PinSketch(20, 7)
    assert PinSketch.from_params(sketch.params()) == sketch
    with pytest.raises(ParameterError):
        PinSketch.from_params({"m": 20, "t": 7, "extra": 1})
    with pytest.raises(ParameterError):
        sketch.encode_with([1], randomness=b"x")
    assert sketch.encode_with([1], None) == sketch.encode([1])
    with pytest.raises(SketchFormatError):
        PinSketch(20, 8).decode(sketch.encode([1]), [1])  # other parameters


# -- payload strictness -------------------------------------------------------------------------------------------


def _helper_with_payload(sketch: PinSketch, payload: bytes) -> bytes:
    return pack_helper(sketch.scheme_id, sketch.params(), payload)


def test_payload_of_wrong_length_or_wider_than_m_bits_is_a_format_error() -> None:
    sketch = PinSketch(12, 3)
    with pytest.raises(SketchFormatError, match="must be 6 bytes"):
        sketch.decode(_helper_with_payload(sketch, bytes(5)), [1])
    with pytest.raises(SketchFormatError, match="wider than 12 bits"):
        sketch.decode(_helper_with_payload(sketch, bytes([0x10, 0, 0, 0, 0, 0])), [1])


def test_degenerate_parameters_report_exact_bits_and_reject_impossible_payloads() -> None:
    # m = 8, t = 9: s_17 lies in GF(2^4) (17·16 ≡ 17 mod 255), so |S| = 8·8 + 4 = 68 bits.
    sketch = PinSketch(8, 9)
    report = sketch.report()
    assert report.sketch_bits == 68.0 and report.loss_bound_bits == 68.0 and report.randomness_bits == 0.0
    good = sketch.payload(sketch.encode([3, 77, 200]))
    assert sketch.decode(_helper_with_payload(sketch, good), [3, 77]).tolist() == [3, 77, 200]
    field = _gf2m.binary_field(8)
    bad_value = next(v for v in range(1, 256) if field.pow(v, 16) != v)  # not in GF(16)
    bad = good[:8] + bytes([bad_value])
    with pytest.raises(SketchFormatError, match="subfield"):
        sketch.decode(_helper_with_payload(sketch, bad), [3])
    with pytest.raises(ParameterError):
        sketch.symbols(good)
    assert PinSketch(8, 40).report().sketch_bits < 40 * 8


def test_dependent_syndrome_relation_is_enforced() -> None:
    # m = 8: 3·2^7 = 384 ≡ 129 (mod 255), so s_129 = s_3^128 whenever t >= 65.
    sketch = PinSketch(8, 65)
    good = sketch.payload(sketch.encode([9, 10, 11]))
    assert sketch.decode(_helper_with_payload(sketch, good), [9, 10, 11]).tolist() == [9, 10, 11]
    bad = bytearray(good)
    bad[64] ^= 1  # s_129
    with pytest.raises(SketchFormatError, match="cyclotomic"):
        sketch.decode(_helper_with_payload(sketch, bytes(bad)), [9])


# -- accounting ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "t"), [(8, 1), (8, 8), (16, 16), (24, 5), (32, 64)])
def test_report_is_t_times_m_without_randomness(m: int, t: int) -> None:
    report = PinSketch(m, t).report()
    assert report.sketch_bits == t * m
    assert report.randomness_bits == 0.0
    assert report.loss_bound_bits == t * m


def test_exact_loss_on_tiny_secret_spaces() -> None:
    # t = 1: the sketch is s_1 = XOR of the set. Subsets of {1..15} of size <= 2: 121 secrets,
    # 16 sketch values, so the exact loss is log2(16) = 4 bits (bound: 8).
    small = [tuple(c) for k in range(3) for c in combinations(range(1, 16), k)]
    assert exact_sketch_loss(PinSketch(8, 1), small) == pytest.approx(4.0, abs=1e-12)
    # t = 2 on singletons: injective, so everything leaks: log2(255) bits (bound: 16).
    singles = [(a,) for a in range(1, 256)]
    assert exact_sketch_loss(PinSketch(8, 2), singles) == pytest.approx(math.log2(255), abs=1e-12)


# -- batches ----------------------------------------------------------------------------------------------------------


def test_encode_many_and_decode_many_match_single_calls() -> None:
    rng = random.Random(42)
    sketch = PinSketch(32, 6)
    sets = [rng.sample(range(1, 1 << 32), n) for n in (0, 1, 10, 40, 3)]
    helpers = sketch.encode_many(sets)
    assert helpers == [sketch.encode(s) for s in sets]
    samples = [_perturb(rng, 32, s, d) for s, d in zip(sets, (0, 6, 3, 20, 5), strict=False)]
    results = sketch.decode_many(helpers, samples, errors="return")
    assert [r.tolist() for r in results if not isinstance(r, DecodeError)] == [
        sorted(sets[0]),
        sorted(sets[1]),
        sorted(sets[2]),
        sorted(sets[4]),
    ]
    assert isinstance(results[3], DecodeError)
    assert sketch.encode_many([]) == [] and sketch.decode_many([], []) == []
    with pytest.raises(DecodeError):
        sketch.decode_many(helpers, samples)  # errors="raise" is the default
    with pytest.raises(ParameterError):
        sketch.decode_many(helpers, samples, errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        sketch.decode_many(helpers, samples[:2])
    with pytest.raises(SampleError):
        sketch.decode_many(helpers[:1], [[0]])


def test_decoding_never_imports_galois() -> None:
    """Cold start: a fresh process decodes with numpy/int arithmetic only (no galois, no numba)."""
    import subprocess
    import sys

    source = (
        "import sys\n"
        "from sketchauth.sketches.pinsketch import PinSketch\n"
        "for m in (16, 32):\n"
        "    s = PinSketch(m, 16); a = list(range(1, 41)); h = s.encode(a)\n"
        "    assert s.decode(h, a[8:] + list(range(100, 108))).tolist() == a\n"
        "assert 'galois' not in sys.modules and 'numba' not in sys.modules, sorted(sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", source], check=True, cwd=root, timeout=60)
