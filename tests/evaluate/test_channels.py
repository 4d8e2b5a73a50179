"""Exact channel measures: likelihood ratios, L1 distances and DP on an adjacency graph."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.entropy import average_case_level, worst_case_level
from sketchauth.errors import ParameterError
from sketchauth.evaluate import channels as C

alphas = st.fractions(min_value=Fraction(1, 50), max_value=Fraction(49, 50)).filter(lambda a: 0 < a < 1)


@settings(max_examples=40, deadline=None)
@given(alpha=alphas, secrets=st.integers(2, 6), extra=st.integers(0, 3))
def test_truncated_geometric_levels_in_closed_form(alpha: Fraction, secrets: int, extra: int) -> None:
    W = C.truncated_geometric(secrets, alpha, secrets + extra)
    assert all(sum(row) == 1 for row in W)
    # Rows x and x' differ by the factor α^-|x−x'| on the outputs outside them: ε = (N−1)·log(1/α).
    assert C.max_ratio(W) == alpha ** -(secrets - 1)
    assert C.graph_ratio(W, C.path_edges(secrets)) == 1 / alpha
    assert C.pair_ratio(W, 0, secrets - 1) == C.max_ratio(W)
    # The float measures of sketchauth.entropy agree with the exact ones.
    Wf = np.array([[float(p) for p in row] for row in W])
    assert worst_case_level(Wf) == pytest.approx(float(np.log2(float(C.max_ratio(W)))), rel=1e-9)
    assert average_case_level(Wf) == pytest.approx(float(np.log2(float(C.max_l1(W)) / 2 + 1)), rel=1e-9)


def test_hamming_square_and_assignments() -> None:
    assert C.hamming_edges(2) == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert len(C.hamming_edges(3)) == 12
    W = C.truncated_geometric(4, Fraction(1, 2))
    ratio, labelling = C.best_assignment(W, C.hamming_edges(2))
    assert ratio == 4 and sorted(labelling) == [0, 1, 2, 3]
    assert C.best_assignment(W, C.path_edges(4))[0] == 2


def test_unbounded_ratios_and_validation() -> None:
    W = [[Fraction(1, 2), Fraction(1, 2), 0], [0, Fraction(1, 2), Fraction(1, 2)]]
    assert C.pair_ratio(W, 0, 1) is None and C.max_ratio(W) is None
    assert C.best_assignment(W, [(0, 1)]) == (None, (0, 1))
    assert C.max_l1(W) == 1
    assert C.pair_ratio([[1, 0], [1, 0]], 0, 1) == 1  # a column zero in both rows is never observed
    with pytest.raises(ParameterError):
        C.max_ratio([[Fraction(1, 2), Fraction(1, 3)], [1, 0]])  # a row that does not sum to 1
    with pytest.raises(ParameterError):
        C.max_ratio([[1]])
    with pytest.raises(ParameterError):
        C.truncated_geometric(3, Fraction(1))
    with pytest.raises(ParameterError):
        C.truncated_geometric(3, Fraction(1, 2), outputs=2)
    with pytest.raises(ParameterError):
        C.best_assignment(W, [(0, 5)])
    with pytest.raises(ParameterError):
        C.best_assignment([[1]] * 9, [(0, 1)])
