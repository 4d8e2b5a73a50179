"""Speed of the exact vectorised deciders, and of the README "bring your own embeddings" walk-through.

Two measurements, written to ``benchmarks/results/bench_deciders.json`` with date, commit, CPU
and the load average (the machine is shared):

1. **interval decider vs a plain L∞ comparison** of the same arrays: the enrolled levels and the
   probe levels of every (identity, probe) pair of a 128-feature population; the L∞ comparison is
   ``np.abs(probe − template).max(axis=1) < v`` on the same int16 arrays and pairs. Goal: the
   decider (which also checks each helper once, quantises the probes and counts malformed ones)
   within 2× of it. Also the previous decider (per-pair modulo) for the before figure.
2. **walk-through**: ``features synth`` ×2, ``features fit``, then ``evaluate report --pipeline
   pipelines/thermometer.json --data people.csv`` (the README commands) timed end to end; the
   *before* figure is the old per-trial real decode rate measured on 300 comparisons and
   extrapolated to the run's comparison count (running it would take hours).

Run ``python3 benchmarks/bench_deciders.py`` (a few minutes).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks import timing  # noqa: E402
from benchmarks.timing import median_ms  # noqa: E402
from sketchauth.evaluate.data import synthetic_vectors  # noqa: E402
from sketchauth.evaluate.error_rates import (  # noqa: E402
    decide_by_decoding,
    decide_interval,
    enrol_population,
    enrol_rounded_mean,
    plan_trials,
)
from sketchauth.sketches.interval import IntervalSketch  # noqa: E402

FEATURES = 128


def _old_interval(sketch, enrolled, probes, enrolled_index, probe_index):
    """The previous decider: the lattice decoder's per-pair modulo, for the before figure."""
    q_all, refused = sketch.quantiser.levels_many(probes, sketch.features)
    used, local = np.unique(enrolled_index, return_inverse=True)
    s_all = np.stack([sketch.symbols(sketch.payload(enrolled.helpers[i]))[0].astype(np.int64) for i in used.tolist()])
    b_all = np.stack([np.asarray(enrolled.secrets[i], dtype=np.int64) for i in used.tolist()])
    moduli, half = sketch.moduli.astype(np.int16), (sketch.v - 1).astype(np.int16)
    q_all, s_all, b_all = q_all.astype(np.int16), s_all.astype(np.int16), b_all.astype(np.int16)
    out = np.empty(local.size, dtype=bool)
    for start in range(0, local.size, 16_384):
        e = local[start : start + 16_384]
        d = q_all[probe_index[start : start + 16_384]]
        r = (d - s_all[e]) % moduli
        nearest = d - r
        nearest += np.where(r > half, moduli, 0).astype(np.int16)
        out[start : start + e.size] = np.all(nearest == b_all[e], axis=1)
    return out & ~refused[probe_index], refused[probe_index]


