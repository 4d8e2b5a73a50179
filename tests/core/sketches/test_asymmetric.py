"""AsymmetricIntervalSketch (Fang's thesis §6.2): recovery, strict parsing, exact loss, symbols."""

from __future__ import annotations

import contextlib
import itertools
import math

import numpy as np
import pytest
from _helpers import all_asymmetric_secrets as _all_secrets
from _helpers import asymmetric_gap
from _helpers import priors as _priors
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.entropy import exact_joint, exact_sketch_loss
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch, s3_odd_gap
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_helper, pack_uints, parse_helper

SCHEMES = ("s1", "s2")
#: Every scheme: the tests that hold for all three (s3's own tests are in test_asymmetric_s3.py).
ALL_SCHEMES = ("s1", "s2", "s3")
#: The schemes that publish a partition into intervals.
PARTITIONS = ("s2", "s3")


@st.composite
def instances(draw: st.DrawFn, scheme: str, close: bool = True):
    """A sketch of ``scheme``, a secret (b, v) and a sample within (or beyond) the tolerance of every feature."""
    q_min = 2 if scheme == "s3" else 1  # s3 needs q >= 2
    n = draw(st.integers(2, 400))
    q = draw(st.integers(q_min, max(q_min, min(n, 24))))
    n = max(n, q)
    features = draw(st.integers(1, 4))
    b = draw(st.lists(st.integers(0, n - 1), min_size=features, max_size=features))
    v = draw(st.lists(st.integers(1, q), min_size=features, max_size=features))
    d = [x + draw(st.integers(-(t - 1), t - 1)) for x, t in zip(b, v, strict=False)]
    if not close:
        far = draw(st.integers(0, features - 1))
        d[far] = b[far] + draw(st.sampled_from((-1, 1))) * draw(st.integers(v[far], v[far] + 3 * q))
    return AsymmetricIntervalSketch(n, q, scheme=scheme, features=features), (b, v), d


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_recovers_b_and_v_exactly_within_tolerance(scheme: str, data: st.DataObject) -> None:
    sketch, (b, v), d = data.draw(instances(scheme))
    got_b, got_v = sketch.decode(sketch.encode((b, v)), d)
    assert got_b.dtype == np.int64 and got_v.dtype == np.int64
    assert got_b.tolist() == b and got_v.tolist() == v


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_beyond_tolerance_never_returns_the_secret(scheme: str, data: st.DataObject) -> None:
    sketch, (b, v), d = data.draw(instances(scheme, close=False))
    try:
        got_b, got_v = sketch.decode(sketch.encode((b, v)), d)
    except DecodeError:
        return
    if sketch.scheme in PARTITIONS and any(x == bf - vf for x, bf, vf in zip(d, b, v, strict=False)):
        # s2 (and s3) assign each point g_i to the interval on its right (Fang's thesis §6.2: the first
        # g_i > d'), so d' = b − v exactly also lands in (b − v, b + v) — documented in the module.
        return
    assert (got_b.tolist(), got_v.tolist()) != (b, v)


