"""No answer and no timing tells whether a user id is enrolled, on real servers, on both backends.

An attacker holding an API key probes ids: an enrolled id with a wrong (or malformed) sample must
be answered exactly like an id nobody enrolled (status, body, headers, throttling at the same
counts) and in a time drawn from the same distribution. The timing harness interleaves
attempts against enrolled ids and fresh unknown ids on one keep-alive connection and measures
the area under the ROC curve (AUC) of the two latency samples: the probability that an enrolled
id's attempt took longer than an unknown one's (Mann–Whitney U / (n·m)); 0.5 means no signal.
The cheapest argon2 profile is used so that the store round trips, not the hash, dominate: the
hardest setting for the service.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import httpx
import pytest
from http_testing import service_client
from service_testing import ADMIN_KEY, API_KEY, ServerProcess

pytestmark = pytest.mark.slow

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}
#: Attempt pairs measured per backend (after WARM_UP pairs): the AUC's standard deviation under
#: no signal is sqrt((n + m + 1) / (12 n m)) ≈ 0.029 here, so the 0.6 bound is 3.4 of them away.
PAIRS = 200
WARM_UP = 20
MAX_AUC = 0.6
#: Headers whose value legitimately differs between any two answers.
_VARYING = {"date", "x-request-id"}  # per request, whoever the user (the request id is random)


def auc(slower: list[float], faster: list[float]) -> float:
    """P(X > Y) + P(X = Y)/2 for X from ``slower``, Y from ``faster``: Mann–Whitney U / (n·m)."""
    pooled = sorted([(x, 0) for x in slower] + [(y, 1) for y in faster])
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(pooled):  # average ranks over ties
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, (_, group) in zip(ranks, pooled, strict=False) if group == 0)
    n, m = len(slower), len(faster)
    return (rank_sum - n * (n + 1) / 2) / (n * m)


def test_auc_is_the_mann_whitney_statistic() -> None:
    assert auc([3.0, 4.0], [1.0, 2.0]) == 1.0
    assert auc([1.0, 2.0], [3.0, 4.0]) == 0.0
    assert auc([1.0, 3.0], [2.0, 4.0]) == 0.25
    assert auc([2.0], [2.0]) == 0.5


def _backend_env(backend: str, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    if backend == "sqlite":
        return "sqlite:///service.db", {}
    url = request.getfixturevalue("postgres_available")
    return url, {"SKETCHAUTH_SCHEMA": request.getfixturevalue("postgres_schema")}


def _start(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str, **env: str
) -> ServerProcess:
    db, backend_env = _backend_env(backend, request)
    full = {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        **backend_env,
        **env,
    }
    server = ServerProcess(tmp_path, full, db=db)
    servers.append(server)
    return server.wait_ready()


def _answer(response: httpx.Response, user: str) -> tuple[int, bytes, dict[str, str]]:
    """Everything a client sees, less what differs between any two answers: the ``Date``, the
    user id in the problem's ``instance`` (the request's own path) and, for waits imposed a few
    milliseconds apart, a ``Retry-After`` rounded up to the next second (``60`` or ``59``)."""
    headers = {k: v for k, v in response.headers.items() if k.lower() not in _VARYING}
    content = response.content.replace(f"/v1/users/{user}/".encode(), b"/v1/users/{id}/")
    if "retry-after" in headers:
        headers["retry-after"] = str(int(headers["retry-after"]) // 2)  # 59 and 60 alike
        content = content.replace(b"retry in 59 s", b"retry in 60 s")
    return response.status_code, content, headers


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize(
    "sample", [IMPOSTOR, [1, 2, 3], [N + 5, 1, 2, 3]], ids=["wrong", "wrong-dimension", "out-of-range"]
)
def test_enrolled_and_unknown_ids_get_the_same_answers_up_to_lockout(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str, sample: list[int]
) -> None:
    """Every answer of a run of failures, the 429 with its Retry-After included, is identical."""
    server = _start(
        request, servers, tmp_path, backend, SKETCHAUTH_LOCKOUT_THRESHOLD="3", SKETCHAUTH_LOCKOUT_SECONDS="60"
    )
    with service_client(server.client()) as api:
        assert api.raw.enrol("alice", **ENROL).status_code == 201
        for attempt in range(5):
            enrolled, unknown = api.raw.verify("alice", sample), api.raw.verify("ghost", sample)
            assert _answer(enrolled, "alice") == _answer(unknown, "ghost"), attempt
            expected = 200 if attempt < 3 else 429
            assert enrolled.status_code == expected, (attempt, enrolled.text)
        assert "retry-after" in enrolled.headers


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_enrolled_and_unknown_ids_are_disabled_at_the_same_count(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str
) -> None:
    server = _start(
        request,
        servers,
        tmp_path,
        backend,
        SKETCHAUTH_LOCKOUT_THRESHOLD="2",
        SKETCHAUTH_LOCKOUT_SECONDS="0",
        SKETCHAUTH_DISABLE_THRESHOLD="4",
    )
    with service_client(server.client()) as api:
        assert api.raw.enrol("alice", **ENROL).status_code == 201
        statuses = []
        for _ in range(6):
            enrolled, unknown = api.raw.verify("alice", IMPOSTOR), api.raw.verify("ghost", [1, 2, 3])
            assert _answer(enrolled, "alice") == _answer(unknown, "ghost")
            statuses.append(enrolled.status_code)
        assert statuses == [200, 200, 200, 200, 423, 423]
        # Enrolling a probed id starts it afresh: its probes' count does not follow it.
        assert api.raw.enrol("ghost", **ENROL).status_code == 201
        assert api.raw.verify("ghost", TEMPLATE).json() == {"verified": True}


def _timing_round(server: ServerProcess, rng: random.Random, round_: int) -> tuple[float, float]:
    """(AUC, median enrolled − unknown in ms) of one interleaved run on fresh user ids."""
    total = PAIRS + WARM_UP
    with service_client(server.client()) as api:
        for i in range(total):
            assert api.raw.enrol(f"enrolled-{round_}-{i}", **ENROL).status_code == 201
        enrolled: list[float] = []
        unknown: list[float] = []
        for i in range(total):
            pair = [("enrolled", f"enrolled-{round_}-{i}"), ("unknown", f"unknown-{round_}-{i}")]
            rng.shuffle(pair)
            for kind, user in pair:
                started = time.perf_counter()
                response = api.raw.verify(user, IMPOSTOR)
                elapsed = time.perf_counter() - started
                assert response.status_code == 200 and response.json() == {"verified": False}
                if i >= WARM_UP:
                    (enrolled if kind == "enrolled" else unknown).append(elapsed)
    enrolled.sort()
    unknown.sort()
    return auc(enrolled, unknown), (enrolled[len(enrolled) // 2] - unknown[len(unknown) // 2]) * 1e3


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_timing_does_not_reveal_enrolment(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path, backend: str
) -> None:
    """AUC of enrolled-wrong vs unknown latencies within [0.4, 0.6] over interleaved attempts.

    A shared machine can stall one run (another process takes the core mid-run), so a run outside
    the band is repeated once on fresh ids; a real difference (a missing round trip or decode)
    fails both runs, as it did before the uniform answers were built (AUC 0.66 and 0.84).
    """
    server = _start(request, servers, tmp_path, backend)
    rng = random.Random(20261124)
    for round_ in range(2):
        measured, median = _timing_round(server, rng, round_)
        print(f"{backend}: AUC {measured:.3f}, median enrolled - unknown {median:+.3f} ms over {PAIRS} pairs")
        # Either way round is a signal: unknown ids answered slower would reveal enrolment too.
        if abs(measured - 0.5) <= MAX_AUC - 0.5:
            break
    assert abs(measured - 0.5) <= MAX_AUC - 0.5, f"{backend}: AUC {measured:.3f} (median difference {median:+.3f} ms)"
