"""The most expensive request the service accepts, per scheme, at the published limits: time and memory.

Every case is the largest enrolment and verification the request models let through with the
default limits (``sketchauth_service.settings``: 4,096 numbers per sample, 16 samples, 1 MiB bodies) and the
scheme caps (``sketchauth_service.schemes``), with the sample that makes the decoder work hardest (as many
errors as it corrects, or one more). Each case runs in a fresh process against the real app
(``TestClient``, SQLite) so that nothing earlier is cached or warm but what start-up warms:

* ``cpu_s`` (process CPU time of the request) and ``wall_s``: the request's cost, the first
  independent of other load on the machine;
* ``tracemalloc_peak_mb``: the Python-level allocation peak during a second, identical request
  (tracemalloc slows allocation, so time is taken from the first);
* ``maxrss_delta_mb``: growth of the process's peak resident set over the request (``ru_maxrss``
  before and after; native allocations included). The verification runs in a second process
  against the database the enrolment process wrote, so its peak is its own.

argon2 uses the ``test`` profile so that the numbers are the request's own work (parsing,
validation, sketch encode/decode, store); the production profile adds a fixed cost per hash the
operator chose (:func:`argon2_costs` records it; a PIN cascade hashes twice). The budget is
0.25 s of CPU and 64 MB per request on top of that; ``docs/service/limits.md`` gives the caps
these numbers justify.

    python3 benchmarks/bench_worst_request.py            # every case → benchmarks/results/
    python3 benchmarks/bench_worst_request.py --case pinsketch-32-256
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import timing  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
API_KEY = "worst-request-bench-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
BUDGET_CPU_S = 0.25
BUDGET_MB = 64.0
SAMPLE_LENGTH = 4096  # sketchauth_service.settings.DEFAULT_MAX_SAMPLE_LENGTH
SAMPLES = 16  # sketchauth_service.settings.DEFAULT_MAX_SAMPLES
#: sketchauth_service.limits.MAX_ENROLMENT_NUMBERS and MAX_BODY_BYTES: what an operator may configure at most.
ENROLMENT_NUMBERS = 1 << 18
BODY_BYTES = 1 << 22
MOST_CAPTURES = ENROLMENT_NUMBERS // SAMPLE_LENGTH
OPERATOR_LONGEST = {"max_sample_length": 1 << 16, "max_samples": ENROLMENT_NUMBERS >> 16, "max_body_bytes": BODY_BYTES}
OPERATOR_MOST_CAPTURES = {"max_samples": MOST_CAPTURES, "max_body_bytes": BODY_BYTES}


def _distinct(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high), count)


def _swap(rng: random.Random, elements: list[int], count: int, low: int, high: int) -> list[int]:
    """``elements`` with ``count`` of them replaced by values from [low, high) not in the set."""
    present = set(elements)
    out = list(elements[count:])
    while len(out) < len(elements):
        value = rng.randrange(low, high)
        if value not in present:
            present.add(value)
            out.append(value)
    return out


def cases() -> dict[str, dict[str, Any]]:
    """name → {enrolment body, verification body}: the worst accepted request of each scheme."""
    rng = random.Random(20261124)
    out: dict[str, dict[str, Any]] = {}

    n = 1 << 52
    template = [rng.randrange(n) for _ in range(SAMPLE_LENGTH)]
    out["interval-4096"] = {
        "enrol": {"scheme": "interval", "params": {"n": n, "v": 1 << 50, "features": SAMPLE_LENGTH}},
        "samples": [template],
        "verify": [(x + 12345) % n for x in template],
    }
    word = [rng.randrange(256) for _ in range(255)]
    out["code-offset-255-127"] = {
        "enrol": {"scheme": "code-offset", "params": {"n": 255, "t": 127}},
        "samples": [word],
        "verify": [(b + 1) % 256 if i < 127 else b for i, b in enumerate(word)],
    }
    p = (1 << 17) - 1
    vault = _distinct(rng, 512, 0, p)
    out["fuzzy-vault-131071-512-255"] = {
        "enrol": {"scheme": "fuzzy-vault", "params": {"p": p, "m": 512, "t": 255}},
        "samples": [vault],
        "verify": _swap(rng, vault, 255, 0, p),
    }
    for m, t in ((32, 256), (16, 256), (32, 128), (32, 64), (64, 256)):
        pin_set = (
            _distinct(rng, SAMPLE_LENGTH, 1, 1 << m)
            if m < 32
            else [rng.randrange(1, 1 << m) for _ in range(SAMPLE_LENGTH)]
        )
        pin_set = sorted(set(pin_set))[:SAMPLE_LENGTH]
        # |A Δ B| = t: t/2 removed, t/2 added (the most errors the decoder corrects).
        out[f"pinsketch-{m}-{t}"] = {
            "enrol": {"scheme": "pinsketch", "params": {"m": m, "t": t}},
            "samples": [pin_set],
            "verify": _swap(rng, pin_set, t // 2, 1, 1 << m),
        }
    out["pinsketch-32-256-pin"] = {**out["pinsketch-32-256"], "pin": "correct horse battery"}
    # One more difference than the decoder corrects: the failure path (no roots, a rejected candidate).
    out["pinsketch-32-256-beyond"] = {
        **out["pinsketch-32-256"],
        "verify": _swap(rng, out["pinsketch-32-256"]["samples"][0], 129, 1, 1 << 32),
    }
    # GF(2^64): elements up to 2^64 - 1 (half of them past 2^63), the most errors and one more.
    out["pinsketch-64-256-pin"] = {**out["pinsketch-64-256"], "pin": "correct horse battery"}
    out["pinsketch-64-256-beyond"] = {
        **out["pinsketch-64-256"],
        "verify": _swap(rng, out["pinsketch-64-256"]["samples"][0], 129, 1, 1 << 64),
    }
    out["fuzzy-vault-131071-512-beyond"] = {**out["fuzzy-vault-131071-512-255"], "verify": _swap(rng, vault, 256, 0, p)}
    for scheme, n_asym, features in (
        ("s1", 1 << 40, SAMPLE_LENGTH),
        ("s2", 510, SAMPLE_LENGTH),
        ("s2", (1 << 21) - 2, 1),
        ("s3", 510, SAMPLE_LENGTH),
    ):
        base = [rng.randrange(n_asym // 4, 3 * n_asym // 4) for _ in range(features)]
        q = min(n_asym, 64)
        captures = [[b + rng.randrange(-3, 4) for b in base] for _ in range(SAMPLES)]
        out[f"asymmetric-{scheme}-{n_asym}x{features}"] = {
            "enrol": {
                "scheme": "asymmetric-interval",
                "params": {"n": n_asym, "q": q, "scheme": scheme, "features": features},
            },
            "samples": captures,
            "verify": [b + 1 for b in base],
        }
    for p_w, q_w in ((16384, 8), (2048, 64), (43690, 3)):
        size = min(p_w, SAMPLE_LENGTH)
        core = _distinct(rng, 512 // (q_w - 1) + 8, 0, p_w)
        others = [x for x in range(p_w) if x not in set(core)]
        captures = [core + rng.sample(others, size - len(core)) for _ in range(SAMPLES)]
        out[f"weighted-vault-{p_w}x{q_w}"] = {
            "enrol": {"scheme": "weighted-vault", "params": {"p": p_w, "q": q_w, "g": 512, "t": 255}},
            "samples": captures,
            "verify": core[: 512 // q_w],
        }
    # The largest angular enrolment: 512-D, the most captures (their mean direction is enrolled).
    face = [rng.gauss(0.0, 1.0) for _ in range(512)]
    out["angular-512-8"] = {
        "enrol": {"scheme": "angular", "params": {"dimension": 512, "alpha": 8, "min_cos": 0.5}},
        "samples": [[x + rng.gauss(0.0, 0.05) for x in face] for _ in range(SAMPLES)],
        "verify": [x + rng.gauss(0.0, 0.05) for x in face],
    }
    # The longest sample a weighted-vault verification may carry (the decoder reads the first
    # MAX_CANDIDATE_POINTS // q of them).
    longest = out["weighted-vault-16384x8"]
    out["weighted-vault-16384x8-long-sample"] = {**longest, "verify": longest["samples"][0][:SAMPLE_LENGTH]}
    # What an operator may configure at most (SKETCHAUTH_MAX_SAMPLE_LENGTH = 65536, then at most
    # 4 samples per enrolment: sketchauth_service.limits.MAX_ENROLMENT_NUMBERS; the body limit raised to
    # carry it, within sketchauth_service.limits.MAX_BODY_BYTES): the budget must hold there too.
    big = _distinct(rng, 1 << 16, 1, 1 << 32)
    out["pinsketch-32-256-65536-elements"] = {
        "enrol": {"scheme": "pinsketch", "params": {"m": 32, "t": 256}},
        "samples": [big],
        "verify": _swap(rng, big, 128, 1, 1 << 32),
        "settings": OPERATOR_LONGEST,
    }
    big64 = [rng.randrange(1, 1 << 64) for _ in range(1 << 16)]
    out["pinsketch-64-256-65536-elements"] = {
        "enrol": {"scheme": "pinsketch", "params": {"m": 64, "t": 256}},
        "samples": [big64],
        "verify": _swap(rng, big64, 128, 1, 1 << 64),
        "settings": OPERATOR_LONGEST,
    }
    wide = [rng.randrange(1 << 52) for _ in range(1 << 16)]
    out["interval-65536"] = {
        "enrol": {"scheme": "interval", "params": {"n": 1 << 52, "v": 1 << 50, "features": 1 << 16}},
        "samples": [wide],
        "verify": [(x + 12345) % (1 << 52) for x in wide],
        "settings": OPERATOR_LONGEST,
    }
    # The most captures of 4,096 numbers an operator may allow (MAX_ENROLMENT_NUMBERS / 4096 = 64),
    # for the two schemes that derive a template from many captures. (Before that cap, 256
    # captures with a 16 MiB body: worst-request-20261124-uncapped.json, over budget.)
    many = OPERATOR_MOST_CAPTURES
    asym = out["asymmetric-s2-510x4096"]
    out["asymmetric-s2-510x4096-64-captures"] = {
        **asym,
        "samples": [asym["samples"][i % SAMPLES] for i in range(MOST_CAPTURES)],
        "settings": many,
    }
    weighted = out["weighted-vault-16384x8"]
    out["weighted-vault-16384x8-64-captures"] = {
        **weighted,
        "samples": [weighted["samples"][i % SAMPLES] for i in range(MOST_CAPTURES)],
        "settings": many,
    }
    return out


def _usage() -> tuple[float, float]:
    """(process CPU seconds, peak RSS in MB)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def _measure(send: Any) -> dict[str, Any]:
    cpu0, rss0 = _usage()
    wall0 = time.perf_counter()
    response = send()
    wall = time.perf_counter() - wall0
    cpu1, rss1 = _usage()
    return {"status": response.status_code, "cpu_s": cpu1 - cpu0, "wall_s": wall, "maxrss_delta_mb": rss1 - rss0}


