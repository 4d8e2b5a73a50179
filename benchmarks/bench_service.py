"""Loopback load benchmark of the verification service against the argon2-alone ceiling.

Starts ``sketchauth serve --workers W`` on a free loopback port with a temporary SQLite database,
enrols a population, then

1. **ceiling**: W processes doing nothing but argon2id verifications with the same profile: the
   most verifications per second this machine can do (argon2 is the dominant cost by design);
2. **overhead**: a second server with the same code but argon2's cheapest (``test``) profile
   answers sequential genuine verifications (one in flight); its p50 latency minus the p50 of
   one ``test``-profile argon2 verification and of one sketch decode (both in-process) is what
   HTTP, JSON, validation, the thread hand-off and the store add to every request;
3. **load**: ``--concurrency`` clients verifying genuine samples against the server with the
   chosen profile: throughput and p50/p99 latency, and throughput as a share of the ceiling.

Ceiling and load alternate in ``--slice``-second slices for ``--duration`` seconds of load in
all, so that whatever else runs on the machine weighs on both alike.

The load generator runs on the same cores, so it is a minimal keep-alive HTTP/1.1 client on
asyncio streams (a small fraction of a millisecond of CPU per request). Targets: throughput ≥ 80% of the
ceiling, overhead < 5 ms at p50.

    python3 benchmarks/bench_service.py --duration 30 --slice 5 --profile owasp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
# Run from a checkout without installing: the package is the repository root.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import timing  # noqa: E402

API_KEY = "bench-" + secrets.token_hex(8)


def _argon2_worker(profile: str, seconds: float, out: mp.Queue) -> None:
    from sketchauth.enrolment import hasher

    ph = hasher(profile)
    stored = ph.hash(b"sketchauth bench secret")
    count = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        ph.verify(stored, b"sketchauth bench secret")
        count += 1
    out.put(count)


def argon2_ceiling(profile: str, workers: int, seconds: float) -> float:
    """Verifications per second with ``workers`` processes doing only argon2id."""
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_argon2_worker, args=(profile, seconds, queue)) for _ in range(workers)]
    for p in procs:
        p.start()
    total = sum(queue.get() for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


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


def start_server(workdir: Path, port: int, workers: int, profile: str) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_HASH_PROFILE": profile,
        # The overhead server runs the cheapest ("test") profile, which serve refuses unless allowed.
        "SKETCHAUTH_ALLOW_TEST_PROFILE": "1" if profile == "test" else "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
    }
    args = [
        sys.executable,
        "-m",
        "sketchauth.cli",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--db",
        f"sqlite:///{workdir / 'bench.db'}",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    proc = subprocess.Popen(args, cwd=workdir, env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("server did not become ready")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load (default 30)")
    parser.add_argument("--slice", type=float, default=5.0, help="seconds per alternating ceiling/load slice")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", default="owasp", help="argon2 profile (default owasp)")
    parser.add_argument("--features", type=int, default=64, help="interval-sketch features (default 64)")
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--sequential", type=int, default=100, help="requests for the overhead phase")
    args = parser.parse_args(argv)

    people = population(args.users, args.features)
    argon_p50, _ = in_process_costs(args.profile, args.features)
    cheap_argon_p50, decode_p50 = in_process_costs("test", args.features)
    with tempfile.TemporaryDirectory() as tmp:
        # Overhead: same code path, argon2 made negligible.
        port = free_port()
        proc = start_server(Path(tmp) / "overhead", port, args.workers, "test")
        base = f"http://127.0.0.1:{port}"
        try:
            asyncio.run(enrol_all(base, people, args.features))
            asyncio.run(verify_loop(port, people, 1, None, 50))  # warm connections and code
            sequential = asyncio.run(verify_loop(port, people, 1, None, args.sequential))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        port = free_port()
        proc = start_server(Path(tmp) / "load", port, args.workers, args.profile)
        base = f"http://127.0.0.1:{port}"
        ceilings: list[float] = []
        loaded: list[float] = []
        elapsed = 0.0
        try:
            asyncio.run(enrol_all(base, people, args.features))
            asyncio.run(verify_loop(port, people, args.concurrency, 2.0, None))  # warm connections
            # Alternate short ceiling and load slices so that other jobs on the machine weigh on
            # both alike (the ceiling drifts by tens of percent on a shared machine).
            rounds = max(1, round(args.duration / args.slice))
            for _ in range(rounds):
                ceilings.append(argon2_ceiling(args.profile, args.workers, args.slice))
                start = time.perf_counter()
                loaded += asyncio.run(verify_loop(port, people, args.concurrency, args.slice, None))
                elapsed += time.perf_counter() - start
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    ceiling = float(np.mean(ceilings))
    throughput = len(loaded) / elapsed
    seq_p50 = float(np.percentile(sequential, 50))
    overhead = seq_p50 - cheap_argon_p50 - decode_p50
    p50, p99 = (float(np.percentile(loaded, q)) for q in (50, 99))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# sketchauth serve --workers {args.workers}, argon2 profile {args.profile}, interval sketch "
        f"with {args.features} features, SQLite, {os.cpu_count()} CPUs, {args.duration:.0f} s at concurrency "
        f"{args.concurrency}, 1-min load average at the end {load:.1f}"
    )
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| argon2id verify alone, p50 (1 process) | {argon_p50 * 1e3:.1f} ms |")
    print(f"| sketch decode, p50 | {decode_p50 * 1e3:.3f} ms |")
    print(
        f"| ceiling: argon2 alone in {args.workers} processes (slices: min / max) | {ceiling:.1f} "
        f"verifications/s ({min(ceilings):.1f} / {max(ceilings):.1f}) |"
    )
    print(
        f"| service throughput under load | {throughput:.1f} verifications/s"
        f" ({100 * throughput / ceiling:.0f}% of ceiling) |"
    )
    print(f"| latency under load, p50 / p99 | {p50 * 1e3:.1f} ms / {p99 * 1e3:.1f} ms |")
    print(f"| sequential latency with the test profile, p50 | {seq_p50 * 1e3:.2f} ms |")
    print(f"| service overhead at p50 (that − argon2 test profile − decode) | {overhead * 1e3:.2f} ms |")
    ok = throughput >= 0.8 * ceiling and overhead < 0.005
    print(f"targets (>= 80% of ceiling, overhead < 5 ms): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
