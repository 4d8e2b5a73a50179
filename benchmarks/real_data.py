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

Output: two CSVs ``identity,mean0..mean11,std0..std11`` — ``<prefix>_train.csv`` (the original
training file: 30 utterances per speaker, used as the background the transform is fitted on) and
``<prefix>_test.csv`` (the original test file: 24–88 utterances per speaker, used for evaluation;
the same speakers, so every evaluation on it is a *closed set*). The data is NOT part of the
repository; pass the directory that holds the two ``.ts`` files (sktime ships them in its wheel,
``sktime/datasets/data/JapaneseVowels``)::

    python benchmarks/real_data.py /path/to/JapaneseVowels --out /tmp/vowels
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
    for number, raw_line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw_line.strip()
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


def convert(directory: Path, prefix: Path) -> dict[str, int]:
    """Write ``<prefix>_train.csv`` and ``<prefix>_test.csv``; returns counts."""
    counts: dict[str, int] = {}
    header = "identity," + ",".join(f"{s}{j}" for s in ("mean", "std") for j in range(DIMENSIONS)) + "\n"
    speakers: set[str] = set()
    for split in ("TRAIN", "TEST"):
        labels, series = parse_ts(directory / f"JapaneseVowels_{split}.ts")
        counts[split.lower()] = len(labels)
        out = prefix.parent / f"{prefix.name}_{split.lower()}.csv"
        with out.open("w", encoding="utf-8") as handle:
            handle.write(header)
            for label, frames in zip(labels, series, strict=False):
                speakers.add(label)
                handle.write(f"speaker{label}," + ",".join(f"{v:.9g}" for v in embed(frames)) + "\n")
    counts["speakers"] = len(speakers)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="directory holding JapaneseVowels_TRAIN.ts and _TEST.ts")
    parser.add_argument(
        "--out", type=Path, required=True, help="prefix of the two CSVs (<out>_train.csv, <out>_test.csv)"
    )
    args = parser.parse_args()
    print(convert(args.directory, args.out))


if __name__ == "__main__":
    main()
