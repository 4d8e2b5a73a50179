"""The worst request under concurrency: 64 at once against a real ``sketchauth serve`` on loopback.

``bench_worst_request.py`` measures one worst-case request alone; this measures what many of them
at once do to the server and to everyone else. Each scenario starts a fresh ``sketchauth serve``
(one worker, SQLite, the production ``owasp`` argon2 profile), opens 64 connections, and sends 64
requests through them at the same instant while two probes run beside them:

* ``/livez`` every 25 ms on its own connection (its latency: is the event loop free?);
* the server's resident set (``VmRSS`` of ``/proc/<pid>/status``) every 10 ms.

Scenarios:

* ``enrolments-one-key``: 64 largest weighted-vault enrolments (16 captures of 4,096 elements,
  p = 16384, q = 8: a ~0.46 MB body, the dearest enrolment within the default limits;
  ``bench_worst_request.py``), all with one API key;
* ``enrolments-64-keys``: the same, each request with its own key (the global limit, not the
  per-key one, is what binds);
* ``key-releases``: 64 key releases (an argon2id key derivation each on top of the verification)
  with 64 keys, while a 65th key sends cheap verifications one after another (their latency).

Per request: status, latency (until the whole answer is read, the request being written meanwhile:
a refused request is answered before its body is read), ``Retry-After``. Summaries: admitted (2xx) and refused (503/429)
counts, the slowest refusal, whether every refusal carried ``Retry-After``, any other status,
``/livez`` latency (max, p99), and the server's memory (baseline after start-up, peak during).

    python3 benchmarks/bench_load.py --label after       # → benchmarks/results/load-<date>-after.json
    python3 benchmarks/bench_load.py --scenario key-releases
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import timing  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
CONCURRENCY = 64
SAMPLE_LENGTH = 4096
SAMPLES = 16
#: What the issue's "done when" asks of the server under this load.
REFUSAL_BOUND_MS = 50.0
LIVEZ_BOUND_MS = 100.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def weighted_vault_enrolment(seed: int = 20261124) -> tuple[dict[str, Any], list[int]]:
    """The dearest enrolment within the default limits (weighted vault p = 16384, q = 8, 16 x 4,096),
    and a genuine verification sample for it."""
    rng = random.Random(seed)
    p, q = 16384, 8
    core = rng.sample(range(p), 512 // (q - 1) + 8)
    others = [x for x in range(p) if x not in set(core)]
    captures = [core + rng.sample(others, SAMPLE_LENGTH - len(core)) for _ in range(SAMPLES)]
    body = {"scheme": "weighted-vault", "params": {"p": p, "q": q, "g": 512, "t": 255}, "samples": captures}
    return body, core[: 512 // q]


class Server:
    """``sketchauth serve`` in its own process group, with a key file of ``keys`` keys."""

    def __init__(self, workdir: Path, keys: list[str], env: dict[str, str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        key_file = workdir / "keys"
        key_file.write_text("".join(f"k{i}:enrol,verify:{key}\n" for i, key in enumerate(keys)))
        full = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "service")]),
            "SKETCHAUTH_API_KEY_FILE": str(key_file),
            "SKETCHAUTH_DATABASE_URL": f"sqlite:///{workdir / 'load.db'}",
            "SKETCHAUTH_ACCESS_LOG": "0",
            **env,
        }
        self.log = (workdir / "server.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sketchauth.cli", "serve", "--port", str(self.port)],
            env=full,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError((workdir / "server.log").read_text())
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError("server not ready")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
        return float("nan")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


class Probes:
    """``/livez`` latency and the server's RSS, sampled in the background."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.livez_ms: list[float] = []
        self.rss: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._livez), threading.Thread(target=self._memory)]

    def __enter__(self) -> Probes:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _livez(self) -> None:
        with httpx.Client(base_url=self.server.url, timeout=30) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    client.get("/livez").raise_for_status()
                except httpx.HTTPError:
                    self.errors += 1
                self.livez_ms.append(1000 * (time.perf_counter() - start))
                self._stop.wait(0.025)

    def _memory(self) -> None:
        while not self._stop.is_set():
            self.rss.append(self.server.rss_mb())
            self._stop.wait(0.01)