def interval_vs_linf() -> dict:
    data = synthetic_vectors(301, 4, FEATURES, noise=2.0, seed=1)
    trials = plan_trials(data)
    pairs = np.hstack([trials.genuine, trials.impostor])
    sketch = IntervalSketch(n=256, v=8, features=FEATURES)
    enrolled = enrol_population(sketch, enrol_rounded_mean, data, trials)
    templates = np.stack([np.asarray(s) for s in enrolled.secrets]).astype(np.int16)
    levels = np.asarray(data.samples, dtype=np.int16)
    e, q = pairs[0], pairs[1]

    def linf() -> np.ndarray:
        out = np.empty(e.size, dtype=bool)
        for start in range(0, e.size, 65_536):
            ee, qq = e[start : start + 65_536], q[start : start + 65_536]
            out[start : start + ee.size] = np.abs(levels[qq] - templates[ee]).max(axis=1) < 8
        return out

    new = decide_interval(sketch, enrolled, data.samples, e, q)[0]
    assert np.array_equal(new, linf()), "the decider must equal the L∞ rule at uniform v"
    assert np.array_equal(new, _old_interval(sketch, enrolled, data.samples, e, q)[0])
    sample = np.random.default_rng(1).choice(e.size, size=2000, replace=False)
    assert np.array_equal(new[sample], decide_by_decoding(sketch, enrolled, data.samples, e[sample], q[sample])[0])
    timing = dict(budget_seconds=6.0, min_repeats=3, max_repeats=10)
    t_linf = median_ms(linf, **timing)
    t_new = median_ms(lambda: decide_interval(sketch, enrolled, data.samples, e, q), **timing)
    t_old = median_ms(lambda: _old_interval(sketch, enrolled, data.samples, e, q), **timing)
    return {
        "comparisons": int(e.size),
        "features": FEATURES,
        "linf_ms": round(t_linf, 1),
        "decider_before_ms": round(t_old, 1),
        "decider_after_ms": round(t_new, 1),
        "ratio_before": round(t_old / t_linf, 2),
        "ratio_after": round(t_new / t_linf, 2),
        "goal_ratio": 2.0,
    }


def walkthrough(workdir: Path) -> dict:
    exe = [sys.executable, "-m", "sketchauth.cli"]
    steps = [
        ["features", "synth", "--out", "background.csv", "--identities", "600", "--samples", "6", "--seed", "1"],
        [
            "features",
            "synth",
            "--out",
            "people.csv",
            "--identities",
            "300",
            "--samples",
            "6",
            "--seed",
            "2",
            "--prefix",
            "person",
        ],
        ["features", "fit", "--data", "background.csv", "--out", "transform.json", "--pipelines", "pipelines"],
        ["evaluate", "report", "--pipeline", "pipelines/thermometer.json", "--data", "people.csv", "--out", "report"],
    ]
    import resource

    start = time.perf_counter()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for step in steps:
        subprocess.run(exe + step, cwd=workdir, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    report = json.loads((workdir / "report" / "report.json").read_text())
    er = report["error_rates"]
    comparisons = (er["genuine_trials"] + er["impostor_trials"]) * len(er["points"])
    # Before: one real decode per comparison (the old decider), timed on 300 comparisons.
    from sketchauth.evaluate.data import load_vectors
    from sketchauth.features.pipeline import load_pipeline

    pipeline = load_pipeline((workdir / "pipelines" / "thermometer.json").read_text())
    people = load_vectors(workdir / "people.csv")
    groups = [x for _, x in people.by_identity()]
    sketch = pipeline.sketch
    helpers = [sketch.encode(pipeline.secret_from_samples(x[:1])) for x in groups[:30]]
    probes = [pipeline.sample_transform(groups[(i + 7) % len(groups)][1 + i % 5]) for i in range(10)]
    t0 = time.perf_counter()
    for h in helpers:
        for p in probes:
            with contextlib.suppress(Exception):
                sketch.decode(h, p)
    per_decode = (time.perf_counter() - t0) / (len(helpers) * len(probes))
    return {
        "commands": [" ".join(["sketchauth", *s]) for s in steps],
        "comparisons": comparisons,
        "decode_check": er["decode_check"],
        "seconds_after": round(seconds, 1),
        "cpu_seconds_after": round(cpu_seconds, 1),
        "before_decodes_per_second": round(1.0 / per_decode, 1),
        "seconds_before_extrapolated": round(comparisons * per_decode, 0),
        "goal_seconds": 180,
    }


def main() -> None:
    load_before = os.getloadavg()
    result = {
        **timing.provenance("deciders"),
        "load_average_1_5_15": [round(x, 2) for x in load_before],
        "interval_vs_linf": interval_vs_linf(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        result["readme_walkthrough"] = walkthrough(Path(tmp))
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    timing.write_result(ROOT / "benchmarks" / "results" / "bench_deciders.json", result)


if __name__ == "__main__":
    main()
