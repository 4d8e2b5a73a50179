"""The s3 asymmetric interval sketch: s2 with the boundary parity hidden.

Exact accounting by enumeration on tiny instances (Fractions where the arithmetic is exact),
round trips through decoys and a PIN cascade, strict parsing (the parser accepts exactly what the
encoder produces), format-preserving mixing, and the parity bit that s2 leaks and s3 must not.
What s3 shares with s1 and s2 (recovery within the tolerance, the partition and its reference
steps, enrol/verify, fresh randomness, every symbol vector a valid sketch) is tested for all
three schemes in ``test_asymmetric.py``.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from _helpers import all_asymmetric_secrets as _all_secrets
from _helpers import priors as _priors
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import exact_sketch_loss
from sketchauth.errors import DecodeError, MixingWarning, ParameterError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch, s3_odd_gap
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_helper, pack_uints, parse_helper


# -- round trips ----------------------------------------------------------------------------------
def test_decode_in_an_odd_decoy_is_a_decode_error() -> None:
    sketch = AsymmetricIntervalSketch(20, 2, scheme="s3")
    # (b, v) = (10, 2): interval (8, 12); left draws 3 (odd gap 3), 1, 2 -> 5, 3, -1; right 3, 3, 1.
    helper = sketch.encode_with(((10,), (2,)), (((3, 1, 2), (3, 3, 1)),))
    assert sketch.partition(helper)[0].tolist() == [-1, 3, 5, 8, 12, 15, 18, 20]
    assert [x.tolist() for x in sketch.decode(helper, [9])] == [[10], [2]]
    with pytest.raises(DecodeError, match="decoy"):
        sketch.decode(helper, [6])  # (5, 8): odd, never the secret interval
    assert [x.tolist() for x in sketch.decode(helper, [4])] == [[4], [1]]  # an even decoy


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


# -- strict parsing (test_asymmetric.py checks the parser accepts exactly the encoder's output) -----
def _payload(sketch: AsymmetricIntervalSketch, features: list[tuple[int, list[int]]]) -> bytes:
    """Payload from (g_1, gaps) per feature, without validation (odd gap -> code q)."""
    counts = [len(gaps) for _, gaps in features]
    codes = [x for g1, gaps in features for x in [-g1] + [sketch.q if g % 2 else g // 2 - 1 for g in gaps]]
    return pack_uints(counts, sketch._count_width) + pack_uints(codes, sketch._gap_width)


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
def test_symbol_example() -> None:
    sketch = AsymmetricIntervalSketch(30, 3, scheme="s3")
    # Gaps 2 | 2 6 | 3 4 | 4 2 | 6 3 (odd gap 3): movable pairs (2, 6) sum 8 -> a in {2, 4, 6};
    # (3, 4) holds the odd gap: fixed; (4, 2) sum 6 -> a in {2, 4}; the last gap never moves.
    payload = _payload(sketch, [(-1, [2, 2, 6, 3, 4, 4, 2, 6, 3])])
    symbols, space = sketch.symbols(payload)
    assert symbols.tolist() == [0, 1] and space.moduli.tolist() == [3, 2]
    moved = sketch._with_symbols(payload, np.array([2, 0], dtype=np.uint64))
    assert moved == _payload(sketch, [(-1, [2, 6, 2, 3, 4, 2, 4, 6, 3])])
