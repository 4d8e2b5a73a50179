"""Convert the UCI Japanese Vowels set (sktime ``.ts`` format) into sketchauth's labelled-vector CSV.

The data (Kudo, Toyama & Shimbo 1999, UCI Machine Learning Repository): 9 male speakers say the
vowel pair /ae/; each utterance is a 12-coefficient LPC cepstrum per 10 ms frame, 7–29 frames.
sktime ships it as ``JapaneseVowels_{TRAIN,TEST}.ts``: header lines starting with ``@`` (and
comments with ``#``), then one line per utterance — 12 dimensions separated by ``:``, each a
comma-separated list over frames, then ``:<speaker label>``.

Fixed-length embedding (documented choice): per utterance the **mean and the standard deviation
of every coefficient over its frames** — 24 features. Frames vary in number, so a per-frame
concatenation is not fixed-length; mean + std is the classical speaker-verification statistic
(the first two moments of the cepstral distribution) and keeps the recording's order out of it.

Output CSV: ``identity,split,f0..f23`` with ``split`` = ``train``/``test`` from the original file
(an explicit-split column, usable by ``--split-column split``). The data is NOT part of the
repository; pass the directory that holds the two ``.ts`` files::

    python benchmarks/real_data.py /path/to/JapaneseVowels --out /tmp/vowels.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DIMENSIONS = 12


def parse_ts(path: Path) -> tuple[list[str], list[np.ndarray]]:
    """(labels, per-utterance ``frames × 12`` arrays) of one sktime ``.ts`` file."""
    labels: list[str] = []
    series: list[np.ndarray] = []
    in_data = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            in_data = line.lower().startswith("@data")
            continue
        if not in_data:
            continue
        cells = line.split(":")
        if len(cells) != DIMENSIONS + 1:
            raise ValueError(f"{path}:{number}: expected {DIMENSIONS} dimensions and a label, got {len(cells)} fields")
        dims = [np.array([float(v) for v in cell.split(",")]) for cell in cells[:-1]]
        if len({d.size for d in dims}) != 1:
            raise ValueError(f"{path}:{number}: dimensions have different numbers of frames")
        labels.append(cells[-1].strip())
        series.append(np.stack(dims, axis=1))
    if not labels:
        raise ValueError(f"{path} holds no utterances")
    return labels, series


def embed(frames: np.ndarray) -> np.ndarray:
    """Mean and standard deviation (ddof 0) of each coefficient over the frames: 24 numbers."""
    return np.concatenate([frames.mean(axis=0), frames.std(axis=0)])


def convert(directory: Path, out: Path) -> dict[str, int]:
    """Write the CSV; returns counts (speakers, utterances per split)."""
    rows = []
    counts: dict[str, int] = {}
    for split in ("TRAIN", "TEST"):
        labels, series = parse_ts(directory / f"JapaneseVowels_{split}.ts")
        counts[split.lower()] = len(labels)
        rows += [(f"speaker{label}", split.lower(), embed(s)) for label, s in zip(labels, series)]
    with out.open("w", encoding="utf-8") as handle:
        handle.write("identity,split," + ",".join(f"{s}{j}" for s in ("mean", "std") for j in range(DIMENSIONS)) + "\n")
        for label, split, x in rows:
            handle.write(f"{label},{split}," + ",".join(f"{v:.9g}" for v in x) + "\n")
    counts["speakers"] = len({r[0] for r in rows})
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="directory holding JapaneseVowels_TRAIN.ts and _TEST.ts")
    parser.add_argument("--out", type=Path, required=True, help="CSV to write (identity,split,f...)")
    counts = convert(parser.parse_args().directory, parser.parse_args().out)
    print(counts)


if __name__ == "__main__":
    main()
