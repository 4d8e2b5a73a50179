"""Timing of one benchmarked operation: the budgeted median the benchmark scripts report.

Each benchmark script keeps its own budget and repetition bounds (they say how long that script
may run) and passes them in; this module holds only the measuring loop, so every table in the
README that says "median ms" was measured the same way.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], *, budget_seconds: float, min_repeats: int, max_repeats: int) -> float:
    """Median wall time of ``fn()`` in milliseconds (after one untimed warm-up call).

    ``fn`` runs at least ``min_repeats`` times, then again until ``budget_seconds`` of timed
    calls have been spent, but never more than ``max_repeats`` times: cheap operations get many
    samples, slow ones stay within the budget. The warm-up call keeps first-use costs (imports,
    caches) out of the median.

    >>> median_ms(lambda: None, budget_seconds=0.0, min_repeats=3, max_repeats=3) >= 0.0
    True
    """
    fn()
    times: list[float] = []
    spent = 0.0
    while len(times) < max_repeats and (len(times) < min_repeats or spent < budget_seconds):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return 1000.0 * statistics.median(times)
