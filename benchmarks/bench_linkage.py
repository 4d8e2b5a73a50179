"""Linkage of the asymmetric interval sketches s1, s2, s3 under every re-enrolment noise model.

Run ``python3 benchmarks/bench_linkage.py [--out FILE] [--pairs N]`` (a few minutes on a 2-core
box). Writes JSON (default ``benchmarks/results/bench_linkage.json``) with the date, the commit,
the CPU and, at Fang's Fig. 6.2 setting (n = 1000, q = 5, τ = 1):

* ``by_noise``: one feature, ``pairs`` mated and non-mated pairs each, best-threshold accuracy of
  every adversary of every scheme (s1: clear tolerances; s2/s3: similar intervals, similar
  even-length intervals, majority boundary parity) under each noise model;
* ``by_features``: the same against the number of features 1, 2, 4, 8, 16 (``pairs // features``
  pairs, at least 2000) for identical, ±1-on-b and within-tolerance re-enrolments;
* ``parity_by_n``: the parity adversary on s3 at 8 features for smaller universes;
* ``repeated``: the repeated-enrolment attacker (n = 64, q = 8, 16 features, k = 1..4) on s2 and s3;
* ``loss_bound_bits_per_feature``: s2's and s3's bounds for a few q;
* ``seconds``: wall time of one s3 similar-interval run.

Every simulation is seeded (seed 1) except the repeated-enrolment one, which uses the real encoder
(``os.urandom``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

N, Q, TAU, SEED = 1000, 5, 1, 1
RUNS = (
    ("s1", "tolerances"),
    ("s2", "similar-intervals"),
    ("s2", "parity"),
    ("s3", "similar-intervals"),
    ("s3", "similar-even-intervals"),
    ("s3", "parity"),
)


def _row(noise, pairs: int, features: int = 1) -> dict:
    from sketchauth.evaluate.linkage import LinkageSetup, linkage_experiment

    out = {"noise": noise.label, "features": features, "pairs": pairs}
    for scheme, adversary in RUNS:
        r = linkage_experiment(
            LinkageSetup(scheme, N, Q, TAU, features=features, noise=noise, adversary=adversary), pairs, SEED
        )
        out[f"{scheme} {adversary}"] = r.accuracy
    return out


def _repeated(trials: int) -> dict:
    from sketchauth.evaluate.repeated import repeated_enrolment_attack

    out = {}
    for scheme in ("s2", "s3"):
        for noise in (0.0, 0.25):
            r = repeated_enrolment_attack(f"asymmetric-interval/{scheme}", 4, trials, SEED, noise=noise)
            out[f"{scheme} noise {noise}"] = [
                {"k": s.k, "recovered_fraction": s.recovered_fraction, "mean_log2_candidates": s.mean_log2_candidates}
                for s in r.per_k
            ]
    return out


def main() -> None:
    from sketchauth.evaluate.linkage import LinkageSetup, ReenrolmentNoise, linkage_experiment
    from sketchauth.papers.linkage import noise_models
    from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_linkage.json"))
    parser.add_argument("--pairs", type=int, default=20_000)
    args = parser.parse_args()
    started = time.perf_counter()
    timed = linkage_experiment(LinkageSetup("s3", N, Q, TAU), args.pairs, SEED)
    by_noise = [_row(noise, args.pairs) for noise in noise_models()]
    by_features = [
        _row(noise, max(2000, args.pairs // f), f)
        for noise in (
            ReenrolmentNoise.identical(),
            ReenrolmentNoise.b_plus_minus(1),
            ReenrolmentNoise.within_tolerance(),
        )
        for f in (1, 2, 4, 8, 16)
    ]
    parity_by_n = {
        str(n): linkage_experiment(
            LinkageSetup("s3", n, Q, TAU, features=8, noise=ReenrolmentNoise.identical(), adversary="parity"),
            5000,
            SEED,
        ).accuracy
        for n in (32, 64, 256, 1000)
    }
    bounds = {
        str(q): {s: AsymmetricIntervalSketch(64, q, scheme=s).report().loss_bound_bits for s in ("s2", "s3")}
        for q in (2, 5, 8, 16)
    }
    result = {
        **timing.provenance("linkage"),
        "setting": {"n": N, "q": Q, "tau": TAU, "seed": SEED, "pairs": args.pairs},
        "s3_similar_intervals_run": {"accuracy": timed.accuracy, "seconds": round(timed.seconds, 2)},
        "by_noise": by_noise,
        "by_features": by_features,
        "parity_by_n_s3_8_features_identical": parity_by_n,
        "repeated": _repeated(300),
        "loss_bound_bits_per_feature": bounds,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    timing.write_result(args.out, result)


if __name__ == "__main__":
    main()
