"""The peer of ``sketchauth evaluate report --pipeline <interval pipeline>``'s decision path, in plain numpy.

Same CSV (``identity,f0,…``), same pipeline file (its whitening, its quantiser edges, its kept
dimensions and per-feature tolerances ``v``), the same five settings of the report's sweep
(``v + offset`` for offsets −2 … 2, clipped to ``[1, L]``), the same protocol (each identity's
first sample enrols, the others are probes, every identity against every probe) and the same
tiles (identities × probe positions, at most 2^20 pair × feature cells). A pair is accepted at a
setting when ``|d_j − b_j| < v_j`` for every kept dimension ``j`` (the interval sketch's
acceptance region, Fang's thesis ch. 6), where ``b`` are the enrolment sample's levels and ``d``
the probe's. Nothing of the library is imported: this is what someone would write by hand to get
the error counts, and what the report's decision path is measured against
(``benchmarks/bench_evaluate_report.py``).

Run ``python3 benchmarks/baseline_numpy_report.py --pipeline pipelines/interval.json --data people.csv``;
it prints one JSON line: the false non-match and false match counts per setting, the comparisons
per setting, and the CPU seconds it spent (``time.process_time``).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

#: The report's default sweep of an interval pipeline (offsets added to the calibrated tolerances).
OFFSETS = (-2, -1, 0, 1, 2)
#: Largest tile in pair × feature cells, and probe positions per tile (as the report's tiles).
TILE_CELLS = 1 << 20
TILE_PROBES = 2048


def read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Identity labels and the float matrix of a CSV with a header ``identity,f0,…``."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        next(reader)
        rows = list(reader)
    labels = np.array([row[0] for row in rows])
    return labels, np.array([row[1:] for row in rows], dtype=np.float64)


def levels_of(x: np.ndarray, transform: dict[str, Any], dims: np.ndarray) -> np.ndarray:
    """Whiten, project and quantise every row at once; the kept dimensions' levels (``N × k``)."""
    if transform["training"].get("normalise") is True:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = ((x - np.asarray(transform["mean"])) / np.asarray(transform["scale"])) @ np.asarray(transform["projection"])
    edges = np.asarray(transform["edges"])
    return np.stack([np.searchsorted(edges[j], y[:, j], side="left") for j in dims], axis=1)


def counts(levels: np.ndarray, labels: np.ndarray, tolerances: np.ndarray) -> dict[str, Any]:
    """False non-matches and false matches per row of ``tolerances`` (each a ``k``-vector)."""
    first: dict[str, int] = {}
    for row, label in enumerate(labels.tolist()):
        first.setdefault(label, row)
    enrol_rows = np.array(list(first.values()))
    owner_of = {label: i for i, label in enumerate(first)}
    probe_rows = np.array([r for r in range(labels.size) if first[labels[r]] != r])
    owner = np.array([owner_of[labels[r]] for r in probe_rows])
    order = np.argsort(owner, kind="stable")
    probe_rows, owner = probe_rows[order], owner[order]
    templates = levels[enrol_rows].astype(np.int16)
    probes = levels[probe_rows].astype(np.int16)
    tp = min(probes.shape[0], TILE_PROBES)
    te = max(1, TILE_CELLS // (tp * probes.shape[1]))
    fnm = np.zeros(len(tolerances), np.int64)
    fm = np.zeros(len(tolerances), np.int64)
    for a in range(0, templates.shape[0], te):
        b = min(a + te, templates.shape[0])
        for p0 in range(0, probes.shape[0], tp):
            p1 = min(p0 + tp, probes.shape[0])
            genuine = owner[None, p0:p1] == np.arange(a, b)[:, None]
            distance = np.abs(probes[None, p0:p1] - templates[a:b, None])
            for s, v in enumerate(tolerances):
                accepted = (distance < v).all(axis=-1)
                fnm[s] += np.count_nonzero(genuine & ~accepted)
                fm[s] += np.count_nonzero(accepted & ~genuine)
    return {
        "false_non_matches": fnm.tolist(),
        "false_matches": fm.tolist(),
        "comparisons_per_setting": int(templates.shape[0] * probes.shape[0]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    start = time.process_time()
    pipeline = json.loads(args.pipeline.read_text(encoding="utf-8"))
    labels, x = read_csv(args.data)
    transform = pipeline["transform"]
    dims = np.asarray(pipeline["dims"])
    levels = levels_of(x, transform, dims)
    v = np.broadcast_to(np.asarray(pipeline["params"]["v"], dtype=np.int16), dims.shape)
    top = len(transform["edges"][0]) + 1
    tolerances = np.stack([np.clip(v + offset, 1, top) for offset in OFFSETS])
    result = counts(levels, labels, tolerances)
    print(json.dumps({**result, "settings": list(OFFSETS), "cpu_seconds": time.process_time() - start}))


if __name__ == "__main__":
    main()
