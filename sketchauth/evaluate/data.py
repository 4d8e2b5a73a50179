"""Labelled evaluation data: loaders for feature vectors and element sets, synthetic populations.

Two shapes of data, one per closeness notion of Dodis–Ostrovsky–Reyzin–Smith §3.1:

* :class:`LabelledVectors` — ``identities`` (one label per sample) and ``samples`` (an
  ``N × d`` array of numbers). Used by the interval family (Euclidean; Fang's thesis, ch. 6) and, with
  integer values in ``[0, 256)``, as byte strings by code-offset (Hamming, Dodis–Ostrovsky–Reyzin–Smith §5).
* :class:`LabelledSets` — ``identities`` and one sorted array of distinct integers per sample
  (PinSketch and the vaults, Dodis–Ostrovsky–Reyzin–Smith §6.3; Juels–Sudan; Fang's thesis §6.3).

File formats (the identity label always comes first, so nothing is ever unlabelled silently):

* vectors, CSV: ``identity,f1,f2,...,fd`` per line; an optional header line whose feature cells
  are not numbers is skipped. Every row must have the same number of features
  (``SampleError`` naming the first ragged line otherwise).
* vectors, NPZ: arrays ``identity`` (length N) and ``features`` (N × d).
* sets, CSV: ``identity,e1,e2,...`` per line (rows may differ in length: sets do).
* sets, NPZ: ``identity`` (N), ``elements`` (all elements, concatenated) and ``lengths`` (N).

Error messages name line numbers and positions, never values: the data is biometric.

Synthetic populations (simulation only, so seeded :class:`numpy.random.Generator` s are the
right tool; nothing cryptographic is drawn here):

* :func:`synthetic_vectors` — person ``i`` has a true template ``μ_i ~ N(n/2, spread²)`` per
  feature; a sample is ``round(μ_i + σ_ij·ε)`` clipped to ``[0, n)``, ``ε ~ N(0, 1)``. The
  within-person noise ``σ_ij = noise · ρ_j · λ_ij`` has a per-feature reliability factor
  ``ρ_j`` (``reliability``: a scalar or one value per feature; larger is noisier) and a
  per-person spread ``λ_ij = exp(reliability_spread · N(0,1))`` — the identity-dependent
  consistency that asymmetric schemes (Fang's thesis, ch. 6) exploit.
* :func:`synthetic_strings` — byte strings: each person has a uniform random string; each sample
  replaces each byte, independently with probability ``error_rate`` (scalar or per position), by
  a different uniform byte.
* :func:`synthetic_sets` — each person has ``set_size`` distinct elements of ``[low, high)``;
  each sample drops each element with probability ``dropout`` and inserts
  ``Binomial(set_size, insertion)`` new elements from the rest of the universe.

Example::

    >>> data = synthetic_vectors(identities=3, samples_per_identity=2, features=4, seed=1)
    >>> data.samples.shape, data.identity_count
    ((6, 4), 3)
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.params import check_int

__all__ = [
    "LabelledSets",
    "LabelledVectors",
    "VectorModel",
    "load_sets",
    "load_vectors",
    "rows_by_identity",
    "synthetic_sets",
    "synthetic_strings",
    "synthetic_vectors",
]

#: Refuse files with more rows than this (an evaluation set, not a database dump).
MAX_ROWS = 5_000_000


def rows_by_identity(identities: np.ndarray) -> list[tuple[Any, np.ndarray]]:
    """(label, row indices) per identity, labels in order of first appearance, rows in order.

    One stable sort by label, split at the label boundaries (not one scan of all rows per label).
    """
    labels, first, inverse, counts = np.unique(identities, return_index=True, return_inverse=True, return_counts=True)
    rows = np.split(np.argsort(inverse.ravel(), kind="stable"), np.cumsum(counts)[:-1])
    return [(labels[k].item(), rows[k]) for k in np.argsort(first)]


def _check_labels(identities: Any) -> np.ndarray:
    ids = np.asarray(identities)
    if ids.ndim != 1:
        raise SampleError(f"identities must be one label per sample, got shape {ids.shape}")
    if ids.size == 0:
        raise SampleError("no samples")
    if ids.dtype.kind in "US":
        empty = np.flatnonzero(np.char.strip(ids.astype(str)) == "")
        if empty.size:
            raise SampleError(f"sample {int(empty[0])} has no identity label")
    elif ids.dtype.kind not in "iu":
        raise SampleError(f"identity labels must be strings or integers, got dtype {ids.dtype}")
    return ids


@dataclass(frozen=True)
class LabelledVectors:
    """Feature vectors with one identity label per row (``samples[i]`` belongs to ``identities[i]``)."""

    identities: np.ndarray
    samples: np.ndarray
    #: Optional per-row role from a ``split``/``session`` column (``enrol``/``probe``, …), read by
    #: :class:`sketchauth.evaluate.protocol.Protocol`; ``None``: roles follow row order.
    split: np.ndarray | None = None
    split_column: str | None = None

    def __post_init__(self) -> None:
        ids = _check_labels(self.identities)
        if self.split is not None:
            roles = np.asarray(self.split).astype(str)
            if roles.shape != ids.shape:
                raise SampleError(f"{ids.shape[0]} labels but {roles.size} split values")
            object.__setattr__(self, "split", roles)
        x = np.asarray(self.samples)
        if x.ndim != 2:
            raise SampleError(f"samples must be an N × d array, got shape {x.shape}")
        if x.shape[0] != ids.shape[0]:
            raise SampleError(f"{ids.shape[0]} labels for {x.shape[0]} samples")
        if x.dtype.kind not in "iuf":
            raise SampleError(f"samples must be numbers, got dtype {x.dtype}")
        if x.dtype.kind == "f":
            bad = np.argwhere(~np.isfinite(x))
            if bad.size:
                raise SampleError(f"sample {int(bad[0, 0])} has a NaN or infinite value at feature {int(bad[0, 1])}")
        object.__setattr__(self, "identities", ids)
        object.__setattr__(self, "samples", x)

    @property
    def features(self) -> int:
        return int(self.samples.shape[1])

    @property
    def identity_count(self) -> int:
        return len(np.unique(self.identities))

    def by_identity(self) -> list[tuple[Any, np.ndarray]]:
        """``(label, samples)`` per identity in order of first appearance, samples in file order."""
        return [(label, self.samples[rows]) for label, rows in rows_by_identity(self.identities)]


@dataclass(frozen=True)
class LabelledSets:
    """Element sets with one identity label per set; each set is a sorted array of distinct ints."""

    identities: np.ndarray
    sets: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        ids = _check_labels(self.identities)
        if len(self.sets) != ids.shape[0]:
            raise SampleError(f"{ids.shape[0]} labels for {len(self.sets)} sets")
        clean = []
        for i, s in enumerate(self.sets):
            arr = np.asarray(s)
            if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
                raise SampleError(f"set {i} must be a one-dimensional collection of integers")
            arr = np.sort(arr.astype(np.int64))
            if arr.size > 1 and np.any(arr[1:] == arr[:-1]):
                raise SampleError(f"set {i} contains duplicate elements")
            clean.append(arr)
        object.__setattr__(self, "identities", ids)
        object.__setattr__(self, "sets", tuple(clean))

    @property
    def identity_count(self) -> int:
        return len(np.unique(self.identities))

    def by_identity(self) -> list[tuple[Any, list[np.ndarray]]]:
        """``(label, sets)`` per identity in order of first appearance."""
        return [(label, [self.sets[r] for r in rows]) for label, rows in rows_by_identity(self.identities)]


# -- loaders -----------------------------------------------------------------------------------------
def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for line, row in enumerate(csv.reader(handle), start=1):
            if line > MAX_ROWS:
                raise SampleError(f"{path} has more than {MAX_ROWS} rows")
            if row and any(cell.strip() for cell in row):
                yield line, [cell.strip() for cell in row]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _parse_numbers(path: Path, line: int, cells: Sequence[str], kind: type) -> list[Any]:
    try:
        return [kind(c) for c in cells]
    except ValueError:
        bad = next(i for i, c in enumerate(cells) if not _is_number(c) or (kind is int and not _is_int(c)))
        raise SampleError(
            f"{path}:{line}: column {bad + 2} is not {'an integer' if kind is int else 'a number'}"
        ) from None


def _is_int(cell: str) -> bool:
    try:
        int(cell)
    except ValueError:
        return False
    return True


def _labels(values: list[str]) -> np.ndarray:
    # Integer labels stay integers (so NPZ and CSV data of the same people compare equal).
    if all(_is_int(v) for v in values):
        return np.array([int(v) for v in values], dtype=np.int64)
    return np.array(values, dtype=str)


def _open_npz(path: Path, required: Sequence[str]) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            found = {k: archive[k] for k in required if k in archive.files}
            names = list(archive.files)
    except OSError as exc:
        raise ParameterError(f"cannot read {path}: {exc}") from None
    except ValueError:
        raise SampleError(f"{path} is not a valid NPZ file without pickled objects") from None
    missing = [k for k in required if k not in found]
    if missing:
        raise SampleError(f"{path} lacks array(s) {', '.join(missing)}; has {', '.join(names) or 'none'}")
    return found


#: Header names of a column that assigns each row a role (enrolment or probe), found automatically.
SPLIT_COLUMNS = ("split", "session", "role")


def _split_position(path: Path, header: list[str], split_column: str | None) -> int | None:
    """Index (in the row) of the split column named in ``header``, or ``None``."""
    names = [c.strip().lower() for c in header]
    if split_column is not None:
        if split_column.lower() not in names[1:]:
            raise SampleError(f"{path}: no column named {split_column!r} in the header ({', '.join(header[:6])}, …)")
        return names.index(split_column.lower())
    found = [i for i, name in enumerate(names) if i > 0 and name in SPLIT_COLUMNS]
    return found[0] if found else None


def _load_npz_vectors(path: Path, split_column: str | None) -> LabelledVectors:
    """Identities, features and (when present or asked for) the ``split`` array of an NPZ file.

    The arrays may also carry the names a model's export usually has: ``labels`` (or ``y``) for
    ``identity``, ``X`` (or ``embeddings``) for ``features`` — ``numpy.savez(path, X=X, labels=y)``.
    """
    names = _npz_names(path)
    label_name = next((n for n in NPZ_LABEL_NAMES if n in names), "identity")
    feature_name = next((n for n in NPZ_FEATURE_NAMES if n in names), "features")
    arrays = _open_npz(path, (label_name, feature_name))
    split = None
    if split_column is not None or "split" in names:
        split = _open_npz(path, ("split",))["split"]
    labels = np.asarray(arrays[label_name])
    if labels.dtype.kind in "SU":
        labels = labels.astype(str)
    return LabelledVectors(labels, arrays[feature_name], split, "split" if split is not None else None)


#: Names of the identity-label array of an NPZ file, in order of preference.
NPZ_LABEL_NAMES = ("identity", "labels", "y")
#: Names of the feature (embedding) array of an NPZ file, in order of preference.
NPZ_FEATURE_NAMES = ("features", "X", "embeddings")


def _check_row(path: Path, line: int, cells: list[str], width: int | None) -> int:
    """Check one CSV sample row (identity + features) and return the feature count every row must share."""
    if len(cells) < 2:
        raise SampleError(f"{path}:{line}: a row needs an identity and at least one feature")
    if not cells[0]:
        raise SampleError(f"{path}:{line}: the sample has no identity label")
    if width is not None and len(cells) - 1 != width:
        raise SampleError(f"{path}:{line}: ragged row: {len(cells) - 1} features, expected {width}")
    return len(cells) - 1


def load_vectors(path: str | Path, *, split_column: str | None = None) -> LabelledVectors:
    """Labelled feature vectors from CSV (``identity,f1,...,fd``) or NPZ (``identity``/``labels``, ``features``/``X``).

    A CSV header with a column named ``split``, ``session`` or ``role`` (or ``split_column``) gives
    every row a role — enrolment or probe (:class:`sketchauth.evaluate.protocol.Protocol`) — instead
    of row order; NPZ files take it from an optional array ``split``.
    """
    path = Path(path)
    if path.suffix.lower() == ".npz":
        return _load_npz_vectors(path, split_column)
    if path.suffix.lower() == ".npy":
        raise SampleError(
            f"{path}: an .npy file holds one array and no identity labels; save the embeddings with their labels "
            "as NPZ (numpy.savez(path, X=embeddings, labels=labels)) or as CSV (identity,f1,...,fd)"
        )
    labels: list[str] = []
    rows: list[list[float]] = []
    roles: list[str] = []
    width: int | None = None
    position: int | None = None
    column: str | None = None
    for line, raw in _csv_rows(path):
        if not rows and position is None and not all(_is_number(c) for c in raw[1:]):
            position = _split_position(path, raw, split_column)  # header line
            column = None if position is None else raw[position].strip()
            continue
        cells = raw
        if position is not None:
            if len(raw) <= position:
                raise SampleError(f"{path}:{line}: the row has no {column!r} value")
            roles.append(raw[position])
            cells = raw[:position] + raw[position + 1 :]
        width = _check_row(path, line, cells, width)
        labels.append(cells[0])
        rows.append(_parse_numbers(path, line, cells[1:], float))
    if not rows:
        raise SampleError(f"{path} holds no samples")
    x = np.array(rows, dtype=float)
    if np.all(x == np.round(x)) and np.all(np.abs(x) < 2**53):
        x = x.astype(np.int64)
    if split_column is not None and position is None:
        raise SampleError(f"{path}: split column {split_column!r} requested but the file has no header")
    return LabelledVectors(_labels(labels), x, np.array(roles) if position is not None else None, column)


def _npz_names(path: Path) -> list[str]:
    with np.load(path, allow_pickle=False) as archive:
        return list(archive.files)


def load_sets(path: str | Path) -> LabelledSets:
    """Labelled element sets from CSV (``identity,e1,e2,...``) or NPZ (``identity``, ``elements``, ``lengths``)."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        arrays = _open_npz(path, ("identity", "elements", "lengths"))
        lengths = np.asarray(arrays["lengths"])
        if lengths.ndim != 1 or lengths.dtype.kind not in "iu" or np.any(lengths < 0):
            raise SampleError(f"{path}: lengths must be non-negative integers")
        elements = np.asarray(arrays["elements"]).ravel()
        if int(lengths.sum()) != elements.size:
            raise SampleError(f"{path}: lengths sum to {int(lengths.sum())} but there are {elements.size} elements")
        cuts = np.cumsum(lengths)[:-1]
        return LabelledSets(arrays["identity"], tuple(np.split(elements, cuts)))
    labels: list[str] = []
    sets: list[np.ndarray] = []
    for line, cells in _csv_rows(path):
        if not sets and cells[1:] and not all(_is_int(c) for c in cells[1:]):
            continue  # header line
        if not cells[0]:
            raise SampleError(f"{path}:{line}: the set has no identity label")
        values = _parse_numbers(path, line, [c for c in cells[1:] if c], int)
        if len(set(values)) != len(values):
            raise SampleError(f"{path}:{line}: the set lists an element twice")
        labels.append(cells[0])
        sets.append(np.array(values, dtype=np.int64))
    if not sets:
        raise SampleError(f"{path} holds no sets")
    return LabelledSets(_labels(labels), tuple(sets))


