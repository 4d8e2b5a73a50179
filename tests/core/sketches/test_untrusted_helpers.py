"""Untrusted helper data and samples against every registered scheme (parse strictly).

Helper data is public and its BLAKE2b digest is unkeyed, so an attacker can hand the library any
parameters and any payload with a valid digest (:func:`pack_helper`). These tests craft such
helpers for every registered scheme — mutated payloads, values at and just past every range
limit, hostile parameters (huge, negative, wrong types, nested, missing or extra keys), hostile
mixed structures — and malformed samples, and check that the library answers only with its own
errors (``SketchFormatError`` for helpers, ``SampleError`` for samples, ``DecodeError`` for a
sample too far), quickly and without large allocations.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import signal
import struct
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from _helpers import JSON_VALUES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, MixingWarning, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, Concatenate, ExactKey, FuzzySecret, MixRandomness, toeplitz_extract
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch, load_sketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.format import canonical_params, pack_helper, parse_helper
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import registrations
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

#: CPU-time budget of one hostile call (the honest ones take ~0.2 s; wall time is 4× this on a
#: loaded 2-core machine, which is why the budget is CPU time and the wall clock only a hang guard).
TIME_LIMIT = 1.0
#: Peak Python allocation allowed while refusing (or accepting) one hostile parameter set.
MEMORY_LIMIT = 40 * 1024 * 1024
HELPER_ERRORS = (SketchFormatError,)
DECODE_ERRORS = (SketchFormatError, DecodeError, SampleError)


@contextlib.contextmanager
def time_limit(seconds: float = TIME_LIMIT) -> Iterator[None]:
    """Fail (rather than hang the suite) when the body costs more than ``seconds`` of CPU time.

    The process's CPU time is asserted, which catches a long call stuck inside C code once it
    returns and does not depend on how busy the machine is (other processes do not count). An
    interval timer on the wall clock, at 10× the budget, interrupts Python-level loops that hang.
    """

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"call took more than {10 * seconds} s of wall time")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 10 * seconds)
    start = time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.process_time() - start
    assert elapsed < seconds, f"took {elapsed:.2f} s of CPU time"


@contextlib.contextmanager
def memory_limit(limit: int = MEMORY_LIMIT) -> Iterator[None]:
    """Fail when the body's peak Python allocation (tracemalloc) reaches ``limit`` bytes."""
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak {peak / 2**20:.1f} MiB"


_HELPERS: dict[str, bytes] = {}


@dataclass(frozen=True)
class Case:
    """A small valid sketch with a secret, a close sample and its helper."""

    name: str
    sketch: SecureSketch
    secret: Any
    sample: Any

    @property
    def helper(self) -> bytes:
        """One helper per case for the whole run (s2 and vault payloads are randomised)."""
        if self.name not in _HELPERS:
            _HELPERS[self.name] = self.sketch.encode(self.secret)
        return _HELPERS[self.name]

    def repack(self, payload: bytes, params: dict[str, Any] | None = None) -> bytes:
        """A helper with a valid digest carrying any payload (and parameters)."""
        sketch = self.sketch
        return pack_helper(sketch.scheme_id, sketch.params() if params is None else params, payload)


def _quiet(build: Callable[[], SecureSketch]) -> SecureSketch:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixingWarning)
        return build()


