"""Small channel matrices in exact arithmetic: likelihood ratios, L1 distances, DP on a graph (Boreale–Paolini).

A mechanism is a row-stochastic matrix ``W[x][y] = p(y|x)`` (rows: secrets or databases,
columns: observations). When its entries are rational, every security level of Boreale and
Paolini is a ratio or a sum of entries, so it is computed here with :class:`~fractions.Fraction`
and the verdicts about it are exact (the float versions, for any matrix, are in
:mod:`sketchauth.entropy`):

* the worst-case level ``ε = log2 max_y max_{x,x'} W[x][y] / W[x'][y]``: :func:`max_ratio`
  returns the ratio ``2^ε`` itself (``None`` when a column has a zero next to a non-zero);
* the A-security level ``log2(l/2 + 1)`` with ``l = max_{x,x'} ‖W_x − W_x'‖₁``: :func:`max_l1`;
* ε-differential privacy is the same ratio restricted to *adjacent* rows: :func:`graph_ratio`
  takes the largest ratio over the edges of an adjacency graph, and :func:`best_assignment`
  tries every assignment of the rows to the graph's vertices (is there *any* labelling of the
  databases under which the claim holds?);
* :func:`truncated_geometric` builds the truncated geometric mechanism exactly.

Example::

    >>> W = truncated_geometric(4, Fraction(1, 2))
    >>> W[0]
    (Fraction(2, 3), Fraction(1, 6), Fraction(1, 12), Fraction(1, 12))
    >>> max_ratio(W), max_l1(W)
    (Fraction(8, 1), Fraction(4, 3))
    >>> graph_ratio(W, path_edges(4)), best_assignment(W, hamming_edges(2))[0]
    (Fraction(2, 1), Fraction(4, 1))
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

from sketchauth.errors import ParameterError
from sketchauth.sketches.params import check_int

__all__ = [
    "Channel",
    "best_assignment",
    "graph_ratio",
    "hamming_edges",
    "max_l1",
    "max_ratio",
    "pair_ratio",
    "path_edges",
    "truncated_geometric",
]

#: A channel matrix of exact probabilities: a tuple of rows, each a tuple of Fractions.
Channel = tuple[tuple[Fraction, ...], ...]
#: :func:`best_assignment` tries every permutation of the rows: at most this many rows.
MAX_ASSIGNMENT_ROWS = 8


def _channel(W: Sequence[Sequence[Fraction | int]]) -> Channel:
    rows = tuple(tuple(Fraction(p) for p in row) for row in W)
    if len(rows) < 2 or any(len(r) != len(rows[0]) for r in rows) or not rows[0]:
        raise ParameterError("a channel needs at least two rows of the same positive length")
    for i, row in enumerate(rows):
        if any(p < 0 for p in row) or sum(row) != 1:
            raise ParameterError(f"row {i} of the channel is not a probability distribution (sum {sum(row)})")
    return rows


def truncated_geometric(secrets: int, alpha: Fraction, outputs: int | None = None) -> Channel:
    """The truncated geometric mechanism on ``{0, …, secrets−1}`` with outputs ``{0, …, outputs−1}``.

    ``p(y|x) = (1−α)/(1+α)·α^|y−x|`` for interior outputs; the end outputs collect the tails,
    ``p(0|x) = α^x/(1+α)`` and ``p(M−1|x) = α^(M−1−x)/(1+α)`` (``M = outputs``, default
    ``secrets``; Ghosh–Roughgarden–Sundararajan's truncation, as in Boreale–Paolini's Corollary 1).
    Rows sum to exactly 1.
    """
    n = check_int("secrets", secrets, 2)
    m = check_int("outputs", n if outputs is None else outputs, n)
    a = Fraction(alpha)
    if not 0 < a < 1:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    rows = []
    for x in range(n):
        row = [(1 - a) / (1 + a) * a ** abs(y - x) for y in range(m)]
        row[0] = a**x / (1 + a)
        row[-1] = a ** (m - 1 - x) / (1 + a)
        rows.append(tuple(row))
    return tuple(rows)


def pair_ratio(W: Sequence[Sequence[Fraction | int]], x: int, x2: int) -> Fraction | None:
    """``max_y max(W[x][y]/W[x2][y], W[x2][y]/W[x][y])``; ``None`` (unbounded) for a zero beside a non-zero."""
    rows = _channel(W)
    worst = Fraction(1)
    for p, q in zip(rows[x], rows[x2], strict=True):
        if p == q == 0:
            continue
        if p == 0 or q == 0:
            return None
        worst = max(worst, p / q, q / p)
    return worst


def max_ratio(W: Sequence[Sequence[Fraction | int]]) -> Fraction | None:
    """``2^ε``: the largest likelihood ratio between any two rows in any column (``None``: unbounded)."""
    rows = _channel(W)
    return graph_ratio(rows, list(itertools.combinations(range(len(rows)), 2)))


def max_l1(W: Sequence[Sequence[Fraction | int]]) -> Fraction:
    """``l = max_{x,x'} ‖W_x − W_x'‖₁`` (the A-security level is ``log2(l/2 + 1)``)."""
    rows = _channel(W)
    return max(
        sum((abs(p - q) for p, q in zip(a, b, strict=True)), Fraction(0)) for a, b in itertools.combinations(rows, 2)
    )


def graph_ratio(W: Sequence[Sequence[Fraction | int]], edges: Sequence[tuple[int, int]]) -> Fraction | None:
    """The largest :func:`pair_ratio` over ``edges`` (pairs of row indices): ``2^ε`` of ε-DP on that graph."""
    rows = _channel(W)
    worst = Fraction(1)
    for x, x2 in edges:
        r = pair_ratio(rows, x, x2)
        if r is None:
            return None
        worst = max(worst, r)
    return worst


def path_edges(vertices: int) -> list[tuple[int, int]]:
    """Edges ``(i, i+1)`` of the path on ``vertices`` vertices."""
    return [(i, i + 1) for i in range(check_int("vertices", vertices, 2) - 1)]


def hamming_edges(individuals: int) -> list[tuple[int, int]]:
    """Edges of the Hamming graph on ``{0,1}^individuals`` (databases differing in one individual's bit)."""
    k = check_int("individuals", individuals, 1, 3)
    return [(u, u | 1 << i) for u in range(1 << k) for i in range(k) if not u >> i & 1]


def best_assignment(
    W: Sequence[Sequence[Fraction | int]], edges: Sequence[tuple[int, int]]
) -> tuple[Fraction | None, tuple[int, ...]]:
    """The smallest :func:`graph_ratio` over every assignment of the rows to the graph's vertices.

    Returns ``(ratio, assignment)`` with ``assignment[vertex] = row`` for a best labelling
    (``None`` as the ratio when every labelling is unbounded). Exhaustive: at most
    :data:`MAX_ASSIGNMENT_ROWS` rows.
    """
    rows = _channel(W)
    if len(rows) > MAX_ASSIGNMENT_ROWS:
        raise ParameterError(f"{len(rows)} rows: at most {MAX_ASSIGNMENT_ROWS} for an exhaustive assignment")
    if any(not (0 <= u < len(rows) and 0 <= v < len(rows)) for u, v in edges):
        raise ParameterError(f"edges must join vertices 0 … {len(rows) - 1}")
    best: tuple[Fraction | None, tuple[int, ...]] = (None, tuple(range(len(rows))))
    for perm in itertools.permutations(range(len(rows))):
        r = graph_ratio(rows, [(perm[u], perm[v]) for u, v in edges])
        if r is not None and (best[0] is None or r < best[0]):
            best = (r, perm)
    return best
