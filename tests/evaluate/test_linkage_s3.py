"""Linkage of s3 sketches: the vectorised encoder, the parity adversary, and the targets.

The experiments draw people, noise and every sketch's randomness from one seeded generator, so
each accuracy below is an exact, reproducible number; the thresholds leave a margin of several
standard errors around the measured value (noted beside each) so the assertions do not hinge on
one seed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.linkage import (
    ADVERSARIES,
    LINKAGE_SCHEMES,
    LinkageSetup,
    ReenrolmentNoise,
    linkage_experiment,
    parity_bits,
    parity_linkage_score,
    s2_partitions_from_draws,
    s2_similar_interval_counts,
    s2_similar_intervals,
    s3_partitions_from_draws,
    simulate_s2_partitions,
)
from sketchauth.evaluate.repeated import repeated_enrolment_attack
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch


# -- the vectorised s3 encoder is the real encoder (test_linkage.py checks partitions for s2 and s3) --
@settings(max_examples=30, deadline=None)
@given(st.integers(4, 150), st.integers(1, 4), st.booleans(), st.integers(0, 2**32))
def test_vectorised_s3_counts_equal_reference(n: int, tau: int, even: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, min(n, 10) + 1))
    rows = 12
    make = lambda: simulate_s2_partitions(  # noqa: E731
        rng, rng.integers(0, n, rows), rng.integers(1, q + 1, rows), n, q, "s3"
    )
    a, b = make(), make()
    counts = s2_similar_interval_counts(a, b, tau, even_only=even)

    def keep(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = points[:-1], points[1:]
        mask = (hi - lo) % 2 == 0 if even else np.ones(lo.size, dtype=bool)
        return lo[mask], hi[mask]

    expected = []
    for i in range(rows):
        (la, ha), (lb, hb) = keep(a.points(i)), keep(b.points(i))
        close_w = np.abs((ha - la)[:, None] - (hb - lb)[None, :]) < 2 * tau
        close_c = np.abs((la + ha)[:, None] - (lb + hb)[None, :]) < 2 * tau
        expected.append(int(np.count_nonzero(close_w & close_c)))
    assert counts.tolist() == expected
    if not even:
        assert counts.tolist() == [s2_similar_intervals(a.points(i), b.points(i), tau) for i in range(rows)]


def test_doubled_and_plain_batches_do_not_mix() -> None:
    rng = np.random.default_rng(1)
    s2 = simulate_s2_partitions(rng, np.array([5]), np.array([1]), 20, 3)
    s3 = simulate_s2_partitions(rng, np.array([5]), np.array([1]), 20, 3, "s3")
    with pytest.raises(ParameterError, match="doubled"):
        s2_similar_interval_counts(s2, s3, 1)


# -- the parity adversary ---------------------------------------------------------------------------
def test_parity_bit_of_s2_is_the_parity_of_b_minus_v() -> None:
    rng = np.random.default_rng(3)
    b, v = rng.integers(0, 200, 500), rng.integers(1, 9, 500)
    batch, short = s2_partitions_from_draws(b, v, 200, rng.integers(1, 9, size=(500, 220)))
    assert not short.any()
    assert parity_bits(batch).tolist() == ((b - v) % 2).tolist()


def test_parity_bits_hand_example() -> None:
    sketch = AsymmetricIntervalSketch(20, 2, scheme="s3")
    # Partition −1 3 5 8 12 15 18 20: even intervals (−1, 3) (8, 12) (18, 20): lower ends −1, 8, 18
    # → two even, one odd → majority even (0).
    helper = sketch.encode_with(((10,), (2,)), (((3, 1, 2), (3, 3, 1)),))
    assert sketch.partition(helper)[0].tolist() == [-1, 3, 5, 8, 12, 15, 18, 20]
    draws = np.array([[3, 1, 2, 3, 3, 1]])
    batch, _ = s3_partitions_from_draws(np.array([10]), np.array([2]), 20, 2, draws)
    assert batch.points(0).tolist() == [-1, 3, 5, 8, 12, 15, 18, 20]
    assert parity_bits(batch).tolist() == [0]
    assert parity_linkage_score([[0, 1, 1]], [[0, 0, 1]]).tolist() == [2]


@pytest.mark.statistical  # 5000-20000 pairs per experiment: CI's serial phase
def test_parity_adversary_links_s2_but_not_s3_at_eight_features() -> None:
    # Identical re-enrolments, n = 1000, q = 5, 8 features, 5000 pairs each, seed 1.
    # Measured: s2 0.9983, s3 0.5144 (chance 0.5; the best threshold's selection bias and the
    # binomial error at 5000 pairs are each about 0.01).
    noise = ReenrolmentNoise.identical()
    s2 = linkage_experiment(LinkageSetup("s2", 1000, 5, 1, features=8, noise=noise, adversary="parity"), 5000, 1)
    s3 = linkage_experiment(LinkageSetup("s3", 1000, 5, 1, features=8, noise=noise, adversary="parity"), 5000, 1)
    assert s2.accuracy >= 0.9
    assert s3.accuracy <= 0.55
    assert s3.to_dict()["adversary"] == "parity"


@pytest.mark.statistical  # 5000-20000 pairs per experiment: CI's serial phase
def test_similar_interval_target_of_s3() -> None:
    # linkage_experiment("s3", n=1000, q=5, tau=1, pairs=20000): measured 0.5693 (s2: 0.7524).
    s3 = linkage_experiment(LinkageSetup("s3", 1000, 5, 1), 20000, 1)
    assert s3.accuracy <= 0.62
    assert linkage_experiment(LinkageSetup("s2", 1000, 5, 1), 20000, 1).accuracy >= 0.72
    # The adaptive adversary that counts only even (possible secret) intervals does better, but
    # still within the target at one feature: measured 0.6062.
    even = linkage_experiment(LinkageSetup("s3", 1000, 5, 1, adversary="similar-even-intervals"), 20000, 1)
    assert s3.accuracy < even.accuracy <= 0.62


def test_s3_still_links_with_many_features() -> None:
    # What s3 does not hide: the secret interval recurs in both enrolments of one person, so the
    # evidence adds up over features (measured at 8 features, 2000 pairs: 0.70 similar intervals).
    one = linkage_experiment(LinkageSetup("s3", 1000, 5, 1, noise=ReenrolmentNoise.identical()), 2000, 2)
    eight = linkage_experiment(LinkageSetup("s3", 1000, 5, 1, features=8, noise=ReenrolmentNoise.identical()), 2000, 2)
    assert eight.accuracy > one.accuracy + 0.05


def test_adversary_argument_is_checked() -> None:
    assert LINKAGE_SCHEMES == ("s1", "s2", "s3")
    assert ADVERSARIES["s3"][0] == "similar-intervals"
    with pytest.raises(ParameterError, match="adversary for s1"):
        linkage_experiment(LinkageSetup("s1", 100, 5, 1, adversary="parity"), 10, 1)
    with pytest.raises(ParameterError, match="adversary for s3"):
        linkage_experiment(LinkageSetup("s3", 100, 5, 1, adversary="tolerances"), 10, 1)


def test_cli_runs_the_parity_adversary_on_s3(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "evaluate",
        "linkage",
        "--scheme",
        "s3",
        "--n",
        "200",
        "--q",
        "5",
        "--tau",
        "1",
        "--pairs",
        "500",
        "--seed",
        "3",
    ]
    assert main([*args, "--features", "4", "--adversary", "parity"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = linkage_experiment(LinkageSetup("s3", 200, 5, 1, features=4, adversary="parity"), 500, 3).to_dict()
    assert out["accuracy"] == expected["accuracy"] and out["adversary"] == "parity"


# -- repeated enrolments ------------------------------------------------------------------------------
def test_repeated_enrolments_pin_s3_as_they_pin_s2() -> None:
    # The real encoder draws from os.urandom, so this is statistical: 200 people × 16 features,
    # n = 64, q = 8, noise-free captures. Measured: s2 0.71, s3 0.74 of the features pinned to the
    # true (b, v) by two enrolments; the bounds are > 5 standard errors (0.008) away.
    result = repeated_enrolment_attack("asymmetric-interval/s3", 2, 200, 1, noise=0.0)
    assert result.scheme == "asymmetric-interval/s3"
    # One enrolment pins a feature only when its partition happens to hold a single even interval
    # around the template (seen once in 3,200 features on CI): rare, not impossible.
    assert result.per_k[0].recovered_fraction < 0.005
    assert 0.6 < result.per_k[1].recovered_fraction < 0.85
