"""Operations: the JSON request log (hashed user ids, no samples), Prometheus metrics, effective
settings at start without secrets, the admin audit trail endpoint, liveness vs readiness.

Against the app in-process and against real ``sketchauth serve`` processes on SQLite and
PostgreSQL (what an operator sees on standard error and on ``/metrics``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from service_testing import ADMIN, ADMIN_KEY, API_KEY, AUTH, ServerProcess, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.observability import LATENCY_BUCKETS, METRICS, Metrics, access_log, timed

TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
ENROL = {"scheme": "interval", "params": {"n": 1 << 20, "v": 50, "features": 4}, "samples": [TEMPLATE]}
USER = "alice.example-77"
LOG_KEY = "log-key-for-tests-0123456789"


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def request_lines() -> Iterator[list[str]]:
    handler = _Lines()
    access_log.addHandler(handler)
    yield handler.lines
    access_log.removeHandler(handler)


def _hash(user: str, key: str = LOG_KEY) -> str:
    return "hmac-sha256:" + hmac.new(key.encode(), user.encode(), hashlib.sha256).hexdigest()[:32]


def _parse_metrics(text: str) -> dict[str, float]:
    """``name{labels}`` → value, read by prometheus_client's own parser (which checks the syntax).

    No series may carry a per-process label: a restart must not start new series.
    """
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert "worker" not in sample.labels and "pid" not in sample.labels, sample
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            series = f"{sample.name}{{{labels}}}" if labels else sample.name
            values[series] = values.get(series, 0.0) + sample.value
    return values


# -- metrics exposition ---------------------------------------------------------------------------


def test_exposition_histogram_is_cumulative_and_labels_are_escaped() -> None:
    metrics = Metrics()
    for seconds in (0.0005, 0.003, 0.003, 20.0):
        metrics.observe("sketchauth_argon2_seconds", seconds)
    metrics.inc("sketchauth_http_requests_total", route='/a"b\\c\nd', method="GET", status="200", outcome="ok")
    values = _parse_metrics(metrics.render())
    assert values['sketchauth_argon2_seconds_bucket{le="0.001"}'] == 1
    assert values['sketchauth_argon2_seconds_bucket{le="0.005"}'] == 3
    assert values[f'sketchauth_argon2_seconds_bucket{{le="{LATENCY_BUCKETS[-1]!r}"}}'] == 3
    assert values['sketchauth_argon2_seconds_bucket{le="+Inf"}'] == 4
    assert values["sketchauth_argon2_seconds_count"] == 4
    assert values["sketchauth_argon2_seconds_sum"] == pytest.approx(20.0065)
    assert 'route="/a\\"b\\\\c\\nd"' in metrics.render()
    assert values['sketchauth_http_requests_total{method="GET",outcome="ok",route="/a"b\\c\nd",status="200"}'] == 1


def test_timed_observes_its_block_also_when_it_raises() -> None:
    before = METRICS.value("sketchauth_decode_seconds", scheme="timed-test")
    with timed("sketchauth_decode_seconds", scheme="timed-test"):
        pass
    with pytest.raises(KeyError), timed("sketchauth_decode_seconds", scheme="timed-test"):
        raise KeyError("not swallowed")
    assert METRICS.value("sketchauth_decode_seconds", scheme="timed-test") == before + 2


# -- in-process ------------------------------------------------------------------------------------


def test_one_json_line_per_request_with_a_keyed_user_hash_and_no_sample(
    tmp_path: Path, request_lines: list[str]
) -> None:
    with TestClient(create_app(test_settings(tmp_path, log_key=LOG_KEY))) as client:
        assert (
            client.post(f"/v1/users/{USER}/enrolment", json={**ENROL, "pin": "pin-7391"}, headers=AUTH).status_code
            == 201
        )
        answer = client.post(
            f"/v1/users/{USER}/verification",
            json={"sample": GENUINE, "pin": "pin-7391"},
            headers={**AUTH, "X-Request-ID": "req-42"},
        )
        assert answer.headers["X-Request-ID"] == "req-42"
        client.post(f"/v1/users/{USER}/verification", json={"sample": IMPOSTOR, "pin": "pin-7391"}, headers=AUTH)
        client.get("/v1/schemes", headers={"Authorization": "Bearer wrong-key-0123456789abcdef"})
        bad_id = client.get("/v1/schemes", headers={**AUTH, "X-Request-ID": "not a valid id!"})
        assert re.fullmatch(r"[0-9a-f]{16}", bad_id.headers["X-Request-ID"])
    entries = [json.loads(line) for line in request_lines]
    settings_line, *requests = entries
    assert settings_line["event"] == "settings"
    assert [(e["route"], e["status"], e["outcome"]) for e in requests] == [
        ("/v1/users/{user_id}/enrolment", 201, "ok"),
        ("/v1/users/{user_id}/verification", 200, "verified"),
        ("/v1/users/{user_id}/verification", 200, "rejected"),
        ("/v1/schemes", 401, "unauthorized"),
        ("/v1/schemes", 200, "ok"),
    ]
    assert requests[1]["request_id"] == "req-42" and requests[1]["client"] == "api-key-1"
    assert requests[0]["user"] == requests[1]["user"] == _hash(USER)
    assert all(isinstance(e["latency_ms"], float) for e in requests)
    text = "\n".join(request_lines)
    assert USER not in text and "pin-7391" not in text
    assert not any(str(v) in text for v in TEMPLATE + GENUINE + IMPOSTOR)


def test_settings_line_names_keys_never_secrets(tmp_path: Path, request_lines: list[str]) -> None:
    settings = test_settings(tmp_path, log_key=LOG_KEY)
    with TestClient(create_app(settings)):
        pass
    line = json.loads(request_lines[0])
    assert (line["level"], line["logger"], line["message"], line["event"]) == (
        "info",
        "sketchauth.access",
        "settings",
        "settings",
    )
    assert isinstance(line["ts"], float)
    assert line["api_keys"] == [
        {"name": "api-key-1", "scopes": ["enrol", "verify"]},
        {"name": "admin-key-1", "scopes": ["admin", "enrol", "pin", "verify"]},
    ]
    assert line["log_key"] == "set" and line["hash_profile"] == "test" and line["lockout_threshold"] == 5
    for secret in (API_KEY, ADMIN_KEY, LOG_KEY):
        assert secret not in request_lines[0]
    view = settings.replace(database_url="postgresql://svc:hunter2@db:5432/auth").public_view()
    assert view["database_url"] == "postgresql://svc:***@db:5432/auth"


def test_lockouts_and_outcomes_are_counted(tmp_path: Path) -> None:
    settings = test_settings(tmp_path, lockout_threshold=2, lockout_seconds=60, disable_threshold=3)
    with TestClient(create_app(settings)) as client:
        before = _parse_metrics(client.get("/metrics").text)
        client.post("/v1/users/bob/enrolment", json=ENROL, headers=AUTH)
        statuses = [
            client.post("/v1/users/bob/verification", json={"sample": IMPOSTOR}, headers=AUTH).status_code
            for _ in range(3)
        ]
        assert statuses == [200, 200, 429]
        after = _parse_metrics(client.get("/metrics").text)

    def delta(series: str) -> float:
        return after.get(series, 0.0) - before.get(series, 0.0)

    assert delta('sketchauth_lockouts_total{kind="wait"}') == 1
    assert delta('sketchauth_audit_events_total{event="attempt"}') == 2
    verification = 'route="/v1/users/{user_id}/verification"'
    assert delta(f'sketchauth_http_requests_total{{method="POST",outcome="rejected",{verification},status="200"}}') == 2
    assert (
        delta(
            f'sketchauth_http_requests_total{{method="POST",outcome="too-many-failures",{verification},status="429"}}'
        )
        == 1
    )
    assert delta("sketchauth_argon2_seconds_count") == 2
    assert delta('sketchauth_decode_seconds_count{scheme="interval"}') == 2
    assert delta(f"sketchauth_http_request_duration_seconds_count{{{verification}}}") == 3


def test_admin_audit_trail_endpoint(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path))) as client:
        client.post("/v1/users/carol/enrolment", json=ENROL, headers=AUTH)
        client.post("/v1/users/carol/verification", json={"sample": GENUINE}, headers=AUTH)
        client.delete("/v1/users/carol", headers=AUTH)
        assert client.get("/v1/admin/users/carol/audit", headers=AUTH).status_code == 403
        assert client.get("/v1/admin/users/carol/audit").status_code == 401
        trail = client.get("/v1/admin/users/carol/audit", headers=ADMIN).json()
        assert trail["user_id"] == "carol"
        assert [(e["event"], e["client"]) for e in trail["events"]] == [
            ("enrol", "api-key-1"),
            ("attempt", "api-key-1"),
            ("verify-ok", "api-key-1"),
            ("revoke", "api-key-1"),
        ]
        times = [e["at"] for e in trail["events"]]
        assert times == sorted(times)
        newest = client.get("/v1/admin/users/carol/audit?limit=2", headers=ADMIN).json()["events"]
        assert [e["event"] for e in newest] == ["verify-ok", "revoke"]
        assert client.get("/v1/admin/users/carol/audit?limit=0", headers=ADMIN).status_code == 422
        missing = client.get("/v1/admin/users/nobody/audit", headers=ADMIN)
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"


def test_liveness_does_not_touch_the_store_readiness_does(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path))) as client:
        assert client.get("/livez").json() == {"status": "ok"}
        assert client.get("/readyz").status_code == 200
        store = client.app.state.service.store  # type: ignore[attr-defined]
        store._conn.close()  # the database goes away
        assert client.get("/livez").status_code == 200
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 503


# -- real servers ----------------------------------------------------------------------------------


def _exercise(server: ServerProcess) -> dict[str, Any]:
    with server.client() as c:
        assert c.post(f"/v1/users/{USER}/enrolment", json=ENROL).status_code == 201
        assert c.post(f"/v1/users/{USER}/verification", json={"sample": GENUINE}).json() == {"verified": True}
        assert c.post(f"/v1/users/{USER}/verification", json={"sample": IMPOSTOR}).json() == {"verified": False}
        trail = c.get(f"/v1/admin/users/{USER}/audit", headers=ADMIN).json()
        metrics = _parse_metrics(httpx.get(f"{server.url}/metrics").text)
    assert [e["event"] for e in trail["events"]] == ["enrol", "attempt", "verify-ok", "attempt", "verify-fail"]
    assert {e["client"] for e in trail["events"]} == {"api-key-1"}
    route = 'route="/v1/users/{user_id}/verification"'
    assert metrics[f'sketchauth_http_requests_total{{method="POST",outcome="verified",{route},status="200"}}'] == 1
    assert metrics[f'sketchauth_http_requests_total{{method="POST",outcome="rejected",{route},status="200"}}'] == 1
    assert metrics["sketchauth_argon2_seconds_count"] == 2
    log = server.log()
    lines = [json.loads(line) for line in log.splitlines()]  # every line of every logger is one JSON object
    # ... with the documented fields, the request log's lines and the start-up settings line included
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in lines), log
    assert any(line.get("logger") == "uvicorn.error" for line in lines)  # the server's own lines too
    settings_line = next(line for line in lines if line.get("event") == "settings")
    assert API_KEY not in log and ADMIN_KEY not in log and LOG_KEY not in log
    requests = [line for line in lines if line.get("route", "").startswith("/v1/users/")]
    assert [(r["status"], r["outcome"]) for r in requests] == [(201, "ok"), (200, "verified"), (200, "rejected")]
    assert {r["user"] for r in requests} == {_hash(USER)}
    assert USER not in log  # neither the app's log nor uvicorn's access log names the user
    return settings_line


def _serve(servers: list[ServerProcess], tmp_path: Path, db: str, **env: str) -> ServerProcess:
    base = {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        "SKETCHAUTH_LOG_KEY": LOG_KEY,
    }
    server = ServerProcess(tmp_path, {**base, **env}, db=db)
    servers.append(server)
    return server.wait_ready()


@pytest.mark.slow
def test_server_sqlite_logs_metrics_and_audit(tmp_path: Path, servers: list[ServerProcess]) -> None:
    settings_line = _exercise(_serve(servers, tmp_path, f"sqlite:///{tmp_path / 'ops.db'}"))
    assert settings_line["database_url"].startswith("sqlite:///")


@pytest.mark.slow
def test_server_postgres_logs_metrics_and_audit(
    tmp_path: Path, servers: list[ServerProcess], postgres_available: str, postgres_schema: str
) -> None:
    settings_line = _exercise(_serve(servers, tmp_path, postgres_available, SKETCHAUTH_SCHEMA=postgres_schema))
    assert settings_line["postgres_schema"] == postgres_schema


@pytest.mark.slow
def test_no_access_log_flag_silences_the_request_log(tmp_path: Path, servers: list[ServerProcess]) -> None:
    server = ServerProcess(
        tmp_path,
        {"SKETCHAUTH_API_KEYS": API_KEY, "SKETCHAUTH_HASH_PROFILE": "test"},
        db=f"sqlite:///{tmp_path / 'quiet.db'}",
        extra_args=["--no-access-log"],
    )
    servers.append(server)
    server.wait_ready()
    with server.client() as c:
        assert c.get("/v1/schemes").status_code == 200
    lines = [json.loads(line) for line in server.log().splitlines()]
    assert lines and not [line for line in lines if "route" in line or line.get("event") == "settings"]


# -- start-up refusals and multi-worker metrics ------------------------------------------------------


def _refusal_line(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The one line ``sketchauth serve`` wrote when it refused to start (JSON, level error)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    entry = json.loads(lines[0])
    assert entry["level"] == "error" and entry["logger"] == "sketchauth.serve"
    return entry


def _serve_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for variable in ("SKETCHAUTH_PEPPER", "SKETCHAUTH_PEPPER_FILE", "SKETCHAUTH_PEPPER_PREVIOUS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", API_KEY)
    monkeypatch.setenv("SKETCHAUTH_HASH_PROFILE", "test")
    monkeypatch.setenv("SKETCHAUTH_ALLOW_TEST_PROFILE", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_serve_refuses_a_wrong_pepper_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sketchauth.cli import main

    pepper_a, pepper_b = (
        "skp1_rjtlO_L7cxIoXS5r9vxx-WkukO4gzkOz9Crplh5dK2QLmjmv",
        "skp1_Vt2b8ANS1VA-a0Zcxs6ptWAR686te6ypi4KEvGQw11w7Qf4g",
    )
    db = f"sqlite:///{tmp_path / 'peppered.db'}"
    with TestClient(create_app(test_settings(tmp_path, database_url=db, pepper=pepper_a))) as client:
        assert client.post(f"/v1/users/{USER}/enrolment", json=ENROL, headers=AUTH).status_code == 201
    _serve_env(monkeypatch, SKETCHAUTH_PEPPER=pepper_b)
    assert main(["serve", "--db", db, "--port", "0"]) == 2
    message = _refusal_line(capsys)["message"]
    assert "SKETCHAUTH_PEPPER" in message and pepper_a not in message and pepper_b not in message


def test_serve_names_the_missing_postgres_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sketchauth.cli import main

    _serve_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the 'postgres' extra were not installed
    monkeypatch.setitem(sys.modules, "sketchauth_service.store.postgres", None)
    assert main(["serve", "--db", "postgresql://nobody@127.0.0.1:5432/test", "--port", "0"]) == 2
    assert "pip install 'sketchauth[postgres]'" in _refusal_line(capsys)["message"]


def test_serve_names_an_unreachable_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sketchauth.cli import main

    _serve_env(monkeypatch)
    assert main(["serve", "--db", f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}", "--port", "0"]) == 2
    assert "SKETCHAUTH_DATABASE_URL" in _refusal_line(capsys)["message"]


@pytest.mark.slow
def test_two_workers_share_one_metrics_view_without_a_process_label(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    env = {"SKETCHAUTH_API_KEYS": API_KEY, "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY, "SKETCHAUTH_HASH_PROFILE": "test"}
    server = ServerProcess(tmp_path, env, workers=2, db=f"sqlite:///{tmp_path / 'mp.db'}")
    servers.append(server)
    server.wait_ready()
    with server.client() as c:
        assert c.post(f"/v1/users/{USER}/enrolment", json=ENROL).status_code == 201
        for _ in range(12):  # new connections: the requests spread over both workers
            with server.client() as fresh:
                assert fresh.post(f"/v1/users/{USER}/verification", json={"sample": GENUINE}).json() == {
                    "verified": True
                }
    route = 'route="/v1/users/{user_id}/verification"'
    series = f'sketchauth_http_requests_total{{method="POST",outcome="verified",{route},status="200"}}'
    # Every scrape (whichever worker answers) sees the sum over both workers.
    for _ in range(6):
        metrics = _parse_metrics(httpx.get(f"{server.url}/metrics").text)
        assert metrics[series] == 12
        assert metrics["sketchauth_argon2_seconds_count"] == 12
        assert metrics["process_resident_memory_bytes"] > 10_000_000  # both workers' memory, summed
        assert metrics['python_gc_collections_total{generation="0"}'] >= 0
    assert all(line.startswith("{") for line in server.log().splitlines())
