"""Exact privacy breaches of Boreale and Paolini's definitions, and the matrices of their examples.

Everything here is exact (:class:`~fractions.Fraction`): a *breach ratio* is ``2^level`` of
Definition 2 (003, line 147), ``max_y max(p(Q|y)/p(Q), p(Q)/p(Q|y))`` for a prior and a set ``Q``
of secrets; the worst-case level of a channel (Theorem 1) is the largest likelihood ratio of two
rows in a column (:func:`sketchauth.evaluate.channels.max_ratio`).

>>> W = example2_matrix()
>>> W[0]
(Fraction(2, 3), Fraction(1, 6), Fraction(1, 12), Fraction(1, 24), Fraction(1, 48), Fraction(1, 48))
>>> sup_breach_ratio(W, individual_set(2, 0))
Fraction(8, 1)
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from fractions import Fraction

from sketchauth.errors import ParameterError
from sketchauth.evaluate.channels import Channel, pair_ratio, truncated_geometric

__all__ = [
    "breach_ratio",
    "example1_matrix",
    "example1_mechanism",
    "example2_matrix",
    "example2_printed_row0",
    "individual_set",
    "product_channel",
    "random_channel",
    "randomized_response",
    "sup_breach_ratio",
    "two_point_prior",
]


def example1_matrix(entry: Fraction = Fraction(1, 12)) -> Channel:
    """Example 1's matrix as printed (003, line 165): 0.25 on ``x−1, x, x+1`` (mod 6), the rest ``entry``.

    The printed entries are 0.2500 and 0.0833; ``entry = Fraction(1, 12)`` reads 0.0833 as
    ``1/12`` (the rows then sum to 1), ``Fraction("0.0833")`` takes the four printed digits.
    """
    return tuple(
        tuple(Fraction(1, 4) if (y - x) % 6 in (0, 1, 5) else Fraction(entry) for y in range(6)) for x in range(6)
    )


def example1_mechanism() -> Channel:
    """Example 1's mechanism as its text describes it (003, line 163), computed exactly.

    ``Y = ⌊X + ξ⌋ mod 6`` on ``X = {0, …, 5}``: with probability ½, ξ uniform on ``{−½, ½}``;
    with probability ½, ξ uniform on ``X``.
    """
    rows = []
    for x in range(6):
        row = [Fraction(0)] * 6
        for xi in (Fraction(-1, 2), Fraction(1, 2)):
            row[math.floor(x + xi) % 6] += Fraction(1, 4)
        for shift in range(6):
            row[(x + shift) % 6] += Fraction(1, 12)
        rows.append(tuple(row))
    return tuple(rows)


def example2_printed_row0() -> tuple[Fraction, ...]:
    """The first row of Example 2's matrix as printed (003, line 205), ``1/64`` included."""
    return (Fraction(2, 3), Fraction(1, 6), Fraction(1, 12), Fraction(1, 64), Fraction(1, 48), Fraction(1, 48))


def example2_matrix() -> Channel:
    """Example 2's matrix with ``1/24`` for the printed ``1/64`` (003, line 205).

    Exactly the truncated geometric mechanism with ``α = ½`` on four secrets and six outputs
    (every other printed entry agrees with it): rows ``x = 0 … 3`` are the databases
    ``00, 01, 10, 11`` of ``{0, 1}^2`` (bit ``i`` of ``x`` is individual ``i``).
    """
    return truncated_geometric(4, Fraction(1, 2), 6)


def individual_set(individuals: int, i: int) -> frozenset[int]:
    """``Q_i``: the databases of ``{0,1}^individuals`` containing individual ``i`` (003, line 191)."""
    return frozenset(x for x in range(1 << individuals) if x >> i & 1)


def randomized_response(individuals: int, ratio: Fraction) -> Channel:
    """Each individual's bit reported truly with probability ``ratio/(1 + ratio)``, independently.

    Rows and columns are the databases of ``{0,1}^individuals``; adjacent rows (one bit apart)
    differ by the factor ``ratio`` in every column (``log2 ratio``-DP), the row of a database and
    of its complement by ``ratio^individuals``.
    """
    keep = Fraction(ratio) / (1 + Fraction(ratio))
    size = 1 << individuals
    return tuple(
        tuple(
            math.prod(
                (keep if (x >> j & 1) == (y >> j & 1) else 1 - keep for j in range(individuals)), start=Fraction(1)
            )
            for y in range(size)
        )
        for x in range(size)
    )


def product_channel(W: Channel, observations: int) -> Channel:
    """The channel of ``observations`` independent observations (columns: output sequences)."""
    return tuple(
        tuple(math.prod(seq, start=Fraction(1)) for seq in itertools.product(row, repeat=observations)) for row in W
    )


def random_channel(rows: int, outputs: int, rng: random.Random) -> Channel:
    """A strictly positive channel with random rational entries (weights 1 … 20, normalised)."""
    out = []
    for _ in range(rows):
        weights = [rng.randint(1, 20) for _ in range(outputs)]
        total = sum(weights)
        out.append(tuple(Fraction(w, total) for w in weights))
    return tuple(out)


def breach_ratio(W: Sequence[Sequence[Fraction]], prior: Sequence[Fraction], Q: frozenset[int]) -> Fraction | None:
    """``2^level`` of the worst-case breach of ``Q`` under ``prior`` (Definition 2); ``None`` when unbounded.

    ``max`` over outputs of positive probability of ``max(p(Q|y)/p(Q), p(Q)/p(Q|y))``.
    """
    p_q = sum((prior[x] for x in Q), Fraction(0))
    if p_q == 0:
        raise ParameterError("the prior gives Q probability 0")
    worst = Fraction(1)
    for y in range(len(W[0])):
        p_y = sum((prior[x] * W[x][y] for x in range(len(W))), Fraction(0))
        if p_y == 0:
            continue
        p_q_y = sum((prior[x] * W[x][y] for x in Q), Fraction(0)) / p_y
        if p_q_y == 0:
            return None
        worst = max(worst, p_q_y / p_q, p_q / p_q_y)
    return worst


def sup_breach_ratio(W: Channel, Q: frozenset[int]) -> Fraction | None:
    """The supremum over priors of :func:`breach_ratio` for ``Q``: the largest ratio of a row in ``Q`` and one outside.

    A prior with mass ``δ`` on the row of ``Q`` and ``1 − δ`` on the row outside approaches it as
    ``δ → 0`` (:func:`breach_ratio` at such priors shows it); no prior exceeds it, since
    ``p(y|Q)/p(y|Q^c)`` is a ratio of mixtures of the rows on either side.
    """
    outside = [x for x in range(len(W)) if x not in Q]
    if not Q or not outside:
        return Fraction(1)
    worst = Fraction(1)
    for x in Q:
        for x2 in outside:
            r = pair_ratio(W, x, x2)
            if r is None:
                return None
            worst = max(worst, r)
    return worst


def two_point_prior(size: int, inside: int, outside: int, delta: Fraction) -> tuple[Fraction, ...]:
    """The prior with mass ``delta`` on ``inside`` and ``1 − delta`` on ``outside``."""
    prior = [Fraction(0)] * size
    prior[inside], prior[outside] = Fraction(delta), 1 - Fraction(delta)
    return tuple(prior)
