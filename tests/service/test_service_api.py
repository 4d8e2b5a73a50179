"""In-process behaviour of the HTTP API (TestClient, temp SQLite, argon2 "test" profile)."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import argon2
import pytest
from fastapi.testclient import TestClient
from http_testing import problem, service_client
from service_testing import ADMIN, API_KEY, AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.schemes import available_schemes, get_scheme
from sketchauth_service.settings import Settings, SettingsError
from sketchauth_service.store import Store

from sketchauth.client import Client

INTERVAL = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
GENUINE = [123, 30, 205, 71]  # every feature within 7 of the template
IMPOSTOR = [20, 130, 5, 250]


# -- happy paths ------------------------------------------------------------------------------------


def test_enrol_returns_report_and_stores_only_helper_and_hash(api: Client, sqlite_store: Store) -> None:
    r = api.raw.enrol("alice", **INTERVAL)
    assert r.status_code == 201
    body = r.json()
    assert body["report"]["loss_bound_bits"] == pytest.approx(4 * __import__("math").log2(15))
    assert body["report"]["sketch_bits"] == body["report"]["loss_bound_bits"]
    assert (body["user_id"], body["scheme"], body["pin"], body["replaced"]) == ("alice", "interval", False, False)
    assert set(body) == {"user_id", "scheme", "params", "pin", "replaced", "report", "pipeline", "pipeline_sha256"}
    assert body["pipeline"] is None and body["pipeline_sha256"] is None
    stored = sqlite_store.get("alice")
    assert stored is not None and stored.secret_hash.startswith("$argon2id$")
    # Helper data for the interval sketch is b mod (2v - 1): the residues, not the template.
    from sketchauth.sketches.base import load_sketch

    sketch = load_sketch(stored.helper)
    assert sketch.decode(stored.helper, GENUINE).tolist() == [120, 33, 200, 71]


def test_genuine_and_impostor(api: Client) -> None:
    api.enrol("alice", **INTERVAL)
    assert api.raw.verify("alice", GENUINE).json() == {"verified": True}
    assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
    # Exactly at the tolerance (|d' - b| = v) is beyond it.
    assert api.raw.verify("alice", [128, 33, 200, 71]).json() == {"verified": False}
    assert api.raw.verify("alice", [127, 26, 207, 64]).json() == {"verified": True}


def test_unknown_user_answers_like_a_wrong_sample_after_the_same_argon2_work(api: Client, client: TestClient) -> None:
    api.enrol("alice", **INTERVAL)
    state = client.app.state.service  # type: ignore[attr-defined]
    calls: list[str] = []
    real = state.authenticator.hasher

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def verify(self, hash_: str, message: bytes) -> bool:
            calls.append(hash_)
            return real.verify(hash_, message)

    state.authenticator.hasher = Counting()
    wrong = api.raw.verify("alice", IMPOSTOR)
    unknown = api.raw.verify("nobody", IMPOSTOR)
    assert wrong.status_code == unknown.status_code == 200
    assert wrong.content == unknown.content == b'{"verified":false}'
    assert dict(wrong.headers).keys() == dict(unknown.headers).keys()
    assert len(calls) == 2  # one argon2 verification each
    # The unknown id's sample was decoded and checked against the decoy: the last enrolment an
    # attempt ran against (alice's), so that it costs the same decode as hers.
    assert calls[0] == calls[1] and calls[0].startswith("$argon2id$")
    assert state.store._decoy().user_id == "alice"  # the store's decoy: the last record opened


def test_duplicate_enrolment_is_409_and_replace_gives_fresh_sketch(api: Client, sqlite_store: Store) -> None:
    body = {"scheme": "code-offset", "params": {"n": 16, "t": 2}, "samples": [list(range(16))]}
    assert api.raw.enrol("alice", **body).status_code == 201
    first = sqlite_store.get("alice")
    problem(api.raw.enrol("alice", **body), 409, "already-enrolled")
    r = api.raw.enrol("alice", **body, replace=True)
    assert r.status_code == 201 and r.json()["replaced"] is True
    second = sqlite_store.get("alice")
    assert first is not None and second is not None
    # Renewability: fresh randomness, so a new helper and a new salted hash.
    assert first.helper != second.helper and first.secret_hash != second.secret_hash
    assert api.raw.verify("alice", [99, *range(1, 15), 0]).json() == {"verified": True}


def test_report_and_revoke(api: Client, sqlite_store: Store) -> None:
    problem(api.raw.report("alice"), 404, "not-enrolled")
    enrolled = api.raw.enrol("alice", **INTERVAL).json()
    report = api.raw.report("alice")
    assert report.status_code == 200 and report.json() == enrolled["report"]
    assert "helper" not in report.text and "argon2" not in report.text
    assert api.raw.delete("alice").status_code == 204
    problem(api.raw.delete("alice"), 404, "not-enrolled")
    assert api.raw.verify("alice", GENUINE).json() == {"verified": False}
    # A revoked id is an unknown one: its attempts are counted and audited like any other.
    assert [e.event for e in sqlite_store.audit_events("alice")] == ["enrol", "revoke", "attempt", "verify-fail"]


@pytest.mark.parametrize("spec", available_schemes(), ids=lambda s: s.name)
def test_every_offered_scheme_enrols_and_verifies_its_example(api: Client, spec: Any) -> None:
    params, samples, genuine = spec.example
    r = api.raw.enrol(f"u-{spec.name}", spec.name, samples, params=params)
    assert r.status_code == 201, r.text
    assert r.json()["report"]["scheme"] == spec.name
    assert api.raw.verify(f"u-{spec.name}", genuine).json() == {"verified": True}


def test_schemes_lists_parameter_schemas(client: TestClient) -> None:
    r = client.get("/v1/schemes", headers=AUTH)
    assert r.status_code == 200
    schemes = {s["name"]: s for s in r.json()["schemes"]}
    assert {"interval", "code-offset"} <= set(schemes)
    assert set(schemes["code-offset"]["params_schema"]["properties"]) == {"n", "t"}
    assert schemes["code-offset"]["params_schema"]["additionalProperties"] is False
    assert schemes["interval"]["sample_kind"] == "vector" and schemes["code-offset"]["sample_kind"] == "bytes"
    if "pinsketch" in schemes:
        assert set(schemes["pinsketch"]["params_schema"]["properties"]) == {"m", "t"}


# -- security ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": f"Basic {API_KEY}"}, {"Authorization": API_KEY}],
)
def test_api_key_required(client: TestClient, headers: dict[str, str]) -> None:
    for method, path in [("GET", "/v1/schemes"), ("GET", "/v1/users/a/report"), ("DELETE", "/v1/users/a")]:
        body = problem(client.request(method, path, headers=headers), 401, "unauthorized")
        assert "detail" in body
    r = client.post("/v1/users/a/verification", headers=headers, json={"sample": GENUINE})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ok"}


def test_settings_refuse_to_start_without_keys(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="no API key"):
        create_app(test_settings(tmp_path, api_keys=(), admin_keys=()))
    with pytest.raises(SettingsError, match="argon2 profile"):
        create_app(test_settings(tmp_path, hash_profile="nope"))
    with pytest.raises(SettingsError, match="in-memory"):
        create_app(test_settings(tmp_path, database_url="sqlite:///:memory:"))
    # Explicit local mode may run without keys (and trusts every caller).
    dev = Settings(
        database_url=f"sqlite:///{tmp_path / 'dev.db'}", dev_mode=True, hash_profile="test", allow_test_profile=True
    )
    with TestClient(create_app(dev)) as c:
        assert c.get("/v1/schemes").status_code == 200


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().database_url == "sqlite:///./sketchauth.db"
    for name, value in {
        "SKETCHAUTH_API_KEYS": " key-one ,key-two,, ",
        "SKETCHAUTH_LOCKOUT_THRESHOLD": "3",
        "SKETCHAUTH_DATABASE_URL": "postgresql://u@h/db",
        "SKETCHAUTH_HASH_PROFILE": "rfc9106-low-memory",
    }.items():
        monkeypatch.setenv(name, value)
    s = Settings.from_env()
    assert s.api_keys == ("key-one", "key-two") and s.lockout_threshold == 3
    assert s.database_url == "postgresql://u@h/db" and s.hash_profile == "rfc9106-low-memory"
    monkeypatch.setenv("SKETCHAUTH_LOCKOUT_SECONDS", "soon")
    with pytest.raises(SettingsError, match="integer"):
        Settings.from_env()


def test_nothing_logs_samples_or_pins(api: Client, client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    body = {
        "scheme": "interval",
        "params": {"n": 1 << 20, "v": 50, "features": 3},
        "samples": [[987_651, 876_541, 765_431]],
    }
    api.enrol("alice", **body)
    api.raw.verify("alice", [987_650, 876_540, 765_430])
    bad = client.post("/v1/users/alice/verification", headers=AUTH, json={"sample": [987_650, "876540", 765_430]})
    assert bad.status_code == 422
    text = caplog.text + bad.text
    for value in ("98765", "87654", "76543"):
        assert value not in text


# -- throttling ---------------------------------------------------------------------------------------


class Clock:
    """A controllable Unix clock."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_lockout_after_five_failures_then_wait(tmp_path: Path) -> None:
    clock = Clock()
    settings = test_settings(tmp_path)  # defaults: 5 failures, then 30 s waits
    with TestClient(create_app(settings, clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        for _ in range(5):
            assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
        clock.now += 0.2
        r = api.raw.verify("alice", GENUINE)
        body = problem(r, 429, "too-many-failures")
        assert r.headers["retry-after"] == "30"  # whole seconds, rounded up
        assert "retry in" in body["detail"]
        # A waiting user's attempts are not counted and do not reveal the sample's quality.
        assert client.app.state.service.store.get("alice").failures == 5  # type: ignore[attr-defined]


def test_wait_expires_success_resets_and_disable_needs_reset(tmp_path: Path) -> None:
    clock = Clock()
    settings = test_settings(tmp_path, lockout_threshold=2, lockout_seconds=30, disable_threshold=4)
    with TestClient(create_app(settings, clock=clock)) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
        store = client.app.state.service.store  # type: ignore[attr-defined]
        api.raw.verify("alice", IMPOSTOR)
        api.raw.verify("alice", IMPOSTOR)
        clock.now += 29.5
        r = api.raw.verify("alice", GENUINE)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        clock.now += 0.5  # exactly 30 s after the second failure: the wait is over
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}
        assert store.get("alice").failures == 0
        for _ in range(4):
            assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
            clock.now += 30
        problem(api.raw.verify("alice", GENUINE), 423, "biometric-disabled")
        clock.now += 86_400  # disabled is not a wait: it does not expire
        problem(api.raw.verify("alice", GENUINE), 423, "biometric-disabled")
        # Admin reset needs an admin key.
        problem(client.post("/v1/admin/users/alice/reset", headers=AUTH), 403, "forbidden")
        problem(client.post("/v1/admin/users/alice/reset"), 401, "unauthorized")
        problem(client.post("/v1/admin/users/nobody/reset", headers=ADMIN), 404, "not-enrolled")
        assert client.post("/v1/admin/users/alice/reset", headers=ADMIN).status_code == 204
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}
        events = [e.event for e in store.audit_events("alice")]
        assert events.count("disable") == 1 and "reset" in events and events[-1] == "verify-ok"
        # Re-enrolment also lifts a disabled biometric.
        for _ in range(4):
            api.raw.verify("alice", IMPOSTOR)
            clock.now += 30
        assert api.raw.verify("alice", GENUINE).status_code == 423
        assert api.raw.enrol("alice", **INTERVAL, replace=True).status_code == 201
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}


