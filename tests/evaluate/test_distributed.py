"""The distributed engine on a real Dask LocalCluster (2 worker processes): the same integer counts
as one process, data read by partitions equal to the whole-file reader, and the CLI option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sketchauth.cli import main  # noqa: E402
from sketchauth.errors import ParameterError  # noqa: E402
from sketchauth.evaluate.data import VectorModel, load_vectors, synthetic_sets, synthetic_vectors  # noqa: E402
from sketchauth.evaluate.distributed import connect, read_vectors  # noqa: E402
from sketchauth.evaluate.error_rates import evaluate_adapter  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _counts(result):
    return (
        [(p.false_non_matches, p.false_matches, p.genuine_trials, p.impostor_trials) for p in result.points],
        list(result.malformed_probes),
        [(x["fnmr_ci_identity"], x["fmr_ci_identity"]) for x in result.identity_intervals],
        result.decode_check["checked"],
        result.decode_check["disagreements"],
    )


def test_cluster_counts_equal_the_single_process_run(client) -> None:
    assert len(client.scheduler_info()["workers"]) == 2
    data = synthetic_vectors(40, 4, 8, n=128, seed=11, model=VectorModel(spread=3, noise=2.0))
    params = {"n": 128, "features": 8}
    one = evaluate_adapter("interval", params, data, [2, 4, 6], seed=3, decode_check=300)
    many = evaluate_adapter("interval", params, data, [2, 4, 6], seed=3, decode_check=300, client=client)
    assert _counts(one) == _counts(many)
    assert [b.eer for b in one.baselines] == [b.eer for b in many.baselines]
    sets = synthetic_sets(25, 3, low=1, high=256, set_size=12, seed=5)
    a = evaluate_adapter("pinsketch", {"m": 8}, sets, [2, 5], seed=1)
    b = evaluate_adapter("pinsketch", {"m": 8}, sets, [2, 5], seed=1, client=client)
    assert _counts(a) == _counts(b)


def _write_csv(path: Path, data, split=None) -> None:
    header = ["identity", *(f"f{j}" for j in range(data.features))] + (["split"] if split is not None else [])
    lines = [",".join(header)]
    for i, (label, row) in enumerate(zip(data.identities.tolist(), data.samples.tolist(), strict=True)):
        cells = [str(label), *map(str, row)] + ([split[i]] if split is not None else [])
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def test_read_by_partitions_equals_the_whole_file(tmp_path: Path, client) -> None:
    data = synthetic_vectors(30, 3, 5, n=64, seed=2)
    split = ["enrol" if i % 3 == 0 else "probe" for i in range(len(data.identities))]
    csv = tmp_path / "people.csv"
    _write_csv(csv, data, split)
    whole = load_vectors(csv)
    parts = read_vectors(csv, blocksize="1KB")  # many partitions
    assert np.array_equal(whole.identities, parts.identities)
    assert np.array_equal(whole.samples, parts.samples) and whole.samples.dtype == parts.samples.dtype
    assert np.array_equal(whole.split, parts.split) and parts.split_column == "split"
    import pandas as pd

    frame = pd.read_csv(csv)
    frame.to_parquet(tmp_path / "people.parquet")
    pq = read_vectors(tmp_path / "people.parquet")
    assert np.array_equal(pq.samples, whole.samples) and np.array_equal(pq.identities, whole.identities)


def test_cli_scheduler_option_and_default_out(tmp_path: Path, monkeypatch, capsys) -> None:
    data = synthetic_vectors(20, 3, 4, n=64, seed=4, model=VectorModel(spread=3, noise=1.5))
    csv = tmp_path / "people.csv"
    _write_csv(csv, data)
    monkeypatch.chdir(tmp_path)
    common = ["evaluate", "report", "--scheme", "interval", "--params", '{"n": 64, "features": 4}']
    common += ["--sweep", "2,4", "--data", str(csv), "--no-plots", "--quiet", "--profile", "test"]
    common += ["--attack-tries", "0"]
    assert main([*common, "--scheduler", "local:2", "--out", "dist"]) == 0
    assert main(common) == 0  # default --out: report-interval
    a = json.loads((tmp_path / "dist" / "report.json").read_text())["error_rates"]["points"]
    b = json.loads((tmp_path / "report-interval" / "report.json").read_text())["error_rates"]["points"]
    keys = ("false_matches", "false_non_matches", "genuine_trials", "impostor_trials")
    assert [[p[k] for k in keys] for p in a] == [[p[k] for k in keys] for p in b]
    with pytest.raises(ParameterError, match="tcp://host:port or local:N"):
        connect("somewhere")