PIN = ExactKey("test")
ANGULAR = AngularSketch(dimension=8, alpha=2)
ANGULAR_T = [1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.25, 2.0]
POLAR = PolarAngularSketch(dimension=16, bits=4, list_size=4, min_cos=0.25)
POLAR_T = [float((-1) ** i * (1 + i % 5)) for i in range(16)]
CASES = [
    Case("interval", IntervalSketch(n=100, v=3, features=4), [10, 20, 30, 40], [11, 19, 30, 42]),
    Case(
        "code-offset",
        CodeOffsetSketch(n=16, t=2),
        bytes(range(16)),
        bytes([9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0]),
    ),
    Case("pinsketch", PinSketch(m=9, t=3), [3, 70, 100, 511], [3, 70, 101, 511]),
    Case("fuzzy-vault", FuzzyVault(p=13, m=5, t=1), [1, 4, 6, 9, 11], [1, 4, 6, 9, 12]),
    Case(
        "asymmetric-interval",
        AsymmetricIntervalSketch(n=64, q=4, scheme="s1", features=3),
        ([5, 30, 60], [1, 4, 2]),
        [5, 33, 61],
    ),
    Case(
        "asymmetric-interval-s2",
        AsymmetricIntervalSketch(n=64, q=4, scheme="s2", features=3),
        ([5, 30, 60], [1, 4, 2]),
        [5, 33, 61],
    ),
    Case(
        "asymmetric-interval-s3",
        AsymmetricIntervalSketch(n=64, q=4, scheme="s3", features=3),
        ([5, 30, 60], [1, 4, 2]),
        [5, 33, 61],
    ),
    Case("weighted-vault", WeightedFuzzyVault(p=50, q=4, g=9, t=3), ([3, 17, 40], [3, 3, 3]), [3, 17]),
    Case("chaff-point", ChaffPointSketch(universe=30, min_distance=3, points=2), [4, 12], [5, 12]),
    # The enrolment secret is the codeword check_secret draws: the case keeps the checked one.
    Case("angular", ANGULAR, ANGULAR.check_secret(ANGULAR_T), [1.1, -2.0, 0.4, 0.1, 3.0, -1.0, 0.25, 2.0]),
    Case(
        "angular-polar",
        POLAR,
        POLAR.check_secret(POLAR_T),
        [x + (0.2 if i % 4 == 0 else 0.0) for i, x in enumerate(POLAR_T)],
    ),
    Case(
        "mixed-concatenate",
        _quiet(lambda: Concatenate(IntervalSketch(n=100, v=3, features=2), CodeOffsetSketch(n=8, t=1))),
        [[10, 20], bytes(8)],
        [[11, 20], bytes([1]) + bytes(7)],
    ),
    Case(
        "mixed-cascade",
        _quiet(lambda: Cascade(FuzzyVault(p=13, m=5, t=1), pin=PIN)),
        [[1, 4, 6, 9, 11], "2468"],
        [[1, 4, 6, 9, 12], "2468"],
    ),
]
CASE_IDS = [c.name for c in CASES]


def test_every_registered_scheme_has_a_case() -> None:
    assert {c.sketch.scheme_name for c in CASES} == {r.name for r in registrations()}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cases_decode_their_close_sample(case: Case) -> None:
    """The baseline the mutations start from is valid: helper loads and decodes."""
    helper = case.helper
    assert load_sketch(helper) == case.sketch
    recovered = case.sketch.decode(helper, case.sample)
    expected = case.sketch.check_secret(case.secret)
    assert repr(recovered) == repr(expected)


# -- 1. mutated payloads -------------------------------------------------------------------------


def _check_decode(case: Case, helper: bytes) -> None:
    """Decoding any repacked helper raises only our errors (or returns a value), quickly."""
    with time_limit(), contextlib.suppress(HELPER_ERRORS):
        load_sketch(helper)
    with time_limit(), contextlib.suppress(DECODE_ERRORS):
        case.sketch.decode(helper, case.sample)


@st.composite
def mutated_payloads(draw: st.DrawFn, payload: bytes) -> bytes:
    kind = draw(st.sampled_from(["random", "truncate", "extend", "flip", "byte", "splice"]))
    if kind == "random":
        return draw(st.binary(max_size=2 * len(payload) + 16))
    if kind == "truncate":
        return payload[: draw(st.integers(0, max(0, len(payload) - 1)))]
    if kind == "extend":
        return payload + draw(st.binary(min_size=1, max_size=16))
    if not payload:
        return draw(st.binary(max_size=8))
    at = draw(st.integers(0, len(payload) - 1))
    if kind == "flip":
        bit = draw(st.integers(0, 7))
        return payload[:at] + bytes([payload[at] ^ (1 << bit)]) + payload[at + 1 :]
    if kind == "byte":
        value = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
        return payload[:at] + bytes([value]) + payload[at + 1 :]
    chunk = draw(st.binary(min_size=1, max_size=8))
    return payload[:at] + chunk + payload[at + len(chunk) :]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_payloads_raise_only_format_errors(case: Case, data: st.DataObject) -> None:
    payload = parse_helper(case.helper).payload
    _check_decode(case, case.repack(data.draw(mutated_payloads(payload))))


def _words(values: list[int], width: int) -> bytes:
    return b"".join(int(v).to_bytes(width, "big") for v in values)


