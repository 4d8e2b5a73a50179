"""Loopback load benchmark of the verification service: its overhead and its share of argon2's ceiling.

For each store (``--backends sqlite postgres``) it starts ``sketchauth serve --workers W`` on free
loopback ports (a temporary SQLite file; a throw-away schema of the PostgreSQL database
``--postgres-url``), enrols a population, and measures in the same run:

1. **store round trips**: the transactions (and SQL statements) one verification makes, counted in
   a child process by instrumenting the store (genuine sample, wrong sample, unknown user id);
2. **overhead ratio**: a bare FastAPI endpoint (:func:`bare_app`: the same route and body model,
   answering ``{"verified": true}`` with no store, no hash, no middleware, in W uvicorn workers)
   against the service with argon2's cheapest (``test``) profile, both under ``--concurrency``
   keep-alive clients: service req/s ÷ bare req/s, and the same per CPU-second of the servers'
   processes (``/proc/<pid>/stat`` of their process groups);
3. **production ratio**: W processes doing nothing but argon2id with the production profile
   (argon2-cffi's ``hash_secret_raw``, the same parameters: the ceiling, argon2 being the dominant
   cost by design) against the service with that profile: service req/s ÷ hashes/s, and per
   CPU-second (the hashing processes' own CPU time);
4. the sequential p50 latency with the test profile minus one ``test`` argon2 verification and
   one sketch decode (in-process): what HTTP, JSON, validation, the thread hand-off and the store
   add to a request.

The two sides of each ratio alternate in ``--slice``-second slices, so that whatever else runs on
the machine weighs on both alike. The load generator shares the cores, so it is a minimal
keep-alive HTTP/1.1 client on asyncio streams. Targets: overhead ratio >= 0.6, production ratio
>= 0.95 (both measures). Each round's ratio is kept too: their spread is the noise CI allows for
(``benchmarks/ratios.py``). ``--tree`` runs the servers (and the round-trip count) from another
checkout, ``--compare`` a second one in the same slices, for before/after comparisons with the same
harness. Result: ``benchmarks/results/bench_service.json`` (what the docs' figures are read from).

    python3 benchmarks/bench_service.py --duration 12 --slice 3 --profile owasp
    python3 benchmarks/bench_service.py --quick --out /tmp/service.json     # CI
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import multiprocessing as mp
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[1]
# Run from a checkout without installing: the package is the repository root.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import timing  # noqa: E402

API_KEY = "bench-" + secrets.token_hex(16)
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
RESULTS = REPO / "benchmarks" / "results"


class BareVerification(BaseModel):
    sample: list[int]


class BareAnswer(BaseModel):
    verified: bool


def bare_app() -> Any:
    """uvicorn factory: the floor any FastAPI verification endpoint pays on this machine.

    The service's route and body shape (a path parameter, a JSON body validated by a pydantic
    model with a list of integers), an ``async`` handler answering ``{"verified": true}``: HTTP
    parsing, routing, JSON decoding, validation and serialisation, nothing else.
    """
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/v1/users/{user_id}/verification", response_model=BareAnswer)
    async def verify(user_id: str, body: BareVerification) -> BareAnswer:
        return BareAnswer(verified=True)

    return app


def _argon2_worker(profile: str, seconds: float, out: mp.Queue) -> None:
    """argon2id alone: ``hash_secret_raw`` with the profile's parameters, as many as fit in ``seconds``."""
    from argon2.low_level import hash_secret_raw

    from sketchauth.enrolment import HASH_PROFILES

    p = HASH_PROFILES[profile]
    salt = secrets.token_bytes(p.salt_len)

    def one() -> bytes:
        return hash_secret_raw(
            b"sketchauth bench secret",
            salt,
            time_cost=p.time_cost,
            memory_cost=p.memory_cost,
            parallelism=p.parallelism,
            hash_len=p.hash_len,
            type=p.type,
            version=p.version,
        )

    one()  # warm: the first hash maps its memory
    count = 0
    cpu = time.process_time()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        one()
        count += 1
    out.put((count, time.process_time() - cpu))


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes of process group ``pgid`` (a server and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the command: state, ppid, pgrp, ..., utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total / tick


class Slice(tuple[float, float, float]):
    """One slice of load: requests (or hashes) done, wall seconds, CPU seconds spent by the server side."""

    @property
    def done(self) -> float:
        return self[0]

    @property
    def seconds(self) -> float:
        return self[1]

    @property
    def cpu(self) -> float:
        return self[2]


def argon2_ceiling(profile: str, workers: int, seconds: float) -> Slice:
    """``workers`` processes doing only argon2id for ``seconds``: hashes, seconds, their CPU seconds."""
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_argon2_worker, args=(profile, seconds, queue)) for _ in range(workers)]
    for p in procs:
        p.start()
    counts = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return Slice((sum(c for c, _ in counts), seconds, sum(t for _, t in counts)))


