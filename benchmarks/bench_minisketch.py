"""PinSketch against C++ minisketch through ctypes: same-run interleaved ratios, JSON.

Run::

    MINISKETCH_LIB=/path/to/libminisketch.so python benchmarks/bench_minisketch.py
    python benchmarks/bench_minisketch.py --lib /path/to/libminisketch.so [--quick]

minisketch (https://github.com/bitcoin-core/minisketch, the reference BCH set-reconciliation
library: the same mathematics as PinSketch) is not part of this project and nothing here fetches
or builds it. Build it yourself, outside this repository, as a shared library; from a checkout of
its sources (the autotools build works too, this is the short way with g++)::

    cd minisketch && mkdir -p obj
    for f in src/minisketch.cpp src/fields/generic_*.cpp; do
        g++ -std=c++11 -O2 -fPIC -DHAVE_CLMUL -Iinclude -c "$f" -o "obj/$(basename "$f" .cpp).o"; done
    for f in src/fields/clmul_*.cpp; do
        g++ -std=c++11 -O2 -fPIC -mpclmul -DHAVE_CLMUL -Iinclude -c "$f" -o "obj/$(basename "$f" .cpp).o"; done
    g++ -shared -o libminisketch.so obj/*.o

Without the library (no ``--lib``, no ``MINISKETCH_LIB``, or a path that does not load) the script
says so and exits with status 2.

**The peer.** One minisketch object per (m, t), created once with ``minisketch_create`` and reused
for every call, as a Python caller holding a sketch would use it:

* *encode* (the sketch of a set): ``minisketch_deserialize`` of zeros (the reset),
  ``minisketch_add_uint64`` per element, ``minisketch_serialize`` into a fresh buffer;
* *decode* (recover the difference): ``minisketch_deserialize`` of the stored sketch,
  ``minisketch_add_uint64`` per element of the sample, ``minisketch_decode`` (at most t elements).

**Ours.** The public calls ``PinSketch(m, t).encode(elements)`` (validation, power sums, the
versioned helper record with its digest) and ``.decode(helper, sample)`` (record and payload
checks, sample validation, the recovery, ``A = B Δ D``) with the default backend. Both sides get
the same Python ``list`` of ``int`` s.

``--markdown RESULT [--before EARLIER]`` prints a result file as the table the docs show.

**Sizes.** ``m ∈ {8, 16, 32}`` (and 64 when PinSketch supports it), ``t ∈ {4, 16, 64}``,
``|set| ∈ {t, 1000}`` (1000 is capped at the ``2^m − 1`` elements of GF(2^8): 255). The decode
sample differs from the set in exactly t elements, half of them missing and half extra.

**Timing.** For every case, rounds alternate the two sides (the order flips each round); a round
times a batch of calls of each side with the thread's CPU clock and the wall clock. Reported per
case: median µs per call of each side and the median over rounds of the per-round ratio
``ours / minisketch`` (CPU), so load on the shared machine moves absolute times more than the
ratios. The JSON also records ``ctypes_call_us``, the CPU time of one trivial call through the
binding: at ``|set| = 1000`` the peer's time is mostly its thousand ``minisketch_add_uint64``
calls, each paying it (minisketch's own arithmetic is cheaper; ``bench_native.py`` compares the
kernels with a C shim that calls minisketch without Python). Results go to
``benchmarks/results/bench_minisketch.json`` (date, commit, CPU).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# E402: run directly as a script, so the package root must be on sys.path before these imports.
from benchmarks import timing  # noqa: E402
from sketchauth.sketches import _gf2m, backend  # noqa: E402
from sketchauth.sketches.pinsketch import PinSketch  # noqa: E402

OUTPUT = ROOT / "benchmarks" / "results" / "bench_minisketch.json"
M_VALUES = (8, 16, 32, 64)
T_VALUES = (4, 16, 64)
LARGE_SET = 1000
#: Target CPU time per batch of calls (a batch is long enough for the clocks' resolution).
BATCH_SECONDS = 0.002


class Minisketch:
    """One minisketch object (capacity t over GF(2^m)), created once and reused by every call."""

    def __init__(self, lib: ctypes.CDLL, m: int, t: int) -> None:
        lib.minisketch_create.restype = ctypes.c_void_p
        lib.minisketch_create.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_size_t]
        lib.minisketch_destroy.argtypes = [ctypes.c_void_p]
        lib.minisketch_serialized_size.restype = ctypes.c_size_t
        lib.minisketch_serialized_size.argtypes = [ctypes.c_void_p]
        lib.minisketch_serialize.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.minisketch_deserialize.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.minisketch_add_uint64.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.minisketch_decode.restype = ctypes.c_ssize_t
        lib.minisketch_decode.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64)]
        handle = lib.minisketch_create(m, 0, t)
        if not handle:
            raise RuntimeError(f"minisketch_create({m}, 0, {t}) failed")
        self._lib, self._handle, self.t = lib, ctypes.c_void_p(handle), t
        self.size = lib.minisketch_serialized_size(self._handle)
        self._zero = bytes(self.size)
        self._out = (ctypes.c_uint64 * t)()
        self._add = lib.minisketch_add_uint64
        self._serialize = lib.minisketch_serialize
        self._deserialize = lib.minisketch_deserialize
        self._decode = lib.minisketch_decode

    def call_overhead_us(self, calls: int = 20000) -> float:
        """CPU µs of one trivial call through this binding (``minisketch_bits``): what each
        ``minisketch_add_uint64`` of a set costs on top of minisketch's own work."""
        bits, handle = self._lib.minisketch_bits, self._handle
        bits.argtypes = [ctypes.c_void_p]
        bits.restype = ctypes.c_uint32
        start = time.thread_time()
        for _ in range(calls):
            bits(handle)
        return 1e6 * (time.thread_time() - start) / calls

    def close(self) -> None:
        self._lib.minisketch_destroy(self._handle)

    def encode(self, elements: list[int]) -> bytes:
        handle, add = self._handle, self._add
        self._deserialize(handle, self._zero)
        for x in elements:
            add(handle, x)
        out = ctypes.create_string_buffer(self.size)
        self._serialize(handle, out)
        return out.raw

    def decode(self, sketch: bytes, sample: list[int]) -> list[int]:
        handle, add = self._handle, self._add
        self._deserialize(handle, sketch)
        for x in sample:
            add(handle, x)
        count = self._decode(handle, self.t, self._out)
        if count < 0:
            raise RuntimeError("minisketch could not decode")
        return list(self._out[:count])


