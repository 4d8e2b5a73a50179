"""A second biometric over HTTP against real ``sketchauth serve`` processes, on SQLite and PostgreSQL.

A first biometric (interval), a second (PinSketch) and optionally a PIN: the genuine triple
verifies, also after a restart; a wrong or missing second sample fails and counts toward the
lockout like a wrong PIN; the released key is stable per context and needs the second sample;
a PIN change keeps the second biometric working; the stored report has per-secret bounds; and
no request shape around ``second_sample`` answers an enrolled user differently from one without
a second biometric or an unknown one.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_testing import released, service_client
from service_testing import Backend, ServerProcess
from test_service_oracle import auc

pytestmark = pytest.mark.slow

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [[987_640, 876_560, 765_400, 654_300], [987_700, 876_500, 765_470, 654_280]]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
FIRST = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}
SECOND_SET = [3, 70, 1000, 2024, 65535]
SECOND_GENUINE = [[3, 70, 1001, 2024, 65535], [3, 71, 1000, 2024, 65535]]
SECOND_WRONG = [5, 80, 1100, 3000, 60000]
SECOND = {"scheme": "pinsketch", "params": {"m": 16, "t": 4}, "samples": [SECOND_SET]}
PIN, NEW_PIN = "pin-7391-secret", "new-pin-2468"
CONTEXT = "com.example.backup/v1"
#: Headers whose value differs between any two answers.
_VARYING = {"date", "x-request-id"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path, servers: list[ServerProcess]) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'second.db'}", {}, servers)
    else:
        url, schema = request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")
        yield Backend("postgres", tmp_path, url, {"SKETCHAUTH_SCHEMA": schema}, servers)


def test_all_factors_verify_across_a_restart_and_a_wrong_second_counts(backend: Backend) -> None:
    env = {"SKETCHAUTH_LOCKOUT_THRESHOLD": "3", "SKETCHAUTH_LOCKOUT_SECONDS": "60"}
    server = backend.start(**env)
    with server.client() as c:
        api = service_client(c)
        assert api.enrol("trio", **FIRST, second=SECOND, pin=PIN).second["scheme"] == "pinsketch"
        api.enrol("duo", **FIRST, second=SECOND)
        for sample, second in zip(GENUINE, SECOND_GENUINE, strict=True):
            assert api.verify("trio", sample, pin=PIN, second_sample=second) is True
            assert api.verify("duo", sample, second_sample=second) is True
    server.stop()
    server = backend.start(**env)  # the stored structure is rebuilt from the database alone
    with server.client() as c:
        api = service_client(c)
        assert api.verify("trio", GENUINE[1], pin=PIN, second_sample=SECOND_GENUINE[0]) is True
        # Wrong second sample, missing second sample, wrong PIN: three counted failures, then 429.
        assert api.verify("trio", GENUINE[0], pin=PIN, second_sample=SECOND_WRONG) is False
        assert api.verify("trio", GENUINE[0], pin=PIN) is False
        assert api.verify("trio", GENUINE[0], pin="wrong-pin", second_sample=SECOND_GENUINE[0]) is False
        locked = api.raw.verify("trio", GENUINE[0], pin=PIN, second_sample=SECOND_GENUINE[0])
        assert locked.status_code == 429 and "retry-after" in locked.headers
        # The same for the enrolment without a PIN: the second sample alone is the factor that counts.
        for _ in range(3):
            assert api.verify("duo", GENUINE[0], second_sample=SECOND_WRONG) is False
        assert api.raw.verify("duo", GENUINE[0], second_sample=SECOND_GENUINE[0]).status_code == 429
    events = backend.audit("trio")
    assert events.count("verify-ok") == 3 and events.count("verify-fail") == 3 and "lock" in events


def test_key_release_needs_the_second_sample_and_is_stable_per_context(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        api.enrol("trio", **FIRST, second=SECOND, pin=PIN)
        api.enrol("solo", **FIRST, pin=PIN)
        keys = {
            released(api.raw.release_key("trio", s, CONTEXT, pin=PIN, second_sample=t))
            for s in GENUINE
            for t in SECOND_GENUINE
        }
        assert len(keys) == 1
        key = keys.pop()
        assert len(key) == 32
        assert (
            released(
                api.raw.release_key("trio", GENUINE[0], "com.example.mail/v2", pin=PIN, second_sample=SECOND_GENUINE[0])
            )
            != key
        )
        # The key comes from both biometrics and the PIN: a first-only enrolment's key is another.
        solo = released(api.raw.release_key("solo", GENUINE[0], CONTEXT, pin=PIN))
        assert solo != key
        for sample, pin, second in (
            (GENUINE[0], PIN, None),
            (GENUINE[0], PIN, SECOND_WRONG),
            (IMPOSTOR, PIN, SECOND_GENUINE[0]),
        ):
            response = api.raw.release_key("trio", sample, CONTEXT, pin=pin, second_sample=second)
            assert (response.status_code, response.json()) == (200, {"verified": False})
        # A second sample sent to a first-only enrolment: a failure, not a key.
        assert api.raw.release_key("solo", GENUINE[0], CONTEXT, pin=PIN, second_sample=SECOND_GENUINE[0]).json() == {
            "verified": False
        }
    server.stop()
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        assert (
            released(api.raw.release_key("trio", GENUINE[1], CONTEXT, pin=PIN, second_sample=SECOND_GENUINE[1])) == key
        )


def test_pin_change_keeps_the_second_biometric(backend: Backend) -> None:
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        api.enrol("trio", **FIRST, second=SECOND, pin=PIN)
        before = released(api.raw.release_key("trio", GENUINE[0], CONTEXT, pin=PIN, second_sample=SECOND_GENUINE[0]))
        # Without the second sample, or with a wrong one, nothing changes.
        assert api.raw.change_pin("trio", GENUINE[0], PIN, NEW_PIN).json() == {"verified": False}
        wrong = api.raw.change_pin("trio", GENUINE[0], PIN, NEW_PIN, second_sample=SECOND_WRONG)
        assert wrong.json() == {"verified": False}
        assert api.verify("trio", GENUINE[1], pin=PIN, second_sample=SECOND_GENUINE[1]) is True
        response = api.raw.change_pin("trio", GENUINE[0], PIN, NEW_PIN, second_sample=SECOND_GENUINE[0])
        assert response.json() == {"verified": True}
        assert api.verify("trio", GENUINE[1], pin=NEW_PIN, second_sample=SECOND_GENUINE[1]) is True
        assert api.verify("trio", GENUINE[1], pin=PIN, second_sample=SECOND_GENUINE[1]) is False
        assert api.verify("trio", GENUINE[1], pin=NEW_PIN, second_sample=SECOND_WRONG) is False
        assert api.verify("trio", GENUINE[1], pin=NEW_PIN) is False
        after = released(api.raw.release_key("trio", GENUINE[1], CONTEXT, pin=NEW_PIN, second_sample=SECOND_GENUINE[1]))
        assert after != before  # the PIN is part of the secret the key comes from
    assert "pin-change" in backend.audit("trio")


def test_report_has_per_secret_bounds(backend: Backend) -> None:
    server = backend.start(SKETCHAUTH_PIN_MIN_ENTROPY="19.93")
    with server.client() as c:
        api = service_client(c)
        api.enrol("trio", **FIRST, second=SECOND, pin=PIN)
        api.enrol("duo", **FIRST, second=SECOND)
        trio, duo = api.raw.report("trio").json(), api.raw.report("duo").json()
    assert (trio["extra"]["structure"], duo["extra"]["structure"]) == ("chaining", "cascade")
    names = [[s["name"] for s in r["extra"]["mixing"]["secrets"]] for r in (trio, duo)]
    assert names == [["0:exact", "1:pinsketch", "2:interval"], ["0:interval", "1:pinsketch"]]
    pin = trio["extra"]["mixing"]["secrets"][0]
    assert pin["min_entropy"] == 19.93 and set(pin["bounds"]) == {"concatenation", "theorem8"}
    second = duo["extra"]["mixing"]["secrets"][1]
    assert second["concatenation_loss_bits"] == 64.0 and "two_fuzzy_as_key_of_0" in second["bounds"]
    assert "two_fuzzy" in duo["extra"]["mixing"]["secrets"][0]["bounds"]


def _answer(response: httpx.Response, user: str) -> tuple[int, bytes, dict[str, str]]:
    headers = {k: v for k, v in response.headers.items() if k.lower() not in _VARYING}
    content = response.content.replace(f"/v1/users/{user}/".encode(), b"/v1/users/{id}/")
    if "retry-after" in headers:
        headers["retry-after"] = str(int(headers["retry-after"]) // 2)  # 59 and 60 alike
        content = content.replace(b"retry in 59 s", b"retry in 60 s")
    return response.status_code, content, headers


@pytest.mark.parametrize(
    "second_sample",
    [None, SECOND_WRONG, [1, 2, 3, 4, 5, 6, 7, 8, 9], [1.5, 2.5], [1 << 40], [7, 7, 7]],
    ids=["missing", "wrong", "too-many", "not-integers", "out-of-range", "repeated"],
)
def test_no_enrolment_oracle_through_second_sample(backend: Backend, second_sample: list[Any] | None) -> None:
    """With a second biometric, without one, or not enrolled: every answer is the same, 429 included."""
    server = backend.start(SKETCHAUTH_LOCKOUT_THRESHOLD="3", SKETCHAUTH_LOCKOUT_SECONDS="60")
    with server.client() as c:
        api = service_client(c)
        api.enrol("two-f", **FIRST, second=SECOND)
        api.enrol("one-f", **FIRST)
        for attempt in range(5):
            answers = [
                _answer(api.raw.verify(user, IMPOSTOR, second_sample=second_sample), user)
                for user in ("two-f", "one-f", "ghost")  # one length: the same Content-Length
            ]
            assert answers[0] == answers[1] == answers[2], attempt
            assert answers[0][0] == (200 if attempt < 3 else 429), (attempt, answers[0])


#: Interleaved attempt pairs per timing run, after WARM_UP pairs; the AUC's standard deviation under
#: no signal is about 0.029 here, so the band [0.4, 0.6] is 3.4 of them wide on each side.
PAIRS, WARM_UP, MAX_AUC = 200, 20, 0.6
#: A second biometric whose decode costs about 5 ms even when it fails (a complete fuzzy vault
#: over F_65521), so that skipping it would show: with the PinSketch above the difference is a
#: fraction of a millisecond, within the noise of a shared machine.
VAULT = {"scheme": "fuzzy-vault", "params": {"p": 257, "m": 20, "t": 8}, "samples": [list(range(1, 60, 3))]}
VAULT_WRONG = list(range(2, 60, 3))


def _timing_round(server: ServerProcess, rng: random.Random, round_: int) -> float:
    """AUC of (with a second biometric) vs (first only) latencies for attempts carrying a second sample."""
    times: dict[str, list[float]] = {"two": [], "one": []}
    with server.client() as c:
        api = service_client(c)
        for i in range(PAIRS + WARM_UP):
            api.enrol(f"two-{round_}-{i}", **FIRST, second=VAULT)
            api.enrol(f"one-{round_}-{i}", **FIRST)
        for i in range(PAIRS + WARM_UP):
            pair = ["two", "one"]
            rng.shuffle(pair)
            for kind in pair:
                started = time.perf_counter()
                response = api.raw.verify(f"{kind}-{round_}-{i}", IMPOSTOR, second_sample=VAULT_WRONG)
                elapsed = time.perf_counter() - started
                assert response.json() == {"verified": False}
                if i >= WARM_UP:
                    times[kind].append(elapsed)
    return auc(times["two"], times["one"])


def test_timing_does_not_reveal_a_second_biometric(backend: Backend) -> None:
    """A deployment enrolling some users with a second biometric and some without: an attempt that
    carries a second sample costs the same against both (the first-only enrolment verifies the
    request against the last enrolment of its shape). Repeated once on fresh ids if a run falls
    outside the band (a stalled shared core). Before, such an attempt against a first-only enrolment
    paid only the argon2 check: AUC 0.77-0.87 with this vault (0.57-0.63 with the PinSketch second
    biometric); now 0.53-0.58 on both backends. The vault is over p = 257 (a 0.5 KB helper): over
    p = 65521 its 131 KB row is read about 1 ms slower by PostgreSQL (TOAST), which this test would
    see (docs/security.md, The service)."""
    server = backend.start()
    rng = random.Random(20261124)
    for round_ in range(2):
        measured = _timing_round(server, rng, round_)
        print(f"AUC with vs without a second biometric: {measured:.3f} over {PAIRS} pairs")
        if abs(measured - 0.5) <= MAX_AUC - 0.5:
            break
    assert abs(measured - 0.5) <= MAX_AUC - 0.5, f"AUC {measured:.3f}"


def test_no_second_sample_or_pin_on_disk(tmp_path: Path, servers: list[ServerProcess]) -> None:
    """The SQLite files hold helper data and hashes only: no second template, sample or PIN."""
    from sketchauth import PinSketch

    backend = Backend("sqlite", tmp_path, f"sqlite:///{tmp_path / 'scan.db'}", {}, servers)
    server = backend.start()
    with server.client() as c:
        api = service_client(c)
        api.enrol("trio", **FIRST, second=SECOND, pin=PIN)
        assert api.verify("trio", GENUINE[0], pin=PIN, second_sample=SECOND_GENUINE[0]) is True
        response = api.raw.change_pin("trio", GENUINE[0], PIN, NEW_PIN, second_sample=SECOND_GENUINE[0])
        assert response.json() == {"verified": True}
    server.stop()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("scan.db*"))
    sketch = PinSketch(16, 4)
    for name, secret in {"template": SECOND_SET, "sample": SECOND_GENUINE[0]}.items():
        patterns = {
            "canonical": sketch.secret_bytes(secret),
            "json": str(secret).encode(),
            "u16": b"".join(x.to_bytes(2, "little") for x in secret),
        }
        for kind, pattern in patterns.items():
            assert pattern not in stored, f"second {name} ({kind}) found on disk"
    for pin in (PIN, NEW_PIN):
        assert pin.encode() not in stored