def _traced(send: Any) -> float:
    tracemalloc.start()
    try:
        send()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def run_case(name: str, phase: str, db: Path) -> dict[str, Any]:
    """One phase (``enrol`` or ``verify``) of one case, in this (fresh) process."""
    from fastapi.testclient import TestClient
    from sketchauth_service.app import create_app
    from sketchauth_service.settings import Settings

    case = cases()[name]
    settings = Settings(
        database_url=f"sqlite:///{db}",
        api_keys=(API_KEY,),
        hash_profile="test",
        allow_test_profile=True,
        lockout_threshold=1000,
        disable_threshold=1000,
        **case.get("settings", {}),
    )
    body = {**case["enrol"], "samples": case["samples"], "replace": True}
    if "pin" in case:
        body["pin"] = case["pin"]
    verify = {"sample": case["verify"], **({"pin": case["pin"]} if "pin" in case else {})}
    encoded = len(json.dumps(body if phase == "enrol" else verify))
    with TestClient(create_app(settings)) as client:
        if phase == "enrol":

            def send(user: str = "worst") -> Any:
                return client.post(f"/v1/users/{user}/enrolment", headers=AUTH, json=body)

            result = _measure(send)
            result["tracemalloc_peak_mb"] = _traced(lambda: send("worst-traced"))
        else:

            def send() -> Any:
                return client.post("/v1/users/worst/verification", headers=AUTH, json=verify)

            result = _measure(send)
            result["verified"] = send().json().get("verified")
            result["tracemalloc_peak_mb"] = _traced(send)
    result["body_bytes"] = encoded
    return result