def in_process_costs(profile: str, features: int, repeats: int = 50) -> tuple[float, float]:
    """p50 seconds of one argon2id verification and of one interval-sketch decode."""
    from sketchauth.enrolment import hasher
    from sketchauth.sketches.interval import IntervalSketch

    ph = hasher(profile)
    stored = ph.hash(b"x")
    sketch = IntervalSketch(n=256, v=8, features=features)
    template, genuine = population(1, features)[0]
    helper = sketch.encode(template)
    argon_ms = timing.median_ms(
        lambda: ph.verify(stored, b"x"), budget_seconds=0.0, min_repeats=repeats, max_repeats=repeats
    )
    decodes = 10 * repeats
    decode_ms = timing.median_ms(
        lambda: sketch.decode(helper, genuine), budget_seconds=0.0, min_repeats=decodes, max_repeats=decodes
    )
    return argon_ms / 1000.0, decode_ms / 1000.0


def population(users: int, features: int) -> list[tuple[list[int], list[int]]]:
    """Seeded synthetic (template, genuine sample) pairs: samples within tolerance 8."""
    rng = np.random.default_rng(20261122)
    out = []
    for _ in range(users):
        template = rng.integers(8, 248, size=features)
        genuine = template + rng.integers(-7, 8, size=features)
        out.append((template.tolist(), genuine.tolist()))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tree: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        # The service's package lives in <tree>/service (installed as sketchauth_service).
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(tree), str(tree / "service"), str(REPO), os.environ.get("PYTHONPATH", "")])
        ),
        **extra,
    }


def _wait_ready(proc: subprocess.Popen, url: str) -> subprocess.Popen:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("server did not become ready")