def _limit_payloads() -> Iterator[tuple[str, Case, bytes, bool]]:
    """(label, case, payload, valid?) at and just past each scheme's range limits."""
    by_name = {c.name: c for c in CASES}
    iv = by_name["interval"]  # moduli 5, width 1
    yield "interval max", iv, _words([4] * 4, 1), True
    yield "interval over", iv, _words([4, 4, 5, 4], 1), False
    yield "interval 0xff", iv, _words([255] * 4, 1), False
    fv = by_name["fuzzy-vault"]  # 13 values in F_13, width 1
    yield "vault max", fv, _words([12] * 13, 1), True
    yield "vault over", fv, _words([12] * 12 + [13], 1), False
    wv = by_name["weighted-vault"]  # 200 slots in F_211, width 1
    P = wv.sketch.field_size
    yield "weighted max", wv, _words([P - 1] * 200, 1), True
    yield "weighted over", wv, _words([P - 1] * 199 + [P], 1), False
    ch = by_name["chaff-point"]
    count, width = ch.sketch.sketch_count, ch.sketch._width
    yield "chaff max", ch, _words([count - 1], width), True
    yield "chaff over", ch, _words([count], width), False
    yield "chaff all ones", ch, b"\xff" * width, False
    ps = by_name["pinsketch"]  # m = 9: 2-byte words
    yield "pinsketch max", ps, _words([511] * 3, 2), True
    yield "pinsketch over", ps, _words([511, 512, 511], 2), False
    yield "pinsketch zero", ps, _words([0] * 3, 2), True
    a1 = by_name["asymmetric-interval"]  # q = 4: v codes < 4, offsets < min(2v - 1, n)
    yield "s1 max", a1, _words([3] * 3, 1) + _words([6] * 3, 1), True
    yield "s1 code over", a1, _words([3, 4, 3], 1) + _words([0] * 3, 1), False
    yield "s1 offset over", a1, _words([0] * 3, 1) + _words([1, 0, 0], 1), False
    a2 = by_name["asymmetric-interval-s2"]
    gaps_max = a2.sketch.gaps_max
    yield "s2 count over", a2, _words([gaps_max + 1] * 3, 1), False
    yield "s2 count under", a2, _words([0] * 3, 1), False
    yield "s2 all 0xff", a2, b"\xff" * 64, False
    # n = 64, q = 4: one count byte per feature, then per feature a first-point code (< 2q) and
    # gap codes (< q), one byte each.
    s2 = parse_helper(a2.helper).payload
    first = 3  # the first-point code of feature 0 follows the three counts
    yield "s2 first point at 2q", a2, s2[:first] + bytes([8]) + s2[first + 1 :], False
    yield "s2 gap code at q", a2, s2[: first + 1] + bytes([4]) + s2[first + 2 :], False
    yield "s2 count off by one", a2, bytes([s2[0] + 1]) + s2[1:], False
    a3 = by_name["asymmetric-interval-s3"]  # q = 4: gap codes < q + 1 (code 4 is the odd gap 5)
    yield "s3 count over", a3, _words([a3.sketch.gaps_max + 1] * 3, 1), False
    yield "s3 all 0xff", a3, b"\xff" * 64, False
    s3 = parse_helper(a3.helper).payload
    yield "s3 first point at 2q", a3, s3[:first] + bytes([8]) + s3[first + 1 :], False
    yield "s3 gap code at q + 1", a3, s3[: first + 1] + bytes([5]) + s3[first + 2 :], False
    # Every gap the odd 5 (code 4): the gaps cover [0, 64) but no interval has the even length 2v.
    odd = bytes([13] * 3) + b"".join(bytes([0] + [4] * 13) for _ in range(3))
    yield "s3 only odd intervals", a3, odd, False
    # g_1 = -3, thirteen odd gaps to 62, then the even gap 4 to 66: it covers [0, 64), but the
    # only even interval is centred at 64, outside [0, 64).
    yield (
        "s3 even interval outside",
        a3,
        bytes([14] * 3) + b"".join(bytes([3] + [4] * 13 + [1]) for _ in range(3)),
        False,
    )
    mc = by_name["mixed-concatenate"]
    yield "mixed huge prefix", mc, b"\xff\xff\xff\xff" + bytes(16), False
    yield "mixed empty", mc, b"", False
    inner = parse_helper(mc.helper).payload
    yield "mixed trailing", mc, inner + b"\x00", False
    yield "mixed prefix off by one", mc, (int.from_bytes(inner[:4], "big") + 1).to_bytes(4, "big") + inner[4:], False


