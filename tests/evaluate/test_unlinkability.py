"""Tests of sketchauth.evaluate.unlinkability: the Gomez-Barrero measures, attacks, reversibility."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.evaluate.data import VectorModel, synthetic_sets, synthetic_strings, synthetic_vectors
from sketchauth.evaluate.error_rates import adapter
from sketchauth.evaluate.unlinkability import (
    LINKAGE_ATTACKS,
    UnlinkabilityOptions,
    attack_for_key,
    crt_candidates,
    difference_decoding,
    difference_decoding_score,
    evaluate_unlinkability,
    interval_residue_distance,
    linkability,
    linkage_attack,
    vault_differential_score,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import descriptors
from sketchauth.sketches.vault import FuzzyVault, VaultRandomness, WeightedFuzzyVault


def test_identical_distributions_are_unlinkable() -> None:
    scores = np.random.default_rng(1).normal(size=500)
    assert linkability(scores, scores).d_sys == 0.0
    assert linkability([3, 3, 3], [3, 3]).d_sys == 0.0


def test_disjoint_distributions_are_fully_linkable() -> None:
    result = linkability([10.0, 11.5, 12.0], [0.0, 1.0, 2.5])
    assert result.d_sys == 1.0
    assert linkability([5, 6], [1, 2]).d_sys == 1.0


def test_hand_computed_measures() -> None:
    # Unit bins 0,1,2: p_m = (1/4, 1/2, 1/4), p_n = (1/2, 1/4, 1/4), LR = (1/2, 2, 1).
    result = linkability([0, 1, 1, 2], [0, 0, 1, 2])
    np.testing.assert_allclose(result.edges, [-0.5, 0.5, 1.5, 2.5])
    np.testing.assert_allclose(result.d_local, [0.0, 1 / 3, 0.0])
    assert result.d_sys == pytest.approx(1 / 6)
    # ω = 2: ω·LR = (1, 4, 2) → D = (0, 3/5, 1/3); D_sys = 1/2·3/5 + 1/4·1/3.
    weighted = linkability([0, 1, 1, 2], [0, 0, 1, 2], omega=2.0)
    np.testing.assert_allclose(weighted.d_local, [0.0, 0.6, 1 / 3])
    assert weighted.d_sys == pytest.approx(0.3 + 1 / 12)


def test_real_scores_use_equal_width_bins() -> None:
    result = linkability([0.25, 0.5], [0.75, 1.0], bins=4)
    assert result.edges.size == 5 and result.d_sys == 1.0
    assert linkability([0.1, 0.2], [0.15]).d_local.size == 100


def test_measure_validation() -> None:
    with pytest.raises(ParameterError):
        linkability([], [1])
    with pytest.raises(ParameterError):
        linkability([1], [1], omega=0)
    with pytest.raises(ParameterError):
        linkability([np.inf], [1])


def test_crt_candidates() -> None:
    # 23 ≡ 2 (mod 3), 23 ≡ 3 (mod 5): unique in [0, 15)? 23 ≥ 15 → 8 is the one (8 ≡ 2, 8 ≡ 3).
    assert crt_candidates(np.array([2]), np.array([3]), np.array([3]), np.array([5]), 15).tolist() == [8]
    # n = 30: 8 and 23 both fit → not determined.
    assert crt_candidates(np.array([2]), np.array([3]), np.array([3]), np.array([5]), 30).tolist() == [-1]
    # Equal moduli never pin more than one residue class.
    assert crt_candidates(np.array([1]), np.array([3]), np.array([1]), np.array([3]), 9).tolist() == [-1]


def test_interval_residue_distance() -> None:
    sk = IntervalSketch(n=100, v=3, features=3)  # modulus 5
    a = sk.encode([10, 20, 30])  # residues 0, 0, 0
    b = sk.encode([11, 24, 32])  # residues 1, 4, 2 → circular 1, 1, 2
    assert interval_residue_distance(sk, a, b) == 4.0


def test_difference_decoding_code_offset() -> None:
    sk = CodeOffsetSketch(n=12, t=2)
    w = bytes(range(12))
    w2 = bytes([99]) + w[1:11] + bytes([7])
    diff = difference_decoding(sk, sk.encode(w), sk.encode(w2))
    assert diff == bytes(a ^ b for a, b in zip(w, w2, strict=False))
    assert difference_decoding_score(sk, sk.encode(w), sk.encode(w2)) == 2.0
    far = bytes(255 - x for x in w)
    assert difference_decoding_score(sk, sk.encode(w), sk.encode(far)) == 3.0


def test_difference_decoding_pinsketch() -> None:
    sk = PinSketch(m=16, t=3)
    a, b = [5, 9, 300, 4000], [5, 9, 301, 4000, 7]
    assert difference_decoding(sk, sk.encode(a), sk.encode(b)).tolist() == [7, 300, 301]
    with pytest.raises(DecodeError):
        difference_decoding(sk, sk.encode(a), sk.encode([1, 2, 3, 4]))


@pytest.mark.parametrize("seed", range(8))
def test_vault_differential_finds_common_points(seed: int) -> None:
    vault = FuzzyVault(p=13, m=7, t=2)  # degree 2: three nodes per trial
    secret = [0, 2, 4, 6, 8, 10, 12]
    # Seeded encoder randomness: with fresh randomness the 6 chaff differences sometimes lie on
    # another quadratic through 2 genuine points with 7 agreements too (about 1 run in 250), and
    # the tie hides the genuine one.
    rng = np.random.default_rng(seed)
    a, b = (
        vault.encode_with(secret, VaultRandomness(rng.integers(0, 13, 3), rng.integers(0, 12, 6))) for _ in range(2)
    )
    score, mask = vault_differential_score(vault, a, b, trials=200, seed=1)
    # Every genuine point is common, so some trial interpolates F − F' and agrees on all 7.
    assert score >= 7
    assert set(secret) <= set(np.flatnonzero(mask).tolist())


def test_interval_unlinkability_exact_and_reversible() -> None:
    data = synthetic_vectors(30, 2, 8, n=128, seed=1, model=VectorModel(spread=30, noise=0.0))
    ad = adapter("interval")
    sk = ad.make_sketch({"n": 128, "features": 8}, 4)
    result = evaluate_unlinkability(sk, ad.enrol, data, UnlinkabilityOptions(seed=0))
    # Noise-free: both enrolments are identical, mated residue distance 0, non-mated larger.
    assert np.all(result.mated_scores == 0) and np.all(result.nonmated_scores > 0)
    assert result.measures.d_sys == 1.0
    # Moduli 7 and 9: product 63 < 128, every b has a twin b ± 63 in range: nothing recovered.
    assert result.reversibility["recovered_fraction"] == 0.0
    # v = 5 → moduli 9 and 11, product 99: exactly the templates in [29, 99) are determined.
    mid = evaluate_unlinkability(
        ad.make_sketch({"n": 128, "features": 8}, 5), ad.enrol, data, UnlinkabilityOptions(seed=0)
    )
    templates = np.stack([s[0] for _, s in data.by_identity()])
    expected = float(np.mean((templates >= 29) & (templates < 99)))
    assert mid.reversibility["recovered_fraction"] == pytest.approx(expected)
    assert 0.0 < expected < 1.0
    # v = 8 → moduli 15 and 17, product 255 ≥ 128: every feature recovered.
    wide = evaluate_unlinkability(
        ad.make_sketch({"n": 128, "features": 8}, 8), ad.enrol, data, UnlinkabilityOptions(seed=0)
    )
    assert wide.reversibility["recovered_fraction"] == 1.0


def test_linear_schemes_difference_decoding_on_data() -> None:
    strings = synthetic_strings(20, 2, 16, error_rate=0.05, seed=2)
    ad = adapter("code-offset")
    result = evaluate_unlinkability(ad.make_sketch({"n": 16}, 3), ad.enrol, strings, UnlinkabilityOptions(seed=0))
    # Scores depend only on the data (the code is linear), so they are exact on a seed.
    diffs = [int(np.count_nonzero(s[0] != s[1])) for _, s in strings.by_identity()]
    assert result.mated_scores.tolist() == [float(min(d, 4)) for d in diffs]
    assert result.reversibility["recovered_fraction"] == 0.0
    assert result.measures.d_sys > 0.5
    sets = synthetic_sets(20, 2, low=1, high=2**12, set_size=20, dropout=0.1, insertion=0.1, seed=3)
    pin = adapter("pinsketch")
    result = evaluate_unlinkability(pin.make_sketch({"m": 12}, 8), pin.enrol, sets, UnlinkabilityOptions(seed=0))
    sizes = [int(np.setxor1d(s[0], s[1]).size) for _, s in sets.by_identity()]
    assert result.mated_scores.tolist() == [float(min(d, 9)) for d in sizes]


def test_asymmetric_attacks_run_on_real_helpers() -> None:
    data = synthetic_vectors(20, 4, 6, n=128, seed=4, model=VectorModel(noise=2.0, reliability_spread=0.7))
    ad = adapter("asymmetric-interval")
    for scheme in ("s1", "s2", "s3"):
        sk = ad.make_sketch({"n": 128, "q": 16, "scheme": scheme, "features": 6}, 2)
        result = evaluate_unlinkability(sk, ad.enrol, data, UnlinkabilityOptions(enrol_samples=2, setting=2, seed=0))
        assert result.higher_is_mated
        assert result.measures.mated_pairs == 20 and result.measures.nonmated_pairs == 200
        assert 0.0 <= result.measures.d_sys <= 1.0
        assert 0.0 <= result.reversibility["recovered_fraction"] <= 1.0


def test_small_vault_is_linkable_and_partly_reversible() -> None:
    sets = synthetic_sets(12, 2, low=0, high=31, set_size=12, dropout=0.0, insertion=0.0, seed=5)
    ad = adapter("fuzzy-vault")
    sk = ad.make_sketch({"p": 31, "m": 12}, 4)  # degree 3
    result = evaluate_unlinkability(sk, ad.enrol, sets, UnlinkabilityOptions(seed=0, trials=200))
    assert result.measures.d_sys > 0.5
    assert result.reversibility["recovered_fraction"] > 0.5
    assert 0 < result.extra["success_probability_per_trial"] < 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=40),
    st.lists(st.integers(0, 30), min_size=1, max_size=40),
    st.floats(0.1, 10.0),
)
def test_measures_properties(mated: list[int], nonmated: list[int], omega: float) -> None:
    result = linkability(mated, nonmated, omega=omega)
    assert 0.0 <= result.d_sys <= 1.0
    assert np.all((result.d_local >= 0) & (result.d_local <= 1))
    assert result.p_mated.sum() == pytest.approx(1.0) and result.p_nonmated.sum() == pytest.approx(1.0)
    # Shifting every score by the same amount changes nothing (bins follow the joint range).
    shifted = linkability([x + 100 for x in mated], [x + 100 for x in nonmated], omega=omega)
    assert shifted.d_sys == pytest.approx(result.d_sys)
    # A larger prior on "mated" can only make pairs look more linkable.
    assert linkability(mated, nonmated, omega=omega * 2).d_sys >= result.d_sys - 1e-12


def test_each_family_s_descriptor_names_its_linkage_attack() -> None:
    """The attack table is keyed by attack name; the descriptors say which applies to a sketch."""
    for name, d in descriptors().items():
        for key, attack_name in d.linkage_attacks.items():
            assert attack_name in LINKAGE_ATTACKS, (name, key)
    sketches = {
        "interval": IntervalSketch(16, 2, features=2),
        "asymmetric-interval/s3": AsymmetricIntervalSketch(16, 4, scheme="s3", features=2),
        "code-offset": CodeOffsetSketch(8, 2),
        "pinsketch": PinSketch(8, 2),
        "weighted-vault": WeightedFuzzyVault(50, 4, 9, 3),
    }
    expected = {
        "interval": "residue-distance",
        "asymmetric-interval/s3": "s3-similar-intervals",
        "code-offset": "difference-decoding",
        "pinsketch": "difference-decoding",
        "weighted-vault": "differential-cross-matching",
    }
    for key, sketch in sketches.items():
        found_key, attack = linkage_attack(sketch)
        assert found_key == key and attack == attack_for_key(key)
        assert (attack.name, attack.score) == (expected[key], LINKAGE_ATTACKS[expected[key]].score)
    assert attack_for_key("code-offset").description == "weight of decode(S xor S', 0)"
    assert attack_for_key("pinsketch").description == "size of decode(s(A) xor s(B), {})"
    assert attack_for_key("interval") == LINKAGE_ATTACKS["residue-distance"]
    with pytest.raises(ParameterError, match="no linkage attack for scheme 'chaff-point'"):
        linkage_attack(ChaffPointSketch(64, 4, 2))
    for key in ("asymmetric-interval/s9", "mixed", "nonesuch"):
        with pytest.raises(ParameterError, match=f"no linkage attack for scheme '{key}'; known: .*pinsketch"):
            attack_for_key(key)