def start_server(tree: Path, workdir: Path, port: int, workers: int, profile: str, db: str, schema: str) -> Any:
    """``sketchauth serve`` from ``tree`` (no access log: the bench measures the request path)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = _env(
        tree,
        SKETCHAUTH_API_KEYS=API_KEY,
        SKETCHAUTH_HASH_PROFILE=profile,
        # The overhead server runs the cheapest ("test") profile, which serve refuses unless allowed.
        SKETCHAUTH_ALLOW_TEST_PROFILE="1" if profile == "test" else "0",
        SKETCHAUTH_SCHEMA=schema,
        # Genuine samples only, but keep the lockout out of the way of a long run all the same.
        SKETCHAUTH_LOCKOUT_THRESHOLD="1000000",
        SKETCHAUTH_DISABLE_THRESHOLD="1000000",
    )
    args = [sys.executable, "-m", "sketchauth.cli", "serve", "--port", str(port), "--workers", str(workers)]
    args += ["--db", db, "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(args, cwd=workdir, env=env, start_new_session=True)
    return _wait_ready(proc, f"http://127.0.0.1:{port}/readyz")


def serve_bare(port: int, workers: int) -> None:
    """Serve :func:`bare_app` the way ``sketchauth serve`` serves the service (same uvicorn setup).

    In particular with ``TCP_NODELAY`` on the shared listening socket
    (:func:`sketchauth_service.app._tcp_nodelay`): plain ``uvicorn --workers N`` leaves Nagle's algorithm on
    and every answer waits ~40 ms for a delayed ACK, which would make the floor meaningless.
    """
    import inspect

    import uvicorn
    from sketchauth_service.app import _tcp_nodelay
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "benchmarks.bench_service:bare_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        workers=workers,
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    if workers == 1:
        server.run()
        return
    supervisor_args: dict[str, Any] = {"sockets": [_tcp_nodelay(config.bind_socket())]}
    if "target" in inspect.signature(Multiprocess).parameters:
        supervisor_args["target"] = server.run
    Multiprocess(config, **supervisor_args).run()


def start_bare(port: int, workers: int) -> Any:
    """:func:`bare_app` served by :func:`serve_bare` in its own process group."""
    code = f"from benchmarks.bench_service import serve_bare; serve_bare({port}, {workers})"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env(REPO), start_new_session=True)
    return _wait_ready(proc, f"http://127.0.0.1:{port}/docs")


def stop(proc: Any) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


async def enrol_all(base: str, people: list[tuple[list[int], list[int]]], features: int) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        for i, (template, _) in enumerate(people):
            r = await client.post(
                f"/v1/users/u{i}/enrolment",
                json={"scheme": "interval", "params": {"n": 256, "v": 8, "features": features}, "samples": [template]},
            )
            r.raise_for_status()


class _Connection:
    """A minimal keep-alive HTTP/1.1 client connection over asyncio streams.

    The load generator shares the machine's cores with the server, so it must be cheap: it
    sends pre-encoded requests and reads ``Content-Length`` bodies, about a tenth of the CPU of
    a general-purpose client per request.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> _Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = next(int(v) for k, _, v in (ln.partition(b":") for ln in lines[1:]) if k.lower() == b"content-length")
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def _verification_request(user: int, sample: list[int]) -> bytes:
    body = json.dumps({"sample": sample}).encode()
    head = (
        f"POST /v1/users/u{user}/verification HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def verify_loop(
    port: int, people: list[tuple[list[int], list[int]]], concurrency: int, seconds: float | None, count: int | None
) -> list[float]:
    """Latencies (s) of genuine verifications; stops after ``seconds`` or ``count`` requests."""
    requests = [_verification_request(i, genuine) for i, (_, genuine) in enumerate(people)]
    latencies: list[float] = []
    end = time.perf_counter() + seconds if seconds is not None else float("inf")
    issued = 0

    async def one_client(k: int) -> None:
        nonlocal issued
        conn = await _Connection.open(port)
        try:
            i = k
            while time.perf_counter() < end and (count is None or issued < count):
                issued += 1
                t = time.perf_counter()
                status, body = await conn.request(requests[i % len(requests)])
                latencies.append(time.perf_counter() - t)
                if status != 200 or body != b'{"verified":true}':
                    raise RuntimeError(f"unexpected answer {status}: {body!r}")
                i += concurrency
        finally:
            conn.close()

    await asyncio.gather(*(one_client(k) for k in range(concurrency)))
    return latencies


def rate(server: tuple[int, int], people: list[tuple[list[int], list[int]]], concurrency: int, seconds: float) -> Slice:
    """One slice of load on ``server`` (port, process group): verifications, wall seconds, server CPU seconds."""
    port, pgid = server
    cpu = group_cpu_seconds(pgid)
    start = time.perf_counter()
    done = asyncio.run(verify_loop(port, people, concurrency, seconds, None))
    return Slice((len(done), time.perf_counter() - start, group_cpu_seconds(pgid) - cpu))