def test_rehash_on_success_with_a_newer_profile(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path, hash_profile="test"))) as client:
        api = service_client(client)
        api.enrol("alice", **INTERVAL)
    with TestClient(create_app(test_settings(tmp_path, hash_profile="owasp"))) as client:
        api = service_client(client)
        store = client.app.state.service.store  # type: ignore[attr-defined]
        old = store.get("alice").secret_hash
        assert api.raw.verify("alice", IMPOSTOR).json() == {"verified": False}
        assert store.get("alice").secret_hash == old  # never re-hashed on failure
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}
        new = store.get("alice").secret_hash
        assert argon2.extract_parameters(old).memory_cost == 8
        assert argon2.extract_parameters(new).memory_cost == 19456
        assert [e.event for e in store.audit_events("alice")][-2:] == ["verify-ok", "rehash"]
        assert api.raw.verify("alice", GENUINE).json() == {"verified": True}


def test_rehash_answer_kept_by_kind_of_hash_agrees_with_argon2() -> None:
    from sketchauth_service.authenticator import Authenticator

    authenticator = Authenticator("test")
    try:
        own = authenticator.hasher
        kinds = [
            own,
            argon2.PasswordHasher(time_cost=own.time_cost + 1, memory_cost=own.memory_cost, parallelism=1),
            argon2.PasswordHasher(time_cost=own.time_cost, memory_cost=own.memory_cost * 2, parallelism=1),
            argon2.PasswordHasher(
                time_cost=own.time_cost, memory_cost=own.memory_cost, parallelism=own.parallelism, salt_len=8
            ),
            argon2.PasswordHasher(
                time_cost=own.time_cost, memory_cost=own.memory_cost, parallelism=own.parallelism, hash_len=16
            ),
            argon2.PasswordHasher(
                time_cost=own.time_cost,
                memory_cost=own.memory_cost,
                parallelism=own.parallelism,
                type=argon2.Type.I,
            ),
        ]
        hashes = [kind.hash(f"secret {i}") for kind in kinds for i in range(3)]
        expected = [own.check_needs_rehash(h) for h in hashes]
        assert expected[:3] == [False] * 3 and all(expected[3:])
        for _ in range(2):  # decided, then kept
            assert [authenticator._needs_rehash(h) for h in hashes] == expected
        assert len(authenticator._rehash_needed) == len(kinds)
    finally:
        authenticator.close()


