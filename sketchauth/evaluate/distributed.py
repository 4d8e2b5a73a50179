"""The distributed engine: an evaluation's bands on a Dask cluster, and data read by partitions.

Optional (the ``dask`` extra: ``pip install 'sketchauth[dask]'``, which brings ``dask.distributed``
and ``dask.dataframe``). The work is the streaming evaluation's (:mod:`sketchauth.evaluate.blocks`):
the prepared :class:`~sketchauth.evaluate.blocks.Job` (one prepared decider per setting: the
population's templates and the probes' levels or bitmaps) is scattered once to every worker,
each band of enrolled identities is one task returning a small
:class:`~sketchauth.evaluate.tally.Tally`, and the client merges tallies as they complete. The
merge is exact and associative, so the counts equal a single-process run's to the integer.

Selected by ``client=`` of :func:`sketchauth.evaluate.error_rates.evaluate_scheme` /
:func:`sketchauth.evaluate.report.run_report`, or ``--scheduler tcp://host:8786`` on the
command line (:func:`connect`; ``--scheduler local:N`` starts a ``LocalCluster`` of ``N`` worker
processes). :func:`read_vectors` reads a CSV or Parquet file of labelled vectors by partitions
through Dask's own readers.

Cost on a cluster: a band of ``B`` identities against ``P`` probes is ``B·P`` comparisons per
setting, decided at the per-worker throughput measured in ``benchmarks/bench_scale.py``; the
client receives one tally per band (``O(B)`` integers), so the wall time is about
``comparisons × settings / (workers × per-worker throughput)`` plus enrolment, which stays on
the client (the evaluation guide, *At scale*, has the figures for 10^5 people).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import SPLIT_COLUMNS, LabelledVectors, _labels
from sketchauth.evaluate.tally import Tally

if TYPE_CHECKING:
    from sketchauth.evaluate.blocks import Job

__all__ = ["connect", "read_vectors", "run_on_cluster"]


def _require() -> Any:
    try:
        import distributed  # optional dependency: the dask extra
    except ImportError:
        raise ParameterError(
            "the distributed engine needs Dask: pip install 'sketchauth[dask]' (dask.distributed)"
        ) from None
    return distributed


def connect(scheduler: str) -> Any:
    """A ``distributed.Client`` for ``tcp://host:port`` (a running scheduler) or ``local:N``
    (a ``LocalCluster`` of ``N`` worker processes, one thread each, closed with the client)."""
    distributed = _require()
    if scheduler.startswith("local:"):
        try:
            workers = int(scheduler.split(":", 1)[1])
        except ValueError:
            raise ParameterError(f"--scheduler local:N needs a number of workers, got {scheduler!r}") from None
        if workers < 1:
            raise ParameterError("--scheduler local:N needs at least one worker")
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        return distributed.Client(cluster, set_as_default=False)
    if "://" not in scheduler:
        raise ParameterError(f"--scheduler takes tcp://host:port or local:N, got {scheduler!r}")
    try:
        return distributed.Client(scheduler, timeout="10s", set_as_default=False)
    except OSError as exc:
        raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None


def run_on_cluster(
    client: Any, job: Job, total: Tally, tick: Callable[[int], None], band: Callable[[Job, int, int], Tally]
) -> Tally:
    """Merge the tallies of every band of ``job`` computed on ``client``'s workers into ``total``."""
    distributed = _require()
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    remote = client.scatter(job, broadcast=True)
    futures = [client.submit(band, remote, e0, e1, pure=False) for e0, e1 in job.bands(workers)]
    for future in distributed.as_completed(futures):
        part = future.result()
        total = total.merge(part)
        tick(part.genuine_trials + part.impostor_trials)
        future.release()
    return total


def read_vectors(path: str | Path, *, split_column: str | None = None, blocksize: str = "64MB") -> LabelledVectors:
    """Labelled vectors from CSV (with a header) or Parquet, read by partitions with ``dask.dataframe``.

    The layout is :func:`sketchauth.evaluate.data.load_vectors`'s: the first column is the
    identity, a column named ``split``/``session``/``role`` (or ``split_column``) assigns roles,
    every other column is a feature. Each partition becomes arrays on its own; only the
    population's samples are assembled (never a pair).
    """
    _require()
    # optional dependency: the dask extra
    import dask.dataframe as dd
    from dask.base import compute as untyped_compute
    from dask.delayed import delayed

    compute: Callable[..., tuple[Any, ...]] = untyped_compute  # dask.base.compute carries no annotations

    path = Path(path)
    reader = dd.read_parquet if path.suffix.lower() in (".parquet", ".pq") else dd.read_csv
    try:
        frame = reader(str(path)) if reader is dd.read_parquet else reader(str(path), blocksize=blocksize)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot read {path}: {exc}") from None
    names = [str(c) for c in frame.columns]
    lowered = [n.strip().lower() for n in names]
    wanted = split_column.lower() if split_column is not None else None
    if wanted is not None and wanted not in lowered[1:]:
        raise SampleError(f"{path}: no column named {split_column!r} in the header ({', '.join(names[:6])}, …)")
    split = next(
        (i for i, n in enumerate(lowered) if i > 0 and (n == wanted or (wanted is None and n in SPLIT_COLUMNS))), None
    )
    features = [n for i, n in enumerate(names) if i > 0 and i != split]
    parts = compute(
        *[
            delayed(_partition)(p, names[0], features, None if split is None else names[split])
            for p in frame.to_delayed()
        ]
    )
    if not parts or not sum(len(p[0]) for p in parts):
        raise SampleError(f"{path} holds no samples")
    ids = np.concatenate([p[0] for p in parts])
    x = np.concatenate([p[1] for p in parts])
    if np.all(x == np.round(x)) and np.all(np.abs(x) < 2**53):
        x = x.astype(np.int64)
    roles = np.concatenate([p[2] for p in parts]) if split is not None else None
    return LabelledVectors(
        _labels([str(v) for v in ids.tolist()]), x, roles, None if split is None else names[split].strip()
    )


def _partition(
    frame: Any, identity: str, features: list[str], split: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One partition as (identity labels, float features, roles)."""
    try:
        x = frame[features].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise SampleError(
            f"a feature column holds a value that is not a number (columns {', '.join(features[:4])}, …)"
        ) from None
    roles = frame[split].astype(str).to_numpy() if split is not None else np.zeros(0, dtype=str)
    return frame[identity].astype(str).to_numpy(), x, roles
