"""Instructions per verification request, counted by callgrind: the service's cost without the machine's load.

A loaded 2-core machine moves CPU times by a third from one run to the next (caches, other
jobs), which hides the few per cent a change to the request path makes. An instruction count
does not move: each variant below runs in its own process under ``valgrind --tool=callgrind``
with instrumentation off, drives ``--requests`` genuine verification requests straight into the
ASGI app (no sockets, no HTTP parsing: what an HTTP server adds is the same for every variant),
and counts only those requests (``callgrind_control -i on`` / ``off`` around them).

Variants (interval sketch with 64 features, 16 enrolled users, argon2's ``test`` profile, SQLite):

* ``bare``: the bare FastAPI endpoint of :mod:`benchmarks.bench_service` (the peer);
* ``service``: the service as it runs (the attempt handed to the server's thread pool, its
  decode and hash from there to a hashing thread);
* ``service-stack``: the same with the attempt replaced by a constant answer: the ASGI layers,
  routing, key checks, body decoding and validation, the answer, and the hand-off to the pool;
* ``service-on-loop``: the service with the attempt, its decode and its hash run on the event
  loop's thread (no hand-offs; not how it runs: argon2 would hold the loop), so that the
  hand-offs' share shows;
* ``stack-on-loop``: both (the ASGI work alone).

``--compare TREE ...`` counts ``service`` for other checkouts too (before/after), each labelled
by its ``--compare-commit``. Needs valgrind.

    python3 benchmarks/bench_service_instructions.py --compare /tmp/a /tmp/b --compare-commit a29eeaf 08ff02f
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import _inprocess, timing  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"

#: Run under callgrind, with the measured tree first on the path: argv = variant, requests.
_CHILD = (
    r"""
import asyncio, contextlib, json, os, subprocess, sys, tempfile
variant, count = sys.argv[1], int(sys.argv[2])
"""
    + _inprocess.PEOPLE
    + r"""
def toggle(flag):
    subprocess.run(["callgrind_control", "-i", flag, str(os.getpid())], capture_output=True, check=False)
"""
    + _inprocess.REQUEST
    + r"""
async def measure(app):
    for i in range(50):
        await request(app, i)
    toggle("on")
    for i in range(count):
        await request(app, i)
    toggle("off")

if variant == "bare":
    asyncio.run(measure(bare_app()))
    sys.exit(0)

from sketchauth_service import usecases
from sketchauth_service.authenticator import Authenticator, Verification

if variant in ("service-on-loop", "stack-on-loop"):
    import sketchauth_service.api.users as users
    async def on_loop(work, *args):
        return work(*args)
    users.run_in_threadpool = on_loop  # the attempt on the event loop's thread
    Authenticator._run = lambda self, work, *args, **kwargs: work(*args, **kwargs)  # and its hash there too

DATABASE = "instructions.db"
def prepare(client):
    if variant in ("service-stack", "stack-on-loop"):
        usecases.attempt = lambda state, request: Verification(True)
"""
    + _inprocess.SERVICE
)


def count_instructions(tree: Path, variant: str, requests: int) -> int:
    """Instructions callgrind counted over ``requests`` requests of ``variant`` run from ``tree``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "service"), str(REPO)]),
        "SKETCHAUTH_ACCESS_LOG": "0",
    }
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}",
                sys.executable,
                "-c",
                _CHILD,
                variant,
                str(requests),
            ],
            cwd=tree,  # "-c" puts the working directory first on the path: the measured tree's packages
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{variant} from {tree} failed: {done.stderr[-2000:]}")
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count for {variant}: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests counted per variant")
    parser.add_argument("--compare", type=Path, nargs="*", default=[], help="other checkouts: their 'service' too")
    parser.add_argument("--compare-commit", nargs="*", default=[], help="the commits --compare hold, in order")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_service_instructions.json")
    args = parser.parse_args(argv)
    if len(args.compare_commit) != len(args.compare):
        parser.error("one --compare-commit per --compare tree")
    started = datetime.datetime.now(datetime.UTC)
    variants = ["bare", "service", "service-stack", "service-on-loop", "stack-on-loop"]
    per_request = {v: count_instructions(REPO, v, args.requests) / args.requests for v in variants}
    results: dict[str, Any] = {"current": per_request}
    for tree, commit in zip(args.compare, args.compare_commit, strict=True):
        results[commit] = {"service": count_instructions(tree.resolve(), "service", args.requests) / args.requests}
    bare = per_request["bare"]
    document = {
        "benchmark": "bench_service_instructions.py",
        "date": started.isoformat(timespec="seconds"),
        "commit": timing.git_commit(),
        "compare": {commit: str(tree) for tree, commit in zip(args.compare, args.compare_commit, strict=True)},
        "cpu": {"model": timing.cpu_name(), "logical_cpus": os.cpu_count(), "machine": platform.machine()},
        "python": platform.python_version(),
        "settings": {"requests": args.requests, "features": 64, "users": 16, "profile": "test", "store": "sqlite"},
        "method": "callgrind instruction count (Ir) of N in-process ASGI verification requests, instrumentation "
        "on only around them; no sockets or HTTP parsing",
        "instructions_per_request": results,
        "breakdown": {
            "bare": bare,
            "service_over_bare": per_request["service"] / bare,
            "asgi_layers_and_routing": per_request["stack-on-loop"],
            "asgi_layers_and_routing_over_bare": per_request["stack-on-loop"] / bare,
            "thread_hand_offs": per_request["service"] - per_request["service-on-loop"],
            "attempt": per_request["service-on-loop"] - per_request["stack-on-loop"],
            "bare_over_service": bare / per_request["service"],
        },
    }
    for commit in args.compare_commit:
        document["breakdown"][f"{commit}_over_current"] = results[commit]["service"] / per_request["service"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    for name, value in document["breakdown"].items():
        print(f"{name}: {value:,.3f}")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
