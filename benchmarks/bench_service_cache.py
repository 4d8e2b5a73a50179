"""The request path's CPU right after an argon2 hash: why ``owasp`` costs more than hash + cheap request.

With the ``owasp`` profile a verification costs more CPU than the ceiling's hash plus the whole
cheap-profile request (``benchmarks/results/bench_service.json``), although the service runs the
same argon2 code with the same parameters and the same number of hashes. This measures the
candidate causes without sockets, in-process, one child process per variant:

* ``request path``: the CPU time (``time.thread_time``) of genuine verification requests driven
  straight into the ASGI app (as ``benchmarks/bench_service_instructions.py`` does; the
  attempt, its decode and its ``test``-profile hash run on the event loop's thread), alternately
  right after nothing and right after one ``owasp`` hash on the same thread (not timed): the
  same instructions, run with caches warm or with argon2's 19 MiB just streamed through them.
  Variants ``bare`` (the bare FastAPI endpoint of :mod:`benchmarks.bench_service`) and
  ``service`` (SQLite);
* ``in_service``: the service under load (``sketchauth serve``, 2 workers, 8 keep-alive clients,
  SQLite, ``owasp``) in slices alternating with the ceiling of :mod:`benchmarks.bench_service`
  (2 processes of ``hash_secret_raw``), with the CPU time of each argon2 verification taken on
  its hashing thread (a ``sitecustomize`` on the servers' path wraps argon2-cffi's
  ``verify_secret``): the hash's own CPU time in the service against the ceiling's, and what the
  rest of a request costs beside it (including the wrapper's file write, tens of microseconds);
* ``faults``: minor page faults and CPU time per ``owasp`` hash on the main thread (the ceiling's
  setting) and on one reused pool thread (the authenticator's), from
  ``getrusage(RUSAGE_THREAD)``: whether glibc hands argon2's block back to the kernel between
  hashes.

    python3 benchmarks/bench_service_cache.py            # ~2 minutes
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import _inprocess, timing  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"

#: Run in a child process from the measured tree: argv = variant, requests; prints one JSON line.
_CHILD = (
    r"""
import asyncio, json, resource, statistics, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from argon2.low_level import hash_secret_raw
from sketchauth.enrolment import HASH_PROFILES

variant, count = sys.argv[1], int(sys.argv[2])
"""
    + _inprocess.PEOPLE
    + r"""
P = HASH_PROFILES["owasp"]

def owasp_hash():
    hash_secret_raw(b"x", b"s" * P.salt_len, time_cost=P.time_cost, memory_cost=P.memory_cost,
                    parallelism=P.parallelism, hash_len=P.hash_len, type=P.type, version=P.version)

def measured_hash():
    before = resource.getrusage(resource.RUSAGE_THREAD)
    owasp_hash()
    after = resource.getrusage(resource.RUSAGE_THREAD)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return after.ru_minflt - before.ru_minflt, cpu, after.ru_stime - before.ru_stime

def per_hash(samples):
    return {"minor_faults": statistics.mean(s[0] for s in samples),
            "cpu_ms": statistics.median(s[1] for s in samples) * 1e3,
            "system_ms": statistics.mean(s[2] for s in samples) * 1e3}

if variant == "faults":
    main, pooled = [], []
    with ThreadPoolExecutor(max_workers=1) as pool:
        owasp_hash()  # the first hash maps the block, on either thread
        pool.submit(owasp_hash).result()
        for _ in range(count):  # alternately, so that the machine's other load weighs on both alike
            main.append(measured_hash())
            pooled.append(pool.submit(measured_hash).result())
    print(json.dumps({"main_thread": per_hash(main), "reused_pool_thread": per_hash(pooled)}))
    sys.exit(0)

"""
    + _inprocess.REQUEST
    + r"""
async def measure(app):
    for i in range(50):
        await request(app, i)
    warm, cold = [], []
    for i in range(2 * count):
        after_hash = i % 2 == 1
        if after_hash:
            owasp_hash()
        start = time.thread_time_ns()
        await request(app, i)
        (cold if after_hash else warm).append((time.thread_time_ns() - start) / 1e6)
    print(json.dumps({"warm_cpu_ms": statistics.median(warm), "after_hash_cpu_ms": statistics.median(cold),
                      "warm_cpu_ms_mean": statistics.mean(warm), "after_hash_cpu_ms_mean": statistics.mean(cold)}))

if variant == "bare":
    asyncio.run(measure(bare_app()))
    sys.exit(0)

import sketchauth_service.api.users as users
from sketchauth_service.authenticator import Authenticator

async def on_loop(work, *args):
    return work(*args)
users.run_in_threadpool = on_loop  # the attempt on the loop's thread, where the hash ran
Authenticator._run = lambda self, work, *args, **kwargs: work(*args, **kwargs)
DATABASE = "cache.db"
def prepare(client):
    pass
"""
    + _inprocess.SERVICE
)


def run_child(variant: str, count: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "service")]),
        "SKETCHAUTH_ACCESS_LOG": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, variant, str(count)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{variant} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


#: On the servers' path: each argon2 verification's thread CPU time, summed per process in a file.
_SITECUSTOMIZE = r"""
import json, os, threading, time
import argon2._password_hasher as _hasher
import argon2.low_level as _low

_lock, _stats, _plain = threading.Lock(), [0, 0.0], _low.verify_secret
_out = os.path.join(os.environ["BENCH_HASH_STATS"], f"{os.getpid()}.json")

def _timed(*args, **kwargs):
    start = time.thread_time()
    try:
        return _plain(*args, **kwargs)
    finally:
        with _lock:
            _stats[0] += 1
            _stats[1] += time.thread_time() - start
            with open(_out, "w") as f:
                json.dump(_stats, f)