@pytest.mark.parametrize("label, case, payload, valid", list(_limit_payloads()), ids=[x[0] for x in _limit_payloads()])
def test_range_limits(label: str, case: Case, payload: bytes, valid: bool) -> None:
    helper = case.repack(payload)
    if valid:
        assert load_sketch(helper) == case.sketch
        _check_decode(case, helper)
    else:
        with pytest.raises(SketchFormatError):
            case.sketch.payload(helper)
        with pytest.raises(SketchFormatError):
            case.sketch.decode(helper, case.sample)


# -- 2. crafted parameters -----------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    0,
    -1,
    1,
    2,
    3,
    255,
    256,
    2**16 + 1,
    2**20,
    2**21 + 1,
    2**31,
    2**31 - 1,
    2**32,
    2**53,
    2**63,
    2**64,
    10**9,
    10**30,
    -(2**63),
    1.5,
    2.0,
    1e308,
    -0.0,
    True,
    False,
    None,
    "7",
    "",
    "s1",
    "s2",
    {"a": 1},
    {},
    [],
    [1],
    [0, 1],
    [2**63],
    [[1, 2]],
    [3] * 5000,
    ["x"],
    [None],
    [True, True],
]


def _load_hostile(scheme_id: int, params: dict[str, Any], payload: bytes = b"") -> SecureSketch | None:
    """``load_sketch`` on hostile parameters: a ``SketchFormatError`` or a faithful sketch."""
    helper = pack_helper(scheme_id, params, payload)
    with time_limit():
        try:
            sketch = load_sketch(helper)
        except SketchFormatError:
            return None
    # Accepted parameters must be exactly the ones the sketch writes (no silently ignored keys,
    # no 2.0 standing in for 2): otherwise the helper could never decode anyway.
    assert canonical_params(sketch.params()) == canonical_params(params)
    if scheme_id != MIXED:  # mixed reports: see test_mixed_report_with_wide_keys
        with time_limit():
            sketch.report()
    return sketch