@pytest.mark.parametrize("scheme", PARTITIONS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_partition_has_the_secret_interval_and_valid_gaps(scheme: str, data: st.DataObject) -> None:
    sketch, (b, v), _ = data.draw(instances(scheme))
    n, q = sketch.n, sketch.q
    odd = s3_odd_gap(q) if scheme == "s3" else 0  # s3's one odd gap length; s2's gaps are all even
    for points, bf, vf in zip(sketch.partition(sketch.encode((b, v))), b, v, strict=False):
        gaps = np.diff(points)
        assert np.all((gaps % 2 == 0) | (gaps == odd)) and gaps.min() >= 2 and gaps.max() <= 2 * q
        assert -2 * q < points[0] <= 0 < points[1]
        assert points[-2] < n <= points[-1]
        i = int(np.flatnonzero(points == bf - vf)[0])
        assert points[i + 1] == bf + vf  # (b − v, b + v) is exactly one interval
        assert sketch.gaps_min <= gaps.size <= sketch.gaps_max


def test_decode_example_values() -> None:
    s1 = AsymmetricIntervalSketch(n=100, q=8, scheme="s1", features=2)
    helper = s1.encode(([40, 7], [3, 5]))
    assert s1.published_tolerances(helper).tolist() == [3, 5]
    # b = 40, v = 3: lattice 40 mod 5; d' = 43 is 3 away (beyond) and snaps to 45.
    assert s1.decode(helper, [43, 7])[0].tolist() == [45, 7]
    s2 = AsymmetricIntervalSketch(n=10, q=2, scheme="s2")
    # b=5, v=2: G = {3, 7}; left r = 1, 1 gives 1, −1; right r = 2 gives 11.
    helper = s2.encode_with(([5], [2]), (((1, 1), (2,)),))
    assert s2.partition(helper)[0].tolist() == [-1, 1, 3, 7, 11]
    decoded = {d: [x.tolist() for x in s2.decode(helper, [d])] for d in (-1, 0, 2, 3, 6, 8, 10)}
    assert decoded == {
        -1: [[0], [1]],
        0: [[0], [1]],
        2: [[2], [1]],
        3: [[5], [2]],
        6: [[5], [2]],
        8: [[9], [2]],
        10: [[9], [2]],
    }
    for outside in (-2, 11, 10**9, -(10**9)):
        with pytest.raises(DecodeError):
            s2.decode(helper, [outside])
    # b=1, v=1: right draws 1, 1, 1, 2 end with (8, 12), centred at 10 = n: no secret lives there.
    helper = s2.encode_with(([1], [1]), (((), (1, 1, 1, 2)),))
    assert s2.partition(helper)[0].tolist() == [0, 2, 4, 6, 8, 12]
    with pytest.raises(DecodeError):
        s2.decode(helper, [9])


# -- exact entropy loss on tiny parameters ------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(("n", "q", "features"), [(5, 2, 1), (6, 3, 1), (9, 3, 1), (8, 4, 1), (3, 2, 2)])
def test_exact_loss_within_reported_bound(scheme: str, n: int, q: int, features: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme, features=features)
    secrets = _all_secrets(n, q, features)
    bound = sketch.report().loss_bound_bits
    assert bound == pytest.approx(features * (1 + 2 * math.log2(q)), abs=1e-12)
    for prior in _priors(len(secrets)):
        assert exact_sketch_loss(sketch, secrets, prior) <= bound + 1e-9


def test_exact_loss_known_values() -> None:
    # s1, n=5, q=2, uniform over the 10 secrets: v=1 gives one helper (b mod 1 = 0), v=2 gives
    # three (b mod 3); P_succ = (1 + 3)/10, max prior 1/10, loss log2 4 = 2 bits.
    s1 = AsymmetricIntervalSketch(5, 2, scheme="s1")
    assert exact_sketch_loss(s1, _all_secrets(5, 2)) == pytest.approx(2.0, abs=1e-12)
    # s2, n=5, q=2, uniform: the exact enumeration gives P_succ = 6/10 (a regression value,
    # below the bound 1 + 2·log2 2 = 3 bits).
    s2 = AsymmetricIntervalSketch(5, 2, scheme="s2")
    assert exact_sketch_loss(s2, _all_secrets(5, 2)) == pytest.approx(math.log2(6), abs=1e-12)


@pytest.mark.parametrize(("n", "q"), [(5, 2), (7, 3), (4, 4)])
def test_randomness_space_is_a_distribution(n: int, q: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme="s2")
    for secret in _all_secrets(n, q):
        space = list(sketch.randomness_space(secret))
        assert sum(p for _, p in space) == pytest.approx(1.0, abs=1e-12)
        helpers = {sketch.encode_with(secret, r) for r, _ in space}
        assert len(helpers) == len(space)  # recoverable: distinct randomness, distinct helper


@pytest.mark.parametrize("scheme", PARTITIONS)
def test_fresh_randomness_matches_the_exact_distribution(scheme: str) -> None:
    # Chi-square of 6000 real encodings against the enumerated distribution (p-value ~1e-7 cut).
    sketch = AsymmetricIntervalSketch(9, 3, scheme=scheme)
    secret = ((4,), (1,))
    expected = {sketch.encode_with(secret, r): p for r, p in sketch.randomness_space(secret)}
    draws = 6000
    seen: dict[bytes, int] = {}
    for _ in range(draws):
        helper = sketch.encode(secret)
        seen[helper] = seen.get(helper, 0) + 1
    assert set(seen) <= set(expected)
    chi2 = sum((seen.get(h, 0) - draws * p) ** 2 / (draws * p) for h, p in expected.items())
    dof = len(expected) - 1
    assert chi2 < dof + 8 * math.sqrt(2 * dof) + 10


# -- strict parsing -----------------------------------------------------------------------------
def _helper(sketch: AsymmetricIntervalSketch, payload: bytes) -> bytes:
    return pack_helper(sketch.scheme_id, sketch.params(), payload)


def _s2_payload(sketch: AsymmetricIntervalSketch, features: list[tuple[int, list[int]]]) -> bytes:
    """Payload from (g_1, gaps) per feature, without any validation."""
    counts = [len(gaps) for _, gaps in features]
    symbols = [x for g1, gaps in features for x in [-g1] + [g // 2 - 1 for g in gaps]]
    return pack_uints(counts, sketch._count_width) + pack_uints(symbols, sketch._gap_width)


@pytest.mark.parametrize(
    ("scheme", "n", "q"),
    [("s2", n, q) for n, q in [(4, 2), (5, 2), (6, 3), (7, 1), (3, 3)]]
    + [("s3", n, q) for n, q in [(4, 2), (5, 2), (6, 3), (3, 3), (7, 2)]],
)
def test_parser_accepts_exactly_what_the_encoder_produces(scheme: str, n: int, q: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme)
    gap_codes = q + 1 if scheme == "s3" else q  # codes 0..q-1 are the gaps 2..2q; s3's code q its odd gap
    _, produced = exact_joint(sketch, _all_secrets(n, q))
    produced_payloads = {parse_helper(h).payload for h in produced}
    accepted = set()
    for count in range(1, n // 2 + 2):
        for g1 in range(0, -2 * q, -1):
            for codes in itertools.product(range(gap_codes), repeat=count):
                payload = pack_uints([count], sketch._count_width) + pack_uints([-g1, *codes], sketch._gap_width)
                try:
                    sketch.payload(_helper(sketch, payload))
                except SketchFormatError:
                    continue
                accepted.add(payload)
    assert accepted == produced_payloads


@pytest.mark.parametrize(
    ("features", "reason"),
    [
        ([(-4, [2, 2, 2, 2, 2])], "first point outside"),  # g_1 = −4 ≤ −2q for q = 2
        ([(0, [2, 6, 2])], "gap outside"),  # 6 > 2q
        ([(-2, [2, 2, 2, 2, 2])], "surplus point at or below 0"),  # g_2 = 0
        ([(0, [2, 2, 2, 2])], "do not cover"),  # g_k = 8 < n
        ([(0, [2, 2, 2, 2, 2, 2])], "do not cover"),  # g_{k−1} = 10 ≥ n
    ],
)
def test_s2_rejects_malformed_partitions(features, reason: str) -> None:
    sketch = AsymmetricIntervalSketch(10, 2, scheme="s2")
    with pytest.raises(SketchFormatError, match=reason):
        sketch.decode(_helper(sketch, _s2_payload(sketch, features)), [3])


def test_s2_rejects_partition_without_a_possible_secret_interval() -> None:
    sketch = AsymmetricIntervalSketch(3, 3, scheme="s2")
    # g = (−4, 2, 8): gaps 6, 6 are in range and cover [0, 3), but centres −1 and 5 are outside.
    with pytest.raises(SketchFormatError, match="no interval centred"):
        sketch.payload(_helper(sketch, _s2_payload(sketch, [(-4, [6, 6])])))


def test_s2_rejects_bad_counts_and_lengths() -> None:
    sketch = AsymmetricIntervalSketch(10, 2, scheme="s2", features=2)
    good = sketch.payload(sketch.encode(([5, 5], [2, 2])))
    for bad in (good[:-1], good + b"\x00", good[:1], b""):
        with pytest.raises(SketchFormatError):
            sketch.payload(_helper(sketch, bad))
    # gap count 7 > J_max = 6 for n = 10
    with pytest.raises(SketchFormatError, match="gap count"):
        sketch.payload(_helper(sketch, _s2_payload(sketch, [(0, [2] * 7), (0, [2] * 5)])))
    # gap count 2 < J_min = ⌈10/4⌉ = 3
    with pytest.raises(SketchFormatError, match="gap count"):
        sketch.payload(_helper(sketch, _s2_payload(sketch, [(0, [4, 4]), (0, [2] * 5)])))


def test_s1_rejects_out_of_range_values() -> None:
    sketch = AsymmetricIntervalSketch(10, 3, scheme="s1", features=1)
    ok = pack_uints([1], 1) + pack_uints([2], 1)  # v = 2, residue 2 < 3
    assert sketch.decode(_helper(sketch, ok), [5])[1].tolist() == [2]
    for payload, reason in (
        (pack_uints([3], 1) + pack_uints([0], 1), "tolerance outside"),  # v = 4 > q
        (pack_uints([1], 1) + pack_uints([3], 1), "residue out of range"),  # 3 ≥ 2v − 1
        (pack_uints([1], 1), "payload must be"),
    ):
        with pytest.raises(SketchFormatError, match=reason):
            sketch.decode(_helper(sketch, payload), [5])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SCHEMES), st.binary(max_size=40))
def test_random_payloads_parse_or_fail_cleanly(scheme: str, payload: bytes) -> None:
    sketch = AsymmetricIntervalSketch(12, 3, scheme=scheme, features=2)
    try:
        b, v = sketch.decode(_helper(sketch, payload), [4, 7])
    except (SketchFormatError, DecodeError):
        return
    assert np.all((b >= 0) & (b < 12)) and np.all((v >= 1) & (v <= 3))


def test_helper_for_other_parameters_is_rejected() -> None:
    helper = AsymmetricIntervalSketch(100, 8, scheme="s2").encode(([5], [2]))
    with pytest.raises(SketchFormatError):
        AsymmetricIntervalSketch(100, 8, scheme="s1").decode(helper, [5])
    assert load_sketch(helper) == AsymmetricIntervalSketch(100, 8, scheme="s2")


# -- accounting -----------------------------------------------------------------------------------
def test_report_numbers() -> None:
    s1 = AsymmetricIntervalSketch(1000, 16, scheme="s1", features=3).report()
    assert (s1.sketch_bits, s1.randomness_bits, s1.loss_bound_bits) == (27.0, 0.0, 27.0)
    assert s1.extra["exact_sketch_bits"] == pytest.approx(3 * math.log2(256))
    s2 = AsymmetricIntervalSketch(1000, 16, scheme="s2", features=3).report()
    # J_max = 501: |S| = 3·(1 + 4 + 501·4) = 6027, H∞(R) = 3·500·4 = 6000.
    assert (s2.sketch_bits, s2.randomness_bits, s2.loss_bound_bits) == (6027.0, 6000.0, 27.0)
    assert (s2.extra["gaps_min"], s2.extra["gaps_max"]) == (32, 501)
    assert s2.extra["sketch_bits_at_gaps_min"] - s2.extra["randomness_bits_at_gaps_min"] == 27.0
    assert AsymmetricIntervalSketch(7, 1, scheme="s2").report().loss_bound_bits == 1.0


# -- symbols (format-preserving mixing) -------------------------------------------------------------
@pytest.mark.parametrize("scheme", ALL_SCHEMES)
@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(0, 2**32))
def test_every_symbol_vector_is_a_valid_sketch(scheme: str, data: st.DataObject, seed: int) -> None:
    sketch, secret, _ = data.draw(instances(scheme))
    helper = sketch.encode(secret)
    symbols, space = sketch.symbols(sketch.payload(helper))
    assert space.kind == "mod" and symbols.shape == space.moduli.shape
    assert np.all(symbols < space.moduli)
    # The number of symbols depends on the encoder's fresh randomness, so the pad comes from a
    # seeded generator rather than from further hypothesis draws.
    pad = np.random.default_rng(seed).integers(0, space.moduli.astype(np.int64)).astype(np.uint64)
    mixed = sketch.with_symbols(helper, (symbols + pad) % space.moduli)
    sketch.payload(mixed)  # parses strictly
    again, again_space = sketch.symbols(sketch.payload(mixed))
    assert np.array_equal(again, (symbols + pad) % space.moduli)
    assert np.array_equal(again_space.moduli, space.moduli)
    restored = sketch.with_symbols(mixed, symbols)
    assert restored == helper
    if sketch.scheme == "s1":
        assert np.array_equal(sketch.published_tolerances(mixed), np.array(secret[1]))
    else:
        for before, after in zip(sketch.partition(helper), sketch.partition(mixed), strict=False):
            # Only interior points move: g_1, g_2, g_{k−1}, g_k stay put.
            assert before.size == after.size
            assert before[[0, 1, -2, -1]].tolist() == after[[0, 1, -2, -1]].tolist()
            if sketch.scheme == "s3":
                # The parity pattern of the gaps is public and never changes.
                assert np.array_equal(np.diff(before) % 2, np.diff(after) % 2)
    if sketch.scheme == "s3":
        assert sketch.pad_group_bits() == 0.0


def test_s2_symbol_example() -> None:
    sketch = AsymmetricIntervalSketch(20, 2, scheme="s2")
    # Partition (−1, 1, 5, 9, 11, 13, 17, 21): gaps 2 4 4 2 2 4 4; movable pairs are gaps
    # (1, 2) = (4, 4) and (3, 4) = (2, 2): sums 8 and 4, first gap in [4, 4] and [2, 2].
    payload = _s2_payload(sketch, [(-1, [2, 4, 4, 2, 2, 4, 4])])
    symbols, space = sketch.symbols(payload)
    assert symbols.tolist() == [0, 0] and space.moduli.tolist() == [1, 1]
    sketch6 = AsymmetricIntervalSketch(20, 3, scheme="s2")
    payload = _s2_payload(sketch6, [(-1, [2, 2, 6, 2, 2, 4, 6])])  # (2, 6): sum 8, a ∈ [2, 6]
    symbols, space = sketch6.symbols(payload)
    assert symbols.tolist() == [0, 0] and space.moduli.tolist() == [3, 1]
    moved = sketch6._with_symbols(payload, np.array([2, 0], dtype=np.uint64))
    assert moved == _s2_payload(sketch6, [(-1, [2, 6, 2, 2, 2, 4, 6])])


# -- parameters and secrets --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": 1, "q": 1},
        {"n": 10, "q": 0},
        {"n": 10, "q": 11},
        {"n": 10, "q": 2, "scheme": "s4"},
        {"n": 10, "q": 1, "scheme": "s3"},  # s3 needs an odd gap length in [2, 2q]
        {"n": 10, "q": 2, "features": 0},
        {"n": 10, "q": 2, "step": 0.0},
        {"n": 10, "q": True},
        {"n": 2**30, "q": 1, "scheme": "s2", "features": 8},  # worst-case helper too large
    ],
)
def test_bad_parameters(kwargs) -> None:
    with pytest.raises(ParameterError):
        AsymmetricIntervalSketch(**kwargs)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "secret",
    [([10], [2]), ([-1], [2]), ([3], [0]), ([3], [5]), ([3, 4], [1, 1]), 5, ([1.5], [2]), ([3], [2], [1])],
)
def test_bad_secrets(scheme: str, secret) -> None:
    sketch = AsymmetricIntervalSketch(10, 4, scheme=scheme)
    with pytest.raises(SampleError):
        sketch.encode(secret)


