"""The s3 asymmetric interval sketch: s2 with the boundary parity hidden.

Exact accounting by enumeration on tiny instances (Fractions where the arithmetic is exact),
round trips through encode/decode, enrol/verify and a PIN cascade, strict parsing (the parser
accepts exactly what the encoder produces), format-preserving mixing, and the parity bit that
s2 leaks and s3 must not.
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.entropy import exact_joint, exact_sketch_loss
from sketchauth.errors import DecodeError, MixingWarning, ParameterError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch, s3_odd_gap
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_helper, pack_uints, parse_helper

TEST_HASH = hasher("test")


def _all_secrets(n: int, q: int, features: int = 1) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    per = [(b, v) for b in range(n) for v in range(1, q + 1)]
    return [tuple(map(tuple, zip(*combo, strict=False))) for combo in itertools.product(per, repeat=features)]  # type: ignore[misc]


def _gap(r: int, q: int) -> int:
    """The gap of draw r: 2r for r <= q, the odd length for r = q + 1 (the readable reference)."""
    return 2 * r if r <= q else s3_odd_gap(q)


def _reference_partition(b: int, v: int, n: int, q: int, left: tuple[int, ...], right: tuple[int, ...]) -> list[int]:
    """s2's steps 1-4 with s3's gap rule, literally: G = {b - v, b + v}, then decoys outwards."""
    points = {b - v, b + v}
    draws = iter(left)
    while min(points) > 0:
        points.add(min(points) - _gap(next(draws), q))
    draws = iter(right)
    while max(points) < n:
        points.add(max(points) + _gap(next(draws), q))
    return sorted(points)


@st.composite
def instances(draw: st.DrawFn, close: bool = True):
    """An s3 sketch, a secret (b, v) and a sample within (or beyond) the tolerance of every feature."""
    n = draw(st.integers(2, 400))
    q = draw(st.integers(2, max(2, min(n, 24))))
    n = max(n, q)
    features = draw(st.integers(1, 4))
    b = draw(st.lists(st.integers(0, n - 1), min_size=features, max_size=features))
    v = draw(st.lists(st.integers(1, q), min_size=features, max_size=features))
    d = [x + draw(st.integers(-(t - 1), t - 1)) for x, t in zip(b, v, strict=False)]
    if not close:
        far = draw(st.integers(0, features - 1))
        d[far] = b[far] + draw(st.sampled_from((-1, 1))) * draw(st.integers(v[far], v[far] + 3 * q))
    return AsymmetricIntervalSketch(n, q, scheme="s3", features=features), (b, v), d


# -- round trips ----------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(instances())
def test_recovers_b_and_v_exactly_within_tolerance(case) -> None:
    sketch, (b, v), d = case
    got_b, got_v = sketch.decode(sketch.encode((b, v)), d)
    assert got_b.tolist() == b and got_v.tolist() == v


@settings(max_examples=100, deadline=None)
@given(instances(close=False))
def test_beyond_tolerance_never_returns_the_secret(case) -> None:
    sketch, (b, v), d = case
    try:
        got_b, got_v = sketch.decode(sketch.encode((b, v)), d)
    except DecodeError:
        return
    if any(x == bf - vf for x, bf, vf in zip(d, b, v, strict=False)):
        return  # d' = b − v belongs to the interval on its right, as in s2 (module doc)
    assert (got_b.tolist(), got_v.tolist()) != (b, v)


@settings(max_examples=80, deadline=None)
@given(instances())
def test_partition_has_the_secret_interval_and_gaps_in_range(case) -> None:
    sketch, (b, v), _ = case
    n, q, odd = sketch.n, sketch.q, s3_odd_gap(sketch.q)
    for points, bf, vf in zip(sketch.partition(sketch.encode((b, v))), b, v, strict=False):
        gaps = np.diff(points)
        assert np.all((gaps % 2 == 0) | (gaps == odd)) and gaps.min() >= 2 and gaps.max() <= 2 * q
        assert -2 * q < points[0] <= 0 < points[1] and points[-2] < n <= points[-1]
        i = int(np.flatnonzero(points == bf - vf)[0])
        assert points[i + 1] == bf + vf
        assert sketch.gaps_min <= gaps.size <= sketch.gaps_max


@settings(max_examples=60, deadline=None)
@given(instances())
def test_encoder_follows_the_reference_steps(case) -> None:
    sketch, (b, v), _ = case
    randomness = sketch.draw_randomness((b, v)).as_tuples()
    helper = sketch.encode_with((b, v), randomness)
    for f, points in enumerate(sketch.partition(helper)):
        left, right = randomness[f]
        assert points.tolist() == _reference_partition(b[f], v[f], sketch.n, sketch.q, left, right)


def test_decode_in_an_odd_decoy_is_a_decode_error() -> None:
    sketch = AsymmetricIntervalSketch(20, 2, scheme="s3")
    # (b, v) = (10, 2): interval (8, 12); left draws 3 (odd gap 3), 1, 2 -> 5, 3, -1; right 3, 3, 1.
    helper = sketch.encode_with(((10,), (2,)), (((3, 1, 2), (3, 3, 1)),))
    assert sketch.partition(helper)[0].tolist() == [-1, 3, 5, 8, 12, 15, 18, 20]
    assert [x.tolist() for x in sketch.decode(helper, [9])] == [[10], [2]]
    with pytest.raises(DecodeError, match="decoy"):
        sketch.decode(helper, [6])  # (5, 8): odd, never the secret interval
    assert [x.tolist() for x in sketch.decode(helper, [4])] == [[4], [1]]  # an even decoy


def test_enrol_and_verify() -> None:
    sketch = AsymmetricIntervalSketch(256, 8, scheme="s3", features=4)
    record = enrol(sketch, ([100, 30, 200, 7], [3, 8, 1, 5]), password_hasher=TEST_HASH)
    assert verify(sketch, record, [102, 23, 200, 3], password_hasher=TEST_HASH)
    assert not verify(sketch, record, [103, 23, 200, 3], password_hasher=TEST_HASH)
    assert load_sketch(record.helper) == sketch


INNER = AsymmetricIntervalSketch(200, 6, scheme="s3", features=3)


def _cascade() -> Cascade:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixingWarning)
        return Cascade(INNER, pin=ExactKey("test"))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 199), min_size=3, max_size=3),
    st.lists(st.integers(1, 6), min_size=3, max_size=3),
    st.data(),
)
def test_pin_cascade_round_trip(b: list[int], v: list[int], data: st.DataObject) -> None:
    cascade = _cascade()
    sample = [x + data.draw(st.integers(-(t - 1), t - 1)) for x, t in zip(b, v, strict=False)]
    helper = cascade.encode([(b, v), "123456"])
    got = cascade.decode(helper, [sample, "123456"])
    assert [x.tolist() for x in got[0]] == [b, v] and got[1] == "123456"
    assert load_sketch(helper) == cascade
    # The stored Q is itself a valid s3 helper payload, whatever PIN mixed it.
    record = parse_helper(helper)
    stored = record.payload[4 : 4 + int.from_bytes(record.payload[:4], "big")]
    INNER.payload(stored)


def test_wrong_pin_does_not_return_the_secret() -> None:
    cascade = _cascade()
    secret = ([50, 100, 150], [3, 4, 5])
    helper = cascade.encode([secret, "123456"])
    try:
        got = cascade.decode(helper, [secret[0], "654321"])
    except DecodeError:
        return
    assert [x.tolist() for x in got[0]] != [list(secret[0]), list(secret[1])] or got[1] != "123456"


# -- exact accounting -----------------------------------------------------------------------------
def _priors(count: int) -> list[np.ndarray | None]:
    rng = np.random.default_rng(7)
    geometric = 0.5 ** np.arange(count)
    spiky = np.ones(count)
    spiky[count // 3] = count
    return [None, geometric / geometric.sum(), spiky / spiky.sum(), rng.dirichlet(np.full(count, 0.3))]


@pytest.mark.parametrize(
    ("n", "q", "features"), [(5, 2, 1), (6, 3, 1), (9, 3, 1), (8, 4, 1), (3, 2, 2), (7, 2, 1), (10, 3, 1)]
)
def test_exact_loss_within_reported_bound(n: int, q: int, features: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme="s3", features=features)
    bound = sketch.report().loss_bound_bits
    assert bound == pytest.approx(features * (1 + math.log2(q) + math.log2(q + 1)), abs=1e-12)
    s2_bound = AsymmetricIntervalSketch(n, q, scheme="s2", features=features).report().loss_bound_bits
    assert 0 < bound - s2_bound <= features * math.log2(1.5) + 1e-12  # within 1 bit per feature of s2
    secrets = _all_secrets(n, q, features)
    for prior in _priors(len(secrets)):
        assert exact_sketch_loss(sketch, secrets, prior) <= bound + 1e-9


def _exact_success(sketch: AsymmetricIntervalSketch, secrets: list) -> Fraction:
    """Σ_s max_d Pr[d] Pr[S = s | d] for a uniform prior, in exact rationals."""
    best: dict[bytes, Fraction] = {}
    prior = Fraction(1, len(secrets))
    for secret in secrets:
        for r, _ in sketch.randomness_space(secret):
            draws = sum(len(x) + len(y) for x, y in r)
            p = prior * Fraction(1, sketch.q + 1) ** draws
            h = sketch.encode_with(secret, r)
            best[h] = max(best.get(h, Fraction(0)), p)
    return sum(best.values(), Fraction(0))


@pytest.mark.parametrize(("n", "q"), [(5, 2), (6, 3), (7, 2)])
def test_exact_loss_in_rationals_matches_the_float_enumeration(n: int, q: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme="s3")
    secrets = _all_secrets(n, q)
    success = _exact_success(sketch, secrets)
    # loss = log2(P_succ / max prior) = log2(|secrets| · P_succ) ≤ log2(2q(q + 1)).
    ratio = success * len(secrets)
    assert ratio <= 2 * q * (q + 1)
    assert exact_sketch_loss(sketch, secrets) == pytest.approx(math.log2(ratio), abs=1e-12)


def test_exact_loss_known_value() -> None:
    # n = 5, q = 2, uniform over the 10 secrets: P_succ = 11/15 exactly (regression value of the
    # enumeration; below the bound 2q(q + 1) = 12 on |secrets|·P_succ).
    sketch = AsymmetricIntervalSketch(5, 2, scheme="s3")
    assert _exact_success(sketch, _all_secrets(5, 2)) == Fraction(11, 15)


@pytest.mark.parametrize(("n", "q"), [(5, 2), (7, 3), (4, 4)])
def test_randomness_space_is_a_distribution_and_recoverable(n: int, q: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme="s3")
    for secret in _all_secrets(n, q):
        space = list(sketch.randomness_space(secret))
        total = sum(Fraction(1, q + 1) ** sum(len(x) + len(y) for x, y in r) for r, _ in space)
        assert total == 1
        helpers = {sketch.encode_with(secret, r) for r, _ in space}
        assert len(helpers) == len(space)  # recoverable: distinct randomness, distinct helper


def test_fresh_randomness_matches_the_exact_distribution() -> None:
    sketch = AsymmetricIntervalSketch(9, 3, scheme="s3")
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


def test_report_numbers() -> None:
    report = AsymmetricIntervalSketch(1000, 16, scheme="s3", features=3).report()
    log17 = math.log2(17)
    # J_max = 501: |S| = 3·(1 + 4 + 501·log2 17), H∞(R) = 3·500·log2 17.
    assert report.sketch_bits == pytest.approx(3 * (5 + 501 * log17), abs=1e-9)
    assert report.randomness_bits == pytest.approx(3 * 500 * log17, abs=1e-9)
    assert report.loss_bound_bits == pytest.approx(3 * (5 + log17), abs=1e-9)
    assert report.extra["odd_gap"] == 17 and report.extra["scheme"] == "s3"
    assert report.extra["loss_bound_excess_over_s2_bits_per_feature"] == pytest.approx(math.log2(17 / 16))
    assert [s3_odd_gap(q) for q in (2, 3, 4, 5, 16)] == [3, 3, 5, 5, 17]


# -- the parity s2 leaks ------------------------------------------------------------------------------
def _parity_agreement(scheme: str, n: int, q: int, secret) -> Fraction:
    """Exact Pr[g_1 ≡ b − v (mod 2)] over the encoder's randomness."""
    sketch = AsymmetricIntervalSketch(n, q, scheme=scheme)
    k = q + 1 if scheme == "s3" else q
    b, v = secret[0][0], secret[1][0]
    total = Fraction(0)
    for r, _ in sketch.randomness_space(secret):
        g1 = int(sketch.partition(sketch.encode_with(secret, r))[0][0])
        if (g1 - (b - v)) % 2 == 0:
            total += Fraction(1, k) ** sum(len(x) + len(y) for x, y in r)
    return total


