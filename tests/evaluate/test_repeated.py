"""Tests of sketchauth.evaluate.repeated: the attacker who combines k enrolments' sketches."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.evaluate.repeated import ATTACKS, repeated_enrolment_attack
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import descriptors


def _same_evidence(a: dict, b: dict) -> bool:
    a, b = dict(a), dict(b)
    a.pop("k"), b.pop("k")
    return a == b


# -- interval: CRT over re-tuned tolerances ---------------------------------------------------------------
def test_interval_two_tolerances_over_70_leave_exactly_two_candidates() -> None:
    # M = 5, 7: one residue mod 5 leaves 70/5 = 14 values, both leave 70/35 = 2.
    r = repeated_enrolment_attack("interval", 2, 25, 3, n=70, features=4, tolerances=[3, 4], noise=0.0)
    one, two = r.per_k
    assert one.mean_log2_candidates == pytest.approx(math.log2(14))
    assert one.guess_success == pytest.approx(14.0**-4)
    assert two.mean_log2_candidates == 1.0
    assert two.pinned_fraction == 0.0 and two.recovered_fraction == 0.0
    assert two.guess_success == pytest.approx(2.0**-4)
    assert two.guess_bits == pytest.approx(4.0)
    assert one.empty_fraction == two.empty_fraction == 0.0


def test_interval_lcm_reaching_n_pins_every_feature() -> None:
    r = repeated_enrolment_attack("interval", 2, 30, 1, n=35, features=8, tolerances=[3, 4], noise=0.0)
    one, two = r.per_k
    assert one.mean_log2_candidates == pytest.approx(math.log2(7))
    assert one.pinned_fraction == 0.0
    assert two.pinned_fraction == two.recovered_fraction == 1.0
    assert two.mean_log2_candidates == 0.0
    assert two.guess_success == 1.0 and two.guess_bits == 0.0
    assert two.guess_success_ci == wilson_interval(30, 30)
    assert two.recovered_ci == wilson_interval(240, 240)


def test_interval_over_64_matches_hand_count() -> None:
    # n = 64, M = 5 then 5·7 = 35: a feature b keeps 13 candidates (12 when b ≡ 4 mod 5) after one
    # sketch, then 2 (1 when b mod 35 ≥ 29) after both. The simulated templates are the first draw
    # of default_rng(seed), so the expected numbers are computed from the same draw.
    trials, features, seed = 50, 16, 7
    b = np.random.default_rng(seed).integers(0, 64, size=(trials, features), dtype=np.int64)
    first = np.where(b % 5 == 4, 12, 13)
    second = np.where(b % 35 >= 29, 1, 2)
    r = repeated_enrolment_attack("interval", 2, trials, seed, n=64, features=features, tolerances=[3, 4], noise=0.0)
    one, two = r.per_k
    assert one.mean_log2_candidates == pytest.approx(float(np.log2(first).mean()))
    assert two.mean_log2_candidates == pytest.approx(float(np.log2(second).mean()))
    assert two.pinned_fraction == pytest.approx(float((second == 1).mean()))
    assert two.recovered_fraction == two.pinned_fraction
    expected = float(np.mean(np.prod(1.0 / second, axis=1)))
    assert two.guess_success == pytest.approx(expected)
    # And about 6/64 of uniform features are pinned.
    lo, hi = two.recovered_ci
    assert lo <= 6 / 64 <= hi


def test_identical_tolerances_gain_nothing() -> None:
    r = repeated_enrolment_attack("interval", 3, 20, 0, n=64, features=8, tolerances=[3, 3, 3], noise=0.0)
    dicts = [s.to_dict() for s in r.per_k]
    assert _same_evidence(dicts[0], dicts[1]) and _same_evidence(dicts[0], dicts[2])
    assert r.per_k[0].pinned_fraction == 0.0


def test_sketch_object_defaults_to_its_own_tolerance() -> None:
    sk = IntervalSketch(64, 4, features=6)
    r = repeated_enrolment_attack(sk, 3, 10, 2, noise=0.0)
    assert r.options["tolerances"] == [4, 4, 4]
    assert _same_evidence(r.per_k[0].to_dict(), r.per_k[2].to_dict())
    # |C| = 9 or 10 values of [0, 64) in one class mod 7.
    assert math.log2(9) <= r.per_k[0].mean_log2_candidates <= math.log2(10)


def test_k1_gives_no_template() -> None:
    for name in ("interval", "asymmetric-interval/s1", "asymmetric-interval/s2", "code-offset", "pinsketch"):
        r = repeated_enrolment_attack(name, 1, 5, 0)
        (only,) = r.per_k
        assert only.pinned_fraction == 0.0 and only.recovered_fraction == 0.0, name
        assert only.guess_success < 1e-4, name


def test_noise_misleads_the_exact_crt_and_slack_keeps_the_truth() -> None:
    # Two coprime moduli with lcm(5, 7) = 35 ≤ n always agree on some value, so capture noise
    # pins *wrong* values; a third modulus (lcm 315 > n) makes most noisy features contradict.
    strict = repeated_enrolment_attack("interval", 3, 40, 5, n=64, features=16, tolerances=[3, 4, 5], noise=1.0)
    assert strict.per_k[1].empty_fraction == 0.0
    assert strict.per_k[1].recovered_fraction < strict.per_k[1].pinned_fraction
    assert strict.per_k[2].empty_fraction > 0.5
    loose = repeated_enrolment_attack("interval", 3, 40, 5, n=64, features=16, tolerances=[3, 4, 5], noise=1.0, slack=2)
    assert all(s.empty_fraction == 0.0 for s in loose.per_k)
    assert loose.per_k[2].mean_log2_candidates > strict.per_k[1].mean_log2_candidates


# -- asymmetric s1 and s2 --------------------------------------------------------------------------------
def test_s1_without_jitter_gains_nothing_and_with_jitter_pins_features() -> None:
    flat = repeated_enrolment_attack("asymmetric-interval/s1", 3, 20, 0, noise=0.0, tolerance_jitter=0.0)
    assert _same_evidence(flat.per_k[0].to_dict(), flat.per_k[2].to_dict())
    moving = repeated_enrolment_attack("asymmetric-interval/s1", 4, 40, 0, noise=0.0, tolerance_jitter=1.5)
    pinned = [s.pinned_fraction for s in moving.per_k]
    assert pinned[0] == 0.0 and pinned == sorted(pinned) and pinned[-1] > 0.3
    for s in moving.per_k:  # exact residues: the truth always survives
        assert s.empty_fraction == 0.0 and s.recovered_fraction == s.pinned_fraction


def test_s2_intersection_shrinks_to_the_secret_interval() -> None:
    r = repeated_enrolment_attack("asymmetric-interval/s2", 4, 20, 0, n=64, q=8, features=8, noise=0.0)
    pinned = [s.pinned_fraction for s in r.per_k]
    assert pinned[0] == 0.0 and pinned == sorted(pinned)
    assert pinned[-1] > 0.8
    for s in r.per_k:  # the secret interval is in every partition: it always survives
        assert s.guess_success > 0 and s.recovered_fraction == s.pinned_fraction
    sk = AsymmetricIntervalSketch(64, 8, scheme="s2", features=4)
    assert repeated_enrolment_attack(sk, 2, 5, 1, noise=0.0).scheme == "asymmetric-interval/s2"


# -- linear sketches: differences only ---------------------------------------------------------------------
def test_code_offset_reveals_differences_not_the_template() -> None:
    r = repeated_enrolment_attack("code-offset", 3, 20, 0, n=32, t=4, error_rate=0.0)
    for s in r.per_k:
        assert s.recovered_fraction == 0.0 and s.pinned_fraction == 0.0
        assert s.guess_bits == 8.0 * (32 - 8) and s.recovered_ci == wilson_interval(0, 20 * 32)
    assert "difference_learnt_fraction" not in r.per_k[0].extra
    assert r.per_k[1].extra["difference_learnt_fraction"] == 1.0
    noisy = repeated_enrolment_attack("code-offset", 2, 20, 0, n=32, t=4, error_rate=0.4)
    assert noisy.per_k[1].extra["difference_learnt_fraction"] < 0.5
    assert noisy.per_k[1].recovered_fraction == 0.0


def test_pinsketch_reveals_differences_not_the_set() -> None:
    bits = math.log2(math.comb(255, 8)) - 32
    clean = repeated_enrolment_attack("pinsketch", 2, 10, 0, m=8, t=4, set_size=8, error_rate=0.0)
    assert clean.per_k[1].extra["difference_learnt_fraction"] == 1.0
    noisy = repeated_enrolment_attack("pinsketch", 3, 20, 0, m=8, t=4, set_size=8, error_rate=0.3)
    for s in clean.per_k + noisy.per_k:
        assert s.recovered_fraction == 0.0 and s.guess_bits == pytest.approx(bits)
    assert 0.0 < noisy.per_k[2].extra["difference_learnt_fraction"] < 1.0


def test_to_dict_is_json() -> None:
    r = repeated_enrolment_attack("asymmetric-interval/s1", 2, 5, 0)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["scheme"] == "asymmetric-interval/s1" and [x["k"] for x in d["per_k"]] == [1, 2]


# -- bad arguments -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, options",
    [
        (("interval", 0, 5, 0), {}),
        (("interval", 1.5, 5, 0), {}),
        (("interval", 2, 0, 0), {}),
        (("interval", 2, 5, -1), {}),
        (("interval", True, 5, 0), {}),
        (("fuzzy-vault", 2, 5, 0), {}),
        ((42, 2, 5, 0), {}),
        (("interval", 3, 5, 0), {"tolerances": [3, 4]}),
        (("interval", 2, 5, 0), {"tolerances": "34"}),
        (("interval", 2, 5, 0), {"noise": -0.1}),
        (("interval", 2, 5, 0), {"noise": float("nan")}),
        (("interval", 2, 5, 0), {"colour": "red"}),
        (("interval", 2, 100_000, 0), {"n": 1024, "features": 64}),
        (("code-offset", 2, 5, 0), {"error_rate": 1.5}),
        (("code-offset", 2, 5, 0), {"t": 20}),
        (("pinsketch", 2, 5, 0), {"set_size": 0}),
        (("asymmetric-interval/s2", 2, 5, 0), {"tau": 0}),
    ],
)
def test_bad_arguments_raise_parameter_error(args: tuple, options: dict) -> None:
    with pytest.raises(ParameterError):
        repeated_enrolment_attack(*args, **options)


# -- the attacks the descriptors name ----------------------------------------------------------------------
def test_each_target_runs_the_attack_its_descriptor_names() -> None:
    for d in descriptors().values():
        for key, name in d.repeated_attacks.items():
            assert name in ATTACKS, key
    s3 = repeated_enrolment_attack("asymmetric-interval/s3", 2, 3, 0, n=32, q=4, features=2)
    assert (s3.scheme, s3.attack) == ("asymmetric-interval/s3", "partition-intersection")
    assert s3.description == "even intervals (b, v) similar (tau) in all k partitions"
    assert s3.params["scheme"] == "s3"
    pin = repeated_enrolment_attack(PinSketch(8, 2), 2, 3, 0)
    assert (pin.scheme, pin.attack) == ("pinsketch", "difference-decoding")
    assert pin.description == "decode(s(A_1) xor s(A_i), {}) = A_1 delta A_i: differences only"
    co = repeated_enrolment_attack("code-offset", 2, 3, 0, n=8, t=2)
    assert co.description == "decode(S_1 xor S_i, 0) = w_1 xor w_i: differences only"
    with pytest.raises(ParameterError, match=r"no repeated-enrolment attack for 'fuzzy-vault'; known: .*pinsketch"):
        repeated_enrolment_attack("fuzzy-vault", 2, 3, 0)
    with pytest.raises(ParameterError, match="no repeated-enrolment attack for 'chaff-point'"):
        repeated_enrolment_attack(ChaffPointSketch(64, 4, 2), 2, 3, 0)