def test_bad_randomness_and_samples() -> None:
    sketch = AsymmetricIntervalSketch(10, 2, scheme="s2")
    for randomness in (None, ((), ()), (((1,), (2,)),), (((1, 1, 1), (2,)),), (((1, 1), (3,)),)):
        with pytest.raises(ParameterError):
            sketch.encode_with(([5], [2]), randomness)
    helper = sketch.encode(([5], [2]))
    for sample in ([np.nan], [1.5], [1, 2], "x"):
        with pytest.raises(SampleError):
            sketch.decode(helper, sample)


def test_step_quantises_samples_and_secret_bytes_are_canonical() -> None:
    sketch = AsymmetricIntervalSketch(100, 8, scheme="s2", step=0.5)
    helper = sketch.encode(([40], [3]))
    # 20.6 / 0.5 = 41.2 → 41, within the tolerance of 40; 21.6 → 43 is not.
    assert sketch.decode(helper, [20.6])[0].tolist() == [40]
    with contextlib.suppress(DecodeError):
        assert sketch.decode(helper, [21.6])[0].tolist() != [40]
    assert sketch.secret_bytes(([40], [3])) == sketch.secret_bytes(np.array([[40], [3]]))
    assert sketch.secret_bytes(([40], [3])) != sketch.secret_bytes(([40], [4]))


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
def test_enrol_and_verify(scheme: str) -> None:
    sketch = AsymmetricIntervalSketch(256, 8, scheme=scheme, features=4)
    ph = hasher("test")
    record = enrol(sketch, ([100, 30, 200, 7], [3, 8, 1, 5]), password_hasher=ph)
    assert verify(sketch, record, [102, 23, 200, 3], password_hasher=ph)
    assert not verify(sketch, record, [103, 23, 200, 3], password_hasher=ph)
    assert load_sketch(record.helper) == sketch