def _exchange(sock: socket.socket, request: bytes) -> dict[str, Any]:
    """Send ``request`` and read the answer at the same time; the answer's latency and status.

    An HTTP client that sends the whole body before it reads (as most do) would measure the
    upload too; the server answers a refused request before reading its body, so the answer is
    read while the body is still going out, and the clock stops when the answer is complete.
    """
    sock.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    sent, received = 0, bytearray()
    start = time.perf_counter()
    try:
        while True:
            for _, events in selector.select(timeout=120):
                if events & selectors.EVENT_WRITE:
                    try:
                        sent += sock.send(request[sent : sent + 65536])
                    except BlockingIOError:
                        pass
                    except OSError:
                        sent = len(request)
                    if sent >= len(request):
                        selector.modify(sock, selectors.EVENT_READ)
                if events & selectors.EVENT_READ:
                    chunk = sock.recv(65536)
                    received += chunk
                    answer = _parsed(bytes(received))
                    if answer is not None or not chunk:
                        elapsed = 1000 * (time.perf_counter() - start)
                        status, headers = answer if answer is not None else ("closed", {})
                        return {"status": status, "ms": elapsed, "retry_after": headers.get("retry-after")}
    finally:
        selector.close()


def _parsed(data: bytes) -> tuple[int, dict[str, str]] | None:
    """(status, headers) once ``data`` holds a whole answer (``Content-Length`` bodies), else None."""
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator:
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if len(body) < int(headers.get("content-length", "0")):
        return None
    return int(lines[0].split()[1]), headers


