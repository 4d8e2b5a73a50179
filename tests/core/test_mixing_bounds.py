"""Accounting of mixed sketches and exact checks on toy cascades (sketchauth.mixing.bounds, Fang's thesis, ch. 7)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from sketchauth.errors import MixingWarning, ParameterError
from sketchauth.mixing import Cascade, Chaining, ExactKey, FuzzySecret, derive_pad
from sketchauth.mixing.bounds import (
    ComponentFacts,
    account,
    exact_mixing,
    extractor_overhead,
    joint_secrets_bound,
    key_recoverability_bits,
    mixed_secret_bound,
    mixing_key_bound,
    two_fuzzy_bounds,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SymbolSpace
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch

PIN_BITS = 6 * math.log2(10)
LOG3, LOG5, LOG6 = math.log2(3), math.log2(5), math.log2(6)


# -- the formulas -------------------------------------------------------------------------------------
def test_formulas_by_hand():
    assert joint_secrets_bound([10.0, 20.0], [3.0], 15.0) == 18.0
    assert mixed_secret_bound(10.0, 20.0, 15.0, 2.0, 1.0) == 12.0
    assert mixing_key_bound(20.0, 3.0, 15.0) == 8.0
    assert two_fuzzy_bounds(40.0, 30.0, 5.0, 6.0, 20.0, 16.0, 4.0) == (36.0, 1.0)


def test_key_recoverability():
    assert key_recoverability_bits(PIN_BITS, 128.0) == 0.0  # PIN determined by (S, Q)
    assert key_recoverability_bits(PIN_BITS, 64.0) == 1.0  # a few pairs of PINs may share a pad
    assert key_recoverability_bits(1.0, LOG3) == 1.0  # two keys, three pads: both may collide
    assert key_recoverability_bits(0.0, 8.0) == 0.0
    # Many keys over few pads: about 2^(k - g) per pad plus a tail margin, never above k.
    beta = key_recoverability_bits(PIN_BITS, 4 * math.log2(7))
    assert PIN_BITS - 4 * math.log2(7) < beta < PIN_BITS
    assert round(beta, 6) == 10.182394
    # Key spaces beyond 2^62: bisection on log2 c, still an integer load.
    assert key_recoverability_bits(128.0, 200.0) == pytest.approx(math.log2(3))
    assert 118.0 < key_recoverability_bits(128.0, 10.0) < 120.0  # about 2^118 keys per pad
    assert key_recoverability_bits(128.0, 300.0) == 0.0
    with pytest.raises(ParameterError):
        key_recoverability_bits(-1.0, 3.0)


def test_extractor_overhead():
    assert extractor_overhead(100.0, 64) == (64.0, 36.0, 2.0**-18)
    assert extractor_overhead(10.0, 64) == (10.0, 0.0, 1.0)


# -- the PinSketch + 6-digit PIN report: the diverted loss ---------------------------------------------
def test_pinsketch_with_six_digit_pin_shows_the_diverted_loss():
    cascade = Cascade(FuzzySecret(PinSketch(16, 8), min_entropy=150.0), pin=ExactKey.pin(6, "test"))
    mixing = cascade.mixing_report()
    bio, pin = mixing.secrets
    (edge,) = mixing.mixes
    assert edge.beta == 0.0 and edge.key_entropy == pytest.approx(PIN_BITS) and edge.helps
    assert bio.concatenation_loss_bits == 128.0
    assert bio.loss_bits == pytest.approx(128.0 - PIN_BITS)
    assert bio.diverted_bits == pytest.approx(PIN_BITS)
    assert bio.remaining_bits == pytest.approx(22.0 + PIN_BITS)
    assert bio.concatenation_remaining_bits == 22.0
    assert bio.bounds["concatenation"] == 22.0
    assert bio.bounds["theorem7"] == pytest.approx(22.0 + PIN_BITS)
    assert pin.loss_bits == pytest.approx(PIN_BITS) and pin.remaining_bits == 0.0
    assert pin.bounds["theorem8"] == pytest.approx(PIN_BITS - 128.0)
    assert mixing.whole_lemma6 == pytest.approx(150.0 + PIN_BITS - 128.0)
    report = cascade.report()
    assert report.sketch_bits == 128.0 and report.loss_bound_bits == 128.0
    assert any("19.93 bits of its sketch's loss diverted" in n for n in report.notes)
    assert report.extra["mixing"]["secrets"][0]["diverted_bits"] == pytest.approx(PIN_BITS)


def test_two_fuzzy_secret_accounting():
    a = FuzzySecret(IntervalSketch(n=2**20, v=8, features=4), min_entropy=80.0, importance=2)
    b = FuzzySecret(CodeOffsetSketch(16, 2), min_entropy=100.0, importance=1, key_bits=48)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixingWarning)
        cascade = Cascade(a, b)
    first, second = cascade.mixing_report().secrets
    (edge,) = cascade.mixing_report().mixes
    l1 = 4 * math.log2(15)
    # b's key: remaining 100 + 96 - 128 = 68 bits, 48 extracted: delta = 20, eps = 2^-10.
    assert (edge.key_entropy, edge.delta, edge.epsilon) == (48.0, 20.0, 2.0**-10)
    # 2^48 keys over 2^15.6 pads: many keys share a pad; beta charges for it.
    beta = key_recoverability_bits(48.0, l1)
    assert edge.beta == beta and round(beta, 6) == 33.815133
    assert first.bounds["two_fuzzy"] == pytest.approx(80.0 + 48.0 - l1 - beta)
    assert first.bounds["two_fuzzy"] < 80.0
    assert first.loss_bits == pytest.approx(l1 - 48.0 + beta)
    assert first.diverted_bits == pytest.approx(48.0 - beta)
    assert second.bounds["two_fuzzy_as_key_of_0"] == pytest.approx(100.0 + 96.0 + 0.0 - l1 - 128.0 - 20.0)
    assert second.loss_bits == pytest.approx(32.0 + l1 + 20.0)


def test_chain_accounting_composes_edge_by_edge():
    co = FuzzySecret(CodeOffsetSketch(16, 2), min_entropy=100.0, importance=1, key_bits=48)
    iv = FuzzySecret(IntervalSketch(n=2**20, v=8, features=4), min_entropy=80.0, importance=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixingWarning)
        chain = Chaining(ExactKey.pin(6, "test"), co, iv)
    pin, middle, last = chain.mixing_report().secrets
    # The PIN (19.93 bits) cannot cover code-offset's 96 random bits: concatenation stands.
    assert middle.diverted_bits == 0.0
    assert middle.loss_bits == pytest.approx(32.0 + 4 * math.log2(15) + 20.0)
    assert last.loss_bits == pytest.approx(4 * math.log2(15) - 48.0 + key_recoverability_bits(48.0, 4 * math.log2(15)))
    assert pin.loss_bits == pytest.approx(PIN_BITS)


def test_unknown_entropies_leave_bounds_open():
    facts = [ComponentFacts("b", "fuzzy", None, None, 10.0, 0.0, 0.0, 128), ComponentFacts("k", "exact", None)]
    report = account(facts, [(1, 0)])
    assert report.secrets[0].loss_bits is None and report.secrets[0].remaining_bits is None
    assert report.mixes[0].helps is None
    assert report.whole_lemma6 is None


# -- exact toy checks ---------------------------------------------------------------------------------
def test_one_bit_key_over_deterministic_sketch_diverts_exactly_one_bit():
    # b uniform on [0, 6), S = b mod 3, Q = S + k mod 3 with a one-bit key k.
    e = exact_mixing(IntervalSketch(n=6, v=2), [[b] for b in range(6)], [[0], [1]])
    assert (e.h_b, e.h_k, e.h_r, e.sketch_bits, e.beta) == (LOG6, 1.0, 0.0, LOG3, 0.0)
    assert e.h_b_given_sketch == pytest.approx(1.0)  # concatenation loses log2 3
    assert e.h_b_given_q == pytest.approx(2.0)  # the cascade loses log2 3 - 1: one bit diverted
    assert e.h_k_given_q == pytest.approx(1.0)  # and the key loses nothing (S is uniform)
    assert e.h_bk_given_q == pytest.approx(2.0)
    bounds = e.bounds()
    assert bounds["theorem7"] == pytest.approx(2.0) and bounds["lemma6"] == pytest.approx(2.0)  # both tight
    assert bounds["concatenation"] == pytest.approx(1.0)  # tight too
    assert bounds["theorem8"] == pytest.approx(1.0 - LOG3)


def test_one_bit_key_whose_pads_collide_diverts_nothing():
    e = exact_mixing(IntervalSketch(n=6, v=2), [[b] for b in range(6)], [[2], [2]])
    assert e.beta == 1.0
    assert e.h_b_given_q == pytest.approx(1.0) and e.bounds()["theorem7"] == pytest.approx(1.0)


def test_one_bit_key_over_randomised_sketch():
    # Chaff sketch of one point in [0, 6), min distance 1: five maximal sets, H(R) = log2 1.5.
    sk = ChaffPointSketch(6, 1)
    e = exact_mixing(sk, list(sk.secret_space()), [[0], [1]])
    assert (e.sketch_bits, e.h_r, e.l_r) == (LOG5, pytest.approx(math.log2(1.5)), pytest.approx(LOG3))
    assert e.h_b_given_sketch == pytest.approx(math.log2(9 / 4))  # P_succ = 4/9, by hand
    assert e.h_b_given_q == pytest.approx(1.3755091350922066)
    assert e.h_k_given_q == pytest.approx(0.7187138896099837)  # the skewed sketch leaks the key
    assert e.h_bk_given_q == pytest.approx(1.9219974879987272)
    bounds = e.bounds()
    # H(k) = 1 < L_R = log2 3: Theorem 7 promises less than concatenation does.
    assert bounds["theorem7"] == pytest.approx(LOG6 + 1 - LOG5 - (LOG3 - math.log2(1.5)))
    assert bounds["theorem7"] < bounds["concatenation"]
    assert bounds["concatenation"] == pytest.approx(LOG6 + math.log2(1.5) - LOG5)


def test_real_pad_for_fixed_nonce_is_one_of_the_enumerated_maps():
    space = SymbolSpace("mod", moduli=np.array([3], dtype=np.uint64))
    pads = [derive_pad(bytes([k]), b"fixed-nonce-0001", space, 1) for k in (0, 1)]
    e = exact_mixing(IntervalSketch(n=6, v=2), [[b] for b in range(6)], pads)
    expected = 2.0 if int(pads[0][0]) != int(pads[1][0]) else 1.0
    assert e.h_b_given_q == pytest.approx(expected)


def _pad_maps(group: int, keys: int):
    for combo in itertools.product(range(group), repeat=keys):
        yield [[x] for x in combo]


def _check_bounds(e) -> None:
    b = e.bounds()
    tol = 1e-9
    assert b["concatenation"] <= e.h_b_given_sketch + tol
    assert b["lemma6"] <= e.h_bk_given_q + tol
    assert b["theorem7"] <= e.h_b_given_q + tol
    assert b["theorem8"] <= e.h_k_given_q + tol


def test_bounds_hold_exhaustively_on_interval_toys():
    checked = 0
    for n, v in itertools.product(range(2, 8), range(1, 4)):
        if 2 * v - 1 > n:
            continue
        sk = IntervalSketch(n=n, v=v)
        group = 2 * v - 1
        secrets = [[b] for b in range(n)]
        skewed = np.arange(1, n + 1, dtype=float)
        for keys in (1, 2, 4):
            if group**keys > 400:
                continue
            for pads in _pad_maps(group, keys):
                for prior in (None, skewed / skewed.sum()):
                    _check_bounds(exact_mixing(sk, secrets, pads, prior=prior))
                    checked += 1
    assert checked == 1146


def test_bounds_hold_exhaustively_on_chaff_toys():
    checked = 0
    for n, d in ((4, 1), (5, 1), (6, 1), (7, 1), (7, 2), (8, 2), (9, 2)):
        sk = ChaffPointSketch(n, d)
        group = sk.sketch_count
        secrets = list(sk.secret_space())
        for keys in (2, 4):
            if group**keys > 150:
                continue
            for pads in _pad_maps(group, keys):
                _check_bounds(exact_mixing(sk, secrets, pads))
                checked += 1
    assert checked == 344


@pytest.mark.parametrize("scheme", ["s1", "s2"])
def test_asymmetric_sketches_claim_no_diverted_loss(scheme: str) -> None:
    # Their pads can move nothing in the worst case (pad_group_bits() == 0), so every PIN may be
    # consistent with (S, Q): beta is the whole key and nothing is diverted.
    inner = AsymmetricIntervalSketch(1000, 16, scheme, features=4)
    assert inner.pad_group_bits() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixingWarning)
        (mix,) = Cascade(inner, pin=ExactKey.pin(6)).mixing_report().mixes
    assert mix.beta == pytest.approx(math.log2(10**6))
    assert mix.diverted_bits == 0.0
    assert PinSketch(16, 8).pad_group_bits() == PinSketch(16, 8).report().sketch_bits


def test_beta_for_huge_key_spaces_is_finite_and_monotone() -> None:
    # far more pads than keys: no two keys share a pad (beta 0), whatever the key length
    assert key_recoverability_bits(4096.0, 10000.0) == 0.0
    # far more keys than pads: about K - G + log2 e keys per pad, and never more than K
    beta = key_recoverability_bits(4096.0, 128.0)
    assert 4096 - 128 <= beta <= 4096 - 128 + 2
    assert key_recoverability_bits(2000.0, 1000.0) <= key_recoverability_bits(2000.0, 500.0) <= 2000.0
    # continuous across the switch to the log-domain bisection (62 -> 63 key bits)
    assert abs(key_recoverability_bits(63.0, 10.0) - key_recoverability_bits(62.0, 10.0) - 1.0) < 0.01