def load_library(path: str | None) -> ctypes.CDLL | None:
    """The minisketch shared library at ``path`` (None when absent or unloadable)."""
    if not path or not Path(path).is_file():
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.minisketch_bits_supported.argtypes = [ctypes.c_uint32]
        return lib if lib.minisketch_bits_supported(16) else None
    except (OSError, AttributeError):
        return None


@dataclass(frozen=True, slots=True)
class Case:
    """One benchmarked size: field degree, capacity, set size, operation."""

    m: int
    t: int
    size: int
    op: str


def _data(case: Case, rng: random.Random) -> tuple[list[int], list[int]]:
    """A set of ``case.size`` distinct elements and a sample at distance exactly t from it."""
    universe = (1 << case.m) - 1
    need = case.size + case.t
    picks = rng.sample(range(1, universe + 1), need) if universe < 1 << 20 else _distinct(rng, case.m, need)
    secret = picks[: case.size]
    missing = min(case.t // 2, case.size)
    extra = case.t - missing
    sample = secret[missing:] + picks[case.size : case.size + extra]
    rng.shuffle(sample)
    return secret, sample


def _distinct(rng: random.Random, m: int, count: int) -> list[int]:
    seen: set[int] = set()
    while len(seen) < count:
        x = rng.getrandbits(m)
        if x:
            seen.add(x)
    return list(seen)


def _calls(case: Case, ours: PinSketch, peer: Minisketch, rng: random.Random) -> tuple[Callable[[], Any], ...]:
    secret, sample = _data(case, rng)
    if case.op == "encode":
        return (lambda: ours.encode(secret)), (lambda: peer.encode(secret))
    helper, sketch = ours.encode(secret), peer.encode(secret)
    got = ours.decode(helper, sample)
    if sorted(got.tolist()) != sorted(secret) or len(peer.decode(sketch, sample)) != case.t:
        raise RuntimeError(f"{case}: a decode is wrong")
    return (lambda: ours.decode(helper, sample)), (lambda: peer.decode(sketch, sample))


def _batch(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """CPU and wall seconds per call over ``calls`` calls."""
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.thread_time() - c0) / calls, (time.perf_counter() - w0) / calls


def _calls_per_batch(fns: tuple[Callable[[], Any], ...]) -> int:
    for fn in fns:
        fn()
    start = time.thread_time()
    probe = 0
    while time.thread_time() - start < BATCH_SECONDS / 4 or probe < 3:
        for fn in fns:
            fn()
        probe += 1
    per_pair = (time.thread_time() - start) / probe
    return max(1, int(2 * BATCH_SECONDS / per_pair))


def measure(case: Case, ours: PinSketch, peer: Minisketch, rounds: int, rng: random.Random) -> dict[str, Any]:
    """Interleaved rounds of batches; medians of per-call times and of per-round ratios."""
    fns = _calls(case, ours, peer, rng)
    calls = _calls_per_batch(fns)
    samples: list[list[tuple[float, float]]] = [[], []]
    for r in range(rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for side in order:
            samples[side].append(_batch(fns[side], calls))
    ratios = [a[0] / b[0] for a, b in zip(samples[0], samples[1], strict=True) if b[0] > 0]
    wall_ratios = [a[1] / b[1] for a, b in zip(samples[0], samples[1], strict=True) if b[1] > 0]
    return {
        "m": case.m,
        "t": case.t,
        "set_size": case.size,
        "op": case.op,
        "calls_per_batch": calls,
        "rounds": rounds,
        "ours_us": 1e6 * statistics.median(s[0] for s in samples[0]),
        "minisketch_us": 1e6 * statistics.median(s[0] for s in samples[1]),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "wall_ratio": statistics.median(wall_ratios),
    }


def cases(m_values: tuple[int, ...]) -> list[Case]:
    """Every (m, t, |set|, op) measured, at the m values PinSketch supports."""
    out: list[Case] = []
    for m in m_values:
        if not _gf2m.MIN_M <= m <= _gf2m.MAX_M:
            continue
        for t in T_VALUES:
            for size in sorted({t, min(LARGE_SET, (1 << m) - 1 - t)}):
                out.extend(Case(m, t, size, op) for op in ("encode", "decode"))
    return out


def _key(row: dict[str, Any]) -> tuple[int, int, int, str]:
    return row["m"], row["t"], row["set_size"], row["op"]


def markdown(result: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    """The docs' table of a result file: per size, µs per call of both sides and the ratio
    (``before → after`` ratios when an earlier result file is given)."""
    earlier = {_key(r): r for r in (before or {}).get("results", [])}
    lines = [
        "| m | t | \\|set\\| | op | PinSketch µs | minisketch µs | ratio" + (" before → after |" if before else " |"),
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result["results"]:
        ratio = f"{row['ratio']:.2f}"
        old = earlier.get(_key(row))
        if before is not None:
            ratio = f"{old['ratio']:.2f} → {ratio}" if old else f"— → {ratio}"
        lines.append(
            f"| {row['m']} | {row['t']} | {row['set_size']} | {row['op']} | {row['ours_us']:.1f} "
            f"| {row['minisketch_us']:.1f} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=os.environ.get("MINISKETCH_LIB"), help="libminisketch.so (or MINISKETCH_LIB)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per case (default 15)")
    parser.add_argument("--quick", action="store_true", help="5 rounds per case (a smoke run)")
    parser.add_argument("--output", default=str(OUTPUT), help=f"result JSON (default {OUTPUT.relative_to(ROOT)})")
    parser.add_argument("--markdown", metavar="FILE", help="print FILE (a result) as the docs' table and exit")
    parser.add_argument("--before", metavar="FILE", help="with --markdown: an earlier result, for before → after")
    args = parser.parse_args(argv)
    if args.markdown:
        before = json.loads(Path(args.before).read_text()) if args.before else None
        print(markdown(json.loads(Path(args.markdown).read_text()), before))
        return 0
    lib = load_library(args.lib)
    if lib is None:
        where = args.lib or "no path given (--lib or MINISKETCH_LIB)"
        print(f"bench_minisketch: minisketch library not available: {where}; see this script's docstring to build it")
        return 2
    rounds = 5 if args.quick else args.rounds
    rng = random.Random(20261206)
    results = []
    for case in cases(M_VALUES):
        peer = Minisketch(lib, case.m, case.t)
        try:
            row = measure(case, PinSketch(case.m, case.t), peer, rounds, rng)
        finally:
            peer.close()
        results.append(row)
        print(
            f"m={row['m']:2d} t={row['t']:3d} |set|={row['set_size']:4d} {row['op']:6s} "
            f"ours {row['ours_us']:8.2f} us  minisketch {row['minisketch_us']:8.2f} us  ratio {row['ratio']:.2f}",
            flush=True,
        )
    probe = Minisketch(lib, 16, 4)
    overhead = statistics.median(probe.call_overhead_us() for _ in range(5))
    probe.close()
    result = timing.provenance("bench_minisketch") | {
        "backend": backend(),
        "minisketch_library": str(Path(args.lib).resolve()),
        "rounds": rounds,
        "ratio": "ours / minisketch, thread CPU time per call, median over interleaved rounds",
        "load_average": list(os.getloadavg()),
        "ctypes_call_us": overhead,
        "results": results,
        "max_ratio": max(r["ratio"] for r in results),
    }
    timing.write_result(args.output, result, echo=False)
    print(f"max ratio {result['max_ratio']:.2f}; written {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