# -- synthetic populations --------------------------------------------------------------------------
def _rate(name: str, value: Any, size: int) -> np.ndarray:
    arr = (
        np.broadcast_to(np.asarray(value, dtype=float), (size,))
        if np.ndim(value) == 0
        else np.asarray(value, dtype=float)
    )
    if arr.shape != (size,):
        raise ParameterError(f"{name} must be a scalar or have {size} entries, got shape {arr.shape}")
    if not np.all((arr >= 0) & (arr <= 1)):
        raise ParameterError(f"{name} must lie in [0, 1]")
    return arr


def _labels_for(identities: int, samples: int) -> np.ndarray:
    return np.repeat(np.arange(identities, dtype=np.int64), samples)


@dataclass(frozen=True)
class VectorModel:
    """How :func:`synthetic_vectors` draws people and captures (the model in the module docstring).

    ``spread``: the standard deviation of the people's centres; ``noise``: of a capture around its
    person's centre, per feature scaled by ``reliability`` (one value or one per feature) and by
    ``exp(reliability_spread · N(0, 1))`` per person and feature.
    """

    spread: float = 40.0
    noise: float = 2.0
    reliability: float | Sequence[float] = 1.0
    reliability_spread: float = 0.0


def synthetic_vectors(
    identities: int,
    samples_per_identity: int,
    features: int,
    *,
    n: int = 256,
    seed: int = 0,
    model: VectorModel = VectorModel(),
) -> LabelledVectors:
    """A seeded population of integer feature vectors in ``[0, n)`` (``model``: :class:`VectorModel`)."""
    spread, noise, reliability, reliability_spread = (
        model.spread,
        model.noise,
        model.reliability,
        model.reliability_spread,
    )
    identities = check_int("identities", identities, 2)
    samples_per_identity = check_int("samples_per_identity", samples_per_identity)
    features = check_int("features", features)
    n = check_int("n", n, 2)
    for name, value in (("spread", spread), ("noise", noise), ("reliability_spread", reliability_spread)):
        if not np.isfinite(value) or value < 0:
            raise ParameterError(f"{name} must be a finite non-negative number, got {value!r}")
    rho = (
        np.broadcast_to(np.asarray(reliability, dtype=float), (features,))
        if np.ndim(reliability) == 0
        else np.asarray(reliability, dtype=float)
    )
    if rho.shape != (features,) or not np.all(np.isfinite(rho)) or np.any(rho < 0):
        raise ParameterError(f"reliability must be a non-negative scalar or {features} values")
    rng = np.random.default_rng(seed)
    centre = rng.normal(n / 2.0, spread, size=(identities, features))
    sigma = noise * rho[None, :] * np.exp(reliability_spread * rng.normal(size=(identities, features)))
    eps = rng.normal(size=(identities, samples_per_identity, features))
    x = np.rint(centre[:, None, :] + sigma[:, None, :] * eps)
    x = np.clip(x, 0, n - 1).astype(np.int64).reshape(-1, features)
    return LabelledVectors(_labels_for(identities, samples_per_identity), x)