# -- store round trips ------------------------------------------------------------------------------
#: Run in a child process with the benchmarked tree first on the path: counts the transactions
#: and statements of one verification by wrapping the store's three hooks (``_transaction``,
#: ``_read``, ``_run``), which every version of the SQL store has.
_COUNT_TRIPS = r"""
import json, sys, tempfile
from contextlib import contextmanager
from pathlib import Path
from fastapi.testclient import TestClient
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings

url, schema, key = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = Path(tempfile.mkdtemp())
if url.startswith("sqlite"):
    from sketchauth_service.store.sqlite import SQLiteStore
    store = SQLiteStore(tmp / "trips.db")
else:
    from sketchauth_service.store.postgres import PostgresStore
    store = PostgresStore(url, schema=schema, max_size=2)
counts = {"transactions": 0, "statements": 0}
depth = [0]
def counted(opener):
    @contextmanager
    def wrapper():
        # Outermost only: a dialect's _read may open its _transaction.
        counts["transactions"] += depth[0] == 0
        depth[0] += 1
        try:
            with opener() as cur:
                yield cur
        finally:
            depth[0] -= 1
    return wrapper
run = store._run
def counted_run(cur, query, params=()):
    counts["statements"] += 1
    return run(cur, query, params)
store._transaction, store._read, store._run = counted(store._transaction), counted(store._read), counted_run
settings = Settings(database_url=f"sqlite:///{tmp / 'unused.db'}", api_keys=(key,), hash_profile="test",
                    allow_test_profile=True, lockout_threshold=1000, disable_threshold=1000)
auth = {"Authorization": f"Bearer {key}"}
enrol = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
out = {}
with TestClient(create_app(settings, store=store)) as client:
    assert client.post("/v1/users/alice/enrolment", headers=auth, json=enrol).status_code == 201
    for label, user, sample in (("genuine", "alice", [123, 30, 205, 71]), ("wrong", "alice", [20, 130, 5, 250]),
                                ("unknown", "nobody", [20, 130, 5, 250])):
        before = dict(counts)
        r = client.post(f"/v1/users/{user}/verification", headers=auth, json={"sample": sample})
        assert r.status_code == 200, r.text
        out[label] = {k: counts[k] - before[k] for k in counts}
if not url.startswith("sqlite"):
    store.drop_schema()
store.close()
print(json.dumps(out))
"""


def round_trips(tree: Path, url: str) -> dict[str, dict[str, int]]:
    """Transactions and statements per verification (genuine, wrong sample, unknown id) of ``tree``."""
    schema = f"bench_trips_{secrets.token_hex(4)}"
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_TRIPS, url, schema, API_KEY],
        env=_env(tree),
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextlib.contextmanager
def service(tree: Path, tmp: Path, backend: str, profile: str, args: argparse.Namespace) -> Iterator[tuple[int, int]]:
    """A running, enrolled service (port, process group) on ``backend`` with ``profile``; stopped and cleaned after."""
    port = free_port()
    schema = f"bench_{secrets.token_hex(4)}"
    db = f"sqlite:///{tmp / f'{backend}-{profile}.db'}" if backend == "sqlite" else args.postgres_url
    proc = start_server(tree, tmp / f"{backend}-{profile}", port, args.workers, profile, db, schema)
    try:
        asyncio.run(enrol_all(f"http://127.0.0.1:{port}", population(args.users, args.features), args.features))
        asyncio.run(verify_loop(port, population(args.users, args.features), args.concurrency, 1.0, None))  # warm
        yield port, proc.pid
    finally:
        stop(proc)
        if backend == "postgres":
            _drop_schema(args.postgres_url, schema)


def rotate(baseline: Any, services: list[Any], rounds: int) -> tuple[list[Slice], list[list[Slice]]]:
    """Slices of ``baseline()`` and of each of ``services`` measured in rotating order."""
    base: list[Slice] = []
    slices: list[list[Slice]] = [[] for _ in services]
    for _ in range(rounds):
        base.append(baseline())
        for measured, run in zip(slices, services, strict=True):
            measured.append(run())
    return base, slices


