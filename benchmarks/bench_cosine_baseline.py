"""The unprotected cosine matcher on real deep embeddings: the accuracy every sketch is measured against.

For each cached set of :mod:`benchmarks.deep_embeddings` (real face and speaker embeddings of
real people; see that module for sources, licences and how to rebuild the cache):

* **Split** — :func:`benchmarks.deep_embeddings.identity_split`: the identities with at least 4
  captures are permuted with the fixed seed and cut into background (35%), calibration (15%) and
  evaluation (50%) people; identities with fewer captures join the background as impostors only.
  No person is in two parts.
* **Matcher** — every capture is L2-normalised; a person enrols with the L2-normalised mean of
  their first 3 captures (set order); a probe's score is its cosine with the template; accept iff
  score ≥ threshold.
* **Trials** — :class:`sketchauth.evaluate.protocol.Protocol` with ``enrol_samples=3``: genuine =
  each template against each of its person's other captures; impostor (zero effort) = each
  template against every probe capture of every other person of the same part. The threshold
  population (background + calibration) also presents every capture of the short background
  identities to every template.
* **Figures** — on the evaluation people: the EER, and the FNMR at FMR 1e-3 and 1e-4 with the
  threshold chosen (a) on the evaluation people themselves — *optimistic*, the best any threshold
  could do on them — and (b) on the background + calibration people, as a deployment must choose
  it before meeting its users, with the FMR this threshold then *realises* on the new people.
  Rates come from :mod:`sketchauth.evaluate.rates` (most permissive threshold whose FMR does not
  exceed the target; 95% Wilson intervals). A target is only resolvable when the impostor trials
  number well over ``1/target``: the trial counts are in the output.

Writes ``benchmarks/results/bench_cosine_baseline.json`` (date, commit, CPU) by default::

    python benchmarks/bench_cosine_baseline.py                 # every cached set
    python benchmarks/bench_cosine_baseline.py --sets lfw-dlib
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(ROOT))

from benchmarks import deep_embeddings, timing  # noqa: E402

#: FMR targets of the table (NIST SP 800-63B-4 asks for 1 in 10,000 at most).
FMR_TARGETS = (1e-3, 1e-4)
ENROL_SAMPLES = 3


def normalise(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float64).

    >>> normalise(np.array([[3.0, 4.0]])).tolist()
    [[0.6, 0.8]]
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a capture has an all-zero embedding")
    return X / norms


def cosine_trials(Xn: np.ndarray, labels: np.ndarray, extra_impostors: np.ndarray | None = None) -> dict[str, Any]:
    """Genuine and impostor cosine scores of the people in ``labels`` (rows of unit-norm ``Xn``).

    Templates are the normalised means of each person's first ``ENROL_SAMPLES`` rows; trials as
    planned by :class:`~sketchauth.evaluate.protocol.Protocol`. ``extra_impostors`` (unit rows of
    people who never enrol) are presented to every template as further impostor trials.
    """
    from sketchauth.evaluate.protocol import Protocol

    plan = Protocol(enrol_samples=ENROL_SAMPLES).plan(labels)
    templates = normalise(np.stack([Xn[rows].mean(axis=0) for rows in plan.enrol_rows]))
    genuine = np.einsum("ij,ij->i", templates[plan.genuine[0]], Xn[plan.genuine[1]])
    impostor = np.einsum("ij,ij->i", templates[plan.impostor[0]], Xn[plan.impostor[1]])
    if extra_impostors is not None and extra_impostors.size:
        impostor = np.concatenate([impostor, (templates @ extra_impostors.T).ravel()])
    return {"people": len(plan.labels), "genuine": genuine, "impostor": impostor}


def rates_at(genuine: np.ndarray, impostor: np.ndarray, threshold: float) -> dict[str, Any]:
    """FNMR and FMR (with 95% Wilson intervals) of "accept iff score ≥ threshold"."""
    from sketchauth.evaluate.rates import wilson_interval

    rejected = int(np.count_nonzero(genuine < threshold))
    accepted = int(np.count_nonzero(impostor >= threshold))
    return {
        "fnmr": rejected / genuine.size,
        "fnmr_ci95": wilson_interval(rejected, genuine.size),
        "fmr": accepted / impostor.size,
        "fmr_ci95": wilson_interval(accepted, impostor.size),
        "false_accepts": accepted,
    }


def measure(name: str, X: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """The split, trial counts, EER and both operating points at each FMR target for one set."""
    from sketchauth.evaluate.rates import det_from_scores, eer, fnmr_at_fmr_on_det

    start = time.perf_counter()
    labels = np.asarray(labels).astype(str)
    Xn = normalise(X)
    parts = deep_embeddings.identity_split(labels)
    fit_people = np.concatenate([parts["background"], parts["calibration"]])
    fit_rows = deep_embeddings.rows_of(labels, fit_people)
    short_rows = deep_embeddings.rows_of(labels, parts["background_short"])
    eval_rows = deep_embeddings.rows_of(labels, parts["evaluation"])
    fit = cosine_trials(Xn[fit_rows], labels[fit_rows], extra_impostors=Xn[short_rows])
    ev = cosine_trials(Xn[eval_rows], labels[eval_rows])
    fit_det = det_from_scores(fit["genuine"], fit["impostor"], higher_is_genuine=True)
    ev_det = det_from_scores(ev["genuine"], ev["impostor"], higher_is_genuine=True)
    targets = {}
    for target in FMR_TARGETS:
        _, t_opt, _ = fnmr_at_fmr_on_det(*ev_det, target, genuine_trials=ev["genuine"].size)
        _, t_dep, _ = fnmr_at_fmr_on_det(*fit_det, target, genuine_trials=fit["genuine"].size)
        deployed = rates_at(ev["genuine"], ev["impostor"], t_dep)
        targets[f"{target:g}"] = {
            "optimistic_threshold_on_evaluation_people": {
                "threshold": t_opt,
                **rates_at(ev["genuine"], ev["impostor"], t_opt),
            },
            "threshold_from_background_and_calibration": {
                "threshold": t_dep,
                "fmr_on_background_and_calibration": rates_at(fit["genuine"], fit["impostor"], t_dep)["fmr"],
                **deployed,
                "realised_fmr_over_target": deployed["fmr"] / target,
            },
            "resolvable": bool(ev["impostor"].size * target >= 10 and fit["impostor"].size * target >= 10),
        }
    meta = deep_embeddings.provenance(name)
    return {
        "set": name,
        "source": {
            k: meta.get(k) for k in ("modality", "model", "source", "licence", "dims", "identities", "captures")
        },
        "split": {
            "seed": deep_embeddings.SPLIT_SEED,
            "fractions_background_calibration_evaluation": list(deep_embeddings.SPLIT_FRACTIONS),
            "min_captures": deep_embeddings.MIN_CAPTURES,
            **{f"{k}_identities": int(v.size) for k, v in parts.items()},
        },
        "matcher": f"cosine to the normalised mean of {ENROL_SAMPLES} normalised captures; accept iff ≥ threshold",
        "trials": {
            "evaluation": {
                "people": ev["people"],
                "genuine": int(ev["genuine"].size),
                "impostor": int(ev["impostor"].size),
            },
            "background_and_calibration": {
                "people": fit["people"],
                "genuine": int(fit["genuine"].size),
                "impostor": int(fit["impostor"].size),
            },
        },
        "eer_evaluation": eer(ev_det[0], ev_det[1]),
        "eer_background_and_calibration": eer(fit_det[0], fit_det[1]),
        "fmr_targets": targets,
        "seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=None, help="set names (default: every cached set)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_cosine_baseline.json")
    args = parser.parse_args(argv)
    names = args.sets if args.sets else deep_embeddings.available()
    if not names:
        print(f"no embedding set is cached in {deep_embeddings.cache_dir()}; see benchmarks/deep_embeddings.py")
        return 1
    results = [measure(name, *deep_embeddings.load(name)) for name in names]
    timing.write_result(args.out, {**timing.provenance("bench_cosine_baseline"), "sets": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
