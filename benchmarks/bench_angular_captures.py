"""Verification with several captures of one attempt: FNMR against one capture at the same FMR.

For each cached set of real embeddings (``<name>.npz`` with ``X`` [captures, d] and ``labels`` in
``--data``), on people with at least 4 captures (the *evaluation* people; everyone else is the
background, whose mean is subtracted before normalising — the ``centre`` projection):

* **Enrolment**: one capture (the first), a real ``AngularSketch(d, α).encode`` helper and its
  fixed-point matrix ``R̂``.
* **Attempts with k = 1, 2, 3 captures**: genuine — up to 20 seeded k-subsets of the person's other
  captures; impostor — for every other evaluation person, one seeded k-subset of theirs (a real
  impostor presents their own face k times).
* **Rules**: ``mean`` (the library's: the probe is the normalised mean of the k directions, one
  decode — :meth:`AngularPipeline.captures_transform`) and ``any`` (accept if any single capture
  is accepted: k tries). A probe is accepted iff it decodes to the enrolled codeword (the exact
  margin rule on ``R̂ p̂``) and ``cos(p, t) ≥ τ``.
* **Same FMR**: for each rule and k, the smallest ``τ`` whose FMR on these impostor attempts is at
  most the target (1e-2, 1e-3; ``τ`` chosen on the very attempts it is measured on, for every rule
  alike), with the FNMR there; and at ``τ = 0`` (the code alone).

Run: ``python benchmarks/bench_angular_captures.py --data DIR`` →
``benchmarks/results/bench_angular_captures.json``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import ROOT, provenance, write_result

ALPHA, MIN_CAPTURES, GENUINE_SUBSETS, TARGETS = 8, 4, 20, (1e-2, 1e-3)


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.linalg.norm(x, axis=-1, keepdims=True))


def _subsets(n: int, k: int, limit: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    every = list(itertools.combinations(range(n), k))
    if len(every) <= limit:
        return every
    return [every[i] for i in sorted(rng.choice(len(every), limit, replace=False).tolist())]


def _accepts(sketch: Any, matrix: np.ndarray, secret: Any, probes: np.ndarray, template: np.ndarray) -> np.ndarray:
    """``(decodes, cos)`` per probe row: the exact margin rule and the cosine to the template."""
    from sketchauth.sketches.angular import decoding_margin, quantise_probe

    decodes = decoding_margin(quantise_probe(probes) @ matrix.T, secret) > 0
    return np.stack([decodes, _unit(probes) @ template])


def _attempts(
    sketch: Any, people: list[np.ndarray], k: int, rng: np.random.Generator
) -> dict[str, dict[str, np.ndarray]]:
    """Per rule, the (decodes, cos) of every genuine and impostor attempt with ``k`` captures."""
    out: dict[str, dict[str, list[np.ndarray]]] = {r: {"genuine": [], "impostor": []} for r in ("mean", "any")}
    for e, own in enumerate(people):
        secret = sketch.check_secret(own[0])
        template = np.asarray(secret.template)
        matrix = sketch.matrix(sketch.encode(secret))
        groups = {"genuine": [own[1:][list(s)] for s in _subsets(own.shape[0] - 1, k, GENUINE_SUBSETS, rng)]}
        groups["impostor"] = [
            other[list(_subsets(other.shape[0], k, 1, rng)[0])] for o, other in enumerate(people) if o != e
        ]
        for kind, attempts in groups.items():
            units = _unit(np.stack(attempts))  # attempts × k × d
            mean = _accepts(sketch, matrix, secret, _unit(units.mean(axis=1)), template)
            single = _accepts(sketch, matrix, secret, units.reshape(-1, units.shape[-1]), template)
            out["mean"][kind].append(mean)
            out["any"][kind].append(single.reshape(2, len(attempts), k))
    return {r: {kind: np.concatenate(v, axis=1) for kind, v in d.items()} for r, d in out.items()}


def _rate(scores: np.ndarray, tau: float) -> float:
    """Share of attempts accepted at ``τ``: (decodes, cos) rows, shape (2, A) or (2, A, k) for ``any``."""
    accepted = (scores[0] > 0) & (scores[1] >= tau)
    if accepted.ndim == 2:
        accepted = accepted.any(axis=1)
    return float(np.mean(accepted))


def _at_fmr(genuine: np.ndarray, impostor: np.ndarray, target: float) -> dict[str, float]:
    candidates = np.unique(np.concatenate([[0.0], impostor[1].ravel(), [1.0 + 1e-9]]))
    tau = next(float(t) for t in candidates if _rate(impostor, float(t)) <= target)
    return {"target_fmr": target, "tau": tau, "fmr": _rate(impostor, tau), "fnmr": 1.0 - _rate(genuine, tau)}


def evaluate_set(path: Path) -> dict[str, Any]:
    from sketchauth.sketches.angular import AngularSketch, codebook_bits

    data = np.load(path, allow_pickle=False)
    x, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["labels"])
    counts = {label: int(np.count_nonzero(labels == label)) for label in set(labels.tolist())}
    evaluation = np.array([counts[label] >= MIN_CAPTURES for label in labels.tolist()])
    centre = x[~evaluation].mean(axis=0)
    units = _unit(x - centre)
    people = [units[labels == label] for label in sorted(set(labels[evaluation].tolist()))]
    sketch = AngularSketch(x.shape[1], ALPHA)
    rows = []
    for k in (1, 2, 3):
        scores = _attempts(sketch, people, k, np.random.default_rng(k))
        for rule, got in scores.items():
            if k == 1 and rule == "any":
                continue  # the same as "mean" with one capture
            row: dict[str, Any] = {
                "captures": k,
                "rule": rule,
                "genuine_attempts": int(got["genuine"].shape[1]),
                "impostor_attempts": int(got["impostor"].shape[1]),
                "code_only": {"fnmr": 1.0 - _rate(got["genuine"], 0.0), "fmr": _rate(got["impostor"], 0.0)},
                "at_fmr": [_at_fmr(got["genuine"], got["impostor"], t) for t in TARGETS],
            }
            rows.append(row)
            print(path.stem, k, rule, row["code_only"], [(r["fnmr"], r["fmr"]) for r in row["at_fmr"]], flush=True)
    return {
        "set": path.stem,
        "dimension": int(x.shape[1]),
        "representation": "centred on the background mean (people with fewer than 4 captures), normalised",
        "evaluation_people": len(people),
        "enrolment_captures": 1,
        "alpha": ALPHA,
        "codebook_bits": codebook_bits(int(x.shape[1]), ALPHA),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("SKETCHAUTH_EMBEDDINGS_DIR", ""))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_angular_captures.json"))
    args = parser.parse_args()
    if not args.data:
        raise SystemExit("give --data or SKETCHAUTH_EMBEDDINGS_DIR: the folder of cached <name>.npz embeddings")
    result: dict[str, Any] = provenance("bench_angular_captures")
    result["sets"] = [evaluate_set(p) for p in sorted(Path(args.data).glob("*.npz"))]
    write_result(args.out, result)


if __name__ == "__main__":
    main()
