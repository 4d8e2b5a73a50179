"""What one argon2id hash of each profile costs: wall time (p50) and CPU time, in one process.

argon2-cffi's ``hash_secret_raw`` with each profile's parameters (``sketchauth.enrolment.HASH_PROFILES``),
after one warm-up hash (the first maps the memory), ``--repeats`` times; the profiles alternate
so that the machine's other load weighs on each alike. This is the cost a verification pays once
(twice with a PIN) and an offline guess pays per guess. Result:
``benchmarks/results/bench_argon2.json`` (the docs' figures for the profiles are read from it).

    python3 benchmarks/bench_argon2.py
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

PROFILES = ("owasp", "rfc9106-low-memory")


def hash_once(profile: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``hash_secret_raw`` with ``profile``'s parameters."""
    from argon2.low_level import hash_secret_raw

    from sketchauth.enrolment import HASH_PROFILES

    p = HASH_PROFILES[profile]
    salt = secrets.token_bytes(p.salt_len)
    wall, cpu = time.perf_counter(), time.process_time()
    hash_secret_raw(
        b"sketchauth bench secret",
        salt,
        time_cost=p.time_cost,
        memory_cost=p.memory_cost,
        parallelism=p.parallelism,
        hash_len=p.hash_len,
        type=p.type,
        version=p.version,
    )
    return time.perf_counter() - wall, time.process_time() - cpu


#: Run in a child: user and system CPU per ``owasp`` hash, with glibc's mapping threshold held at
#: 128 KiB (argv[1] == "mapped": every hash maps a fresh block) or left to glibc (reused).
_MAPPING = r"""
import ctypes, json, resource, secrets, sys
from argon2.low_level import hash_secret_raw
from sketchauth.enrolment import HASH_PROFILES
if sys.argv[1] == "mapped":
    ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
p = HASH_PROFILES["owasp"]
salt = secrets.token_bytes(16)
def one():
    hash_secret_raw(b"x", salt, time_cost=p.time_cost, memory_cost=p.memory_cost, parallelism=p.parallelism,
                    hash_len=p.hash_len, type=p.type, version=p.version)
one()
n = int(sys.argv[2])
r0 = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(n):
    one()
r1 = resource.getrusage(resource.RUSAGE_SELF)
user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
print(json.dumps({"user_ms": 1e3 * user / n, "system_ms": 1e3 * system / n}))
"""


def mapping_cost(repeats: int) -> dict[str, Any]:
    """CPU per ``owasp`` hash when every hash maps its memory afresh, and when it reuses it (glibc only)."""
    import json
    import platform
    import subprocess

    if platform.libc_ver()[0] != "glibc":
        return {}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = {}
    for mode in ("reused", "mapped"):
        done = subprocess.run(
            [sys.executable, "-c", _MAPPING, mode, str(repeats)], env=env, capture_output=True, text=True, check=True
        )
        out[mode] = json.loads(done.stdout)
    return out


def measure(repeats: int) -> dict[str, Any]:
    from sketchauth.enrolment import HASH_PROFILES

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in PROFILES}
    for name in PROFILES:
        hash_once(name)
    for _ in range(repeats):
        for name in PROFILES:
            samples[name].append(hash_once(name))
    out: dict[str, Any] = {}
    for name, pairs in samples.items():
        p = HASH_PROFILES[name]
        out[name] = {
            "parameters": {"time_cost": p.time_cost, "memory_kib": p.memory_cost, "parallelism": p.parallelism},
            "wall_ms_p50": 1e3 * statistics.median(w for w, _ in pairs),
            "cpu_ms_p50": 1e3 * statistics.median(c for _, c in pairs),
            "repeats": len(pairs),
        }
    out["rfc9106_over_owasp_cpu"] = out["rfc9106-low-memory"]["cpu_ms_p50"] / out["owasp"]["cpu_ms_p50"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_argon2.json")
    args = parser.parse_args(argv)
    result = {
        **timing.provenance("bench_argon2.py"),
        "load_average_start": list(os.getloadavg()),
        "profiles": measure(args.repeats),
        "owasp_memory_mapped_per_hash_vs_reused": mapping_cost(args.repeats),
        "load_average_end": list(os.getloadavg()),
    }
    timing.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
