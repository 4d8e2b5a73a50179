"""Speed of cascaded mixing and of the key-guessing simulation (README table).

Run ``python3 benchmarks/bench_mixing.py`` (about a minute on a 2-core box). Prints, in ms, the
median encode and decode of PIN cascades with the ``owasp`` argon2 profile (one argon2id per
encode and per decode dominates) and next to them the bare sketch, then the wall time of
``guessing_experiment`` with 10^5 trials.
"""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

#: Each cascade call costs one argon2id (owasp): a fixed 15 timed calls per operation.
REPEATS = 15


def _median_ms(fn: Callable[[], object]) -> float:
    """Median wall time of ``fn()`` in milliseconds over ``REPEATS`` calls (see timing.py)."""
    return timing.median_ms(fn, budget_seconds=0.0, min_repeats=REPEATS, max_repeats=REPEATS)


def bench_cascades() -> None:
    from sketchauth.mixing import Cascade, ExactKey
    from sketchauth.sketches.interval import IntervalSketch
    from sketchauth.sketches.pinsketch import PinSketch

    cases = [
        ("PinSketch(16, 8)", PinSketch(16, 8), [3, 70, 1000, 2024, 65535], [3, 70, 1001, 2024, 65535, 9]),
        ("IntervalSketch(256, 8, features=64)", IntervalSketch(n=256, v=8, features=64), [100] * 64, [103] * 64),
    ]
    print("| case | bare encode | bare decode | cascade encode | cascade decode |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, sketch, secret, sample in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cascade = Cascade(sketch, pin=ExactKey.pin(6, "owasp"))
        helper = sketch.encode(secret)
        mixed = cascade.encode([secret, "123456"])
        row = [
            _median_ms(functools.partial(sketch.encode, secret)),
            _median_ms(functools.partial(sketch.decode, helper, sample)),
            _median_ms(functools.partial(cascade.encode, [secret, "123456"])),
            _median_ms(functools.partial(cascade.decode, mixed, [sample, "123456"])),
        ]
        print(f"| `{name}` + 6-digit PIN | " + " | ".join(f"{x:.2f}" for x in row) + " |")


def bench_guessing() -> None:
    from sketchauth.evaluate.guessing import guessing_experiment
    from sketchauth.sketches.chaff import ChaffPointSketch

    print()
    print("| guessing_experiment, 10^5 trials | key bits | seconds | success | baseline |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key_bits in (4, 8):
        start = time.perf_counter()
        r = guessing_experiment(ChaffPointSketch(16, 2), key_bits, 100_000, seed=1)
        took = time.perf_counter() - start
        print(f"| `ChaffPointSketch(16, 2)`, pad | {key_bits} | {took:.1f} | {r.success_rate:.4f} | {r.baseline:.4f} |")


if __name__ == "__main__":
    bench_cascades()
    bench_guessing()