def ratios(service: list[Slice], baseline: list[Slice]) -> dict[str, Any]:
    """Service ÷ baseline per second and per CPU-second (totals over the slices), and each round's ratio.

    The spread of the rounds' ratios is the measurement's noise: the slices of one round ran
    side by side, so what the machine's other load does to them shows there.
    """

    def per_second(s: list[Slice]) -> float:
        return sum(x.done for x in s) / sum(x.seconds for x in s)

    def per_cpu(s: list[Slice]) -> float:
        return sum(x.done for x in s) / max(sum(x.cpu for x in s), 1e-9)

    rounds = [(a.done / a.seconds) / (b.done / b.seconds) for a, b in zip(service, baseline, strict=True)]
    rounds_cpu = [
        (a.done / max(a.cpu, 1e-9)) / (b.done / max(b.cpu, 1e-9)) for a, b in zip(service, baseline, strict=True)
    ]
    return {
        "ratio": per_second(service) / per_second(baseline),
        "ratio_per_cpu_second": per_cpu(service) / per_cpu(baseline),
        "service_per_s": per_second(service),
        "baseline_per_s": per_second(baseline),
        "service_per_cpu_second": per_cpu(service),
        "baseline_per_cpu_second": per_cpu(baseline),
        "service_cpu_ms_per_request": 1e3 / per_cpu(service),
        "baseline_cpu_ms_per_request": 1e3 / per_cpu(baseline),
        "round_ratios": rounds,
        "round_ratios_per_cpu_second": rounds_cpu,
        "slices": {"baseline": [list(x) for x in baseline], "service": [list(x) for x in service]},
    }


def bench_backend(
    trees: list[Path], tmp: Path, backend: str, bare: tuple[int, int], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """One result per tree: the trees' services share the baseline slices (bare endpoint, ceiling)."""
    people = population(args.users, args.features)
    rounds = max(1, round(args.duration / args.slice))
    url = "sqlite:///" if backend == "sqlite" else args.postgres_url
    results: list[dict[str, Any]] = [
        {
            # "current": the tree measured (--tree); "compare": the one beside it (--compare)
            "code": "current" if i == 0 else "compare",
            "backend": backend,
            "tree": str(tree),
            # counted by tests/service/test_store_round_trips.py too: the quick run leaves it out
            "round_trips_per_verification": None if args.quick else round_trips(tree, url),
        }
        for i, tree in enumerate(trees)
    ]
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(service(tree, tmp / f"t{i}", backend, "test", args)) for i, tree in enumerate(trees)
        ]
        sequential = [
            asyncio.run(verify_loop(port, people, 1, None, args.sequential)) if args.sequential else []
            for port, _ in servers
        ]
        bare_slices, cheap = rotate(
            lambda: rate(bare, people, args.concurrency, args.slice),
            [lambda server=server: rate(server, people, args.concurrency, args.slice) for server in servers],
            rounds,
        )
    cheap_argon, decode = in_process_costs("test", args.features)
    for result, seq, slices in zip(results, sequential, cheap, strict=True):
        seq_p50 = float(np.percentile(seq, 50)) if seq else float("nan")
        result["overhead"] = {
            "baseline": "bare FastAPI endpoint parsing the same JSON",
            **ratios(slices, bare_slices),
            "sequential_p50_ms": seq_p50 * 1e3,
            "sequential_p50_minus_argon2_and_decode_ms": (seq_p50 - cheap_argon - decode) * 1e3,
        }
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(service(tree, tmp / f"t{i}", backend, args.profile, args))
            for i, tree in enumerate(trees)
        ]
        ceiling, loaded = rotate(
            lambda: argon2_ceiling(args.profile, args.workers, args.slice),
            [lambda server=server: rate(server, people, args.concurrency, args.slice) for server in servers],
            rounds,
        )
    for result, slices in zip(results, loaded, strict=True):
        result["production"] = {
            "profile": args.profile,
            "baseline": "argon2-cffi hash_secret_raw alone, same parameters, one process per worker",
            **ratios(slices, ceiling),
        }
    return results


