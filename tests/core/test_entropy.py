"""Exact values of the min-entropy toolkit on hand-computable distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sketchauth import entropy as E
from sketchauth.errors import ParameterError
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch


def test_min_entropy_of_skewed_distribution() -> None:
    assert E.min_entropy([0.5, 0.25, 0.25]) == 1.0
    assert E.min_entropy(np.full(8, 1 / 8)) == 3.0


def test_avg_min_entropy_and_loss() -> None:
    joint = np.array([[0.25, 0.25], [0.5, 0.0]])
    # Σ_b max_a = 0.5 + 0.25 = 0.75
    assert E.avg_min_entropy(joint) == pytest.approx(-math.log2(0.75), abs=1e-12)
    assert E.entropy_loss(joint) == pytest.approx(math.log2(1.5), abs=1e-12)


def test_loss_is_at_most_observation_bits() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        joint = rng.random((6, 4))
        joint /= joint.sum()
        assert 0.0 <= E.entropy_loss(joint) <= 2.0 + 1e-12


def test_channel_leakage_identity_and_constant() -> None:
    prior = np.full(4, 0.25)
    assert E.channel_leakage(np.eye(4), prior) == pytest.approx(2.0)
    assert E.channel_leakage(np.full((4, 3), 1 / 3), prior) == pytest.approx(0.0)


def test_channel_leakage_matches_joint_loss() -> None:
    W = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.25, 0.5]])
    prior = np.array([0.5, 0.25, 0.25])
    assert E.channel_leakage(W, prior) == pytest.approx(E.entropy_loss(W * prior[:, None]))


def test_worst_case_level() -> None:
    W = np.array([[0.5, 0.5], [0.25, 0.75]])
    assert E.worst_case_level(W) == pytest.approx(1.0)  # column 0: 0.5 / 0.25
    assert E.worst_case_level(np.eye(2)) == math.inf
    # a column never observed is ignored
    assert E.worst_case_level(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])) == 0.0


def test_average_case_level() -> None:
    W = np.array([[0.5, 0.5], [0.25, 0.75]])
    assert E.average_case_level(W) == pytest.approx(math.log2(1.25))
    assert E.average_case_level(np.eye(3)) == pytest.approx(1.0)


def test_chernoff_information_values() -> None:
    assert E.chernoff_information([0.9, 0.1], [0.1, 0.9]) == pytest.approx(-math.log2(0.6), abs=1e-9)
    assert E.chernoff_information([0.3, 0.7], [0.3, 0.7]) == pytest.approx(0.0, abs=1e-12)
    assert E.chernoff_information([0.5, 0.5], [1.0, 0.0]) == pytest.approx(1.0, abs=1e-9)
    assert E.chernoff_information([1.0, 0.0], [0.0, 1.0]) == math.inf


def test_repeated_observation_rate_is_worst_pair() -> None:
    W = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    expected = min(
        E.chernoff_information(W[0], W[2]),
        E.chernoff_information(W[1], W[2]),
        E.chernoff_information(W[0], W[1]),
    )
    assert E.repeated_observation_rate(W) == pytest.approx(expected)
    assert E.repeated_observation_rate(W) < E.chernoff_information(W[0], W[1])


def test_sketch_loss_bound() -> None:
    assert E.sketch_loss_bound(10, 3) == 7.0
    assert E.sketch_loss_bound(3, 10) == 0.0
    with pytest.raises(ParameterError):
        E.sketch_loss_bound(-1, 0)
    with pytest.raises(ParameterError):
        E.sketch_loss_bound(math.nan, 0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: E.min_entropy([0.5, 0.6]),
        lambda: E.min_entropy([[0.5, 0.5]]),
        lambda: E.min_entropy([1.5, -0.5]),
        lambda: E.min_entropy([math.nan, 1.0]),
        lambda: E.min_entropy([]),
        lambda: E.avg_min_entropy([0.5, 0.5]),
        lambda: E.channel_leakage([[0.5, 0.4]], [1.0]),
        lambda: E.channel_leakage(np.eye(2), [1.0]),
        lambda: E.chernoff_information([1.0], [0.5, 0.5]),
        lambda: E.repeated_observation_rate([[1.0]]),
    ],
)
def test_invalid_inputs_raise_value_errors(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_exact_interval_loss_meets_bound_exactly() -> None:
    # b uniform on [0, 8), S = b mod 3: P_succ = 3/8, so the loss is log2 3 = the bound.
    sketch = IntervalSketch(n=8, v=2)
    secrets = [[b] for b in range(8)]
    assert E.exact_sketch_loss(sketch, secrets) == pytest.approx(math.log2(3))
    assert sketch.report().loss_bound_bits == pytest.approx(math.log2(3))


def test_exact_interval_loss_with_skewed_prior() -> None:
    sketch = IntervalSketch(n=6, v=2)
    prior = np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
    # classes mod 3: {0,3}: max .5, {1,4}: .1, {2,5}: .1 -> P_succ = .7, max prior .5
    loss = E.exact_sketch_loss(sketch, [[b] for b in range(6)], prior)
    assert loss == pytest.approx(math.log2(0.7 / 0.5))
    assert loss <= sketch.report().loss_bound_bits


def test_exact_joint_columns_are_distinct_helpers() -> None:
    sketch = IntervalSketch(n=8, v=2)
    joint, helpers = E.exact_joint(sketch, [[b] for b in range(8)])
    assert joint.shape == (8, 3)
    assert len(set(helpers)) == 3
    assert joint.sum() == pytest.approx(1.0)


def test_exact_code_offset_loss_within_bound() -> None:
    sketch = CodeOffsetSketch(n=3, t=1)  # k = 1: 256 random messages per secret
    secrets = [bytes([a, b, 0]) for a in (0, 1) for b in (0, 7)]
    loss = E.exact_sketch_loss(sketch, secrets)
    # Two secrets share a helper only if they differ by a codeword; these differ in at most two
    # bytes and the code's minimum distance is 3, so every helper names its secret: all 2 bits.
    assert loss == pytest.approx(2.0)
    assert loss <= sketch.report().loss_bound_bits


def test_exact_joint_rejects_bad_prior() -> None:
    with pytest.raises(ParameterError):
        E.exact_joint(IntervalSketch(n=4, v=1), [[0], [1]], [1.0])
    with pytest.raises(ParameterError):
        E.exact_joint(IntervalSketch(n=4, v=1), [])


def test_a_security_rate_is_the_max_over_pairs() -> None:
    W = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    # the farthest pair is symmetric: λ = 1/2, Σ sqrt(p q) = 2·0.3 = 0.6
    assert E.a_security_rate(W) == pytest.approx(-math.log2(0.6), abs=1e-9)
    assert E.a_security_rate(W) == pytest.approx(E.chernoff_information(W[0], W[1]))
    assert E.repeated_observation_rate(W) < E.a_security_rate(W)
    two = W[:2]
    assert E.a_security_rate(two) == pytest.approx(E.repeated_observation_rate(two))
    assert E.a_security_rate(np.eye(3)) == math.inf
    with pytest.raises(ParameterError):
        E.a_security_rate([[1.0]])


def _truncated_geometric(secrets: int, alpha: float) -> np.ndarray:
    x, y = np.arange(secrets)[:, None], np.arange(secrets)[None, :]
    W = (1 - alpha) / (1 + alpha) * alpha ** np.abs(y - x).astype(float)
    W[:, 0] = alpha ** np.arange(secrets) / (1 + alpha)
    W[:, -1] = alpha ** (secrets - 1 - np.arange(secrets)) / (1 + alpha)
    return W


def test_min_and_max_rates_of_the_geometric_mechanism() -> None:
    for secrets in range(2, 9):
        W = _truncated_geometric(secrets, 0.5)
        # adjacent rows: log2((1 + α)/(2√α)) = log2 3 − 3/2 at α = 1/2, whatever the truncation
        assert E.repeated_observation_rate(W) == pytest.approx(math.log2(3) - 1.5, abs=1e-9)
        assert E.a_security_rate(W) >= E.repeated_observation_rate(W) - 1e-12
    assert E.a_security_rate(_truncated_geometric(4, 0.5)) == pytest.approx(0.5, abs=1e-9)