def test_matrix_randomness_round_trips_and_is_checked() -> None:
    from sketchauth.sketches.asymmetric import S2Draws, secure_uniform

    sketch = AsymmetricIntervalSketch(50, 4, scheme="s2", features=3)
    secret = ([0, 20, 49], [1, 4, 2])
    drawn = sketch.draw_randomness(secret)
    assert isinstance(drawn, S2Draws)
    tuples = drawn.as_tuples()
    assert sketch.encode_with(secret, drawn) == sketch.encode_with(secret, tuples)
    again = S2Draws.from_tuples(tuples, 3)
    assert again.as_tuples() == tuples
    bad = S2Draws(draws=drawn.draws.copy(), left=drawn.left, used=drawn.used)
    bad.draws[1, 0] = 5  # r = 5 > q
    with pytest.raises(ParameterError):
        sketch.encode_with(secret, bad)
    with pytest.raises(ParameterError):
        sketch.encode_with(secret, S2Draws(draws=drawn.draws, left=drawn.left + 1, used=drawn.used))
    with pytest.raises(ParameterError):
        sketch.encode_with(secret, ((((1.0,), ()),) * 3))
    values = secure_uniform(3, (200, 50))
    assert values.shape == (200, 50) and values.min() == 1 and values.max() == 3
    counts = np.bincount(values.ravel(), minlength=4)[1:]
    assert np.all(np.abs(counts - 10000 / 3) < 6 * math.sqrt(10000 * 2 / 9))


