"""The s1 report's exact sketch size is a closed form: it summed q terms, so q = 2^40 never returned.

Through the service, ``{"scheme": "asymmetric-interval", "params": {"n": 2**40, "q": 2**40,
"scheme": "s1"}}`` (both within the published bounds) held a worker forever in ``report()``.
"""

from __future__ import annotations

import math

from sketchauth.sketches.asymmetric import MAX_N, AsymmetricIntervalSketch


def test_exact_sketch_bits_match_the_sum_over_every_tolerance() -> None:
    for n in range(2, 41):
        for q in range(1, n + 1):
            values = sum(min(2 * v - 1, n) for v in range(1, q + 1))  # (v, b mod (2v - 1)) pairs
            report = AsymmetricIntervalSketch(n=n, q=q, scheme="s1", features=3).report()
            assert report.extra["exact_sketch_bits"] == 3 * math.log2(values)


def test_largest_parameters_report_at_once() -> None:
    report = AsymmetricIntervalSketch(n=MAX_N, q=MAX_N, scheme="s1").report()
    # k = 2^39 odd tolerances below n sum to k^2; the other q - k values of v give n residues each.
    k = (MAX_N + 1) // 2
    assert report.extra["exact_sketch_bits"] == math.log2(k * k + (MAX_N - k) * MAX_N)
