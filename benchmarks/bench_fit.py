"""Fitting and calibrating the angular pipeline at deployment scale: wall time, CPU time and peak memory.

What ``sketchauth features fit --kinds angular --projection centre --normalise`` does, through the
library: :func:`~sketchauth.evaluate.fitting.transform.fit_transform` on the background, then
:func:`~sketchauth.evaluate.fitting.fit_pipeline` ``("angular", …, refit=True)`` — identity-disjoint
5-fold cross-validation (every fold's transform refitted without its people), first the cosine
rule, then the decoding-aware threshold (every pair within ``DECODE_FLOOR`` of it really decoded),
then the decode failures measured by real encode → decode.

The embeddings are **synthetic** (the timing does not depend on what the vectors mean, only on
their number and dimension): ``people`` directions drawn uniformly on the sphere, each capture
the person's direction plus a shared population direction plus isotropic noise, scaled so that
two captures of one person have cosine ≈ 0.7 (a mid-strength face model) — see :func:`population`.

Run: ``python -m benchmarks.bench_fit [--people 1000 --captures 5 --dimension 512]`` →
``benchmarks/results/bench_fit.json`` (date, commit, CPU, cores, the machine's load average before
and after, wall and CPU seconds per stage, peak RSS of the process). ``--profile`` (with
``--out``): the same under :mod:`cProfile` on CPU time, with the costliest functions.

``--cli``: the user-facing command itself, ``sketchauth features fit --data bg.npz --out t.json
--pipelines p --kinds angular --projection centre --normalise --target-fmr 0.001`` (its default
``--code-size auto`` measures the code-size curve for every size), run as a subprocess on the same
synthetic population written as ``bg.npz``: wall, the child's CPU (``RUSAGE_CHILDREN``), its peak
RSS, the load before and after. It is written under the key ``"cli"`` of the same JSON; the
library run keeps it (and ``--cli`` keeps the library's keys).
"""

from __future__ import annotations

import os

# One BLAS thread: the calibration expands a rotation per simulated helper (blocked matrix products
# that OpenBLAS's default threads slow down on a shared machine); it decodes on two threads of its own.
#: Whether the caller set the BLAS threads (``--cli`` passes the command the caller's environment).
BLAS_GIVEN = "OPENBLAS_NUM_THREADS" in os.environ
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(ROOT))

from benchmarks.timing import provenance, write_result  # noqa: E402
from sketchauth.evaluate.data import LabelledVectors  # noqa: E402
from sketchauth.evaluate.fitting import CalibrationOptions, fit_pipeline  # noqa: E402
from sketchauth.evaluate.fitting.transform import fit_transform  # noqa: E402

#: Noise per coordinate relative to a unit person direction: genuine cosine ≈ 1 / (1 + d·σ²) ≈ 0.7 at 512-D.
NOISE = 0.029
#: Weight of the direction every person shares (deep embeddings lie in one cone).
COMMON = 0.5


def population(people: int, captures: int, dimension: int, seed: int = 1) -> LabelledVectors:
    """Synthetic labelled embeddings: ``people × captures`` rows of ``dimension`` floats (see the module docstring)."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((people, dimension))
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    common = rng.standard_normal(dimension)
    common *= COMMON / np.linalg.norm(common)
    noise = NOISE * rng.standard_normal((people, captures, dimension))
    samples = (means[:, None, :] + common + noise).reshape(people * captures, dimension)
    labels = np.repeat(np.array([f"p{i}" for i in range(people)]), captures)
    return LabelledVectors(labels, samples)


def _clock() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


def run(people: int, captures: int, dimension: int, target_fmr: float) -> dict[str, Any]:
    """One fit and calibration, timed per stage."""
    data = population(people, captures, dimension)
    stages: dict[str, dict[str, float]] = {}
    wall0, cpu0 = _clock()
    transform = fit_transform(data, projection="centre", normalise=True, levels=32)
    wall1, cpu1 = _clock()
    stages["fit_transform"] = {"wall_s": wall1 - wall0, "cpu_s": cpu1 - cpu0}
    options = CalibrationOptions(target_fmr=target_fmr, enrol_samples=1, refit=True)
    pipeline = fit_pipeline("angular", transform, data, options)
    wall2, cpu2 = _clock()
    stages["calibrate_angular"] = {"wall_s": wall2 - wall1, "cpu_s": cpu2 - cpu1}
    calibration = pipeline.calibration
    assert calibration is not None
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "people": people,
        "captures": captures,
        "dimension": dimension,
        "synthetic": True,
        "target_fmr": target_fmr,
        "stages": {k: {m: round(v, 2) for m, v in s.items()} for k, s in stages.items()},
        "total_wall_s": round(wall2 - wall0, 2),
        "total_cpu_s": round(cpu2 - cpu0, 2),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "pipeline": {
            "params": pipeline.sketch.params(),
            "predicted": {k: calibration.to_dict()[k] for k in ("predicted_fmr_upper", "predicted_fnmr")},
            "decode_failures": getattr(pipeline, "decode_failures", None),
        },
    }


#: Functions listed by ``--profile`` (largest cumulative CPU first).
PROFILE_TOP = 25


def profiled(people: int, captures: int, dimension: int, target_fmr: float) -> dict[str, Any]:
    """:func:`run` under :mod:`cProfile` on process CPU time: the stages' costs (the profiler's own
    overhead inflates Python-heavy functions; the unprofiled run is the timing). Work on the
    calibration's decoding threads is not listed by function, but counted in the cumulative CPU of
    the main-thread call that waits for it (the timer is the process's CPU time)."""
    profile = cProfile.Profile(time.process_time)
    result = profile.runcall(run, people, captures, dimension, target_fmr)
    stats = pstats.Stats(profile)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])[:PROFILE_TOP]  # type: ignore[attr-defined]
    result["profile_cpu_s"] = [
        {"function": f"{Path(file).name}:{line}({name})", "calls": calls, "cumulative": round(cumulative, 2)}
        for (file, line, name), (_, calls, _, cumulative, _) in rows
    ]
    return result