def test_audit_table_columns(api: Client, settings: Settings) -> None:
    api.enrol("alice", **INTERVAL)
    api.raw.verify("alice", IMPOSTOR)
    path = settings.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(audit)")]
        rows = conn.execute("SELECT user_id, event, client FROM audit ORDER BY id").fetchall()
    assert columns == ["id", "at", "user_id", "event", "client"]
    # The client is the name of the key that acted (SKETCHAUTH_API_KEYS' first key: api-key-1).
    assert rows == [
        ("alice", "enrol", "api-key-1"),
        ("alice", "attempt", "api-key-1"),
        ("alice", "verify-fail", "api-key-1"),
    ]


# -- bad input ------------------------------------------------------------------------------------------


def _raw(client: TestClient, path: str, content: bytes, **headers: str) -> Any:
    return client.post(path, headers={**AUTH, "content-type": "application/json", **headers}, content=content)


def test_malformed_json_is_400(client: TestClient) -> None:
    problem(_raw(client, "/v1/users/alice/enrolment", b'{"scheme": "interval",'), 400, "malformed-json")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"sample": [1, NaN, 3, 4]}',
        b'{"sample": [1, Infinity, 3, 4]}',
        b'{"sample": [1, -Infinity, 3, 4]}',
        b'{"sample": [1, 1e999, 3, 4]}',
        b'{"sample": [1, "2", 3, 4]}',
        b'{"sample": [1, true, 3, 4]}',
        b'{"sample": [1, null, 3, 4]}',
        b'{"sample": [[1], 2, 3, 4]}',
        b'{"sample": "1,2,3,4"}',
        b'{"sample": []}',
        b'{"sample": [1, 2, 3, 4], "extra": 1}',
        b'{"sample": [1, 2, 3, 4], "pin": 1234}',
        b"[1, 2, 3, 4]",
    ],
)
def test_wrong_types_and_non_finite_numbers_are_422(api: Client, client: TestClient, raw: bytes) -> None:
    api.enrol("alice", **INTERVAL)
    body = problem(_raw(client, "/v1/users/alice/verification", raw), 422, "invalid-request")
    assert body["errors"] and all(set(e) == {"loc", "msg"} for e in body["errors"])


