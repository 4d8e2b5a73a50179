"""FuzzyVault (Juels–Sudan) and the vault estimates: exact recovery iff |d' \\ d| <= t, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import exact_sketch_loss
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.vault import (
    FuzzyVault,
    VaultRandomness,
    _chaff,
    _offsets_from_chaff,
    candidate_fraction,
    log2_spurious_polynomials,
    log2_weighted_spurious_polynomials,
    spurious_polynomials,
    weighted_spurious_polynomials,
)

# Hand-computed: F = 2 + 5x + x^2 over F_13 takes 2, 8, 3, 0, 12, 0, 3, 8, 2, 11, 9, 9, 11 at
# x = 0..12. Secret {1, 4, 6, 9, 11} carries F; the non-members 0, 2, 3, 5, 7, 8, 10, 12 get
# offsets 5, 0, 0, 11, 8, 1, 9, 3, i.e. chaff u (if u < F(i)) or u + 1.
KAT_SECRET = [1, 4, 6, 9, 11]
KAT_RANDOMNESS = VaultRandomness(np.array([2, 5, 1]), np.array([5, 0, 0, 11, 8, 1, 9, 3]))
KAT_VAULT = [6, 8, 0, 1, 12, 12, 3, 9, 1, 11, 10, 9, 3]


def _values(vault: FuzzyVault, helper: bytes) -> list[int]:
    return vault.symbols(vault.payload(helper))[0].tolist()


def _randomness(vault: FuzzyVault, seed: int) -> VaultRandomness:
    """Deterministic randomness for reproducible tests (encode itself always uses secrets)."""
    rng = np.random.default_rng(seed)
    return VaultRandomness(rng.integers(0, vault.p, vault.k), rng.integers(0, vault.p - 1, vault.p - vault.m))


# -- construction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p, m, t",
    [
        (12, 5, 1),
        (1, 1, 0),
        (13, 14, 1),
        (13, 5, 3),
        (13, 0, 0),
        (True, 1, 0),
        (13, 5.0, 1),
        (13, 5, -1),
        (2**21 + 7, 5, 1),
    ],
)
def test_rejects_bad_parameters(p, m, t) -> None:
    with pytest.raises(ParameterError):
        FuzzyVault(p, m, t)


def test_rejects_too_many_decoder_points() -> None:
    with pytest.raises(ParameterError):
        FuzzyVault(65521, 513, 8)


def test_params_round_trip_and_load_sketch() -> None:
    vault = FuzzyVault(13, 5, 1)
    assert FuzzyVault.from_params(vault.params()) == vault
    helper = vault.encode(KAT_SECRET)
    assert load_sketch(helper) == vault
    assert vault.scheme_id == 4


# -- known answers ----------------------------------------------------------------------------


def test_known_answer_vault() -> None:
    vault = FuzzyVault(13, 5, 1)
    helper = vault.encode_with(KAT_SECRET, KAT_RANDOMNESS)
    assert _values(vault, helper) == KAT_VAULT


def test_known_answer_decodes() -> None:
    vault = FuzzyVault(13, 5, 1)
    helper = vault.encode_with(KAT_SECRET, KAT_RANDOMNESS)
    assert vault.decode(helper, KAT_SECRET).tolist() == KAT_SECRET
    # One wrong element (12: y = 3, F(12) = 11): within t = 1.
    assert vault.decode(helper, [1, 4, 6, 9, 12]).tolist() == KAT_SECRET
    assert vault.decode(helper, [1, 4, 6, 9, 10]).tolist() == KAT_SECRET
    # Two wrong elements: beyond t; no degree-2 polynomial fits 4 of (1,8) (4,12) (6,3) (10,10) (12,3).
    with pytest.raises(DecodeError):
        vault.decode(helper, [1, 4, 6, 10, 12])
    with pytest.raises(DecodeError):
        vault.decode(helper, [0, 2, 3, 5, 7])


def test_randomness_is_recoverable() -> None:
    # From (d, S): F is the interpolant through d's points, the offsets invert the chaff map.
    y = np.array(KAT_VAULT)
    f = np.array([2, 8, 3, 0, 12, 0, 3, 8, 2, 11, 9, 9, 11])
    assert np.all(y[KAT_SECRET] == f[KAT_SECRET])
    others = np.setdiff1d(np.arange(13), KAT_SECRET)
    assert np.all(y[others] != f[others])
    assert _offsets_from_chaff(f[others], y[others]).tolist() == KAT_RANDOMNESS.chaff_offsets.tolist()


def test_chaff_mapping_is_a_bijection_onto_the_other_values() -> None:
    p = 7
    for f in range(p):
        chaff = _chaff(np.full(p - 1, f), np.arange(p - 1))
        assert sorted(chaff.tolist()) == [v for v in range(p) if v != f]
        assert _offsets_from_chaff(np.full(p - 1, f), chaff).tolist() == list(range(p - 1))


# -- properties -------------------------------------------------------------------------------


@st.composite
def vault_cases(draw: st.DrawFn) -> tuple[FuzzyVault, np.ndarray, st.DataObject]:
    p = draw(st.sampled_from([13, 31, 101, 257, 1009]))
    m = draw(st.integers(1, min(p, 30)))
    t = draw(st.integers(0, (m - 1) // 2))
    secret = np.array(sorted(draw(st.lists(st.integers(0, p - 1), min_size=m, max_size=m, unique=True))))
    return FuzzyVault(p, m, t), secret


def _sample(secret: np.ndarray, p: int, wrong: int, data) -> np.ndarray:
    outside = sorted(set(range(p)) - set(secret.tolist()))
    wrong = min(wrong, len(outside))
    keep = data.draw(st.permutations(secret.tolist()))[: secret.shape[0] - wrong]
    extra = data.draw(st.permutations(outside))[:wrong]
    return np.array(keep + extra)


@settings(max_examples=60, deadline=None)
@given(vault_cases(), st.data())
def test_recovers_exactly_within_t(case, data) -> None:
    vault, secret = case
    wrong = data.draw(st.integers(0, vault.t))
    helper = vault.encode(secret)
    sample = _sample(secret, vault.p, wrong, data)
    assert vault.decode(helper, sample).tolist() == secret.tolist()


@settings(max_examples=60, deadline=None)
@given(vault_cases(), st.data())
def test_never_returns_the_secret_beyond_t(case, data) -> None:
    vault, secret = case
    if vault.p - vault.m <= vault.t:
        return  # no room for t + 1 wrong elements
    wrong = data.draw(st.integers(vault.t + 1, min(vault.m, vault.p - vault.m)))
    helper = vault.encode(secret)
    sample = _sample(secret, vault.p, wrong, data)
    # Undetectable case (documented): a spurious polynomial within t whose agreeing set has m
    # elements; it is never the secret itself.
    try:
        decoded = vault.decode(helper, sample)
    except DecodeError:
        return
    assert decoded.shape == (vault.m,) and decoded.tolist() != secret.tolist()


def test_beyond_t_fails_cleanly_in_a_large_field() -> None:
    # p = 10007: a spurious polynomial within t of the sample is vanishingly unlikely, so every
    # seed must raise DecodeError at t + 1 wrong elements, and decode must succeed at t.
    vault = FuzzyVault(10007, 22, 2)
    secret = np.arange(100, 122)
    for seed in range(10):
        helper = vault.encode_with(secret, _randomness(vault, seed))
        at_t = np.concatenate([secret[:20], [5000, 5001]])
        assert vault.decode(helper, at_t).tolist() == secret.tolist()
        with pytest.raises(DecodeError):
            vault.decode(helper, np.concatenate([secret[:19], [5000, 5001, 5002]]))


def test_t_zero_needs_the_exact_set() -> None:
    # With t = 0 (k = m) any m points interpolate, so a wrong sample is caught only when the
    # agreeing set is not exactly m elements (about 61% of vaults at p = 101: the other 95 chaff
    # values each equal the interpolant with probability 1/100); otherwise decode
    # returns that other set. It is never the secret.
    vault = FuzzyVault(101, 6, 0)
    secret = [3, 9, 27, 40, 81, 99]
    outcomes = []
    for seed in range(20):
        helper = vault.encode_with(secret, _randomness(vault, seed))
        assert vault.decode(helper, secret[::-1]).tolist() == secret
        try:
            wrong = vault.decode(helper, [3, 9, 27, 40, 81, 98])
        except DecodeError:
            outcomes.append("error")
            continue
        assert wrong.shape == (6,) and wrong.tolist() != secret and 98 in wrong.tolist()
        outcomes.append("other set")
    assert outcomes.count("error") == 11  # fixed seeds: an exact count (11 of 20)


def test_full_field_secret() -> None:
    vault = FuzzyVault(7, 7, 2)
    helper = vault.encode(range(7))
    assert vault.decode(helper, range(7)).tolist() == list(range(7))


# -- inputs and helper data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        [1, 4, 6, 9],
        [1, 4, 6, 9, 11, 12],
        [1, 4, 6, 9, 13],
        [1, 1, 6, 9, 11],
        [-1, 4, 6, 9, 11],
        [1.5, 4, 6, 9, 11],
        "abcde",
    ],
)
def test_rejects_bad_secrets_and_samples(bad) -> None:
    vault = FuzzyVault(13, 5, 1)
    with pytest.raises(SampleError):
        vault.encode(bad)
    helper = vault.encode(KAT_SECRET)
    with pytest.raises(SampleError):
        vault.decode(helper, bad)


def test_secret_bytes_canonical() -> None:
    vault = FuzzyVault(13, 5, 1)
    assert vault.secret_bytes([11, 9, 6, 4, 1]) == vault.secret_bytes(KAT_SECRET) == bytes(KAT_SECRET)
    assert FuzzyVault(65521, 3, 1).secret_bytes([1, 2, 300]) == bytes([0, 1, 0, 2, 1, 44])


def test_rejects_malformed_helpers() -> None:
    vault = FuzzyVault(13, 5, 1)
    good = vault.encode(KAT_SECRET)
    with pytest.raises(SketchFormatError):  # value 13 is outside F_13
        vault.decode(pack_helper(4, vault.params(), bytes([*KAT_VAULT[:-1], 13])), KAT_SECRET)
    with pytest.raises(SketchFormatError):  # one value short
        vault.decode(pack_helper(4, vault.params(), bytes(KAT_VAULT[:-1])), KAT_SECRET)
    with pytest.raises(SketchFormatError):  # one value too many
        vault.decode(pack_helper(4, vault.params(), bytes([*KAT_VAULT, 0])), KAT_SECRET)
    with pytest.raises(SketchFormatError):  # other parameters
        FuzzyVault(13, 5, 2).decode(good, KAT_SECRET)
    with pytest.raises(SketchFormatError):  # other scheme
        vault.decode(pack_helper(3, vault.params(), bytes(KAT_VAULT)), KAT_SECRET)
    with pytest.raises(SketchFormatError):  # tampered
        vault.decode(good[:-20] + bytes([good[-20] ^ 1]) + good[-19:], KAT_SECRET)
    with pytest.raises(SketchFormatError):  # oversized for the caller's limit
        vault.payload(good, max_bytes=len(good) - 1)
    with pytest.raises(SketchFormatError):
        vault.decode(good[:10], KAT_SECRET)


def test_rejects_bad_randomness() -> None:
    vault = FuzzyVault(13, 5, 1)
    for bad in (
        VaultRandomness(np.array([2, 5]), KAT_RANDOMNESS.chaff_offsets),
        VaultRandomness(np.array([2, 5, 13]), KAT_RANDOMNESS.chaff_offsets),
        VaultRandomness(KAT_RANDOMNESS.coefficients, np.array([12, 0, 0, 0, 0, 0, 0, 0])),
        (np.array([2, 5, 1]), KAT_RANDOMNESS.chaff_offsets),
    ):
        with pytest.raises(ParameterError):
            vault.encode_with(KAT_SECRET, bad)


def test_symbols_and_with_symbols() -> None:
    vault = FuzzyVault(13, 5, 1)
    helper = vault.encode_with(KAT_SECRET, KAT_RANDOMNESS)
    symbols, space = vault.symbols(vault.payload(helper))
    assert space.kind == "mod" and space.moduli.tolist() == [13] * 13
    shifted = (symbols + np.uint64(1)) % np.uint64(13)
    moved = vault.with_symbols(helper, shifted)
    assert _values(vault, moved) == [(v + 1) % 13 for v in KAT_VAULT]
    with pytest.raises(ParameterError):
        vault.with_symbols(helper, np.full(13, 13, dtype=np.uint64))


# -- batches ----------------------------------------------------------------------------------


def test_batch_round_trip_and_error_policy() -> None:
    vault = FuzzyVault(257, 12, 3)
    rng = np.random.default_rng(5)
    secrets = [np.sort(rng.choice(257, 12, replace=False)) for _ in range(70)]
    helpers = vault.encode_many(secrets)
    assert len(helpers) == 70 and all(
        vault.decode(h, s).tolist() == s.tolist() for h, s in zip(helpers, secrets, strict=False)
    )
    samples = [s.copy() for s in secrets]
    for i in range(0, 70, 7):  # every 7th sample gets t + 1 = 4 wrong elements
        outside = np.setdiff1d(np.arange(257), secrets[i])[:4]
        samples[i][:4] = outside
    results = vault.decode_many(helpers, samples, errors="return")
    for i, (result, secret) in enumerate(zip(results, secrets, strict=False)):
        if i % 7:
            assert result.tolist() == secret.tolist()
        else:
            assert isinstance(result, DecodeError) or result.tolist() != secret.tolist()
    with pytest.raises(DecodeError):
        vault.decode_many(helpers[:1], samples[:1])
    with pytest.raises(ParameterError):
        vault.decode_many(helpers, samples[:-1])
    with pytest.raises(ParameterError):
        vault.decode_many(helpers, samples, errors="ignore")
    with pytest.raises(SketchFormatError):  # one malformed helper refuses the batch
        vault.decode_many([*helpers[:2], helpers[2][:-1]], samples[:3], errors="return")
    with pytest.raises(SampleError):
        vault.decode_many(helpers[:2], [samples[0], samples[1][:-1]], errors="return")
    assert vault.encode_many([]) == [] and vault.decode_many([], []) == []


# -- accounting -------------------------------------------------------------------------------


@pytest.mark.parametrize("p, m, t", [(10007, 22, 2), (65521, 40, 8), (13, 5, 1), (7, 7, 2)])
def test_report_exact_numbers(p: int, m: int, t: int) -> None:
    report = FuzzyVault(p, m, t).report()
    assert report.sketch_bits == pytest.approx(p * math.log2(p), rel=1e-12)
    assert report.randomness_bits == pytest.approx((m - 2 * t) * math.log2(p) + (p - m) * math.log2(p - 1), rel=1e-12)
    closed_form = 2 * t * math.log2(p) + (p - m) * math.log2(p / (p - 1))
    assert report.loss_bound_bits == pytest.approx(closed_form, rel=1e-9, abs=1e-9)
    assert report.extra["log2_spurious_polynomials"] == pytest.approx(log2_spurious_polynomials(1e-4, p, p, m, t))


def test_report_known_value() -> None:
    # p = 10007, m = 22, t = 2: loss = 4 log2 10007 + 9985 log2(10007/10006)
    #   = 4 * 13.288722 + 9985 / (10006 ln 2) * (1 - 1/20012 + ...) = 53.154888 + 1.439595
    report = FuzzyVault(10007, 22, 2).report()
    assert report.loss_bound_bits == pytest.approx(54.594483, abs=1e-5)
    assert "spurious" in " ".join(report.notes)


@pytest.mark.parametrize("p, m, t", [(5, 3, 1), (5, 2, 0), (3, 1, 0)])
def test_exact_loss_within_bound(p: int, m: int, t: int) -> None:
    import itertools

    vault = FuzzyVault(p, m, t)
    secrets = [list(c) for c in itertools.combinations(range(p), m)]
    exact = exact_sketch_loss(vault, secrets)
    bound = vault.report().loss_bound_bits
    assert 0.0 <= exact <= bound + 1e-9
    assert exact <= math.log2(len(secrets)) + 1e-9


def test_randomness_space_is_a_distribution() -> None:
    vault = FuzzyVault(5, 3, 1)
    space = list(vault.randomness_space([0, 1, 2]))
    assert len(space) == 5 * 4**2
    assert sum(prob for _, prob in space) == pytest.approx(1.0)
    with pytest.raises(ParameterError):
        list(FuzzyVault(101, 5, 1).randomness_space([1, 2, 3, 4, 5]))


# -- estimates ----------------------------------------------------------------------------------


def test_spurious_polynomials_hand_values() -> None:
    # (0.3/3) * 2^((2-0-1)-2) * (4/2)^2 = 0.1 * 0.5 * 4 = 0.2
    assert spurious_polynomials(0.3, 2, 4, 2, 0) == pytest.approx(0.2, rel=1e-12)
    # (1e-4/3) * 13^(2-5) * (13/5)^5 = 1e-4/3 / 2197 * 118.81376
    assert spurious_polynomials(1e-4, 13, 13, 5, 1) == pytest.approx(1e-4 / 3 / 2197 * 118.81376, rel=1e-12)
    assert log2_spurious_polynomials(0.3, 2, 4, 2, 0) == pytest.approx(math.log2(0.2), rel=1e-12)


def test_spurious_polynomials_huge_and_tiny() -> None:
    log2_value = log2_spurious_polynomials(1e-4, 2, 2**30, 200, 0)
    assert log2_value == pytest.approx(math.log2(1e-4 / 3) - 1 + 200 * math.log2(2**30 / 200))
    assert log2_value > 1024
    with pytest.raises(ParameterError):
        spurious_polynomials(1e-4, 2, 2**30, 200, 0)  # overflows a float: refused, not inf
    assert log2_spurious_polynomials(1e-4, 65521, 200, 200, 99) < -1074
    with pytest.raises(ParameterError):
        spurious_polynomials(1e-4, 65521, 200, 200, 99)  # underflows: refused, not 0.0
    big = spurious_polynomials(1e-4, 65521, 65521, 40, 8)
    assert math.isfinite(big) and big > 1e40


@pytest.mark.parametrize(
    "args",
    [
        (0.0, 13, 13, 5, 1),
        (1.0, 13, 13, 5, 1),
        (1e-4, 1, 13, 5, 1),
        (1e-4, 13, 4, 5, 1),
        (1e-4, 13, 13, 5, 3),
        (True, 13, 13, 5, 1),
    ],
)
def test_spurious_polynomials_validates(args) -> None:
    with pytest.raises(ParameterError):
        spurious_polynomials(*args)


def test_weighted_spurious_hand_values() -> None:
    # (0.3/3) * 2^(1-3) * (2*3/1)^1 = 0.1 * 0.25 * 6 = 0.15
    assert weighted_spurious_polynomials(0.3, 2, 2, 3, 3, 1) == pytest.approx(0.15, rel=1e-12)
    # D = 0: the (q r / D)^D factor is its limit 1.
    assert weighted_spurious_polynomials(0.3, 2, 2, 3, 3, 0) == pytest.approx(0.1 / 8, rel=1e-12)
    assert log2_weighted_spurious_polynomials(1e-4, 1000, 4, 1000, 200, 150) == pytest.approx(
        math.log2(1e-4 / 3) - 50 * math.log2(1000) + 150 * math.log2(4000 / 150)
    )
    with pytest.raises(ParameterError):
        weighted_spurious_polynomials(0.3, 2, 2, 3, 3, 3)  # D must be < g


def test_candidate_fraction_hand_values() -> None:
    assert candidate_fraction(2, 2, 1) == pytest.approx(2 / 6)  # {0a,0b}, {1a,1b} of 6 pairs
    assert candidate_fraction(2, 2, 2) == 1.0
    assert candidate_fraction(3, 3, 2) == pytest.approx(12 / 20)  # C(3,2) C(2,1) 2^1 / C(6,3)
    assert candidate_fraction(3, 3, 1) == 0.0
    assert candidate_fraction(2, 2, 1, q=3) == pytest.approx(6 / 15)  # 2 C(3,2) / C(6,2)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.data())
def test_candidate_fraction_is_a_distribution(r: int, data) -> None:
    g = data.draw(st.integers(1, 2 * r))
    assert candidate_fraction(r, g, g) == pytest.approx(1.0, rel=1e-12)
    a = data.draw(st.integers(0, g))
    assert candidate_fraction(r, g, a) == pytest.approx(candidate_fraction(r, g, a, q=2), rel=1e-12)
    exact = sum(math.comb(r, g - x) * math.comb(g - x, x) * 2 ** (g - 2 * x) for x in range(0, g // 2 + 1))
    assert exact == math.comb(2 * r, g)


def test_candidate_fraction_large_arguments_do_not_overflow() -> None:
    value = candidate_fraction(100_000, 400, 300)
    assert 0.0 <= value < 1e-100
    assert candidate_fraction(100_000, 400, 400) == 1.0
    with pytest.raises(ParameterError):
        candidate_fraction(3, 7, 2)  # g > 2r
    with pytest.raises(ParameterError):
        candidate_fraction(3, 3, 4)  # a > g