def _command() -> list[str]:
    """The ``sketchauth`` console script of this interpreter's environment (else ``python -m sketchauth.cli``)."""
    script = Path(sys.executable).parent / "sketchauth"
    if script.exists():
        return [str(script)]
    found = shutil.which("sketchauth")
    return [found] if found else [sys.executable, "-m", "sketchauth.cli"]


def run_cli(people: int, captures: int, dimension: int, target_fmr: float) -> dict[str, Any]:
    """The ``features fit`` command on the synthetic population, timed as a child process (module docstring)."""
    data = population(people, captures, dimension)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "service"), env.get("PYTHONPATH")) if p)
    if not BLAS_GIVEN:
        env.pop("OPENBLAS_NUM_THREADS", None)  # the command as a user runs it
    args = ["features", "fit", "--data", "bg.npz", "--out", "t.json", "--pipelines", "p", "--kinds", "angular"]
    args += ["--projection", "centre", "--normalise", "--target-fmr", f"{target_fmr:g}"]
    with tempfile.TemporaryDirectory(prefix="bench_fit_cli_") as folder:
        np.savez(Path(folder) / "bg.npz", X=data.samples.astype(np.float32), labels=np.asarray(data.identities))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_before = os.getloadavg()
        wall0 = time.perf_counter()
        done = subprocess.run(_command() + args, cwd=folder, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - wall0
        load_after = os.getloadavg()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"features fit failed (exit {done.returncode}): {done.stderr[-2000:]}")
    curve = json.loads(done.stdout).get("code_size", {})  # the command's summary is its standard output
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "command": "sketchauth " + " ".join(args),
        "people": people,
        "captures": captures,
        "dimension": dimension,
        "synthetic": True,
        "blas_threads": env.get("OPENBLAS_NUM_THREADS", "default"),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(after.ru_maxrss / 1024, 1),  # the largest child reaped: the command
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "chosen_bits": curve.get("chosen_bits"),
        "curve_source": curve.get("source"),
    }


def _previous(path: str) -> dict[str, Any]:
    """The JSON already at ``path`` (``{}`` when there is none or it is not an object)."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return old if isinstance(old, dict) else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--captures", type=int, default=5)
    parser.add_argument("--dimension", type=int, default=512)
    parser.add_argument("--target-fmr", type=float, default=1e-3)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_fit.json"))
    parser.add_argument("--profile", action="store_true", help="run under cProfile and list the costliest functions")
    parser.add_argument("--cli", action="store_true", help="time the features fit command as a subprocess instead")
    args = parser.parse_args(argv)
    previous = _previous(args.out)
    if args.cli:
        cli = {
            **provenance("bench_fit.py --cli"),
            **run_cli(args.people, args.captures, args.dimension, args.target_fmr),
        }
        library = {k: v for k, v in previous.items() if k != "cli"}
        write_result(args.out, {**library, "cli": cli})
        return 0
    load_before = os.getloadavg()
    measure = profiled if args.profile else run
    result = {
        **provenance("bench_fit.py"),
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "affinity_cores": len(os.sched_getaffinity(0)),
        **measure(args.people, args.captures, args.dimension, args.target_fmr),
        "profiled": args.profile,
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        **({"cli": previous["cli"]} if "cli" in previous else {}),
    }
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