@pytest.mark.parametrize(
    ("body", "kind", "needle"),
    [
        ({**INTERVAL, "scheme": "rot13"}, "unknown-scheme", "unknown scheme"),
        ({**INTERVAL, "params": {"n": 256, "v": 8, "features": 4, "colour": 1}}, "invalid-parameters", "colour"),
        ({**INTERVAL, "params": {"n": 256, "v": 0, "features": 4}}, "invalid-parameters", "v"),
        ({**INTERVAL, "params": {"n": 256, "v": 8, "features": 4, "step": float("inf")}}, None, None),
        ({**INTERVAL, "params": {"v": 8}}, "invalid-parameters", "n"),
        ({**INTERVAL, "samples": [[1, 2, 3]]}, "invalid-sample", "4 features"),
        ({**INTERVAL, "samples": [[1, 2, 3, 256]]}, "invalid-sample", "outside"),
        ({**INTERVAL, "samples": [[1.5, 2, 3, 4]]}, "invalid-sample", "not an integer"),
        ({**INTERVAL, "samples": [[1, 2, 3, 4], [1, 2, 3, 4]]}, "wrong-sample-count", "exactly 1 sample"),
        (
            {"scheme": "code-offset", "params": {"n": 4, "t": 1}, "samples": [[1, 2, 3, 256]]},
            "invalid-sample",
            "outside",
        ),
        (
            {"scheme": "code-offset", "params": {"n": 4, "t": 2}, "samples": [[1, 2, 3, 4]]},
            "invalid-parameters",
            "2*t < n",
        ),
        ({"scheme": "code-offset", "params": {"n": "4", "t": 1}, "samples": [[1, 2, 3, 4]]}, "invalid-parameters", "n"),
    ],
)
def test_bad_enrolments_are_422_and_write_nothing(
    client: TestClient, sqlite_store: Store, body: dict[str, Any], kind: str | None, needle: str | None
) -> None:
    r = _raw(client, "/v1/users/alice/enrolment", json.dumps(body).encode())
    if kind is None:  # Infinity in the body itself
        assert r.status_code == 422
    else:
        answer = problem(r, 422, kind)
        assert needle in answer["detail"]
    assert sqlite_store.get("alice") is None
    assert sqlite_store.audit_events() == []


