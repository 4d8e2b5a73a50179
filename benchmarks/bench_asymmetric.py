"""Speed of the asymmetric interval sketches and of the linkage experiment.

Run ``python3 benchmarks/bench_asymmetric.py`` (about a minute on a 2-core machine, most of it
the 10^6-pair s2 linkage run; ``--pairs`` makes that smaller). Prints a Markdown table:

* median ``encode`` and ``decode`` (helper bytes in, ``(b, v)`` out) of
  ``AsymmetricIntervalSketch(n=1000, q=16, scheme, features)`` for 64–512 features. ``encode``
  includes drawing s2's randomness from ``os.urandom`` and writing the helper record; ``decode``
  includes the strict parse of the helper;
* wall time of ``linkage_experiment(scheme, n=1000, q=16, tau=2, pairs)`` (``pairs`` mated and
  ``pairs`` non-mated comparisons), one run each.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks import timing  # noqa: E402
from sketchauth.evaluate.linkage import LinkageSetup, linkage_experiment  # noqa: E402
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch  # noqa: E402

N, Q, TAU = 1000, 16, 2
FEATURES = (64, 128, 256, 512)
#: time budget per timed operation (seconds) and bounds on the repetitions
BUDGET_SECONDS = 0.5
MIN_REPEATS = 5
MAX_REPEATS = 500


def median_ms(fn: Callable[[], object]) -> float:
    """Median wall time of ``fn()`` in milliseconds within this script's budget (see timing.py)."""
    return timing.median_ms(fn, budget_seconds=BUDGET_SECONDS, min_repeats=MIN_REPEATS, max_repeats=MAX_REPEATS)


def sketch_rows() -> list[str]:
    rng = np.random.default_rng(1)  # benchmark inputs only; the sketches draw from os.urandom
    rows = []
    for scheme in ("s1", "s2"):
        for features in FEATURES:
            sketch = AsymmetricIntervalSketch(N, Q, scheme=scheme, features=features)
            b = rng.integers(0, N, features)
            v = rng.integers(1, Q + 1, features)
            sample = np.clip(b + rng.integers(-1, 2, features) * (v - 1), 0, N - 1)
            helper = sketch.encode((b, v))
            assert sketch.decode(helper, sample)[0].tolist() == b.tolist()
            enc = median_ms(functools.partial(sketch.encode, (b, v)))
            dec = median_ms(functools.partial(sketch.decode, helper, sample))
            rows.append(f"| {scheme} | {features} | {enc:.3f} | {dec:.3f} | {len(helper)} |")
    return rows


def linkage_rows(pairs: int) -> list[str]:
    rows = []
    for scheme in ("s1", "s2"):
        start = time.perf_counter()
        result = linkage_experiment(LinkageSetup(scheme, N, Q, TAU), pairs, 1)
        seconds = time.perf_counter() - start
        rows.append(f"| {scheme} | {pairs:,} | {seconds:.1f} | {result.accuracy:.4f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="linkage pairs (default 10^6)")
    args = parser.parse_args(argv)
    print(f"AsymmetricIntervalSketch, n = {N}, q = {Q} (median ms)\n")
    print("| scheme | features | encode ms | decode ms | helper bytes |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for row in sketch_rows():
        print(row)
    print(f"\nlinkage_experiment(n = {N}, q = {Q}, tau = {TAU}), one run\n")
    print("| scheme | pairs (each kind) | seconds | accuracy |")
    print("| --- | ---: | ---: | ---: |")
    for row in linkage_rows(args.pairs):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
