"""The compiled kernels against minisketch, a naive C floor and reedsolo: same run, ratios, JSON.

Run::

    python3 benchmarks/bench_native.py --minisketch-lib /path/to/libminisketch.so

minisketch (https://github.com/sipa/minisketch, the reference BCH set-reconciliation library:
the same mathematics as PinSketch) is not part of this project: build it yourself, anywhere, as
a shared library and pass its path; without ``--minisketch-lib`` the peer columns are left out.
``benchmarks/c_floor.c`` (our own benchmark-only C: naive prime-field floors and a timing shim
that runs the peer's whole pipeline in C, so no Python or ctypes overhead is charged to it) is
compiled into a temporary directory with the machine's ``cc``.

What is measured (per call, both wall time and the thread's CPU time — on a busy machine wall
time mostly measures waiting for a core, so the tables use the best CPU time of many runs;
the JSON has both, with medians; ratios are ours / theirs from the same run, interleaved):

* PinSketch, m ∈ {16, 32}, t ∈ {8, …, 256}, |A| = t + 40: **decode typical** (half of the
  difference missing from the sample, half extra elements), **decode worst** (all of it missing:
  every root must come from splitting), **encode**. Three columns for us: ``public`` (the
  library call ``sketch.decode(helper, sample)``: helper parsing and digest, sample validation,
  the recovery), ``kernel`` (validated syndromes and sample in, the recovered set out — the same
  work as the peer's pipeline: load the sketch, add the sample, decode, ``A = B Δ D``) and
  ``numpy`` (the public call on the fallback implementation).
* m = 32 against m = 16 at the same t; transient memory of a decode at the largest accepted
  parameters (PinSketch(32, 256), a 4,096-element sample; growth of the peak resident set of a
  fresh process, Linux); cold start (a fresh interpreter: import and first decode).
* FuzzyVault: Berlekamp–Welch against the naive C floor; vault encode and decode at p = 65,521
  against the naive C floor and against the numpy implementation (today's code path).
* CodeOffsetSketch.decode against ``reedsolo.RSCodec.decode`` alone.

Results go to ``benchmarks/results/native-<date>.json`` (date, commit, CPU from /proc/cpuinfo,
load average) and a summary table is printed; ``--markdown FILE`` renders a results file as the
Markdown tables the docs show.
"""

# The measuring lambdas below close over loop variables on purpose: each is called inside its own
# loop iteration (by interleaved()), never later.
# ruff: noqa: B023

from __future__ import annotations

import argparse
import ctypes
import datetime
import functools
import json
import os
import platform
import random
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# E402: run directly as a script, so the package root must be on sys.path before these imports.
from benchmarks import timing  # noqa: E402
from sketchauth.sketches import _gf2m, backend  # noqa: E402
from sketchauth.sketches._prime_field import berlekamp_welch, poly_eval  # noqa: E402
from sketchauth.sketches.code_offset import CodeOffsetSketch  # noqa: E402
from sketchauth.sketches.format import pack_uints  # noqa: E402
from sketchauth.sketches.pinsketch import PinSketch  # noqa: E402
from sketchauth.sketches.vault import FuzzyVault  # noqa: E402

M_VALUES = (16, 32)
T_VALUES = (8, 16, 32, 64, 128, 256)
EXTRA = 40  # |A| = t + EXTRA

#: Time spent per measured operation and side (seconds), and repetition bounds.
BUDGET = 0.25
MIN_REPS, MAX_REPS = 5, 2000
ROUNDS = 3  # ours / theirs interleaved this many times


# -- environment ------------------------------------------------------------------------------------


