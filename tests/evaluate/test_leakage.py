"""Tests of sketchauth.evaluate.leakage: bounds, estimates, attack costs, exact small instances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sketchauth.errors import ParameterError
from sketchauth.evaluate.leakage import (
    estimate_min_entropy,
    exact_leakage,
    false_accept_cost,
    leakage_report,
    measure_hash,
    small_instance,
)
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch


def test_exact_interval_loss_equals_bound_and_rate_zero() -> None:
    # 12 uniform secrets, modulus 3: the helper is b mod 3, 4 secrets per helper: loss log2(3).
    exact = exact_leakage(IntervalSketch(n=12, v=2, features=1), [[b] for b in range(12)])
    assert exact.loss_bits == pytest.approx(math.log2(3))
    assert exact.bound_bits == pytest.approx(math.log2(3))
    assert exact.helpers == 3
    # Deterministic: re-enrolment repeats the same helper, secrets 0 and 3 are never separated.
    # Rate 0 up to rounding: Σ p^λ q^(1−λ) of equal rows goes through pow, whose last bit
    # depends on the CPU's vector math (0.0 here, 3e-16 elsewhere).
    assert exact.chernoff_rate == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("scheme", ["interval", "code-offset", "fuzzy-vault", "pinsketch"])
def test_small_instances_respect_their_bound(scheme: str) -> None:
    instance = small_instance(scheme)
    assert instance is not None
    exact = exact_leakage(*instance)
    assert 0.0 <= exact.loss_bits <= exact.bound_bits + 1e-9
    assert exact.loss_bits <= math.log2(exact.secrets) + 1e-9


def test_exact_values_of_small_instances() -> None:
    # PinSketch m=8, t=1: the sketch is the XOR of the elements; 37 subsets of {1..8} of at most
    # two elements map onto the 16 values 0..15, each attacker guess wins the most likely secret
    # of its helper: P_succ = 16/37, loss = log2(16) = 4 bits.
    pin = exact_leakage(*small_instance("pinsketch"))  # type: ignore[misc]
    assert (pin.helpers, pin.loss_bits) == (16, 4.0)  # log2 of exactly 16.0: exact
    assert pin.chernoff_rate == pytest.approx(0.0, abs=1e-12)  # equal rows, up to pow's last bit
    # Code-offset RS[3,1]: the 32 listed secrets lie in distinct cosets, so the helper reveals
    # which one (5 bits, all of it) and one enrolment separates every pair (rate inf).
    co = exact_leakage(*small_instance("code-offset"))  # type: ignore[misc]
    assert co.loss_bits == pytest.approx(5.0) and co.chernoff_rate == math.inf and co.helpers == 32 * 256
    # Asymmetric s1, n=6, q=2: 12 secrets (b, v); helper (v, b mod (2v−1)): 1 + 3 = 4 values.
    s1 = exact_leakage(*small_instance("asymmetric-interval", {"scheme": "s1"}))  # type: ignore[misc]
    assert s1.helpers == 4 and s1.loss_bits == pytest.approx(2.0)
    assert small_instance("weighted-vault") is None


def test_exact_code_offset_same_coset_rate_zero() -> None:
    sk = CodeOffsetSketch(n=3, t=1)
    w = bytes([1, 2, 3])
    codeword = sk._codeword(bytes([5]))
    other = bytes(a ^ b for a, b in zip(w, codeword, strict=False))
    exact = exact_leakage(sk, [w, other])
    # Same coset, same helper distribution: rate 0 up to pow's last bit (1.6e-16 on AVX2-only CPUs).
    assert exact.chernoff_rate == pytest.approx(0.0, abs=1e-12) and exact.loss_bits == pytest.approx(0.0)


def test_estimate_min_entropy() -> None:
    # Feature 0: values 1,1,2,3 → −log2(1/2) = 1; feature 1 constant → 0.
    assert estimate_min_entropy(np.array([[1, 5], [1, 5], [2, 5], [3, 5]])) == pytest.approx(1.0)
    # Sets: universe {1,2,3}; memberships 1:[1,1,1,0] → 2-log2 3 ... −log2(3/4); 2:[1,0,0,0] → −log2(3/4); 3:[0,0,0,1]
    sets = [[1, 2], [1], [1], [3]]
    assert estimate_min_entropy(sets) == pytest.approx(3 * -math.log2(3 / 4))
    with pytest.raises(ParameterError):
        estimate_min_entropy(np.array([[1, 2]]))


def test_false_accept_cost() -> None:
    cost = false_accept_cost(1, 10_000)
    assert cost["bits"] == pytest.approx(math.log2(10_000))
    lo, hi = wilson_interval(1, 10_000)
    assert cost["bits_ci"] == [pytest.approx(math.log2(1 / hi)), pytest.approx(math.log2(1 / lo))]
    zero = false_accept_cost(0, 1000)
    assert zero["bits"] is None and zero["bits_ci"][1] is None
    assert zero["bits_ci"][0] == pytest.approx(math.log2((1000 + 1.96**2) / 1.96**2))


def test_leakage_report_declared_and_estimated() -> None:
    sk = IntervalSketch(n=256, v=8, features=16)
    rep = leakage_report(sk, source_min_entropy=100.0, profile="test", false_matches=0, impostor_trials=5000)
    assert rep.loss_bound_bits == pytest.approx(16 * math.log2(15))
    assert rep.remaining_bits == pytest.approx(100.0 - 16 * math.log2(15))
    d = rep.to_dict()
    assert d["source_entropy_origin"] == "declared"
    assert d["offline_guessing"]["log2_argon2_evaluations"] == rep.remaining_bits
    assert d["offline_guessing"]["log2_cpu_years"] < d["offline_guessing"]["log2_cpu_seconds"]
    assert d["exact_small_instance"]["scheme"] == "interval"
    assert d["false_accept_attack"]["bits"] is None
    est = leakage_report(sk, templates=np.arange(32).reshape(2, 16), profile=None, exact=False)
    # Two templates differing in every feature: 1 bit per feature.
    assert est.source_min_entropy_bits == pytest.approx(16.0)
    assert est.remaining_bits == 0.0 and est.hash_cost is None
    assert any("guarantees nothing" in n for n in est.notes)
    with pytest.raises(ParameterError):
        leakage_report(sk, source_min_entropy=-1.0, profile=None)


def test_measure_hash() -> None:
    cost = measure_hash("test", repeats=2)
    assert cost.wall_seconds > 0 and cost.repeats == 2
    with pytest.raises(ParameterError):
        measure_hash("nonesuch")