_low.verify_secret = _hasher.verify_secret = _timed
"""


def _hash_stats(directory: Path) -> tuple[int, float]:
    count, cpu = 0, 0.0
    for name in glob.glob(str(directory / "*.json")):
        with contextlib.suppress(OSError, ValueError):
            n, c = json.loads(Path(name).read_text())
            count, cpu = count + n, cpu + c
    return count, cpu


def in_service(rounds: int, seconds: float) -> dict[str, Any]:
    """The service's CPU per ``owasp`` request and its hashes' own CPU, against the ceiling's, in alternating slices."""
    from benchmarks import bench_service as bs

    args = argparse.Namespace(workers=2, users=16, features=64, concurrency=8, postgres_url=bs.DEFAULT_POSTGRES_URL)
    people = bs.population(args.users, args.features)
    service: list[tuple[int, float, float, int, float]] = []
    ceiling: list[bs.Slice] = []
    with tempfile.TemporaryDirectory() as tmp:
        hooks, stats = Path(tmp) / "hooks", Path(tmp) / "stats"
        hooks.mkdir()
        stats.mkdir()
        (hooks / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        saved = dict(os.environ)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hooks), saved.get("PYTHONPATH")]))
        os.environ["BENCH_HASH_STATS"] = str(stats)
        try:
            with bs.service(REPO, Path(tmp), "sqlite", "owasp", args) as (port, pgid):
                os.environ.clear()
                os.environ.update(saved)
                for _ in range(rounds):
                    cpu, hashed, start = bs.group_cpu_seconds(pgid), _hash_stats(stats), time.perf_counter()
                    done = len(asyncio.run(bs.verify_loop(port, people, args.concurrency, seconds, None)))
                    after = _hash_stats(stats)
                    service.append(
                        (
                            done,
                            time.perf_counter() - start,
                            bs.group_cpu_seconds(pgid) - cpu,
                            after[0] - hashed[0],
                            after[1] - hashed[1],
                        )
                    )
                    ceiling.append(bs.argon2_ceiling("owasp", args.workers, seconds))
        finally:
            os.environ.clear()
            os.environ.update(saved)
    requests, cpu = sum(s[0] for s in service), sum(s[2] for s in service)
    hashes, hash_cpu = sum(s[3] for s in service), sum(s[4] for s in service)
    request_ms, hash_ms = 1e3 * cpu / requests, 1e3 * hash_cpu / hashes
    ceiling_ms = 1e3 * sum(c.cpu for c in ceiling) / sum(c.done for c in ceiling)
    return {
        "service_cpu_ms_per_request": request_ms,
        "service_hash_cpu_ms": hash_ms,
        "service_rest_cpu_ms_per_request": request_ms - hash_ms,
        "ceiling_cpu_ms_per_hash": ceiling_ms,
        "service_hash_over_ceiling": hash_ms / ceiling_ms,
        "ratio_per_cpu_second": ceiling_ms / request_ms,
        "requests": requests,
        "hashes_timed": hashes,
        "slices": {"service": [list(s) for s in service], "ceiling": [list(c) for c in ceiling]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per side (warm, after a hash)")
    parser.add_argument("--hashes", type=int, default=40, help="owasp hashes per thread for the fault count")
    parser.add_argument("--rounds", type=int, default=5, help="alternating slices of the in-service measure")
    parser.add_argument("--slice", type=float, default=3.0, help="seconds per slice")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_service_cache.json")
    args = parser.parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    load_start = list(os.getloadavg())
    paths = {variant: run_child(variant, args.requests) for variant in ("bare", "service")}
    for path in paths.values():
        path["after_hash_over_warm"] = path["after_hash_cpu_ms"] / path["warm_cpu_ms"]
        path["after_hash_extra_cpu_ms"] = path["after_hash_cpu_ms"] - path["warm_cpu_ms"]
    document = {
        "benchmark": "bench_service_cache.py",
        "date": started.isoformat(timespec="seconds"),
        "commit": timing.git_commit(),
        "cpu": {"model": timing.cpu_name(), "logical_cpus": os.cpu_count(), "machine": platform.machine()},
        "python": platform.python_version(),
        "load_average_start": load_start,
        "settings": {
            "requests": args.requests,
            "hashes": args.hashes,
            "rounds": args.rounds,
            "slice": args.slice,
            "features": 64,
            "users": 16,
            "store": "sqlite",
        },
        "method": "thread CPU time (median) of in-process ASGI verification requests, alternately after nothing "
        "and after one owasp argon2 hash on the same thread (not timed); getrusage(RUSAGE_THREAD) around owasp "
        "hashes on the main thread and on one reused pool thread",
        "request_path": paths,
        "owasp_hash": run_child("faults", args.hashes),
        "in_service": in_service(args.rounds, args.slice),
    }
    document["load_average_end"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    for variant, path in paths.items():
        print(
            f"{variant}: {path['warm_cpu_ms']:.3f} ms warm, {path['after_hash_cpu_ms']:.3f} ms after an owasp hash "
            f"({path['after_hash_over_warm']:.2f} x)"
        )
    for thread, cost in document["owasp_hash"].items():
        print(f"owasp hash on the {thread}: {cost['minor_faults']:.1f} minor faults, {cost['cpu_ms']:.2f} ms CPU")
    served = document["in_service"]
    print(
        f"in the service: {served['service_cpu_ms_per_request']:.2f} ms CPU per request, its hash "
        f"{served['service_hash_cpu_ms']:.2f} ms, the ceiling's {served['ceiling_cpu_ms_per_hash']:.2f} ms"
    )
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