def _param_variants(params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in params:
        for value in HOSTILE_VALUES:
            yield {**params, key: value}
        yield {k: v for k, v in params.items() if k != key}
    yield {**params, "extra": 1}
    yield {}


@pytest.mark.parametrize("case", [c for c in CASES if not c.name.startswith("mixed")], ids=lambda c: c.name)
def test_hostile_parameters_are_refused_quickly(case: Case) -> None:
    for params in _param_variants(case.sketch.params()):
        _load_hostile(case.sketch.scheme_id, params)


@pytest.mark.parametrize("case", [c for c in CASES if not c.name.startswith("mixed")], ids=lambda c: c.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_parameters_are_refused_or_faithful(case: Case, data: st.DataObject) -> None:
    params = dict(case.sketch.params())
    for key in data.draw(st.lists(st.sampled_from(sorted(params)), unique=True, min_size=1)):
        params[key] = data.draw(JSON_VALUES | st.integers(-1, 2**22), label=key)
    if data.draw(st.booleans(), label="extra key"):
        params[data.draw(st.text(max_size=3), label="extra")] = data.draw(JSON_VALUES)
    sketch = _load_hostile(case.sketch.scheme_id, params, parse_helper(case.helper).payload)
    if sketch is not None:
        helper = pack_helper(case.sketch.scheme_id, params, parse_helper(case.helper).payload)
        with time_limit(), contextlib.suppress(DECODE_ERRORS):
            sketch.decode(helper, case.sample)


BIG_PARAMS = [
    (1, {"n": 100, "v": 3, "features": 10**9, "step": None}),
    (1, {"n": 2**52, "v": 2**51, "features": 2**31, "step": None}),
    (1, {"n": 100, "v": [3] * 10000, "features": 10000, "step": None}),
    (2, {"n": 255, "t": 10**9}),
    (3, {"m": 32, "t": 10**9}),
    (3, {"m": 2**31, "t": 3}),
    (4, {"p": 2**31 - 1, "m": 5, "t": 1}),
    (4, {"p": 2**61 - 1, "m": 512, "t": 0}),
    (4, {"p": 2097143, "m": 512, "t": 255}),
    (5, {"n": 2**40, "q": 2**40, "scheme": "s2", "features": 2**16, "step": None}),
    (5, {"n": 2**40, "q": 2**40, "scheme": "s1", "features": 2**31, "step": None}),
    (6, {"p": 2**31, "q": 2**16, "g": 512, "t": 0}),
    (6, {"p": 2**21 // 3, "q": 3, "g": 10**9, "t": 0}),
    (6, {"p": 2**19, "q": 4, "g": 512, "t": 255}),
    (7, {"universe": 2**31, "min_distance": 1, "points": 1}),
    (7, {"universe": 2**20, "min_distance": 1, "points": 1}),
    (7, {"universe": 2**20, "min_distance": 2**17, "points": 2**19}),
]
#: Long (O(universe)) but legitimate counts: timed only (tracemalloc slows them tenfold).
SLOW_COUNTS = [
    (7, {"universe": 2**20, "min_distance": 2**15, "points": 1}),
    (7, {"universe": 2**20, "min_distance": 2**17, "points": 1}),
    (7, {"universe": 2**20, "min_distance": 2**19 - 1, "points": 2}),
]


@pytest.mark.parametrize("scheme_id, params", SLOW_COUNTS, ids=[str(p) for _, p in SLOW_COUNTS])
def test_wide_chaff_parameters_load_in_bounded_time(scheme_id: int, params: dict[str, Any]) -> None:
    _load_hostile(scheme_id, params)


@pytest.mark.parametrize("scheme_id, params", BIG_PARAMS, ids=[f"{s}-{p}"[:60] for s, p in BIG_PARAMS])
def test_huge_parameters_bounded_time_and_memory(scheme_id: int, params: dict[str, Any]) -> None:
    """Parameters announcing huge sizes are refused (or bounded) before any big allocation."""
    _load_hostile(scheme_id, params)
    helper = pack_helper(scheme_id, params, b"")
    with memory_limit(), contextlib.suppress(SketchFormatError):
        load_sketch(helper)


def test_largest_chaff_universe_loads_quickly() -> None:
    """universe = 2^20 with a wide min_distance is legitimate: counted in O(universe), not O(n·d)."""
    sketch = _load_hostile(7, {"universe": 2**20, "min_distance": 2**19, "points": 1})
    assert sketch is not None
    # First point p <= d; a second point is needed iff p < n - 1 - d = 2^19 - 1, at p + g with
    # g in [d + 1, 2d + 1] and p + g < n: 2^20 - 1 - (p + d) choices, then the set is maximal.
    n, d = 2**20, 2**19
    expected = sum(n - 1 - (p + d) if p < n - 1 - d else 1 for p in range(d + 1))
    assert sketch.sketch_count == expected


def _brute_force_maximal_sets(n: int, d: int) -> int:
    """Maximal d-separated subsets of [0, n) counted straight from the definition."""
    count = 0
    for mask in range(1, 1 << n):
        pts = [x for x in range(n) if mask >> x & 1]
        separated = all(b - a > d for a, b in itertools.pairwise(pts))
        maximal = all(any(abs(x - y) <= d for y in pts) for x in range(n))
        count += separated and maximal
    return count


@pytest.mark.parametrize("n, d", [(2, 1), (5, 1), (9, 2), (12, 1), (12, 3), (13, 5), (14, 13)])
def test_chaff_sliding_count_matches_definition(n: int, d: int) -> None:
    assert ChaffPointSketch(universe=n, min_distance=d).sketch_count == _brute_force_maximal_sets(n, d)


RAW_PARAMS = {
    "nested 50": b'{"n":' + b"[" * 50 + b"]" * 50 + b"}",
    "nested 1000": b'{"n":' + b"[" * 1000 + b"]" * 1000 + b"}",
    "nested 30000": b'{"n":' + b"[" * 30000 + b"]" * 30000 + b"}",
    "nested objects": b'{"n":' + b'{"a":' * 10000 + b"1" + b"}" * 10000 + b"}",
    "10000 digits": b'{"features":1,"n":' + b"9" * 10000 + b',"step":null,"v":3}',
    "1e999": b'{"features":1,"n":100,"step":1e999,"v":3}',
    "NaN": b'{"features":1,"n":100,"step":NaN,"v":3}',
    "duplicate key": b'{"features":1,"n":100,"n":100,"step":null,"v":3}',
    "not canonical": b'{"n":100,"v":3,"features":1,"step":null}',
    "latin-1": b'{"features":1,"n":100,"step":"\xe9","v":3}',
    "array": b"[1,2,3]",
    "empty": b"",
}


@pytest.mark.parametrize("raw", list(RAW_PARAMS.values()), ids=list(RAW_PARAMS))
def test_hand_built_parameter_json(raw: bytes) -> None:
    """Parameter bytes pack_helper would never write (it cannot even encode most of them)."""
    head = struct.pack(">4sBHH", b"SKAH", 1, 1, len(raw)) + raw + struct.pack(">I", 0)
    helper = head + hashlib.blake2b(head, digest_size=16).digest()
    with time_limit(), pytest.raises(SketchFormatError):
        load_sketch(helper)


# -- 3. mixed helpers ----------------------------------------------------------------------------

MIXED = 16
_IV = {
    "kind": "fuzzy",
    "scheme": "interval",
    "params": {"n": 100, "v": 3, "features": 2, "step": None},
    "min_entropy": None,
    "importance": None,
    "key_bits": 128,
}
_PIN = {"kind": "exact", "profile": "test", "min_entropy": None, "space_bits": None}


def _mixed(components: Any, mixes: Any = (), structure: Any = "hybrid") -> dict[str, Any]:
    return {
        "structure": structure,
        "components": components,
        "mixes": list(mixes) if isinstance(mixes, tuple) else mixes,
    }


def _nested_component(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = _IV
    for _ in range(depth):
        inner = {"kind": "fuzzy", "scheme": "mixed", "params": _mixed([inner])}
    return inner


HOSTILE_MIXED = [
    _mixed([_IV] * 400, structure="concatenate"),
    _mixed([_IV] * 65, structure="concatenate"),
    _mixed([{"kind": "fuzzy", "scheme": "fuzzy-vault", "params": {"p": 2097143, "m": 1, "t": 0}}] * 500),
    _mixed(
        [{"kind": "fuzzy", "scheme": "chaff-point", "params": {"universe": 2**20, "min_distance": 2**19, "points": 1}}]
        * 300
    ),
    _mixed([_nested_component(3)]),
    _mixed([_nested_component(60)]),
    _mixed([_IV, _IV], [[0, 1], [1, 0]]),
    _mixed([_IV, _IV, _IV], [[0, 1], [1, 2], [2, 0]]),
    _mixed([_IV, _IV], [[0, 0]]),
    _mixed([_IV, _IV], [[0, 2**70]]),
    _mixed([_IV, _IV], [[0, -1]]),
    _mixed([_IV, _IV], [[True, 1]]),
    _mixed([_IV, _IV], [[0.0, 1]]),
    _mixed([_IV, _IV], [[0, 1, 2]]),
    _mixed([_IV, _IV], [["0", "1"]]),
    _mixed([_IV, _IV], [[[0], [1]]]),
    _mixed([_IV, _IV], [[0, 1]] * 5000),
    _mixed([_IV, _IV], {"0": 1}),
    _mixed([_IV, _IV], "01"),
    _mixed([_IV, _PIN], [[0, 1]]),
    _mixed([_IV, _PIN]),
    _mixed([_PIN]),
    _mixed([]),
    _mixed({"0": _IV}),
    _mixed("components"),
    _mixed([_IV], structure=["hybrid"]),
    _mixed([_IV], structure={"a": 1}),
    _mixed([_IV], structure="nope"),
    _mixed([_IV], structure=None),
    _mixed([{**_IV, "scheme": "nope"}]),
    _mixed([{**_IV, "scheme": ["interval"]}]),
    _mixed([{**_IV, "scheme": "mixed"}]),
    _mixed([{**_IV, "kind": "exact"}]),
    _mixed([{**_IV, "kind": ["fuzzy"]}]),
    _mixed([{**_IV, "kind": {"a": 1}}]),
    _mixed([{**_IV, "kind": None}]),
    _mixed([{**_IV, "params": [1, 2]}]),
    _mixed([{**_IV, "params": "x"}]),
    _mixed([{**_IV, "params": None}]),
    _mixed([{**_IV, "key_bits": 10**9}]),
    _mixed([{**_IV, "key_bits": 2.5}]),
    _mixed([{**_IV, "min_entropy": -1}]),
    _mixed([{**_IV, "min_entropy": "x"}]),
    _mixed([{**_IV, "importance": 1.5}]),
    _mixed([{**_IV, "extra": 1}]),
    _mixed([{k: v for k, v in _IV.items() if k != "params"}]),
    _mixed([{**_PIN, "profile": "nope"}, _IV], [[0, 1]]),
    _mixed([{**_PIN, "profile": ["test"]}, _IV], [[0, 1]]),
    _mixed([{**_PIN, "profile": {"a": 1}}, _IV], [[0, 1]]),
    _mixed([{**_PIN, "space_bits": 1e308}, _IV], [[0, 1]]),
    _mixed([[1, 2], "x", None, 3]),
    {"structure": "hybrid", "components": [_IV]},
    {"structure": "hybrid", "mixes": []},
    {"components": [_IV], "mixes": []},
    {**_mixed([_IV]), "extra": True},
]


@pytest.mark.parametrize("params", HOSTILE_MIXED, ids=[str(i) for i in range(len(HOSTILE_MIXED))])
def test_hostile_mixed_structures_are_refused_quickly(params: dict[str, Any]) -> None:
    sketch = _load_hostile(MIXED, params, b"")
    if sketch is not None:
        with pytest.raises(SketchFormatError):
            sketch.payload(pack_helper(MIXED, params, b"\x00" * 7))


@settings(max_examples=60, deadline=None)
@given(
    components=st.lists(st.sampled_from([_IV, _PIN]) | JSON_VALUES, max_size=6),
    mixes=st.lists(st.lists(st.integers(-2, 6) | JSON_VALUES, min_size=0, max_size=3), max_size=6) | JSON_VALUES,
    structure=st.sampled_from(["concatenate", "cascade", "fanning", "chaining", "hybrid"]) | JSON_VALUES,
)
def test_random_mixed_structures_are_refused_or_faithful(components: Any, mixes: Any, structure: Any) -> None:
    _load_hostile(MIXED, {"structure": structure, "components": components, "mixes": mixes})


@pytest.mark.parametrize(
    "components",
    [
        [_IV, {**_IV, "key_bits": 4096}],
        [_IV, {**_PIN, "space_bits": 2000.0}],
    ],
    ids=["fuzzy key_bits=4096", "exact space_bits=2000"],
)
def test_mixed_report_with_wide_keys(components: list[dict[str, Any]]) -> None:
    """Key spaces of thousands of bits are accounted in logs (no 2.0**4096 overflow)."""
    sketch = _load_hostile(MIXED, _mixed(components, [[1, 0]], structure="cascade"))
    assert sketch is not None
    report = sketch.report()
    assert all(m.beta is None or m.beta >= 0.0 for m in sketch.mixing_report().mixes)
    assert report.loss_bound_bits >= 0.0


def test_mixed_with_a_valid_structure_still_loads() -> None:
    params = _mixed([_IV, _IV], structure="concatenate")
    sketch = _load_hostile(MIXED, params)
    assert sketch is not None and len(sketch.components) == 2


def test_many_heavy_mixed_components_bounded() -> None:
    """64 components (the limit) of the largest vault: bounded memory while loading."""
    component = {
        "kind": "fuzzy",
        "scheme": "fuzzy-vault",
        "params": {"p": 2097143, "m": 1, "t": 0},
        "min_entropy": None,
        "importance": None,
        "key_bits": 128,
    }
    helper = pack_helper(MIXED, _mixed([component] * 64, structure="concatenate"), b"")
    # One component's transient table and window sums, never 64 tables.
    with memory_limit(2 * MEMORY_LIMIT), time_limit(4 * TIME_LIMIT):
        sketch = load_sketch(helper)
    assert len(sketch.components) == 64


def test_crafted_extractor_seed_is_bounded() -> None:
    """A 64 KiB extractor seed with key_bits = 4096: the Toeplitz hash never builds its matrix.

    Before the fix ``toeplitz_extract`` materialised ``4096 × 2^19`` bits (2 GiB) on decode.
    """
    first = IntervalSketch(n=100, v=3, features=2)
    cascade = Cascade(first, FuzzySecret(IntervalSketch(n=100, v=3, features=2), key_bits=4096), warn=False)
    secret = [[10, 20], [30, 40]]
    helper = cascade.encode(secret)
    stored, randomness = cascade._unpack(parse_helper(helper).payload)
    seed = bytes(range(256)) * 258  # 64 KiB of extractor input plus the 512 bytes of the key
    crafted = MixRandomness(randomness.inner, randomness.nonces, randomness.salts, (None, seed))
    forged = pack_helper(cascade.scheme_id, cascade.params(), cascade._pack(stored, crafted))
    with memory_limit(), time_limit():
        try:
            recovered = cascade.decode(forged, secret)
        except DECODE_ERRORS:
            recovered = None
    # The second secret decodes in clear; the first was mixed with a different key, so it is
    # either refused or wrong, never the enrolled secret by accident of the forgery.
    assert recovered is None or recovered[1].tolist() == [30, 40]


def test_toeplitz_matches_the_matrix_definition() -> None:
    """The packed Toeplitz hash equals ``T·x`` with ``T[i, j] = seed_bit[i + n − 1 − j]``."""
    rng = np.random.default_rng(7)  # test data only
    for data_bytes, out_bits in [(0, 5), (1, 1), (3, 17), (9, 64), (20, 130)]:
        data = rng.integers(0, 256, data_bytes, dtype=np.uint8).tobytes()
        seed = rng.integers(0, 256, data_bytes + (out_bits + 6) // 8, dtype=np.uint8).tobytes()
        x = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
        bits = np.unpackbits(np.frombuffer(seed, dtype=np.uint8))
        n = x.size
        y = [sum(int(bits[i + n - 1 - j]) * int(x[j]) for j in range(n)) % 2 for i in range(out_bits)]
        assert toeplitz_extract(seed, data, out_bits) == np.packbits(np.array(y, dtype=np.uint8)).tobytes()


def test_many_wide_chaff_components_bounded() -> None:
    """64 chaff components of universe 2^20 (each count O(universe)): seconds, not minutes, and
    no 8 MiB table of counts kept per component until a rank or unrank needs it."""
    components = [
        {
            "kind": "fuzzy",
            "scheme": "chaff-point",
            "min_entropy": None,
            "importance": None,
            "key_bits": 128,
            "params": {"universe": 2**20, "min_distance": 2**19 + i, "points": 1},
        }
        for i in range(64)
    ]
    helper = pack_helper(MIXED, _mixed(components, structure="concatenate"), b"")
    # One component's transient table and window sums, never 64 tables.
    with memory_limit(2 * MEMORY_LIMIT), time_limit(8 * TIME_LIMIT):
        sketch = load_sketch(helper)
    assert len(sketch.components) == 64


# -- 4. malformed samples ------------------------------------------------------------------------

MALFORMED_SAMPLES: list[Any] = [
    None,
    "abc",
    "",
    b"",
    {"a": 1},
    {},
    True,
    False,
    3,
    2**70,
    float("nan"),
    float("inf"),
    1e308,
    object(),
    [[1, 2], [3]],
    [[[1]]],
    [None],
    ["a", "b"],
    [{"a": 1}],
    [1 + 2j],
    [float("nan")] * 4,
    [2**70] * 4,
    [-(2**63)] * 4,
    [2**64] * 4,
    [1e308] * 4,
    np.array([1 + 1j] * 4),
    np.array(["x"] * 4),
    np.full(4, np.nan),
    np.zeros((2, 2)),
    [b"ab"],
    [set()],
]


def _lengthed(case: Case) -> list[Any]:
    """Malformed samples of the right length (so only their contents are wrong)."""
    probe = case.sample
    if case.name.startswith("mixed"):
        return [[probe[0], bad] for bad in (None, 2**70, {"a": 1})] + [
            [bad, probe[1]] for bad in (None, "x", [float("nan")] * 2)
        ]
    size = len(probe)
    return [[float("nan")] * size, [2**70] * size, ["x"] * size, [None] * size, [[1]] * size, [2**64 + 1] * size]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_malformed_samples_raise_sample_error(case: Case) -> None:
    helper = case.helper
    for sample in MALFORMED_SAMPLES + _lengthed(case):
        with time_limit(), pytest.raises(SampleError):
            case.sketch.decode(helper, sample)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=30, deadline=None)
@given(
    sample=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3) | st.binary(max_size=3),
        lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=2), children, max_size=3),
        max_leaves=12,
    )
)
def test_arbitrary_samples_never_crash(case: Case, sample: Any) -> None:
    with time_limit(), contextlib.suppress(SampleError, DecodeError):
        case.sketch.decode(case.helper, sample)
