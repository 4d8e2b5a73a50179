"""Speed of the sketches: median encode/decode times and cold start (README table).

Run ``python3 benchmarks/bench_sketches.py`` (whole run well under a minute on a 2-core box);
``--only pinsketch`` runs the cases whose name starts with that prefix.

Structure: a registry of named cases. A case is a function decorated with :func:`case` that
does its set-up (builds the sketch, draws the sets, makes the helper data) and returns a
mapping ``{"encode": callable, "decode": callable, ...}`` of zero-argument callables; the runner
times each callable and prints its median in milliseconds. Other schemes add their cases by
appending more ``@case(...)`` functions below the PinSketch ones. Cold-start measurements
(a fresh ``python -c`` process: import plus one decode) are registered with
:func:`cold_case` and timed end to end, once per run (best of a few processes).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402

#: name -> set-up function returning {"operation": zero-argument callable}
CASES: dict[str, Callable[[], Mapping[str, Callable[[], object]]]] = {}
#: name -> Python source run in a fresh interpreter (timed end to end)
COLD_CASES: dict[str, str] = {}

#: time budget per timed operation (seconds) and bounds on the number of repetitions
BUDGET_SECONDS = 0.25
MIN_REPEATS = 5
MAX_REPEATS = 400


def case(
    name: str,
) -> Callable[[Callable[[], Mapping[str, Callable[[], object]]]], Callable[[], Mapping[str, Callable[[], object]]]]:
    """Register a benchmark case under ``name``."""

    def register(
        fn: Callable[[], Mapping[str, Callable[[], object]]],
    ) -> Callable[[], Mapping[str, Callable[[], object]]]:
        CASES[name] = fn
        return fn

    return register


def cold_case(name: str, source: str) -> None:
    """Register a cold-start measurement: ``source`` runs in a fresh ``python3 -c``."""
    COLD_CASES[name] = source


def median_ms(fn: Callable[[], object]) -> float:
    """Median wall time of ``fn()`` in milliseconds within this script's budget (see timing.py)."""
    return timing.median_ms(fn, budget_seconds=BUDGET_SECONDS, min_repeats=MIN_REPEATS, max_repeats=MAX_REPEATS)