def synthetic_strings(
    identities: int,
    samples_per_identity: int,
    length: int,
    *,
    error_rate: float | Sequence[float] = 0.05,
    seed: int = 0,
) -> LabelledVectors:
    """A seeded population of byte strings (values in ``[0, 256)``) with per-byte substitution noise."""
    identities = check_int("identities", identities, 2)
    samples_per_identity = check_int("samples_per_identity", samples_per_identity)
    length = check_int("length", length)
    rate = _rate("error_rate", error_rate, length)
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(identities, 1, length))
    flip = rng.random((identities, samples_per_identity, length)) < rate
    # A substitution to a *different* byte: add a uniform non-zero offset mod 256.
    offset = rng.integers(1, 256, size=flip.shape)
    x = (base + flip * offset) % 256
    return LabelledVectors(_labels_for(identities, samples_per_identity), x.reshape(-1, length).astype(np.int64))


def synthetic_sets(
    identities: int,
    samples_per_identity: int,
    *,
    low: int,
    high: int,
    set_size: int,
    dropout: float = 0.1,
    insertion: float = 0.1,
    seed: int = 0,
) -> LabelledSets:
    """A seeded population of element sets of ``[low, high)`` with dropout and insertion noise."""
    identities = check_int("identities", identities, 2)
    samples_per_identity = check_int("samples_per_identity", samples_per_identity)
    set_size = check_int("set_size", set_size)
    if high - low < 2 * set_size:
        raise ParameterError(f"universe [{low}, {high}) is too small for sets of {set_size} with insertions")
    drop = float(_rate("dropout", dropout, 1)[0])
    ins = float(_rate("insertion", insertion, 1)[0])
    rng = np.random.default_rng(seed)
    sets: list[np.ndarray] = []
    universe = np.arange(low, high, dtype=np.int64)
    for _ in range(identities):
        base = rng.choice(universe, size=set_size, replace=False)
        others = np.setdiff1d(universe, base)
        for _ in range(samples_per_identity):
            kept = base[rng.random(set_size) >= drop]
            extra = rng.choice(others, size=rng.binomial(set_size, ins), replace=False)
            sets.append(np.union1d(kept, extra).astype(np.int64))
    return LabelledSets(_labels_for(identities, samples_per_identity), tuple(sets))