def argon2_costs() -> dict[str, dict[str, float]]:
    """CPU seconds and memory of one argon2id hash verification per production profile."""
    from sketchauth.enrolment import HASH_PROFILES, hasher

    out = {}
    for profile in HASH_PROFILES:
        ph = hasher(profile)
        stored = ph.hash(b"x")
        start = time.process_time()
        ph.verify(stored, b"x")
        out[profile] = {"cpu_s": time.process_time() - start, "memory_mb": ph.memory_cost / 1024.0}
    return out


def _child(name: str, phase: str, db: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, phase, str(db)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="run only these cases (default: all)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, metavar=("CASE", "PHASE", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(args.child[0], args.child[1], Path(args.child[2]))))
        return 0
    started = datetime.datetime.now(datetime.UTC)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.case or list(cases()):
            db = Path(tmp) / f"{name}.db"
            enrol = _child(name, "enrol", db)
            verify = _child(name, "verify", db) if enrol.get("status") == 201 else {"skipped": "enrolment refused"}
            results[name] = {"settings": cases()[name].get("settings", {}), "enrol": enrol, "verify": verify}
            print(name, json.dumps(results[name]), flush=True)
    document = {
        "benchmark": "bench_worst_request.py",
        "date": started.isoformat(timespec="seconds"),
        "commit": timing.git_commit(),
        "cpu": {"model": timing.cpu_name(), "logical_cpus": os.cpu_count(), "machine": platform.machine()},
        "python": platform.python_version(),
        "load_average_start": list(os.getloadavg()),
        "budget": {"cpu_s": BUDGET_CPU_S, "memory_mb": BUDGET_MB},
        "argon2_per_hash": argon2_costs(),
        "method": "each phase in a fresh process against the app (TestClient, SQLite, argon2 test profile); CPU "
        "time and ru_maxrss delta of the first request, tracemalloc peak of a second identical one",
        "results": results,
    }
    out = args.out or RESULTS / f"worst-request-{started:%Y%m%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