def cold_ms(source: str, runs: int = 3) -> float:
    """Best-of-``runs`` wall time (ms) of a fresh interpreter running ``source``."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", source], check=True, cwd=ROOT)
        best = min(best, time.perf_counter() - start)
    return 1000.0 * best


# -- PinSketch (Dodis–Ostrovsky–Reyzin–Smith §6.3) ---------------------------------------------

PINSKETCH_SET_SIZE = 40


def _pinsketch_case(m: int, t: int) -> Mapping[str, Callable[[], object]]:
    """|A| = 40 random non-zero elements; the sample differs from A in exactly t elements.

    ``decode``: half of the difference missing from the sample, half spurious extras (a noisy
    reading). ``decode-miss``: as much of the difference as |A| allows is *missing* from the
    sample — the roots the decoder cannot find by evaluating at the sample's own elements.
    """
    from sketchauth.sketches.pinsketch import PinSketch

    rng = random.Random(1000 * m + t)
    sketch = PinSketch(m, t)
    universe_size = (1 << m) - 1
    pool = rng.sample(range(1, universe_size + 1), PINSKETCH_SET_SIZE + t)
    enrolled = pool[:PINSKETCH_SET_SIZE]
    # half of the difference missing from the sample, half spurious extras (t odd: one more extra)
    missing = t // 2 if t // 2 <= PINSKETCH_SET_SIZE else PINSKETCH_SET_SIZE
    extras = pool[PINSKETCH_SET_SIZE : PINSKETCH_SET_SIZE + (t - missing)]
    sample = enrolled[missing:] + extras
    missing_all = min(t, PINSKETCH_SET_SIZE)
    sample_missing = enrolled[missing_all:] + pool[PINSKETCH_SET_SIZE : PINSKETCH_SET_SIZE + t - missing_all]
    helper = sketch.encode(enrolled)
    expected = sorted(enrolled)
    for b in (sample, sample_missing):
        if len(set(b) ^ set(enrolled)) != t or sketch.decode(helper, b).tolist() != expected:
            raise RuntimeError(f"PinSketch(m={m}, t={t}) benchmark decode is wrong")
    return {
        "encode": lambda: sketch.encode(enrolled),
        "decode": lambda: sketch.decode(helper, sample),
        "decode-miss": lambda: sketch.decode(helper, sample_missing),
    }


for _m in (16, 32):
    for _t in (8, 16, 32, 64):
        case(f"pinsketch m={_m} t={_t}")(lambda m=_m, t=_t: _pinsketch_case(m, t))


def _galois_pinsketch_case(m: int, t: int) -> Mapping[str, Callable[[], object]]:
    """Baseline: PinSketch decode written plainly on galois (``--galois``; JIT costs ~20 s).

    Power sums with FieldArray powers, ``galois.berlekamp_massey`` (whose minimal polynomial
    has the difference's elements as roots) and ``Poly.roots()`` (an exhaustive field scan).
    """
    import galois
    import numpy as np

    from sketchauth.sketches._gf2m import PRIMITIVE_POLYNOMIALS

    field = galois.GF(2**m, irreducible_poly=PRIMITIVE_POLYNOMIALS[m])
    rng = random.Random(1000 * m + t)
    pool = rng.sample(range(1, 1 << m), PINSKETCH_SET_SIZE + t)
    enrolled = pool[:PINSKETCH_SET_SIZE]
    sample = enrolled[t // 2 :] + pool[PINSKETCH_SET_SIZE : PINSKETCH_SET_SIZE + t - t // 2]

    def power_sums(elements: list[int]) -> object:
        values = field(elements)
        return field([int(np.bitwise_xor.reduce(np.asarray(values**i))) for i in range(1, 2 * t + 1)])

    sketch = power_sums(enrolled)

    def decode() -> list[int]:
        locator = galois.berlekamp_massey(sketch + power_sums(sample))
        difference = {int(x) for x in locator.roots()}
        return sorted(set(sample) ^ difference)

    if decode() != sorted(enrolled):
        raise RuntimeError("galois baseline decode is wrong")
    return {"decode": decode}


cold_case(
    "pinsketch m=16 t=16: import + first decode",
    "from sketchauth.sketches.pinsketch import PinSketch\n"
    "s = PinSketch(16, 16); a = list(range(1, 41)); h = s.encode(a)\n"
    "assert s.decode(h, a[8:] + list(range(100, 108))).tolist() == a",
)
cold_case(
    "pinsketch m=32 t=16: import + first decode",
    "from sketchauth.sketches.pinsketch import PinSketch\n"
    "s = PinSketch(32, 16); a = [i * 2654435761 % 4294967291 + 1 for i in range(1, 41)]\n"
    "h = s.encode(a)\n"
    "assert s.decode(h, a[8:] + list(range(100, 108))).tolist() == sorted(a)",
)
cold_case("python3 -c pass (interpreter baseline)", "pass")


# -- fuzzy vaults (Juels–Sudan; Fang's thesis §6.3) --------------------------------------

VAULT_BATCH = 64


def _vault_case(p: int, m: int, t: int) -> Mapping[str, Callable[[], object]]:
    """A random m-set of F_p; the sample replaces exactly t of its elements (the worst accepted)."""
    from sketchauth.sketches.vault import FuzzyVault

    rng = random.Random(p * 100 + m)
    vault = FuzzyVault(p, m, t)
    pool = rng.sample(range(p), m + t)
    enrolled, sample = sorted(pool[:m]), pool[t:]
    helper = vault.encode(enrolled)
    if vault.decode(helper, sample).tolist() != enrolled:
        raise RuntimeError(f"FuzzyVault(p={p}, m={m}, t={t}) benchmark decode is wrong")
    helpers = vault.encode_many([enrolled] * VAULT_BATCH)
    samples = [sample] * VAULT_BATCH
    return {
        "encode": lambda: vault.encode(enrolled),
        "decode": lambda: vault.decode(helper, sample),
        f"decode x{VAULT_BATCH}": lambda: vault.decode_many(helpers, samples),
    }


def _weighted_vault_case(p: int, q: int, g: int, t: int) -> Mapping[str, Callable[[], object]]:
    """g/(q−1) elements of weight q−1; the sample is the template itself (c − w = g − 2t: the boundary)."""
    from sketchauth.sketches.vault import WeightedFuzzyVault

    rng = random.Random(p * 10 + q)
    vault = WeightedFuzzyVault(p, q, g, t)
    template = {x: q - 1 for x in rng.sample(range(p), g // (q - 1))}
    sample = sorted(template)
    helper = vault.encode(template)
    if vault.decode(helper, sample)[0].tolist() != sample:
        raise RuntimeError(f"WeightedFuzzyVault(p={p}, q={q}, g={g}, t={t}) benchmark decode is wrong")
    return {"encode": lambda: vault.encode(template), "decode": lambda: vault.decode(helper, sample)}


case("fuzzy-vault p=10007 m=22 t=2")(lambda: _vault_case(10007, 22, 2))
case("fuzzy-vault p=65521 m=40 t=8")(lambda: _vault_case(65521, 40, 8))
case("weighted-vault p=1000 q=4 g=60 t=10")(lambda: _weighted_vault_case(1000, 4, 60, 10))

cold_case(
    "fuzzy-vault p=65521 m=40 t=8: import + first decode",
    "from sketchauth.sketches.vault import FuzzyVault\n"
    "v = FuzzyVault(65521, 40, 8); a = list(range(1000, 1040)); h = v.encode(a)\n"
    "assert v.decode(h, a[8:] + list(range(5, 13))).tolist() == a",
)
cold_case(
    "weighted-vault p=1000 q=4 g=60 t=10: import + first decode",
    "from sketchauth.sketches.vault import WeightedFuzzyVault\n"
    "v = WeightedFuzzyVault(1000, 4, 60, 10); a = list(range(100, 120)); h = v.encode(dict.fromkeys(a, 3))\n"
    "assert v.decode(h, a)[0].tolist() == a",
)


# -- runner ------------------------------------------------------------------------------------


def run(prefix: str = "") -> None:
    """Time every registered case whose name starts with ``prefix`` and print a table."""
    print(f"{'case':<48} {'operation':<12} {'median ms':>10}")
    for name, setup in CASES.items():
        if not name.startswith(prefix):
            continue
        for operation, fn in setup().items():
            print(f"{name:<48} {operation:<12} {median_ms(fn):>10.3f}", flush=True)
    for name, source in COLD_CASES.items():
        if not name.startswith(prefix) and not name.startswith("python3"):
            continue
        print(f"{name:<48} {'cold':<12} {cold_ms(source):>10.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only cases whose name starts with this")
    parser.add_argument("--galois", action="store_true", help="also time a plain galois PinSketch decoder (m=16, t=16)")
    args = parser.parse_args(argv)
    if args.galois:
        case("pinsketch galois baseline m=16 t=16")(lambda: _galois_pinsketch_case(16, 16))
    run(args.only)


if __name__ == "__main__":
    main()
