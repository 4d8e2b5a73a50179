"""Helpers the tests share: the command-line runs many tests make the same way, the enumerations
and priors of the exact-accounting tests, and strategies of hostile input.

Importable as ``_helpers`` from every test module: pytest puts ``tests/`` on ``sys.path`` when it
loads ``tests/conftest.py`` (the default ``prepend`` import mode; the test folders have no
``__init__.py``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from sketchauth.cli import main
from sketchauth.sketches.asymmetric import s3_odd_gap

#: Arbitrary JSON values (nested lists and objects, huge integers, floats, short strings): what a
#: hostile parameter or helper-record field may hold.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


def features_fit(data: Path, out: Path, *args: str) -> int:
    """``sketchauth features fit --data DATA --out OUT ARGS``: its exit status."""
    return main(["features", "fit", "--data", str(data), "--out", str(out), *args])


def features_evaluate(transform: Path, background: Path, out: Path, *args: str) -> int:
    """``sketchauth features evaluate --transform T --background B --out OUT ARGS``: its exit status."""
    return main(
        [
            "features",
            "evaluate",
            "--transform",
            str(transform),
            "--background",
            str(background),
            "--out",
            str(out),
            *args,
        ]
    )


def evaluate_report(out: Path, *args: str) -> int:
    """``sketchauth evaluate report ARGS --out OUT`` as tests run it: no plots, quiet, fast ``test`` hash profile."""
    return main(["evaluate", "report", *args, "--out", str(out), "--no-plots", "--quiet", "--profile", "test"])


def all_asymmetric_secrets(n: int, q: int, features: int = 1) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every secret ``(b, v)`` of an asymmetric sketch: per feature ``b`` in ``[0, n)``, ``v`` in ``[1, q]``."""
    per_feature = [(b, v) for b in range(n) for v in range(1, q + 1)]
    return [
        (tuple(x[0] for x in combo), tuple(x[1] for x in combo))
        for combo in itertools.product(per_feature, repeat=features)
    ]


def priors(count: int) -> list[np.ndarray | None]:
    """Priors over ``count`` secrets for exact-loss checks: uniform (``None``), geometric, spiky, Dirichlet."""
    rng = np.random.default_rng(7)
    geometric = 0.5 ** np.arange(count)
    spiky = np.ones(count)
    spiky[count // 3] = count  # one secret far more likely than the rest
    return [None, geometric / geometric.sum(), spiky / spiky.sum(), rng.dirichlet(np.full(count, 0.3))]


def asymmetric_gap(r: int, q: int) -> int:
    """The gap of an asymmetric encoder's draw ``r``: ``2r`` for ``r <= q`` (every s2 draw), else s3's odd gap."""
    return 2 * r if r <= q else s3_odd_gap(q)


def randomness_from_draws(b: int, v: int, n: int, q: int, draws: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Split one row of iid draws into the ``(left, right)`` randomness the real s2/s3 encoder consumes."""
    left: list[int] = []
    need, t = b - v, 0
    while need > 0:
        left.append(int(draws[t]))
        need -= asymmetric_gap(int(draws[t]), q)
        t += 1
    right: list[int] = []
    need = n - b - v
    while need > 0:
        right.append(int(draws[t]))
        need -= asymmetric_gap(int(draws[t]), q)
        t += 1
    return (tuple(left), tuple(right))