@pytest.mark.skipif("fuzzy-vault" not in {s.name for s in available_schemes()}, reason="no fuzzy vault yet")
@pytest.mark.parametrize(
    ("sample", "needle"),
    [
        ([3, 3, 40, 66, 101, 150, 200, 251], "duplicate"),
        ([3, 17, 40, 66, 101, 150, 200, 257], "outside"),
        ([3, 17], "exactly 8"),
    ],
)
def test_bad_sets_are_422(api: Client, sample: list[int], needle: str) -> None:
    params, samples, _ = get_scheme("fuzzy-vault").example
    body = {"scheme": "fuzzy-vault", "params": params, "samples": [sample]}
    assert needle in problem(api.raw.enrol("alice", **body), 422, "invalid-sample")["detail"]
    assert api.raw.enrol("alice", **{**body, "samples": samples}).status_code == 201
    # At verification the same sample is a failed attempt: its fault depends on the enrolment.
    assert api.raw.verify("alice", sample).json() == {"verified": False}


def test_wrong_dimension_at_verification_is_a_counted_failure(api: Client, sqlite_store: Store) -> None:
    """The attempt was claimed before the sample was looked at; giving it back could undo a
    wait or disable that concurrent attempts imposed meanwhile, so it stays a failure. It is
    answered like one: a 422 naming the enrolment's dimension would tell that the id is enrolled
    (and with what), where an unknown id gets ``{"verified": false}``."""
    api.enrol("alice", **INTERVAL)
    wrong_shape = api.raw.verify("alice", [1, 2, 3])
    unknown = api.raw.verify("nobody", [1, 2, 3])
    assert wrong_shape.status_code == unknown.status_code == 200
    assert wrong_shape.content == unknown.content == b'{"verified":false}'
    assert sqlite_store.get("alice").failures == 1  # type: ignore[union-attr]
    assert [e.event for e in sqlite_store.audit_events("alice")] == ["enrol", "attempt", "verify-fail"]


def test_user_id_is_validated(client: TestClient) -> None:
    problem(
        client.post("/v1/users/" + "x" * 129 + "/verification", headers=AUTH, json={"sample": GENUINE}),
        422,
        "invalid-request",
    )
    problem(client.get("/v1/users/a%20b/report", headers=AUTH), 422, "invalid-request")