def _table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| store | tree | trips (genuine / wrong / unknown) | bare req/s | service req/s (test) | ratio /s |"
        " ratio /CPU-s | ceiling/s | service/s (prod) | ratio /s | ratio /CPU-s | CPU ms/request (service, ceiling) |"
    ]
    lines.append("| --- " * 12 + "|")
    for r in results:
        trips = " / ".join(
            f"{t['transactions']} tx, {t['statements']} st" for t in (r["round_trips_per_verification"] or {}).values()
        )
        o, p = r["overhead"], r["production"]
        lines.append(
            f"| {r['backend']} | {Path(r['tree']).name} | {trips} | {o['baseline_per_s']:.0f} | "
            f"{o['service_per_s']:.0f} | {o['ratio']:.2f} | {o['ratio_per_cpu_second']:.2f} | "
            f"{p['baseline_per_s']:.1f} | {p['service_per_s']:.1f} | {p['ratio']:.2f} | "
            f"{p['ratio_per_cpu_second']:.2f} | {p['service_cpu_ms_per_request']:.1f}, "
            f"{p['baseline_cpu_ms_per_request']:.1f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=12.0, help="seconds of load per side of a ratio")
    parser.add_argument("--slice", type=float, default=3.0, help="seconds per alternating slice")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", default="owasp", help="production argon2 profile (default owasp)")
    parser.add_argument("--features", type=int, default=64, help="interval-sketch features (default 64)")
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--sequential", type=int, default=200, help="requests for the sequential latency")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    parser.add_argument("--postgres-url", default=os.environ.get("SKETCHAUTH_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    parser.add_argument("--tree", type=Path, default=REPO, help="source tree the servers run (default: this one)")
    parser.add_argument("--label", default="", help="a label for the result file (e.g. before, after)")
    parser.add_argument("--commit", default=None, help="the commit --tree holds, when it is not a git checkout")
    parser.add_argument(
        "--compare", type=Path, default=None, help="another tree measured in the same slices (before/after)"
    )
    parser.add_argument("--compare-commit", default=None, help="the commit --compare holds")
    parser.add_argument("--out", type=Path, default=None, help="JSON result path (default benchmarks/results/...)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI's quick run: 4 s per side in 1 s slices, 16 users, no sequential latency or round-trip count",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.slice, args.users, args.sequential = 4.0, 1.0, 16, 0
    tree = args.tree.resolve()

    started = datetime.datetime.now(datetime.UTC)
    load_start = list(os.getloadavg())
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        bare_port = free_port()
        bare = start_bare(bare_port, args.workers)
        try:
            asyncio.run(verify_loop(bare_port, population(args.users, args.features), args.concurrency, 1.0, None))
            trees = [tree] + ([args.compare.resolve()] if args.compare else [])
            for backend in args.backends:
                results += bench_backend(trees, Path(tmp), backend, (bare_port, bare.pid), args)
        finally:
            stop(bare)
    document = {
        "benchmark": "bench_service.py",
        "label": args.label,
        "date": started.isoformat(timespec="seconds"),
        "commit": args.commit or _tree_commit(tree),
        "tree": str(tree),
        "compare": {"tree": str(args.compare), "commit": args.compare_commit or _tree_commit(args.compare.resolve())}
        if args.compare
        else None,
        "cpu": {"model": timing.cpu_name(), "logical_cpus": os.cpu_count(), "machine": platform.machine()},
        "python": platform.python_version(),
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "settings": {k: v for k, v in vars(args).items() if k not in {"tree", "compare", "out", "postgres_url"}},
        "method": "req/s of W uvicorn workers under C keep-alive clients; the two sides of each ratio alternate "
        "in slices in one run; round trips counted by instrumenting the store in a child process",
        "targets": {"overhead_ratio": 0.6, "production_ratio": 0.95},
        "results": results,
    }
    out = args.out or RESULTS / "bench_service.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(
        f"# {args.workers} workers, concurrency {args.concurrency}, interval sketch with {args.features} "
        f"features, production profile {args.profile}, {os.cpu_count()} CPUs, load {load_start[0]:.1f}"
    )
    print("\n".join(_table(results)))
    print(f"written {out}")
    return 0


def _tree_commit(tree: Path) -> str:
    if tree == REPO:
        return timing.git_commit()
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
