"""Speed of the offline evaluation (README table).

Target: 10^6 genuine + impostor comparisons of a 128-feature interval scheme in under a minute.
Each comparison goes through the real scheme: every identity is enrolled with ``encode`` (helper
data in the common format), the helper values are read back through the scheme's strict parser,
and the lattice decoder of Fang's thesis, ch. 6 runs on whole chunks of (enrolment, probe) pairs
(:func:`sketchauth.evaluate.error_rates.decide_interval`).

Run ``python3 benchmarks/bench_evaluate.py`` (about half a minute on a 2-core box);
``--identities`` and ``--samples`` change the population (comparisons ≈ identities² · samples).
Rows: the vectorised protected decisions for 1 and 2 jobs, the unprotected Euclidean baseline
over the same pairs, and for contrast one real ``decode`` per comparison on a 10^4 sample of the
pairs (extrapolated to 10^6).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sketchauth.evaluate.data import VectorModel, synthetic_vectors  # noqa: E402
from sketchauth.evaluate.error_rates import (  # noqa: E402
    baseline_scores,
    decide_by_decoding,
    enrol_population,
    enrol_rounded_mean,
    evaluate_adapter,
    plan_trials,
)
from sketchauth.sketches.interval import IntervalSketch  # noqa: E402

FEATURES = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--identities", type=int, default=501)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--tolerance", type=int, default=8)
    args = parser.parse_args()

    data = synthetic_vectors(args.identities, args.samples, FEATURES, seed=1, model=VectorModel(noise=2.0))
    params = {"n": 256, "features": FEATURES}
    rows = []
    for jobs in (1, 2):
        start = time.perf_counter()
        result = evaluate_adapter("interval", params, data, [args.tolerance], seed=1, jobs=jobs, baseline_metrics=())
        seconds = time.perf_counter() - start
        p = result.points[0]
        rows.append(
            (f"protected, vectorised, jobs={jobs}", p.genuine_trials + p.impostor_trials, seconds, p.fnmr, p.fmr)
        )

    trials = plan_trials(data)
    pairs = np.hstack([trials.genuine, trials.impostor])
    start = time.perf_counter()
    baseline_scores("euclidean", data, trials, pairs)
    rows.append(("unprotected euclidean distances", pairs.shape[1], time.perf_counter() - start, None, None))

    sketch = IntervalSketch(n=256, v=args.tolerance, features=FEATURES)
    enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
    sample = np.random.default_rng(0).choice(pairs.shape[1], size=10_000, replace=False)
    start = time.perf_counter()
    decide_by_decoding(sketch, enrolled, data.samples, pairs[0, sample], pairs[1, sample])
    per = (time.perf_counter() - start) / sample.size
    rows.append(("one decode() per comparison (10^4 sampled, extrapolated)", 10**6, per * 10**6, None, None))

    print(f"| case ({FEATURES} features, v={args.tolerance}) | comparisons | seconds | per 10^6 |")
    print("| --- | ---: | ---: | ---: |")
    for name, count, seconds, _, _ in rows:
        print(f"| {name} | {count:,} | {seconds:.1f} | {seconds * 1e6 / count:.1f} s |")


if __name__ == "__main__":
    main()
