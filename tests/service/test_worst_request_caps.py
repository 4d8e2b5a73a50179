"""The caps on a request's cost are those ``benchmarks/bench_worst_request.py`` measured, and they bind.

The benchmark sends, per scheme, the largest enrolment and verification the service accepts and
records their CPU time and peak memory (``benchmarks/results/worst-request-*.json``; the budget is
0.25 s and 64 MB per request, ``docs/service/limits.md``). This test does no timing: it pins the
cap values the benchmark ran at, checks that each benchmarked case is accepted as it is (so the
benchmark measures what the service really lets through), and that one step above each cap is
refused. Raising a cap therefore fails here until the benchmark is re-run at the new value and
the expected values below are changed with it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from sketchauth_service.app import create_app
from sketchauth_service.limits import MAX_BODY_BYTES, MAX_ENROLMENT_NUMBERS, RequestLimits
from sketchauth_service.schemes import (
    MAX_ANGULAR_DIMENSION,
    MAX_STORED_GAPS,
    MAX_VAULT_PRIME,
    MAX_VAULT_SLOTS,
    WEIGHTED_MIN_SAMPLE_ROOM,
    get_scheme,
)
from sketchauth_service.settings import (
    DEFAULT_MAX_SAMPLE_LENGTH,
    DEFAULT_MAX_SAMPLES,
    MAX_SAMPLE_LENGTH_CAP,
    SettingsError,
)

from sketchauth.errors import ParameterError
from sketchauth.sketches.code_offset import MAX_N as CODE_OFFSET_MAX_N

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_worst_request.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_worst_request", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_worst_request", module)
    spec.loader.exec_module(module)
    return module


def test_cap_values_are_the_benchmarked_ones() -> None:
    from sketchauth.sketches._gf2m import MAX_M
    from sketchauth.sketches.pinsketch import MAX_T
    from sketchauth.sketches.vault import MAX_CANDIDATE_POINTS

    assert (DEFAULT_MAX_SAMPLE_LENGTH, DEFAULT_MAX_SAMPLES, MAX_SAMPLE_LENGTH_CAP) == (4096, 16, 1 << 16)
    assert (MAX_VAULT_SLOTS, MAX_VAULT_PRIME, MAX_STORED_GAPS, CODE_OFFSET_MAX_N) == (
        1 << 17,
        (1 << 17) - 1,
        1 << 20,
        255,
    )
    assert MAX_ANGULAR_DIMENSION == 512
    assert (MAX_M, MAX_T, MAX_CANDIDATE_POINTS, WEIGHTED_MIN_SAMPLE_ROOM) == (64, 256, 512, 8)
    bench = _bench()
    assert (bench.SAMPLE_LENGTH, bench.SAMPLES) == (DEFAULT_MAX_SAMPLE_LENGTH, DEFAULT_MAX_SAMPLES)
    assert (bench.BUDGET_CPU_S, bench.BUDGET_MB) == (0.25, 64.0)
    # 2^20 numbers per enrolment (256 captures of 4,096) measured 0.57 s and 84 MB: capped at 2^18.
    assert (MAX_ENROLMENT_NUMBERS, MAX_BODY_BYTES) == (1 << 18, 1 << 22)
    assert (bench.ENROLMENT_NUMBERS, bench.BODY_BYTES) == (MAX_ENROLMENT_NUMBERS, MAX_BODY_BYTES)


def test_request_limits_one_step_above_the_budget_are_refused() -> None:
    RequestLimits(64, 4096, MAX_BODY_BYTES)  # the largest the benchmark measured
    RequestLimits(4, 1 << 16, MAX_BODY_BYTES)
    for too_much in ((65, 4096, MAX_BODY_BYTES), (5, 1 << 16, MAX_BODY_BYTES), (16, 4096, MAX_BODY_BYTES + 1)):
        with pytest.raises(ValueError, match="at most"):
            RequestLimits(*too_much)


def test_a_service_configured_over_the_budget_does_not_start(tmp_path: Path) -> None:
    from service_testing import test_settings

    with pytest.raises(SettingsError, match="SKETCHAUTH_MAX_SAMPLES x SKETCHAUTH_MAX_SAMPLE_LENGTH"):
        create_app(test_settings(tmp_path, max_samples=256))
    with pytest.raises(SettingsError, match="SKETCHAUTH_MAX_BODY_BYTES"):
        create_app(test_settings(tmp_path, max_body_bytes=MAX_BODY_BYTES + 1))


def _limits(case: dict[str, Any]) -> RequestLimits:
    settings = case.get("settings", {})
    return RequestLimits(
        settings.get("max_samples", DEFAULT_MAX_SAMPLES),
        settings.get("max_sample_length", DEFAULT_MAX_SAMPLE_LENGTH),
        settings.get("max_body_bytes", 1 << 20),
    )


@pytest.mark.parametrize("name", sorted(_bench().cases()))
def test_benchmarked_case_is_accepted(name: str) -> None:
    case = _bench().cases()[name]
    spec = get_scheme(case["enrol"]["scheme"])
    limits = _limits(case)
    spec.validate_params(case["enrol"]["params"], limits)
    low, high = spec.sample_length(limits)
    assert all(low <= len(sample) <= high for sample in case["samples"])
    assert len(case["samples"]) <= spec.sample_count(limits)[1]


#: (scheme, the largest accepted parameters, the parameter one step above its cap).
ONE_STEP_ABOVE = [
    ("pinsketch", {"m": 64, "t": 256}, {"m": 65}),
    ("pinsketch", {"m": 64, "t": 256}, {"t": 257}),
    ("fuzzy-vault", {"p": MAX_VAULT_PRIME, "m": 512, "t": 255}, {"m": 513}),
    ("fuzzy-vault", {"p": MAX_VAULT_PRIME, "m": 512, "t": 255}, {"p": MAX_VAULT_PRIME + 2}),
    ("fuzzy-vault", {"p": MAX_VAULT_PRIME, "m": 512, "t": 255}, {"t": 256}),
    ("code-offset", {"n": 255, "t": 127}, {"n": 256}),
    ("code-offset", {"n": 255, "t": 127}, {"t": 128}),
    ("weighted-vault", {"p": 16384, "q": 8, "g": 512, "t": 255}, {"p": 16385}),
    ("weighted-vault", {"p": 2048, "q": 64, "g": 512, "t": 255}, {"q": 65}),
    ("weighted-vault", {"p": 16384, "q": 8, "g": 512, "t": 255}, {"g": 513}),
    ("asymmetric-interval", {"n": 510, "q": 64, "scheme": "s2", "features": 4096}, {"n": 512}),
    ("asymmetric-interval", {"n": 510, "q": 64, "scheme": "s2", "features": 4096}, {"features": 4097}),
    ("asymmetric-interval", {"n": (1 << 21) - 2, "q": 64, "scheme": "s3", "features": 1}, {"n": 1 << 21}),
    ("interval", {"n": 1 << 52, "v": 1 << 50, "features": 4096}, {"features": 4097}),
    ("angular", {"dimension": 512, "alpha": 511}, {"dimension": 513}),
    ("angular", {"dimension": 512, "alpha": 511}, {"alpha": 512}),
    ("angular-polar", {"dimension": 512, "bits": 511, "list_size": 128}, {"dimension": 513}),
    ("angular-polar", {"dimension": 512, "bits": 511, "list_size": 128}, {"bits": 512}),
    ("angular-polar", {"dimension": 512, "bits": 511, "list_size": 128}, {"list_size": 129}),
]


@pytest.mark.parametrize(("scheme", "largest", "above"), ONE_STEP_ABOVE)
def test_one_step_above_each_cap_is_refused(scheme: str, largest: dict[str, Any], above: dict[str, Any]) -> None:
    spec = get_scheme(scheme)
    limits = RequestLimits.default()
    spec.validate_params(largest, limits)  # the largest is accepted
    with pytest.raises(ParameterError):
        spec.validate_params({**largest, **above}, limits)