def test_first_point_parity_follows_b_minus_v_in_s2_only() -> None:
    secret = ((12,), (1,))
    assert _parity_agreement("s2", 16, 3, secret) == 1
    s3 = _parity_agreement("s3", 16, 3, secret)
    assert Fraction(1, 3) < s3 < Fraction(2, 3)


# -- strict parsing -------------------------------------------------------------------------------
def _payload(sketch: AsymmetricIntervalSketch, features: list[tuple[int, list[int]]]) -> bytes:
    """Payload from (g_1, gaps) per feature, without validation (odd gap -> code q)."""
    counts = [len(gaps) for _, gaps in features]
    codes = [x for g1, gaps in features for x in [-g1] + [sketch.q if g % 2 else g // 2 - 1 for g in gaps]]
    return pack_uints(counts, sketch._count_width) + pack_uints(codes, sketch._gap_width)


@pytest.mark.parametrize(("n", "q"), [(4, 2), (5, 2), (6, 3), (3, 3), (7, 2)])
def test_parser_accepts_exactly_what_the_encoder_produces(n: int, q: int) -> None:
    sketch = AsymmetricIntervalSketch(n, q, scheme="s3")
    _, produced = exact_joint(sketch, _all_secrets(n, q))
    produced_payloads = {parse_helper(h).payload for h in produced}
    accepted = set()
    for count in range(1, n // 2 + 2):
        for g1 in range(0, -2 * q, -1):
            for codes in itertools.product(range(q + 1), repeat=count):
                payload = pack_uints([count], sketch._count_width) + pack_uints([-g1, *codes], sketch._gap_width)
                try:
                    sketch.payload(pack_helper(sketch.scheme_id, sketch.params(), payload))
                except SketchFormatError:
                    continue
                accepted.add(payload)
    assert accepted == produced_payloads


@pytest.mark.parametrize(
    ("features", "reason"),
    [
        ([(-4, [3, 3, 3, 3])], "first point outside"),  # g_1 = −4 ≤ −2q for q = 2
        ([(-3, [3, 2, 2, 2, 2])], "surplus point at or below 0"),  # g_2 = 0
        ([(-1, [3, 3, 3, 3])], "of even length"),  # covers [0, 10), every interval odd
    ],
)
def test_rejects_malformed_partitions(features, reason: str) -> None:
    sketch = AsymmetricIntervalSketch(10, 2, scheme="s3")
    helper = pack_helper(sketch.scheme_id, sketch.params(), _payload(sketch, features))
    with pytest.raises(SketchFormatError, match=reason):
        sketch.decode(helper, [3])


def test_rejects_gap_codes_beyond_the_odd_length() -> None:
    sketch = AsymmetricIntervalSketch(10, 2, scheme="s3")
    # Codes 0, 1 are the gaps 2, 4 and code 2 = q the odd 3; code 3 is no gap at all.
    payload = pack_uints([4], sketch._count_width) + pack_uints([0, 0, 3, 1, 0], sketch._gap_width)
    with pytest.raises(SketchFormatError, match="gap outside the even values of \\[2, 4\\] and 3"):
        sketch.payload(pack_helper(sketch.scheme_id, sketch.params(), payload))


def test_s2_helper_is_not_an_s3_helper() -> None:
    helper = AsymmetricIntervalSketch(100, 8, scheme="s2").encode(([5], [2]))
    with pytest.raises(SketchFormatError):
        AsymmetricIntervalSketch(100, 8, scheme="s3").decode(helper, [5])
    assert load_sketch(AsymmetricIntervalSketch(100, 8, scheme="s3").encode(([5], [2]))).params()["scheme"] == "s3"


def test_q_one_is_refused() -> None:
    with pytest.raises(ParameterError, match="s3 needs q >= 2"):
        AsymmetricIntervalSketch(10, 1, scheme="s3")


# -- mixing ---------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(instances(), st.integers(0, 2**32))
def test_every_symbol_vector_is_a_valid_sketch(case, seed: int) -> None:
    sketch, secret, _ = case
    helper = sketch.encode(secret)
    symbols, space = sketch.symbols(sketch.payload(helper))
    assert np.all(symbols < space.moduli)
    pad = np.random.default_rng(seed).integers(0, space.moduli.astype(np.int64)).astype(np.uint64)
    mixed = sketch.with_symbols(helper, (symbols + pad) % space.moduli)
    sketch.payload(mixed)
    again, again_space = sketch.symbols(sketch.payload(mixed))
    assert np.array_equal(again, (symbols + pad) % space.moduli)
    assert np.array_equal(again_space.moduli, space.moduli)
    assert sketch.with_symbols(mixed, symbols) == helper
    for before, after in zip(sketch.partition(helper), sketch.partition(mixed), strict=False):
        # The parity pattern of the gaps is public and never changes; the ends stay put.
        assert np.array_equal(np.diff(before) % 2, np.diff(after) % 2)
        assert before[[0, 1, -2, -1]].tolist() == after[[0, 1, -2, -1]].tolist()
    assert sketch.pad_group_bits() == 0.0


def test_symbol_example() -> None:
    sketch = AsymmetricIntervalSketch(30, 3, scheme="s3")
    # Gaps 2 | 2 6 | 3 4 | 4 2 | 6 3 (odd gap 3): movable pairs (2, 6) sum 8 -> a in {2, 4, 6};
    # (3, 4) holds the odd gap: fixed; (4, 2) sum 6 -> a in {2, 4}; the last gap never moves.
    payload = _payload(sketch, [(-1, [2, 2, 6, 3, 4, 4, 2, 6, 3])])
    symbols, space = sketch.symbols(payload)
    assert symbols.tolist() == [0, 1] and space.moduli.tolist() == [3, 2]
    moved = sketch._with_symbols(payload, np.array([2, 0], dtype=np.uint64))
    assert moved == _payload(sketch, [(-1, [2, 6, 2, 3, 4, 2, 4, 6, 3])])
