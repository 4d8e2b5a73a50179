"""The two implementations of the field arithmetic — compiled and numpy — through the public doors.

The backend is fixed at import (:func:`sketchauth.sketches.backend`) and chosen per object with
``backend=``; these tests run PinSketch and the vaults on both, against the known-answer
vectors and against each other (hypothesis), check that hostile helper data stays bounded in
time and memory on both, and that a decode at the largest accepted PinSketch parameters stays
below 48 MiB of transient memory. Native cases are skipped when the extension is not built
(the CI run that installs without it checks the numpy path alone).
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_untrusted_helpers import memory_limit, time_limit

from sketchauth import sketches
from sketchauth.errors import DecodeError, ParameterError, SketchFormatError
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

ROOT = Path(__file__).resolve().parents[3]
KAT = json.loads((Path(__file__).parent / "vectors" / "pinsketch_kat.json").read_text())
HAS_NATIVE = sketches.backend() == "native"
BACKENDS = ["numpy", pytest.param("native", marks=pytest.mark.skipif(not HAS_NATIVE, reason="extension not built"))]
BOTH = pytest.mark.skipif(not HAS_NATIVE, reason="needs both backends")


# -- selection --------------------------------------------------------------------------------------


def test_backend_is_reported_and_chosen_per_object() -> None:
    assert sketches.backend() in ("native", "numpy")
    assert PinSketch(16, 4).backend == sketches.backend()
    assert PinSketch(16, 4, backend="numpy").backend == "numpy"
    assert PinSketch(16, 4, backend="numpy").field.backend == "numpy"
    assert FuzzyVault(13, 5, 1, backend="numpy").backend == "numpy"
    # the backend is not part of the helper format: same parameters, same scheme
    assert PinSketch(16, 4, backend="numpy") == PinSketch(16, 4)
    for bad in ("fortran", "", None):
        with pytest.raises(ParameterError):
            PinSketch(16, 4, backend=bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError):
            FuzzyVault(13, 5, 1, backend=bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError):
            WeightedFuzzyVault(50, 4, 9, 3, backend=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(HAS_NATIVE, reason="only where the extension is absent")
def test_asking_for_native_without_the_extension_says_what_to_do() -> None:
    with pytest.raises(ParameterError, match="C compiler"):
        PinSketch(16, 4, backend="native")


# -- known answers on both ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_known_answer_vectors(backend: str) -> None:
    sketch = PinSketch(KAT["m"], KAT["t"], backend=backend)
    for case in KAT["encode"]:
        helper = sketch.encode(case["set"])
        assert sketch.payload(helper).hex() == case["payload_hex"]
        assert sketch.syndromes(helper).tolist() == case["syndromes"]
    for case in KAT["decode"]:
        assert sketch.decode(sketch.encode(case["set"]), case["sample"]).tolist() == case["expected"]
    for case in KAT["too_far"]:
        with pytest.raises(DecodeError):
            sketch.decode(sketch.encode(case["set"]), case["sample"])


# -- the two against each other -----------------------------------------------------------------------


@st.composite
def pinsketch_cases(draw: st.DrawFn) -> tuple[int, int, list[int], list[int]]:
    m = draw(st.sampled_from([8, 11, 16, 20, 24, 32]))
    t = draw(st.integers(1, 8 if m == 8 else 40))
    rng = random.Random(draw(st.integers(0, 2**32)))
    enrolled = rng.sample(range(1, 1 << m), draw(st.integers(0, 60)))
    distance = draw(st.integers(0, 2 * t + 3))
    removed = rng.randint(0, min(distance, len(enrolled)))
    kept = rng.sample(enrolled, len(enrolled) - removed)
    extra: set[int] = set()
    while len(extra) < distance - removed:
        candidate = rng.randrange(1, 1 << m)
        if candidate not in enrolled:
            extra.add(candidate)
    return m, t, enrolled, kept + sorted(extra)


def _outcome(sketch: PinSketch, helper: bytes, sample: list[int]) -> object:
    try:
        return sketch.decode(helper, sample).tolist()
    except DecodeError:
        return "DecodeError"


@BOTH
@settings(max_examples=150, deadline=None)
@given(pinsketch_cases())
def test_pinsketch_backends_agree(case: tuple[int, int, list[int], list[int]]) -> None:
    m, t, enrolled, sample = case
    native, numpy_ = PinSketch(m, t, backend="native"), PinSketch(m, t, backend="numpy")
    helper = native.encode(enrolled)
    assert numpy_.encode(enrolled) == helper
    outcome = _outcome(native, helper, sample)
    assert outcome == _outcome(numpy_, helper, sample)
    if len(set(enrolled) ^ set(sample)) <= t:
        assert outcome == sorted(enrolled)


@BOTH
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 12))
def test_pinsketch_batches_agree(seed: int, count: int) -> None:
    rng = random.Random(seed)
    native, numpy_ = PinSketch(24, 6, backend="native"), PinSketch(24, 6, backend="numpy")
    sets = [rng.sample(range(1, 1 << 24), rng.randint(0, 30)) for _ in range(count)]
    helpers = native.encode_many(sets)
    assert numpy_.encode_many(sets) == helpers
    samples = [s[rng.randint(0, 8) :] for s in sets]
    got = [
        r.tolist() if isinstance(r, np.ndarray) else "E" for r in native.decode_many(helpers, samples, errors="return")
    ]
    assert got == [
        r.tolist() if isinstance(r, np.ndarray) else "E" for r in numpy_.decode_many(helpers, samples, errors="return")
    ]


@BOTH
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([(13, 5, 1), (101, 12, 3), (10007, 22, 2), (65521, 40, 8)]),
    st.integers(0, 2**32),
    st.integers(0, 12),
)
def test_vault_backends_agree(params: tuple[int, int, int], seed: int, wrong: int) -> None:
    p, m, t = params
    rng = random.Random(seed)
    native, numpy_ = FuzzyVault(p, m, t, backend="native"), FuzzyVault(p, m, t, backend="numpy")
    secret = sorted(rng.sample(range(p), m))
    randomness = native.draw_randomness(secret)
    helper = native.encode_with(secret, randomness)
    assert numpy_.encode_with(secret, randomness) == helper
    wrong = min(wrong, m, p - m)
    outside = rng.sample(sorted(set(range(p)) - set(secret)), wrong)
    sample = secret[wrong:] + outside
    outcomes = []
    for vault in (native, numpy_):
        try:
            outcomes.append(vault.decode(helper, sample).tolist())
        except DecodeError:
            outcomes.append("DecodeError")
    assert outcomes[0] == outcomes[1]
    if wrong <= t:
        assert outcomes[0] == secret


@BOTH
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.integers(-3, 3))
def test_weighted_vault_backends_agree(seed: int, shift: int) -> None:
    rng = random.Random(seed)
    native, numpy_ = (
        WeightedFuzzyVault(200, 4, 30, 6, backend="native"),
        WeightedFuzzyVault(200, 4, 30, 6, backend="numpy"),
    )
    template = {x: 3 for x in rng.sample(range(200), 10)}
    randomness = native.draw_randomness(native.check_secret(template))
    helper = native.encode_with(template, randomness)
    assert numpy_.encode_with(template, randomness) == helper
    sample = sorted(template)[max(0, shift) :] + rng.sample(sorted(set(range(200)) - set(template)), max(0, -shift))
    outcomes = []
    for vault in (native, numpy_):
        try:
            elements, weights = vault.decode(helper, sample)
            outcomes.append((elements.tolist(), weights.tolist()))
        except DecodeError:
            outcomes.append("DecodeError")
    assert outcomes[0] == outcomes[1]


# -- hostile helpers: bounded on both paths -------------------------------------------------------------


def _pinsketch_helper(sketch: PinSketch, syndromes: list[int]) -> bytes:
    payload = b"".join(int(v).to_bytes(sketch._width, "big") for v in syndromes)
    return pack_helper(sketch.scheme_id, sketch.params(), payload)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_pinsketch_helpers_at_the_largest_parameters_are_bounded(backend: str) -> None:
    """m = 32, t = 256: random syndromes (a full-length locator that does not split), the
    syndromes of 256 elements none of which the sample holds (every root found by splitting),
    and all-equal syndromes: each answer (a set or DecodeError) comes within the time limit."""
    sketch = PinSketch(32, 256, backend=backend)
    rng = random.Random(32)
    hidden = rng.sample(range(1, 1 << 32), 256)
    helpers = [
        _pinsketch_helper(sketch, [rng.randrange(1 << 32) for _ in range(256)]),
        sketch.encode(hidden),
        _pinsketch_helper(sketch, [0xDEADBEEF] * 256),
    ]
    limit = 1.0 if backend == "native" else 6.0
    for helper in helpers:
        with time_limit(limit), contextlib.suppress(DecodeError, SketchFormatError):
            sketch.decode(helper, [])
    assert sketch.decode(helpers[1], []).tolist() == sorted(hidden)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_vault_helpers_are_bounded(backend: str) -> None:
    vault = FuzzyVault(65521, 200, 90, backend=backend)  # n = 200 decoder points
    rng = random.Random(7)
    values = [rng.randrange(65521) for _ in range(65521)]
    payload = b"".join(v.to_bytes(2, "big") for v in values)
    helper = pack_helper(vault.scheme_id, vault.params(), payload)
    with time_limit(1.0 if backend == "native" else 8.0), memory_limit(48 * 2**20), pytest.raises(DecodeError):
        vault.decode(helper, rng.sample(range(65521), 200))


# -- transient memory at the largest parameters -------------------------------------------------------

_MEMORY_PROBE = textwrap.dedent(
    """
    import random, sys
    from sketchauth.sketches.pinsketch import PinSketch

    def status_mib(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith(key))

    sketch = PinSketch(32, 256, backend=sys.argv[1])
    rng = random.Random(4096)
    pool = rng.sample(range(1, 1 << 32), 4096 + 128)
    enrolled = pool[:4096]
    helper = sketch.encode(enrolled)
    sample = enrolled[128:] + pool[4096:]
    small = PinSketch(32, 8, backend=sys.argv[1])
    small.decode(small.encode([1, 2, 3]), [1])  # warm up the code paths
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set size (VmHWM)
    before = status_mib("VmRSS")
    assert sketch.decode(helper, sample).tolist() == sorted(enrolled)
    print(status_mib("VmHWM") - before)
    """
)


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's peak-RSS reset")
@pytest.mark.parametrize("backend", BACKENDS)
def test_decode_at_the_largest_parameters_stays_below_48_mib(backend: str) -> None:
    """A 4,096-element sample at PinSketch(32, 256): the process's peak resident memory grows by
    less than 48 MiB during the decode (the numpy path once allocated ~440 MB here)."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, backend],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert float(out.stdout.strip()) < 48.0


def test_sketches_pickle_for_worker_processes() -> None:
    """`evaluate report --jobs` sends sketches to worker processes: the field must not travel."""
    import pickle

    from sketchauth.sketches.pinsketch import PinSketch

    sketch = PinSketch(11, 5)
    helper = sketch.encode([3, 70, 1000])
    assert sketch.field is not None  # built (a compiled object where the extension exists)
    clone = pickle.loads(pickle.dumps(sketch))
    assert clone.decode(helper, [3, 70, 1001]).tolist() == [3, 70, 1000]