def _fire(port: int, requests: list[tuple[str, str, bytes]]) -> list[dict[str, Any]]:
    """Send every ``(key, path, body)`` at once, each on its own (already open) connection."""
    results: list[dict[str, Any]] = [{} for _ in requests]
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in requests]
    messages = [
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
        for key, path, body in requests
    ]
    barrier = threading.Barrier(len(requests))

    def one(i: int) -> None:
        barrier.wait()
        results[i] = _exchange(sockets[i], messages[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sock in sockets:
        sock.close()
    return results


def _summary(results: list[dict[str, Any]], probes: Probes, baseline_mb: float) -> dict[str, Any]:
    admitted = [r for r in results if isinstance(r["status"], int) and 200 <= r["status"] < 300]
    refused = [r for r in results if r["status"] in (429, 503)]
    other = [r for r in results if r not in admitted and r not in refused]
    livez = sorted(probes.livez_ms)
    return {
        "requests": len(results),
        "admitted": len(admitted),
        "refused_503": sum(r["status"] == 503 for r in refused),
        "refused_429": sum(r["status"] == 429 for r in refused),
        "other": sorted({str(r["status"]) for r in other}),
        "other_count": len(other),
        "refused_max_ms": round(max((r["ms"] for r in refused), default=0.0), 1),
        "refused_all_retry_after": all(r.get("retry_after") for r in refused),
        "admitted_max_ms": round(max((r["ms"] for r in admitted), default=0.0), 1),
        "admitted_median_ms": round(statistics.median([r["ms"] for r in admitted]), 1) if admitted else None,
        "livez_max_ms": round(livez[-1], 1) if livez else None,
        "livez_p99_ms": round(livez[int(0.99 * (len(livez) - 1))], 1) if livez else None,
        "livez_probes": len(livez),
        "livez_errors": probes.errors,
        "rss_baseline_mb": round(baseline_mb, 1),
        "rss_peak_mb": round(max(probes.rss, default=baseline_mb), 1),
    }


def enrolments(workdir: Path, *, keys: int, env: dict[str, str]) -> dict[str, Any]:
    body, _ = weighted_vault_enrolment()
    encoded = json.dumps(body).encode()
    names = [secrets.token_urlsafe(24) for _ in range(keys)]
    server = Server(workdir, names, env)
    try:
        baseline = server.rss_mb()
        requests = [(names[i % keys], f"/v1/users/load-{i}/enrolment", encoded) for i in range(CONCURRENCY)]
        with Probes(server) as probes:
            results = _fire(server.port, requests)
            time.sleep(0.2)
        return {"body_bytes": len(encoded), **_summary(results, probes, baseline)}
    finally:
        server.stop()


def key_releases(workdir: Path, *, env: dict[str, str]) -> dict[str, Any]:
    """64 key releases at once (64 keys) while a 65th key verifies one attempt after another."""
    interval = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
    names = [secrets.token_urlsafe(24) for _ in range(CONCURRENCY + 1)]
    server = Server(
        workdir, names, {"SKETCHAUTH_LOCKOUT_THRESHOLD": "1000", "SKETCHAUTH_DISABLE_THRESHOLD": "1000", **env}
    )
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {names[-1]}"}, timeout=60) as c:
            for user in ("holder", "bystander"):
                assert c.post(f"/v1/users/{user}/enrolment", json=interval).status_code == 201
            alone = []
            for _ in range(5):
                start = time.perf_counter()
                assert (
                    c.post("/v1/users/bystander/verification", json={"sample": [123, 30, 205, 71]}).status_code == 200
                )
                alone.append(1000 * (time.perf_counter() - start))
        release = json.dumps({"sample": [123, 30, 205, 71], "context": "bench/v1"}).encode()
        baseline = server.rss_mb()
        requests = [(names[i], "/v1/users/holder/key", release) for i in range(CONCURRENCY)]
        bystander: list[float] = []
        done = threading.Event()

        def verify_meanwhile() -> None:
            with httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {names[-1]}"}, timeout=60
            ) as client:
                while not done.is_set():
                    start = time.perf_counter()
                    client.post("/v1/users/bystander/verification", json={"sample": [123, 30, 205, 71]})
                    bystander.append(1000 * (time.perf_counter() - start))

        with Probes(server) as probes:
            side = threading.Thread(target=verify_meanwhile)
            side.start()
            results = _fire(server.port, requests)
            done.set()
            side.join()
        return {
            **_summary(results, probes, baseline),
            "verification_alone_median_ms": round(statistics.median(alone), 1),
            "verification_during_max_ms": round(max(bystander, default=0.0), 1),
            "verification_during_median_ms": round(statistics.median(bystander), 1) if bystander else None,
        }
    finally:
        server.stop()


SCENARIOS = {
    "enrolments-one-key": lambda workdir, env: enrolments(workdir, keys=1, env=env),
    "enrolments-64-keys": lambda workdir, env: enrolments(workdir, keys=CONCURRENCY, env=env),
    "key-releases": lambda workdir, env: key_releases(workdir, env=env),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    parser.add_argument("--label", default="after", help="file name suffix (before/after)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="extra SKETCHAUTH_* settings of the server"
    )
    args = parser.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    document: dict[str, Any] = {
        **timing.provenance("bench_load.py"),
        "load_average_start": list(os.getloadavg()),
        "concurrency": CONCURRENCY,
        "bounds": {"refused_max_ms": REFUSAL_BOUND_MS, "livez_max_ms": LIVEZ_BOUND_MS},
        "server": {"workers": 1, "database": "sqlite", "hash_profile": "owasp", "settings": env},
        "results": {},
    }
    for name in args.scenario or list(SCENARIOS):
        with tempfile.TemporaryDirectory() as tmp:
            document["results"][name] = SCENARIOS[name](Path(tmp), env)
        print(name, json.dumps(document["results"][name]), flush=True)
    out = args.out or RESULTS / f"load-{document['date'][:10].replace('-', '')}-{args.label}.json"
    timing.write_result(out, document, echo=False)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