def test_oversized_bodies_are_413(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path, max_body_bytes=4096))) as client:
        big = b'{"sample": [' + b"1," * 4000 + b"1]}"
        problem(_raw(client, "/v1/users/alice/verification", big), 413, "body-too-large")

        def chunks() -> Any:  # no Content-Length: counted while streaming
            for _ in range(10):
                yield b" " * 1000

        r = client.post(
            "/v1/users/alice/verification", headers={**AUTH, "content-type": "application/json"}, content=chunks()
        )
        problem(r, 413, "body-too-large")


def test_sample_length_and_count_limits(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path, max_sample_length=8, max_samples=2))) as client:
        api = service_client(client)
        body = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 8}, "samples": [list(range(9))]}
        problem(api.raw.enrol("alice", **body), 422, "sample-too-long")
        # A vector of 9 features could never be sent: the parameter is refused too.
        body = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 9}, "samples": [list(range(8))]}
        problem(api.raw.enrol("alice", **body), 422, "invalid-parameters")
        problem(api.raw.verify("alice", list(range(9))), 422, "sample-too-long")
        problem(
            api.raw.enrol("alice", **{**INTERVAL, "samples": [[1, 2, 3, 4]] * 3}),
            422,
            "too-many-samples",
        )


def test_unknown_routes_and_methods_are_problems(client: TestClient) -> None:
    problem(client.get("/v2/anything", headers=AUTH), 404, "not-found")
    problem(client.put("/v1/schemes", headers=AUTH), 405, "method-not-allowed")


