"""Tests of sketchauth.evaluate.data: loaders (clear errors) and seeded synthetic populations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import (
    LabelledSets,
    LabelledVectors,
    VectorModel,
    load_sets,
    load_vectors,
    rows_by_identity,
    synthetic_sets,
    synthetic_strings,
    synthetic_vectors,
)


def test_csv_vectors_with_header(tmp_path: Path) -> None:
    f = tmp_path / "v.csv"
    f.write_text("id,a,b\nalice,1,2\nbob,3,4\nalice,2,2\n")
    data = load_vectors(f)
    assert data.samples.dtype == np.int64
    assert data.samples.tolist() == [[1, 2], [3, 4], [2, 2]]
    groups = data.by_identity()
    assert [g[0] for g in groups] == ["alice", "bob"]
    assert groups[0][1].tolist() == [[1, 2], [2, 2]]


def test_csv_vectors_real_and_int_labels(tmp_path: Path) -> None:
    f = tmp_path / "v.csv"
    f.write_text("7,1.5,2\n3,3,4\n")
    data = load_vectors(f)
    assert data.samples.dtype == np.float64
    assert data.identities.tolist() == [7, 3]


def test_csv_ragged_row_names_line(tmp_path: Path) -> None:
    f = tmp_path / "v.csv"
    f.write_text("a,1,2\nb,3\n")
    with pytest.raises(SampleError, match=r"v.csv:2: ragged row: 1 features, expected 2"):
        load_vectors(f)


def test_csv_unlabelled_row(tmp_path: Path) -> None:
    f = tmp_path / "v.csv"
    f.write_text("a,1,2\n,3,4\n")
    with pytest.raises(SampleError, match=r":2: the sample has no identity label"):
        load_vectors(f)


def test_csv_non_numeric_cell_does_not_echo_value(tmp_path: Path) -> None:
    f = tmp_path / "v.csv"
    f.write_text("a,1,2\nb,3,secretvalue\n")
    with pytest.raises(SampleError, match=r":2: column 3 is not a number") as info:
        load_vectors(f)
    assert "secretvalue" not in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(ParameterError, match="cannot read"):
        load_vectors("/nonexistent/x.csv")


def test_npz_vectors_roundtrip(tmp_path: Path) -> None:
    data = synthetic_vectors(3, 2, 4, seed=5)
    f = tmp_path / "v.npz"
    np.savez(f, identity=data.identities, features=data.samples)
    again = load_vectors(f)
    assert np.array_equal(again.samples, data.samples)
    np.savez(tmp_path / "bad.npz", identity=data.identities)
    with pytest.raises(SampleError, match="lacks array"):
        load_vectors(tmp_path / "bad.npz")


def test_vectors_validation() -> None:
    with pytest.raises(SampleError, match="2 labels for 3 samples"):
        LabelledVectors(np.array([1, 2]), np.zeros((3, 2)))
    with pytest.raises(SampleError, match="NaN"):
        LabelledVectors(np.array([1]), np.array([[np.nan]]))
    with pytest.raises(SampleError, match="no identity label"):
        LabelledVectors(np.array(["a", " "]), np.zeros((2, 2)))


def test_sets_csv_and_npz(tmp_path: Path) -> None:
    f = tmp_path / "s.csv"
    f.write_text("a,5,3,9\nb,1\na,3,5\n")
    data = load_sets(f)
    assert [s.tolist() for s in data.sets] == [[3, 5, 9], [1], [3, 5]]
    assert [len(s) for _, s in data.by_identity()] == [2, 1]
    (tmp_path / "dup.csv").write_text("a,1,1\n")
    with pytest.raises(SampleError, match="twice"):
        load_sets(tmp_path / "dup.csv")
    g = tmp_path / "s.npz"
    np.savez(g, identity=np.array([1, 1]), elements=np.array([4, 2, 7]), lengths=np.array([2, 1]))
    assert [s.tolist() for s in load_sets(g).sets] == [[2, 4], [7]]
    np.savez(g, identity=np.array([1, 1]), elements=np.array([4, 2, 7]), lengths=np.array([2, 2]))
    with pytest.raises(SampleError, match="lengths sum to 4"):
        load_sets(g)
    with pytest.raises(SampleError, match="duplicate"):
        LabelledSets(np.array([0]), (np.array([1, 1]),))


def test_synthetic_vectors_seeded_and_in_range() -> None:
    a = synthetic_vectors(5, 3, 8, n=64, seed=7, model=VectorModel(spread=30, noise=3, reliability_spread=0.5))
    b = synthetic_vectors(5, 3, 8, n=64, seed=7, model=VectorModel(spread=30, noise=3, reliability_spread=0.5))
    assert np.array_equal(a.samples, b.samples)
    assert a.samples.min() >= 0 and a.samples.max() < 64
    assert a.identities.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    # No noise: every sample of a person is the same vector.
    c = synthetic_vectors(4, 3, 8, seed=1, model=VectorModel(noise=0.0))
    for _, s in c.by_identity():
        assert np.all(s == s[0])
    # Feature reliability: a feature with factor 0 never varies, one with a large factor does.
    d = synthetic_vectors(20, 5, 2, seed=2, model=VectorModel(reliability=[0.0, 3.0]))
    spreads = np.array([s.std(axis=0) for _, s in d.by_identity()])
    assert np.all(spreads[:, 0] == 0) and spreads[:, 1].mean() > 2


def test_synthetic_strings_error_rate() -> None:
    data = synthetic_strings(50, 4, 64, error_rate=0.1, seed=3)
    diffs = []
    for _, s in data.by_identity():
        diffs.append(np.mean(s[1:] != s[0]))
    # Two independent 10% substitutions differ in about 19% of positions.
    assert 0.15 < float(np.mean(diffs)) < 0.23
    assert (
        synthetic_strings(2, 2, 8, error_rate=0.0, seed=1).samples.tolist()[0]
        == synthetic_strings(2, 2, 8, error_rate=0.0, seed=1).samples.tolist()[1]
    )
    with pytest.raises(ParameterError):
        synthetic_strings(2, 2, 8, error_rate=1.5)


def test_synthetic_sets_dropout_insertion() -> None:
    data = synthetic_sets(10, 3, low=1, high=1024, set_size=40, dropout=0.0, insertion=0.0, seed=1)
    for _, sets in data.by_identity():
        assert all(np.array_equal(s, sets[0]) and s.size == 40 for s in sets)
    noisy = synthetic_sets(30, 2, low=1, high=1024, set_size=40, dropout=0.25, insertion=0.1, seed=1)
    sizes = np.array([s.size for s in noisy.sets])
    assert abs(sizes.mean() - 40 * (0.75 + 0.1)) < 2
    assert all(s.min() >= 1 and s.max() < 1024 for s in noisy.sets)
    with pytest.raises(ParameterError, match="too small"):
        synthetic_sets(2, 2, low=0, high=10, set_size=8)


@pytest.mark.parametrize(
    "make",
    [
        lambda: synthetic_vectors(1, 2, 4, seed=0),
        lambda: synthetic_vectors(2, True, 4, seed=0),
        lambda: synthetic_strings(2, 2, 0, seed=0),
        lambda: synthetic_sets(2, 2.0, low=0, high=64, set_size=4, seed=0),
    ],
)
def test_synthetic_counts_are_checked(make) -> None:
    with pytest.raises(ParameterError):
        make()


def test_rows_by_identity_keeps_first_appearance_and_row_order() -> None:
    ids = np.random.default_rng(4).integers(0, 40, size=500)
    groups = rows_by_identity(ids)
    _, first = np.unique(ids, return_index=True)
    assert [label for label, _ in groups] == [int(ids[i]) for i in np.sort(first)]
    for label, rows in groups:
        assert rows.tolist() == np.flatnonzero(ids == label).tolist()
    assert [(label, rows.tolist()) for label, rows in rows_by_identity(np.array(["b", "a", "b"]))] == [
        ("b", [0, 2]),
        ("a", [1]),
    ]