def _spec_partition(b: int, v: int, n: int, q: int, left: tuple[int, ...], right: tuple[int, ...]) -> list[int]:
    """Fang's thesis §6.2 steps 1–4, literally, consuming the given draws (the readable reference).

    With s3's gap rule (``asymmetric_gap``), which is s2's for the draws s2 makes.
    """
    points = {b - v, b + v}
    draws = iter(left)
    while min(points) > 0:
        points.add(min(points) - asymmetric_gap(next(draws), q))
    draws = iter(right)
    while max(points) < n:
        points.add(max(points) + asymmetric_gap(next(draws), q))
    return sorted(points)


@pytest.mark.parametrize("scheme", PARTITIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_encoder_follows_the_spec_steps(scheme: str, data: st.DataObject) -> None:
    sketch, (b, v), _ = data.draw(instances(scheme))
    randomness = sketch.draw_randomness((b, v)).as_tuples()
    helper = sketch.encode_with((b, v), randomness)
    for f, points in enumerate(sketch.partition(helper)):
        left, right = randomness[f]
        assert points.tolist() == _spec_partition(b[f], v[f], sketch.n, sketch.q, left, right)


def test_ragged_captures_are_a_sample_error() -> None:
    """Captures of different lengths (a JSON body can carry them) are refused by name, not by numpy."""
    sketch = AsymmetricIntervalSketch(256, 8, scheme="s2", features=3)
    with pytest.raises(SampleError, match="every capture"):
        sketch.template([[1, 2, 3], [1, 2], [4, 5, 6, 7]])
    with pytest.raises(SampleError, match="every capture"):
        sketch.template([[1, 2, 3], 7])
    b, v = sketch.template(iter([iter([10, 20, 30]), iter([12, 21, 33])]))
    assert len(b) == len(v) == 3  # generators of generators are captures too