def cpu_info() -> dict[str, Any]:
    info: dict[str, Any] = {"machine": platform.machine(), "logical_cpus": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and "model" not in info:
            info["model"] = value.strip()
        elif key == "cpu MHz" and "mhz" not in info:
            info["mhz"] = float(value)
        elif key == "flags" and "flags" not in info:
            flags = set(value.split())
            info["flags"] = sorted(flags & {"pclmulqdq", "vpclmulqdq", "avx2", "avx512f", "sse4_1", "bmi2"})
    return info


# -- timing -------------------------------------------------------------------------------------------


Timing = tuple[int, int]  # (wall ns, thread CPU ns) of one call


#: Calls shorter than this are timed in batches (the clock reads, ~0.1-0.5 µs, must not count).
BATCH_NS = 50_000


def python_times(fn: Callable[[], object], budget: float = BUDGET, max_reps: int = MAX_REPS) -> list[Timing]:
    """Per-call wall and thread-CPU nanoseconds of ``fn()`` (after one warm-up call) within
    ``budget`` seconds of wall time; short calls are timed in batches."""
    start = time.perf_counter_ns()
    fn()
    inner = max(1, min(1000, BATCH_NS // max(1, time.perf_counter_ns() - start)))
    times: list[Timing] = []
    spent = 0
    while len(times) < max_reps and (len(times) < MIN_REPS or spent < budget * 1e9):
        start, cpu = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(inner):
            fn()
        elapsed = time.perf_counter_ns() - start
        times.append((elapsed // inner, (time.thread_time_ns() - cpu) // inner))
        spent += elapsed
    return times


def c_times(run: Callable[[int, Any], object], budget: float = BUDGET) -> list[Timing]:
    """Per-call timings from a C function timing ``reps`` runs itself (``run(reps, times)``, two
    values per run: wall and thread CPU); short calls are batched (``set_inner_calls``)."""
    floor = FLOOR[0]
    floor.set_inner_calls(1)
    probe = (ctypes.c_int64 * 6)()
    run(3, probe)
    each = max(1, min(probe[0], probe[2], probe[4]))
    inner = max(1, min(1000, BATCH_NS // each))
    floor.set_inner_calls(inner)
    reps = int(max(MIN_REPS, min(MAX_REPS, budget * 1e9 // (each * inner))))
    times = (ctypes.c_int64 * (2 * reps))()
    run(reps, times)
    floor.set_inner_calls(1)
    return [(times[2 * i], times[2 * i + 1]) for i in range(reps)]


def summary(times: list[Timing]) -> dict[str, float]:
    wall = [w for w, _ in times]
    cpu = [c for _, c in times]
    return {
        "min_ms": min(wall) / 1e6,
        "median_ms": statistics.median(wall) / 1e6,
        "cpu_min_ms": min(cpu) / 1e6,
        "cpu_median_ms": statistics.median(cpu) / 1e6,
        "runs": len(times),
    }


def interleaved(sides: dict[str, Callable[[], list[Timing]]]) -> dict[str, dict[str, float]]:
    """Run every side ``ROUNDS`` times in turn; pool each side's runs."""
    pooled: dict[str, list[Timing]] = {name: [] for name in sides}
    for _ in range(ROUNDS):
        for name, measure in sides.items():
            pooled[name] += measure()
    return {name: summary(times) for name, times in pooled.items()}


def ratio(ours: dict[str, float], theirs: dict[str, float]) -> dict[str, float]:
    """ours / theirs: of the best wall times, the median wall times, and the best CPU times."""
    return {
        "min": round(ours["min_ms"] / theirs["min_ms"], 3),
        "median": round(ours["median_ms"] / theirs["median_ms"], 3),
        "cpu_min": round(ours["cpu_min_ms"] / theirs["cpu_min_ms"], 3),
    }


# -- C helpers -----------------------------------------------------------------------------------------


#: The loaded c_floor library (c_times sets its batch size).
FLOOR: list[ctypes.CDLL] = []


def build_floor(directory: Path) -> ctypes.CDLL:
    target = directory / "c_floor.so"
    compiler = os.environ.get("CC", "cc")
    subprocess.run(
        [compiler, "-O3", "-shared", "-fPIC", "-o", str(target), str(ROOT / "benchmarks" / "c_floor.c")], check=True
    )
    lib = ctypes.CDLL(str(target))
    lib.set_inner_calls.argtypes = [ctypes.c_int]
    FLOOR[:] = [lib]
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.naive_bw_times.argtypes = [i64p, i64p, ctypes.c_int, ctypes.c_int, ctypes.c_int64, i64p, ctypes.c_int, i64p]
    lib.naive_bw_times.restype = ctypes.c_int64
    lib.naive_vault_lock_times.argtypes = [
        i64p,
        ctypes.c_int,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_uint8),
        i64p,
        i64p,
        ctypes.c_int,
        i64p,
    ]
    lib.naive_vault_read_times.argtypes = [
        i64p,
        ctypes.c_int64,
        i64p,
        ctypes.c_int,
        ctypes.c_int,
        i64p,
        ctypes.c_int,
        i64p,
    ]
    lib.naive_vault_read_times.restype = ctypes.c_int64
    u64p = ctypes.POINTER(ctypes.c_uint64)
    vpp = ctypes.POINTER(ctypes.c_void_p)
    lib.peer_encode_times.argtypes = [
        vpp,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_size_t,
        u64p,
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_int,
        i64p,
    ]
    lib.peer_decode_times.argtypes = [
        vpp,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_size_t,
        ctypes.c_char_p,
        u64p,
        ctypes.c_size_t,
        u64p,
        ctypes.c_int,
        i64p,
    ]
    lib.peer_decode_times.restype = ctypes.c_int64
    return lib


def ptr(array: np.ndarray, ctype: Any) -> Any:
    return array.ctypes.data_as(ctypes.POINTER(ctype))


class Minisketch:
    """minisketch through ctypes; its pipelines are timed by the C shim."""

    def __init__(self, path: str, floor: ctypes.CDLL, budget: float = BUDGET) -> None:
        self.lib = ctypes.CDLL(path)
        self.floor = floor
        self.budget = budget
        lib = self.lib
        lib.minisketch_create.restype = ctypes.c_void_p
        lib.minisketch_create.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_size_t]
        lib.minisketch_implementation_supported.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
        lib.minisketch_serialized_size.argtypes = [ctypes.c_void_p]
        lib.minisketch_serialized_size.restype = ctypes.c_size_t
        lib.minisketch_destroy.argtypes = [ctypes.c_void_p]
        names = ["create", "destroy", "add_uint64", "serialize", "deserialize", "decode"]
        self.fns = (ctypes.c_void_p * 6)(
            *[ctypes.cast(getattr(lib, f"minisketch_{n}"), ctypes.c_void_p).value for n in names]
        )
        self.impl: dict[int, int] = {}

    def implementations(self, bits: int) -> list[int]:
        return [
            i
            for i in range(self.lib.minisketch_implementation_max() + 1)
            if self.lib.minisketch_implementation_supported(bits, i)
        ]

    def serialized_size(self, bits: int, capacity: int) -> int:
        sk = self.lib.minisketch_create(bits, self.implementations(bits)[0], capacity)
        size = self.lib.minisketch_serialized_size(sk)
        self.lib.minisketch_destroy(sk)
        return size

    def encode(self, bits: int, impl: int, capacity: int, elements: np.ndarray) -> bytes:
        size = self.serialized_size(bits, capacity)
        out = ctypes.create_string_buffer(size)
        times = (ctypes.c_int64 * 2)()
        self.floor.peer_encode_times(
            self.fns, bits, impl, capacity, ptr(elements, ctypes.c_uint64), elements.size, out, size, 1, times
        )
        return out.raw

    def encode_times(self, bits: int, impl: int, capacity: int, elements: np.ndarray) -> list[Timing]:
        size = self.serialized_size(bits, capacity)
        out = ctypes.create_string_buffer(size)
        return c_times(
            lambda reps, times: self.floor.peer_encode_times(
                self.fns, bits, impl, capacity, ptr(elements, ctypes.c_uint64), elements.size, out, size, reps, times
            ),
            budget=self.budget,
        )

    def decode(self, bits: int, impl: int, capacity: int, sketch: bytes, sample: np.ndarray) -> list[int]:
        result = np.zeros(sample.size + capacity, dtype=np.uint64)
        times = (ctypes.c_int64 * 2)()
        count = self.floor.peer_decode_times(
            self.fns,
            bits,
            impl,
            capacity,
            sketch,
            ptr(sample, ctypes.c_uint64),
            sample.size,
            ptr(result, ctypes.c_uint64),
            1,
            times,
        )
        return result[:count].tolist() if count >= 0 else []

    def decode_times(self, bits: int, impl: int, capacity: int, sketch: bytes, sample: np.ndarray) -> list[Timing]:
        result = np.zeros(sample.size + capacity, dtype=np.uint64)
        return c_times(
            lambda reps, times: self.floor.peer_decode_times(
                self.fns,
                bits,
                impl,
                capacity,
                sketch,
                ptr(sample, ctypes.c_uint64),
                sample.size,
                ptr(result, ctypes.c_uint64),
                reps,
                times,
            ),
            budget=self.budget,
        )

    def fastest_implementation(self, bits: int) -> int:
        rng = random.Random(bits)
        elements = np.array(sorted(rng.sample(range(1, 1 << bits), 72)), dtype=np.uint64)
        best: tuple[float, int] | None = None
        for impl in self.implementations(bits):
            sketch = self.encode(bits, impl, 32, elements)
            cost = min(cpu for _, cpu in self.decode_times(bits, impl, 32, sketch, elements[32:]))
            if best is None or cost < best[0]:
                best = (cost, impl)
        assert best is not None
        return best[1]


# -- PinSketch ----------------------------------------------------------------------------------------


def pinsketch_sets(m: int, t: int) -> tuple[list[int], list[int], list[int]]:
    """A (|A| = t + 40), a typical sample (t/2 missing, t − t/2 extra), a worst one (t missing)."""
    rng = random.Random(1000 * m + t)
    pool = rng.sample(range(1, 1 << m), 2 * t + EXTRA)
    enrolled = pool[: t + EXTRA]
    extra = pool[t + EXTRA :]
    typical = enrolled[t // 2 :] + extra[: t - t // 2]
    worst = enrolled[t:]
    return enrolled, typical, worst


def bench_pinsketch(
    peer: Minisketch | None, numpy_reps: int, budget: float
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    timed = functools.partial(python_times, budget=budget)
    rows = []
    impl = {m: peer.fastest_implementation(m) for m in M_VALUES} if peer else {}
    for m in M_VALUES:
        for t in T_VALUES:
            enrolled, typical, worst = pinsketch_sets(m, t)
            native = PinSketch(m, t, backend="native")
            numpy_ = PinSketch(m, t, backend="numpy")
            helper = native.encode(enrolled)
            field = native.field
            syndromes = native.syndromes(helper)
            expected = sorted(enrolled)
            a_words = np.array(sorted(enrolled), dtype=np.uint64)
            row: dict[str, Any] = {"m": m, "t": t, "set_size": len(enrolled)}
            for label, sample in (("decode_typical", typical), ("decode_worst", worst)):
                checked = native.check_secret(sample)
                assert native.decode(helper, sample).tolist() == expected
                sides: dict[str, Callable[[], list[Timing]]] = {
                    "ours_public": lambda s=sample: timed(lambda: native.decode(helper, s)),
                    "ours_kernel": lambda c=checked: timed(lambda: _gf2m.decode_set(field, syndromes, c)),
                }
                if peer:
                    peer_sketch = peer.encode(m, impl[m], t, a_words)
                    sample_words = np.array(sorted(sample), dtype=np.uint64)
                    assert peer.decode(m, impl[m], t, peer_sketch, sample_words) == expected
                    sides["minisketch"] = lambda ps=peer_sketch, sw=sample_words: peer.decode_times(
                        m, impl[m], t, ps, sw
                    )
                result = interleaved(sides)
                result["numpy_public"] = summary(timed(lambda s=sample: numpy_.decode(helper, s), max_reps=numpy_reps))
                if peer:
                    result["ratio_public"] = ratio(result["ours_public"], result["minisketch"])
                    result["ratio_kernel"] = ratio(result["ours_kernel"], result["minisketch"])
                    result["ratio_numpy"] = ratio(result["numpy_public"], result["minisketch"])
                row[label] = result
            sides = {
                "ours_public": lambda: timed(lambda: native.encode(enrolled)),
                "ours_kernel": lambda: timed(lambda: _gf2m.odd_power_sums(field, a_words, t)),
            }
            if peer:
                sides["minisketch"] = lambda: peer.encode_times(m, impl[m], t, a_words)
            result = interleaved(sides)
            result["numpy_public"] = summary(timed(lambda: numpy_.encode(enrolled), max_reps=numpy_reps))
            if peer:
                result["ratio_public"] = ratio(result["ours_public"], result["minisketch"])
                result["ratio_kernel"] = ratio(result["ours_kernel"], result["minisketch"])
            row["encode"] = result
            rows.append(row)
            print(f"  pinsketch m={m} t={t} done", flush=True)
    return rows, {str(m): impl[m] for m in impl}


def m32_over_m16(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {(r["m"], r["t"]): r for r in rows}
    out = []
    for t in T_VALUES:
        entry: dict[str, Any] = {"t": t}
        for label in ("decode_typical", "decode_worst"):
            for side in ("ours_public", "ours_kernel"):
                a, b = by[(32, t)][label][side], by[(16, t)][label][side]
                entry[f"{label}_{side}"] = ratio(a, b)
        out.append(entry)
    return out


def profile_public(budget: float, m: int = 16, t: int = 8) -> dict[str, Any]:
    """Where a small public call spends its time: each step of ``decode`` / ``encode`` alone.

    The steps outside the field arithmetic are the helper record (read: the sketch's own header
    bytes matched, lengths and BLAKE2b digest checked, payload checks; written: the cached header,
    the digest — :mod:`sketchauth.sketches.format`) and the validation of the caller's set
    (:func:`sketchauth.sketches.samples.as_element_set`); the rest is this backend. The general
    helper parser (canonical JSON parameters), which the public calls only use for records that
    are not the sketch's own, is shown for comparison.
    """
    from sketchauth.sketches.format import pack_helper, parse_helper

    enrolled, typical, _ = pinsketch_sets(m, t)
    sketch = PinSketch(m, t, backend="native")
    helper = sketch.encode(enrolled)
    payload = sketch.payload(helper)
    checked = sketch.check_secret(typical)
    a_checked = sketch.check_secret(enrolled)
    width = (m + 7) // 8
    steps = {
        "decode (public call)": lambda: sketch.decode(helper, typical),
        "  helper record (own header, digest, payload checks)": lambda: sketch._unwrap(helper),
        "  sample validation (as_element_set)": lambda: sketch.check_secret(typical),
        "  field kernel (decode_payload)": lambda: _gf2m.decode_payload(sketch.field, payload, width, checked),
        "encode (public call)": lambda: sketch.encode(enrolled),
        "  secret validation (as_element_set)": lambda: sketch.check_secret(enrolled),
        "  field kernel (power sums, packed)": lambda: _gf2m.odd_power_sums_packed(sketch.field, a_checked, t, width),
        "  helper record (cached header, digest)": lambda: sketch._wrap(payload),
        "general parser (parse_helper: digest + JSON)": lambda: parse_helper(helper),
        "general writer (pack_helper: JSON + digest)": lambda: pack_helper(sketch.scheme_id, sketch.params(), payload),
    }
    return {
        "m": m,
        "t": t,
        "min_us": {
            name: round(min(w for w, _ in python_times(fn, budget=budget)) / 1e3, 2) for name, fn in steps.items()
        },
    }


# -- memory and cold start --------------------------------------------------------------------------

_MEMORY_PROBE = textwrap.dedent(
    """
    import random, sys
    def status_mib(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith(key))
    def reset():
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    side, case = sys.argv[1], sys.argv[2]
    rng = random.Random(4096)
    pool = rng.sample(range(1, 1 << 32), 4096 + 256)
    enrolled = pool[:4096]
    sample = enrolled[128:] + pool[4096:4096 + 128] if case == "typical" else enrolled[256:]
    if side == "minisketch":
        sys.path.insert(0, sys.argv[4])
        import ctypes, numpy as np, bench_native
        floor = bench_native.build_floor(__import__("pathlib").Path(sys.argv[5]))
        peer = bench_native.Minisketch(sys.argv[3], floor)
        impl = peer.fastest_implementation(32)
        sketch = peer.encode(32, impl, 256, np.array(enrolled, dtype=np.uint64))
        words = np.array(sorted(sample), dtype=np.uint64)
        run = lambda: peer.decode(32, impl, 256, sketch, words)
    else:
        from sketchauth.sketches.pinsketch import PinSketch
        sketch = PinSketch(32, 256, backend=side)
        helper = sketch.encode(enrolled)
        small = PinSketch(32, 8, backend=side)
        small.decode(small.encode([1, 2, 3]), [1])
        run = lambda: sketch.decode(helper, sample).tolist()
    reset()
    before = status_mib("VmRSS")
    assert sorted(run()) == sorted(enrolled)
    print(status_mib("VmHWM") - before)
    """
)


def bench_memory(peer_path: str | None, tmp: Path) -> dict[str, Any]:
    if not Path("/proc/self/clear_refs").exists():
        return {"skipped": "needs Linux's /proc/self/clear_refs"}
    out: dict[str, Any] = {"parameters": "PinSketch(32, 256), |A| = 4096", "unit": "MiB of peak-RSS growth"}
    sides = ["native", "numpy"] + (["minisketch"] if peer_path else [])
    for side in sides:
        for case in ("typical", "worst"):
            args = [sys.executable, "-c", _MEMORY_PROBE, side, case]
            if side == "minisketch":
                probe_dir = tmp / f"probe-{case}"
                probe_dir.mkdir(exist_ok=True)
                args += [peer_path, str(ROOT / "benchmarks"), str(probe_dir)]
            result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True)
            out[f"{side}_{case}"] = round(float(result.stdout.strip().splitlines()[-1]), 2)
    return out


COLD = {
    "pinsketch m=16 t=16": (
        "from sketchauth.sketches.pinsketch import PinSketch\n"
        "s = PinSketch(16, 16{b}); a = list(range(1, 41)); h = s.encode(a)\n"
        "assert s.decode(h, a[8:] + list(range(100, 108))).tolist() == a"
    ),
    "pinsketch m=32 t=16": (
        "from sketchauth.sketches.pinsketch import PinSketch\n"
        "s = PinSketch(32, 16{b}); a = [i * 2654435761 % 4294967291 + 1 for i in range(1, 41)]\n"
        "h = s.encode(a)\n"
        "assert s.decode(h, a[16:]).tolist() == sorted(a)"
    ),
    "fuzzy-vault p=65521 m=40 t=8": (
        "from sketchauth.sketches.vault import FuzzyVault\n"
        "v = FuzzyVault(65521, 40, 8{b}); a = list(range(1000, 1040)); h = v.encode(a)\n"
        "assert v.decode(h, a[8:] + list(range(5, 13))).tolist() == a"
    ),
    "python -c pass": "pass",
    "python -c 'import numpy'": "import numpy",
}


def cold_ms(source: str, runs: int = 7) -> dict[str, float]:
    """Wall time of fresh interpreters running ``source``, as an installed package runs: with
    bytecode caches (one untimed run writes them, even where PYTHONDONTWRITEBYTECODE is set)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", source], check=True, cwd=ROOT, env=env)
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", source], check=True, cwd=ROOT, env=env)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {
        "min_ms": 1000 * min(times),
        "median_ms": 1000 * statistics.median(times),
        # CPU time of the child (user + system): what the wall time is on an idle machine
        "cpu_min_ms": 1000 * min(cpu),
    }


def bench_cold() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, source in COLD.items():
        if "{b}" in source:
            out[f"{name} native"] = cold_ms(source.format(b=', backend="native"'))
            out[f"{name} numpy"] = cold_ms(source.format(b=', backend="numpy"'))
        else:
            out[name] = cold_ms(source)
    return out


# -- vaults -------------------------------------------------------------------------------------------


def bw_words(p: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n distinct points of F over F_p (degree < k) with exactly (n − k)/2 errors."""
    rng = np.random.default_rng(seed)
    xs = rng.choice(p, n, replace=False).astype(np.int64)
    coeffs = rng.integers(0, p, k).astype(np.int64)
    ys = poly_eval(coeffs, xs, p)
    wrong = rng.choice(n, (n - k) // 2, replace=False)
    ys[wrong] = (ys[wrong] + 1 + rng.integers(0, p - 1, wrong.size)) % p
    return xs, ys, coeffs


def bench_berlekamp_welch(floor: ctypes.CDLL, budget: float) -> list[dict[str, Any]]:
    timed = functools.partial(python_times, budget=budget)
    c_timed = functools.partial(c_times, budget=budget)
    rows = []
    for p, n, k in ((10007, 22, 18), (65521, 40, 24), (65521, 128, 64), (65521, 256, 128), (65521, 512, 112)):
        xs, ys, coeffs = bw_words(p, n, k, p + n)
        x2, y2 = np.ascontiguousarray(xs[None, :]), np.ascontiguousarray(ys[None, :])
        got, ok = berlekamp_welch(x2, y2, k, p, backend="native")
        assert ok[0] and got[0].tolist() == coeffs.tolist()
        out = np.zeros(k, dtype=np.int64)

        def floor_run(reps: int, times: Any) -> object:
            return floor.naive_bw_times(
                ptr(xs, ctypes.c_int64), ptr(ys, ctypes.c_int64), n, k, p, ptr(out, ctypes.c_int64), reps, times
            )

        floor_run(1, (ctypes.c_int64 * 2)())
        assert out.tolist() == coeffs.tolist()
        result = interleaved(
            {
                "ours_native": lambda: timed(lambda: berlekamp_welch(x2, y2, k, p, backend="native")),
                "naive_c": lambda: c_timed(floor_run),
            }
        )
        result["numpy"] = summary(timed(lambda: berlekamp_welch(x2, y2, k, p, backend="numpy"), max_reps=50))
        result["ratio_native_to_naive_c"] = ratio(result["ours_native"], result["naive_c"])
        result["ratio_numpy_to_naive_c"] = ratio(result["numpy"], result["naive_c"])
        rows.append({"p": p, "n": n, "k": k, **result})
        print(f"  berlekamp-welch n={n} done", flush=True)
    return rows


def bench_vaults(floor: ctypes.CDLL, budget: float) -> list[dict[str, Any]]:
    timed = functools.partial(python_times, budget=budget)
    c_timed = functools.partial(c_times, budget=budget)
    rows = []
    for p, m, t in ((10007, 22, 2), (65521, 40, 8)):
        rng = random.Random(p)
        enrolled = sorted(rng.sample(range(p), m))
        outside = sorted(set(rng.sample(range(p), m + t)) - set(enrolled))[:t]
        sample = enrolled[t:] + outside
        native, numpy_ = FuzzyVault(p, m, t, backend="native"), FuzzyVault(p, m, t, backend="numpy")
        randomness = native.draw_randomness(enrolled)
        helper = native.encode_with(enrolled, randomness)
        assert native.decode(helper, sample).tolist() == enrolled == numpy_.decode(helper, sample).tolist()
        coeffs = np.ascontiguousarray(randomness.coefficients, dtype=np.int64)
        offsets = np.ascontiguousarray(randomness.chaff_offsets, dtype=np.int64)
        genuine = np.zeros(p, dtype=np.uint8)
        genuine[enrolled] = 1
        values = np.zeros(p, dtype=np.int64)
        k = m - 2 * t

        def lock_run(reps: int, times: Any) -> object:
            return floor.naive_vault_lock_times(
                ptr(coeffs, ctypes.c_int64),
                k,
                p,
                ptr(genuine, ctypes.c_uint8),
                ptr(offsets, ctypes.c_int64),
                ptr(values, ctypes.c_int64),
                reps,
                times,
            )

        lock_run(1, (ctypes.c_int64 * 2)())
        assert pack_uints(values, native._width) == native.payload(helper)  # the floor locks the same vault
        sample_words = np.array(sample, dtype=np.int64)
        found = np.zeros(m + 2, dtype=np.int64)

        def read_run(reps: int, times: Any) -> object:
            return floor.naive_vault_read_times(
                ptr(values, ctypes.c_int64),
                p,
                ptr(sample_words, ctypes.c_int64),
                m,
                k,
                ptr(found, ctypes.c_int64),
                reps,
                times,
            )

        assert read_run(1, (ctypes.c_int64 * 2)()) == m and found[:m].tolist() == enrolled
        encode = interleaved(
            {
                "ours_native_with_randomness": lambda: timed(lambda: native.encode(enrolled)),
                "ours_native_fixed_randomness": lambda: timed(lambda: native.encode_with(enrolled, randomness)),
                "naive_c": lambda: c_timed(lock_run),
            }
        )
        encode["numpy_with_randomness"] = summary(timed(lambda: numpy_.encode(enrolled), max_reps=200))
        encode["numpy_fixed_randomness"] = summary(
            timed(lambda: numpy_.encode_with(enrolled, randomness), max_reps=200)
        )
        encode["draw_randomness"] = summary(timed(lambda: native.draw_randomness(enrolled), max_reps=200))
        encode["ratio_native_to_naive_c"] = ratio(encode["ours_native_fixed_randomness"], encode["naive_c"])
        encode["ratio_native_to_numpy"] = ratio(encode["ours_native_with_randomness"], encode["numpy_with_randomness"])
        decode = interleaved(
            {
                "ours_native": lambda: timed(lambda: native.decode(helper, sample)),
                "naive_c": lambda: c_timed(read_run),
            }
        )
        decode["numpy"] = summary(timed(lambda: numpy_.decode(helper, sample), max_reps=200))
        decode["ratio_native_to_naive_c"] = ratio(decode["ours_native"], decode["naive_c"])
        decode["ratio_native_to_numpy"] = ratio(decode["ours_native"], decode["numpy"])
        rows.append({"p": p, "m": m, "t": t, "encode": encode, "decode": decode})
        print(f"  vault p={p} done", flush=True)
    return rows


def bench_code_offset(budget: float) -> list[dict[str, Any]]:
    import reedsolo

    timed = functools.partial(python_times, budget=budget)
    rows = []
    for n, t in ((32, 4), (64, 8), (255, 16)):
        sketch = CodeOffsetSketch(n=n, t=t)
        secret = secrets.token_bytes(n)
        helper = sketch.encode(secret)
        noisy = bytearray(secret)
        for i in random.Random(n).sample(range(n), t):
            noisy[i] ^= 0x5A
        noisy = bytes(noisy)
        payload = sketch.payload(helper)
        word = bytes(a ^ b for a, b in zip(noisy, payload, strict=False))
        codec = reedsolo.RSCodec(2 * t, nsize=255)
        assert sketch.decode(helper, noisy) == secret
        result = interleaved(
            {
                "ours_decode": lambda: timed(lambda: sketch.decode(helper, noisy)),
                "reedsolo_decode": lambda: timed(lambda: codec.decode(bytearray(word))),
            }
        )
        result["ratio"] = ratio(result["ours_decode"], result["reedsolo_decode"])
        rows.append({"n": n, "t": t, **result})
    return rows


# -- report -------------------------------------------------------------------------------------------


def print_tables(results: dict[str, Any]) -> None:
    print("\nPinSketch decode/encode, CPU ms (best of many runs); ratio = ours / minisketch")
    print(
        f"{'m':>3} {'t':>4} {'op':<15} {'public':>9} {'kernel':>9} {'numpy':>9} {'minisk.':>9}"
        f" {'pub/ms':>7} {'ker/ms':>7}"
    )
    for row in results["pinsketch"]:
        for op in ("decode_typical", "decode_worst", "encode"):
            r = row[op]
            peer = r.get("minisketch", {}).get("cpu_min_ms", float("nan"))
            rp = r.get("ratio_public", {}).get("cpu_min", float("nan"))
            rk = r.get("ratio_kernel", {}).get("cpu_min", float("nan"))
            print(
                f"{row['m']:>3} {row['t']:>4} {op:<15} {r['ours_public']['cpu_min_ms']:>9.4f}"
                f" {r['ours_kernel']['cpu_min_ms']:>9.4f}"
                f" {r['numpy_public']['cpu_min_ms']:>9.3f} {peer:>9.4f} {rp:>7.2f} {rk:>7.2f}"
            )
    print(
        "\nm=32 / m=16 decode (public, min):",
        [
            (e["t"], e["decode_typical_ours_public"]["cpu_min"], e["decode_worst_ours_public"]["cpu_min"])
            for e in results["m32_over_m16"]
        ],
    )
    print("profile of the public calls at m=16, t=8 (µs, min):")
    for name, value in results["profile_public_m16_t8"]["min_us"].items():
        print(f"  {name:<40} {value:>8.2f}")
    print("memory:", results["memory"])
    print(
        "cold (wall, cpu):",
        {k: (round(v["min_ms"], 1), round(v["cpu_min_ms"], 1)) for k, v in results["cold_start"].items()},
    )
    for row in results["berlekamp_welch"]:
        print(
            f"BW p={row['p']} n={row['n']} k={row['k']}: native {row['ours_native']['cpu_min_ms']:.4f} ms,"
            f" naive C {row['naive_c']['cpu_min_ms']:.4f} ms, ratio {row['ratio_native_to_naive_c']['cpu_min']},"
            f" numpy {row['numpy']['cpu_min_ms']:.3f} ms"
        )
    for row in results["vaults"]:
        e, d = row["encode"], row["decode"]
        print(
            f"vault p={row['p']} m={row['m']}: encode native {e['ours_native_with_randomness']['cpu_min_ms']:.3f}"
            f" (fixed randomness {e['ours_native_fixed_randomness']['cpu_min_ms']:.3f})"
            f" naive C {e['naive_c']['cpu_min_ms']:.3f} numpy {e['numpy_with_randomness']['cpu_min_ms']:.3f};"
            f" decode native {d['ours_native']['cpu_min_ms']:.3f} naive C {d['naive_c']['cpu_min_ms']:.3f}"
            f" numpy {d['numpy']['cpu_min_ms']:.3f}"
        )
    for row in results["code_offset"]:
        print(
            f"code-offset n={row['n']} t={row['t']}: ours {row['ours_decode']['cpu_min_ms']:.3f} ms,"
            f" reedsolo {row['reedsolo_decode']['cpu_min_ms']:.3f} ms, ratio {row['ratio']['cpu_min']}"
        )


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables (what the docs show)."""
    cpu = results["cpu"]
    lines = [
        (
            f"Measured {results['date']} at commit `{results['commit'][:12]}` on {cpu.get('model', '?')} "
            f"({cpu.get('logical_cpus')} logical CPUs, flags {', '.join(cpu.get('flags', []))}), "
            f"Python {results['python']}, numpy {results['numpy']}; load average "
            f"{results['load_average_start'][0]:.1f} → {results['load_average_end'][0]:.1f}. "
            "Times are the best CPU time of many runs (ms); ratios ours / theirs from the same run."
        ),
        "",
        "| m | t | operation | public | kernel | numpy | minisketch | public / ms | kernel / ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["pinsketch"]:
        for op in ("decode_typical", "decode_worst", "encode"):
            r = row[op]
            peer = r.get("minisketch", {}).get("cpu_min_ms")
            rp = r.get("ratio_public", {}).get("cpu_min")
            rk = r.get("ratio_kernel", {}).get("cpu_min")
            lines.append(
                f"| {row['m']} | {row['t']} | {op.replace('_', ' ')} | {r['ours_public']['cpu_min_ms']:.4f} | "
                f"{r['ours_kernel']['cpu_min_ms']:.4f} | {r['numpy_public']['cpu_min_ms']:.3f} | "
                f"{'' if peer is None else f'{peer:.4f}'} | {'' if rp is None else f'{rp:.2f}'} | "
                f"{'' if rk is None else f'{rk:.2f}'} |"
            )
    lines += ["", "| t | m=32 / m=16 decode typical (public) | decode worst (public) |", "|---|---|---|"]
    for e in results["m32_over_m16"]:
        lines.append(
            f"| {e['t']} | {e['decode_typical_ours_public']['cpu_min']:.2f} |"
            f" {e['decode_worst_ours_public']['cpu_min']:.2f} |"
        )
    mem = results["memory"]
    lines += ["", f"Transient memory, {mem.get('parameters')} ({mem.get('unit')}):", ""]
    lines += [f"- {k}: {v}" for k, v in mem.items() if k not in ("parameters", "unit")]
    lines += ["", "| cold start (fresh process, best of 7) | wall ms | CPU ms |", "|---|---|---|"]
    lines += [
        f"| {k} | {v['min_ms']:.1f} | {v.get('cpu_min_ms', float('nan')):.1f} |"
        for k, v in results["cold_start"].items()
    ]
    lines += [
        "",
        "| Berlekamp–Welch p, n, k | native | naive C | numpy | native / naive C |",
        "|---|---|---|---|---|",
    ]
    for r in results["berlekamp_welch"]:
        lines.append(
            f"| {r['p']}, {r['n']}, {r['k']} | {r['ours_native']['cpu_min_ms']:.4f} | "
            f"{r['naive_c']['cpu_min_ms']:.4f} | "
            f"{r['numpy']['cpu_min_ms']:.3f} | {r['ratio_native_to_naive_c']['cpu_min']:.2f} |"
        )
    lines += [
        "",
        "| vault p, m, t | encode native (with randomness / fixed) | naive C | numpy "
        "| decode native | naive C | numpy |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["vaults"]:
        e, d = r["encode"], r["decode"]
        lines.append(
            f"| {r['p']}, {r['m']}, {r['t']} | {e['ours_native_with_randomness']['cpu_min_ms']:.3f} / "
            f"{e['ours_native_fixed_randomness']['cpu_min_ms']:.3f} | {e['naive_c']['cpu_min_ms']:.3f} | "
            f"{e['numpy_with_randomness']['cpu_min_ms']:.3f} | {d['ours_native']['cpu_min_ms']:.3f} | "
            f"{d['naive_c']['cpu_min_ms']:.3f} | {d['numpy']['cpu_min_ms']:.3f} |"
        )
    lines += ["", "| CodeOffset n, t | decode | reedsolo decode | ratio |", "|---|---|---|---|"]
    for r in results["code_offset"]:
        lines.append(
            f"| {r['n']}, {r['t']} | {r['ours_decode']['cpu_min_ms']:.3f} | "
            f"{r['reedsolo_decode']['cpu_min_ms']:.3f} | "
            f"{r['ratio']['cpu_min']:.2f} |"
        )
    prof = results.get("profile_public_m16_t8")
    if prof:
        lines += ["", f"Profile of the public calls at m={prof['m']}, t={prof['t']} (µs):", ""]
        lines += [f"- {k.strip()}: {v}" for k, v in prof["min_us"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minisketch-lib", help="path of a libminisketch shared library (built outside this project)")
    parser.add_argument("--out", help="JSON output file (default benchmarks/results/native-<date>.json)")
    parser.add_argument("--numpy-reps", type=int, default=40, help="most runs per numpy PinSketch measurement")
    parser.add_argument("--budget", type=float, default=BUDGET, help="seconds per measured operation and side")
    parser.add_argument("--markdown", metavar="JSON", help="print the tables of an earlier results file and exit")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())), end="")
        return
    budget = args.budget
    if backend() != "native":
        sys.exit("the compiled extension is not built: reinstall with a C compiler to benchmark it")
    started = datetime.datetime.now(datetime.UTC)
    results: dict[str, Any] = {
        "benchmark": "bench_native.py",
        "date": started.isoformat(timespec="seconds"),
        "commit": timing.git_commit(),
        "cpu": cpu_info(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_start": os.getloadavg(),
        "method": "min and median per call; ours and the peer interleaved in one process, "
        f"{ROUNDS} rounds of a {budget} s budget each; peer pipelines timed in C",
    }
    with tempfile.TemporaryDirectory() as tmp:
        floor = build_floor(Path(tmp))
        peer = Minisketch(args.minisketch_lib, floor, budget) if args.minisketch_lib else None
        if peer:
            results["minisketch"] = {"library": str(Path(args.minisketch_lib).resolve())}
        print("PinSketch ...", flush=True)
        results["pinsketch"], impl = bench_pinsketch(peer, args.numpy_reps, budget)
        if peer:
            results["minisketch"]["implementation_by_bits"] = impl
        results["m32_over_m16"] = m32_over_m16(results["pinsketch"])
        results["profile_public_m16_t8"] = profile_public(budget)
        print("memory ...", flush=True)
        results["memory"] = bench_memory(args.minisketch_lib, Path(tmp))
        print("cold start ...", flush=True)
        results["cold_start"] = bench_cold()
        print("vaults ...", flush=True)
        results["berlekamp_welch"] = bench_berlekamp_welch(floor, budget)
        results["vaults"] = bench_vaults(floor, budget)
        print("code-offset ...", flush=True)
        results["code_offset"] = bench_code_offset(budget)
    results["load_average_end"] = os.getloadavg()
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"native-{started:%Y%m%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print_tables(results)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