def test_openapi_documents_the_api(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert {
        "/v1/users/{user_id}/enrolment",
        "/v1/users/{user_id}/verification",
        "/v1/users/{user_id}/report",
        "/v1/users/{user_id}",
        "/v1/schemes",
        "/healthz",
        "/readyz",
        "/v1/admin/users/{user_id}/reset",
    } <= set(paths)
    assert {"201", "409", "413", "422"} <= set(paths["/v1/users/{user_id}/enrolment"]["post"]["responses"])
    assert {"200", "423", "429"} <= set(paths["/v1/users/{user_id}/verification"]["post"]["responses"])
    assert client.get("/docs").status_code == 200


# -- PIN (cascaded mixing) ------------------------------------------------------------------------------


def test_pin_enrolment_needs_sample_and_pin(api: Client, sqlite_store: Store) -> None:
    r = api.raw.enrol("alice", **INTERVAL, pin="4711-2024")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["pin"] is True and body["report"]["scheme"] == "mixed"
    assert body["params"] == {"n": 256, "v": 8, "features": 4, "step": None}
    assert body["report"]["extra"]["structure"] == "cascade"
    stored = sqlite_store.get("alice")
    assert stored is not None and stored.has_pin and stored.params["structure"] == "cascade"
    assert api.raw.verify("alice", GENUINE, pin="4711-2024").json() == {"verified": True}
    assert api.raw.verify("alice", GENUINE, pin="4711-2025").json() == {"verified": False}  # wrong PIN
    assert api.raw.verify("alice", GENUINE).json() == {"verified": False}  # missing PIN
    assert api.raw.verify("alice", IMPOSTOR, pin="4711-2024").json() == {"verified": False}  # wrong finger
    assert sqlite_store.get("alice").failures == 3  # type: ignore[union-attr]
    # A PIN sent for a user enrolled without one is a failed attempt too.
    api.enrol("bob", **INTERVAL)
    assert api.raw.verify("bob", GENUINE, pin="4711-2024").json() == {"verified": False}
    assert api.raw.verify("bob", GENUINE).json() == {"verified": True}


@pytest.mark.parametrize("spec", available_schemes(), ids=lambda s: s.name)
def test_every_offered_scheme_works_under_a_pin(api: Client, spec: Any) -> None:
    params, samples, genuine = spec.example
    body = {"scheme": spec.name, "params": params, "samples": samples, "pin": "correct horse"}
    assert api.raw.enrol("p", **body).status_code == 201
    assert api.raw.verify("p", genuine, pin="correct horse").json() == {"verified": True}
    assert api.raw.verify("p", genuine, pin="correct hearse").json() == {"verified": False}


def test_weighted_vault_enrolment_fits_weights_to_g(api: Client) -> None:
    if "weighted-vault" not in {s.name for s in available_schemes()}:
        pytest.skip("no weighted vault in this tree")
    from sketchauth_service.schemes import build_sketch

    spec = get_scheme("weighted-vault")
    arguments, options = spec.validate_params({"p": 50, "q": 4, "g": 7, "t": 2})
    sketch = build_sketch("weighted-vault", arguments)
    # counts over 4 captures: 3 -> 4, 17 -> 4, 40 -> 3, 5 -> 2; weights round(3c/4) = 3, 3, 2, 2 (sum 10)
    sets = [[3, 17, 40, 5], [3, 17, 40, 5], [3, 17, 40], [3, 17]]
    elements, weights = spec.secret_from_samples(sketch, sets, options)
    # sketchauth.templates.fit_weights: heaviest first (ties: smaller element) 3, 17, 5, 40; the
    # total 7 is reached inside 5, so 5 keeps 1 and 40 (the least consistent) is dropped.
    assert elements.tolist() == [3, 5, 17] and weights.tolist() == [3, 1, 3]
    body = {"scheme": "weighted-vault", "params": {"p": 50, "q": 4, "g": 20, "t": 2}, "samples": sets}
    assert "total weight g=20" in problem(api.raw.enrol("alice", **body), 422, "invalid-sample")["detail"]


def test_asymmetric_interval_enrols_from_several_captures(api: Client) -> None:
    if "asymmetric-interval" not in {s.name for s in available_schemes()}:
        pytest.skip("no asymmetric sketch in this tree")
    params, samples, _genuine = get_scheme("asymmetric-interval").example
    body = {"scheme": "asymmetric-interval", "params": params, "samples": samples}
    problem(api.raw.enrol("alice", **{**body, "samples": samples[:1]}), 422, "wrong-sample-count")
    assert api.raw.enrol("alice", **body).status_code == 201
    # b = [120, 33, 200, 71], v = range + 1 = [4, 5, 6, 4]
    assert api.raw.verify("alice", [123, 37, 205, 74]).json() == {"verified": True}
    assert api.raw.verify("alice", [124, 33, 200, 71]).json() == {"verified": False}


def test_serve_refuses_to_start_without_an_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sketchauth.cli import main

    monkeypatch.delenv("SKETCHAUTH_API_KEYS", raising=False)
    monkeypatch.delenv("SKETCHAUTH_DEV_MODE", raising=False)
    monkeypatch.setenv("SKETCHAUTH_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    # serve exports its flags to the environment for the workers: let monkeypatch restore it.
    monkeypatch.setenv("SKETCHAUTH_HASH_PROFILE", "test")
    assert main(["serve", "--port", "1"]) == 2
    assert "no API key" in capsys.readouterr().err
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", "dev-key-long-enough-0123456789")
    assert main(["serve", "--hash-profile", "bogus"]) == 2
    assert "argon2 profile" in capsys.readouterr().err
    assert not (tmp_path / "cli.db").exists()  # refused before touching the database


def test_pin_paths_cost_the_same_argon2_work(api: Client, client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Known PIN user with a wrong sample or PIN, unknown user with a PIN, PIN sent to a PIN-less
    user: each costs one PIN stretching and one hash verification."""
    api.enrol("alice", **INTERVAL, pin="4711-2024")
    api.enrol("bob", **INTERVAL)
    state = client.app.state.service  # type: ignore[attr-defined]
    counts = {"stretch": 0, "verify": 0}
    real_raw = argon2.low_level.hash_secret_raw
    real = state.authenticator.hasher

    def counting_raw(*args: Any, **kwargs: Any) -> bytes:
        counts["stretch"] += 1
        return real_raw(*args, **kwargs)

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def verify(self, hash_: str, message: bytes) -> bool:
            counts["verify"] += 1
            return real.verify(hash_, message)

    monkeypatch.setattr(argon2.low_level, "hash_secret_raw", counting_raw)
    state.authenticator.hasher = Counting()
    for user, sample, pin in [
        ("alice", IMPOSTOR, "4711-2024"),
        ("alice", GENUINE, "0000-0000"),
        ("nobody", GENUINE, "4711-2024"),
        ("bob", GENUINE, "4711-2024"),
    ]:
        counts.update(stretch=0, verify=0)
        assert api.raw.verify(user, sample, pin=pin).content == b'{"verified":false}'
        assert counts == {"stretch": 1, "verify": 1}, (user, counts)
