"""Machine credentials: 128-bit keys, per-address throttling of wrong keys, scopes, key names in
the audit trail, and key rotation without a restart (a key file re-read when it changes).

The throttling figures are measured against real ``sketchauth serve`` processes on loopback,
one connection sending wrong keys as fast as it can for a bounded time, on SQLite and on
PostgreSQL (the throttle is in the process, but the store behind it must not matter).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from service_testing import ADMIN_KEY, API_KEY, ServerProcess, test_settings
from sketchauth_service import credentials
from sketchauth_service.app import create_app
from sketchauth_service.credentials import (
    FailureThrottle,
    KeyFileError,
    KeySource,
    client_bucket,
    key_weakness,
    parse_key_file,
)
from sketchauth_service.settings import Settings, SettingsError

TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]
ENROL = {"scheme": "interval", "params": {"n": 1 << 20, "v": 50, "features": 4}, "samples": [TEMPLATE]}

ENROLLER = "enroller-" + "e" * 24
VERIFIER = "verifier-" + "v" * 24
AUDITOR = "auditor-" + "a" * 24


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _key_file(path: Path, lines: list[str]) -> Path:
    path.write_text("# name:scopes:key\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- key strength --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "weak"),
    [
        ("abcdef", True),  # the 6-character key the service used to accept
        ("z" * 21, True),
        ("z" * 22, False),
        ("a" * 22, True),  # only hexadecimal digits: 32 needed
        pytest.param(secrets.token_urlsafe(16), False, id="token_urlsafe(16)"),  # 22 characters, 128 bits
        ("0123456789abcdef" * 2, False),  # 32 hex digits
        ("0123456789abcdef0123456789abcde", True),  # 31 hex digits: 124 bits
        ("0123456789" * 3, True),  # 30 decimal digits are hexadecimal-alphabet too
    ],
)
def test_key_strength_rule(key: str, weak: bool) -> None:
    assert (key_weakness(key) is not None) is weak


def test_short_keys_stop_the_service_except_in_local_mode(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sketchauth.service")  # whatever level an earlier test left on the root
    with pytest.raises(SettingsError) as err:
        create_app(test_settings(tmp_path, api_keys=("abcdef",)))
    assert "api-key-1" in str(err.value) and "128 bits" in str(err.value) and "abcdef" not in str(err.value)
    with pytest.raises(SettingsError, match="admin-key-1"):
        test_settings(tmp_path, admin_keys=("0123456789abcdef",)).validate()
    # Local mode accepts them, with a warning naming the key (never the key itself).
    create_app(test_settings(tmp_path, api_keys=("abcdef",), dev_mode=True))
    assert "api-key-1" in caplog.text and "abcdef" not in caplog.text


def test_serve_refuses_a_short_key_at_start(tmp_path: Path) -> None:
    server = ServerProcess(
        tmp_path,
        {"SKETCHAUTH_API_KEYS": "abcdef", "SKETCHAUTH_HASH_PROFILE": "test"},
        db=f"sqlite:///{tmp_path / 'x.db'}",
    )
    assert server.proc.wait(timeout=60) == 2
    server._log.close()
    assert "fewer than 128 bits" in server.log_path.read_text()


# -- key file --------------------------------------------------------------------------------------


def test_key_file_format() -> None:
    keys = parse_key_file(f"# comment\n\nops-console:admin:{AUDITOR}\n kiosk-7 : verify , enrol : {VERIFIER}\n")
    assert [(k.name, sorted(k.scopes)) for k in keys] == [("ops-console", ["admin"]), ("kiosk-7", ["enrol", "verify"])]
    assert keys[1].digest == credentials.digest(VERIFIER)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (f"kiosk:{VERIFIER}", "line 1: expected name:scope1,scope2:key"),
        (f"bad name:verify:{VERIFIER}", "line 1: a key name"),
        (f"kiosk:root:{VERIFIER}", "line 1: scopes must be"),
        (f"kiosk::{VERIFIER}", "line 1: scopes must be"),
        ("\nkiosk:verify:", "line 2: the key is empty"),
    ],
)
def test_key_file_errors_name_the_line_never_the_key(text: str, needle: str) -> None:
    with pytest.raises(KeyFileError) as err:
        parse_key_file(text)
    assert needle in str(err.value) and VERIFIER not in str(err.value)


def test_duplicate_names_and_keys_are_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path / "keys", [f"a:verify:{VERIFIER}", f"a:enrol:{ENROLLER}"])
    with pytest.raises(SettingsError, match="used twice"):
        test_settings(tmp_path, api_key_file=str(path)).validate()
    _key_file(path, [f"a:verify:{VERIFIER}", f"b:enrol:{VERIFIER}"])
    with pytest.raises(SettingsError, match="repeats another key"):
        test_settings(tmp_path, api_key_file=str(path)).validate()
    with pytest.raises(SettingsError, match="cannot read the key file"):
        test_settings(tmp_path, api_key_file=str(tmp_path / "missing")).validate()


def test_key_file_is_reloaded_when_it_changes_and_a_bad_one_keeps_the_old_keys(tmp_path: Path) -> None:
    clock = [0.0]
    path = _key_file(tmp_path / "keys", [f"kiosk:verify:{VERIFIER}"])
    source = KeySource((), (), str(path), monotonic=lambda: clock[0])
    assert source.current().match(VERIFIER).name == "kiosk"  # type: ignore[union-attr]
    _key_file(path, [f"kiosk-2:verify:{ENROLLER}"])
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert source.current().match(ENROLLER) is None  # looked less than a second ago
    clock[0] = 1.5
    assert source.current().match(VERIFIER) is None
    assert source.current().match(ENROLLER).name == "kiosk-2"  # type: ignore[union-attr]
    path.write_text("kiosk-3:verify\n")  # malformed: ignored, the previous keys stay
    clock[0] = 3.0
    assert source.current().match(ENROLLER).name == "kiosk-2"  # type: ignore[union-attr]


def test_key_file_is_reloaded_by_content_not_time_size_or_inode(tmp_path: Path) -> None:
    # An in-place rewrite of the same size with the modification time set back (same inode, same
    # size, same mtime) still revokes the removed key: the file is compared by its bytes' hash.
    clock = [0.0]
    path = _key_file(tmp_path / "keys", [f"kiosk-a:verify:{VERIFIER}"])
    before = path.stat()
    source = KeySource((), (), str(path), monotonic=lambda: clock[0])
    assert source.current().match(VERIFIER) is not None
    replacement = path.read_bytes().replace(VERIFIER.encode(), ENROLLER.encode()).replace(b"kiosk-a", b"kiosk-b")
    assert len(replacement) == before.st_size
    with path.open("r+b") as f:  # in place: the same inode
        f.write(replacement)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    clock[0] = 1.5
    assert source.current().match(VERIFIER) is None  # the removed key is revoked
    assert source.current().match(ENROLLER).name == "kiosk-b"  # type: ignore[union-attr]


# -- throttle --------------------------------------------------------------------------------------


def test_token_bucket_refills_at_its_rate_and_forgets_the_oldest_address() -> None:
    throttle = FailureThrottle(rate=2.0, burst=3, max_clients=2)
    for _ in range(3):
        assert throttle.retry_after("a", 0.0) == 0
        throttle.fail("a", 0.0)
    assert throttle.retry_after("a", 0.0) == pytest.approx(0.5)
    assert throttle.retry_after("a", 0.5) == 0  # one token back after 1 / rate
    throttle.fail("b", 0.0)
    throttle.fail("c", 0.0)
    assert len(throttle) == 2  # bounded: "a", the least recently failing, was forgotten
    assert throttle.retry_after("a", 0.0) == 0


def test_client_bucket_groups_an_ipv6_slash_64() -> None:
    assert client_bucket("2001:db8:1:2:aaaa::1") == client_bucket("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_bucket("2001:db8:1:3::1") != client_bucket("2001:db8:1:2::1")
    assert client_bucket("::ffff:10.0.0.7") == "10.0.0.7"
    assert client_bucket("192.0.2.1") == "192.0.2.1"


def test_wrong_keys_are_throttled_per_address_before_the_key_is_checked(tmp_path: Path) -> None:
    settings = test_settings(tmp_path, auth_failure_burst=3, auth_failure_rate=0.01)
    with TestClient(create_app(settings)) as client:
        wrong = _bearer("wrong-" + "x" * 30)
        assert [client.get("/v1/schemes", headers=wrong).status_code for _ in range(3)] == [401] * 3
        refused = client.get("/v1/schemes", headers=wrong)
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"].endswith("too-many-authentication-failures")
        assert 1 <= int(refused.headers["Retry-After"]) <= 100
        # Refused before the key is looked at: a right key does not tell itself apart.
        assert client.get("/v1/schemes", headers=_bearer(API_KEY)).status_code == 429
        assert client.get("/healthz").status_code == 200  # no key needed, not throttled
    with TestClient(create_app(settings), client=("192.0.2.9", 50000)) as other:
        assert other.get("/v1/schemes", headers=_bearer(API_KEY)).status_code == 200  # another address


def test_missing_keys_are_not_counted(tmp_path: Path) -> None:
    with TestClient(create_app(test_settings(tmp_path, auth_failure_burst=1))) as client:
        assert [client.get("/v1/schemes").status_code for _ in range(5)] == [401] * 5
        assert client.get("/v1/schemes", headers=_bearer(API_KEY)).status_code == 200


# -- scopes and names ------------------------------------------------------------------------------


def test_scopes_and_the_audit_names_the_key_that_acted(tmp_path: Path) -> None:
    path = _key_file(
        tmp_path / "keys", [f"hr-portal:enrol:{ENROLLER}", f"door-12:verify:{VERIFIER}", f"soc:admin:{AUDITOR}"]
    )
    with TestClient(create_app(test_settings(tmp_path, api_key_file=str(path)))) as client:
        enrol, verify = "/v1/users/alice/enrolment", "/v1/users/alice/verification"
        assert client.post(enrol, json=ENROL, headers=_bearer(VERIFIER)).status_code == 403
        assert client.post(enrol, json=ENROL, headers=_bearer(AUDITOR)).status_code == 403
        assert client.post(enrol, json=ENROL, headers=_bearer(ENROLLER)).status_code == 201
        assert client.post(verify, json={"sample": GENUINE}, headers=_bearer(ENROLLER)).status_code == 403
        assert client.post(verify, json={"sample": GENUINE}, headers=_bearer(VERIFIER)).json() == {"verified": True}
        assert client.get("/v1/users/alice/report", headers=_bearer(VERIFIER)).status_code == 403
        assert client.post("/v1/admin/users/alice/reset", headers=_bearer(ENROLLER)).status_code == 403
        assert client.post("/v1/admin/users/alice/reset", headers=_bearer(AUDITOR)).status_code == 204
        # Environment keys keep today's powers: API keys enrol and verify, admin keys everything.
        assert client.post(verify, json={"sample": GENUINE}, headers=_bearer(API_KEY)).status_code == 200
        assert client.post("/v1/admin/users/alice/reset", headers=_bearer(ADMIN_KEY)).status_code == 204
        assert client.get("/v1/schemes", headers=_bearer(AUDITOR)).status_code == 200  # any key
        store = client.app.state.service.store  # type: ignore[attr-defined]
        trail = [(e.event, e.client) for e in store.audit_events("alice")]
    assert trail == [
        ("enrol", "hr-portal"),
        ("attempt", "door-12"),
        ("verify-ok", "door-12"),
        ("reset", "soc"),
        ("attempt", "api-key-1"),
        ("verify-ok", "api-key-1"),
        ("reset", "admin-key-1"),
    ]


# -- real servers ----------------------------------------------------------------------------------


def _wrong_key_rate(url: str, seconds: float) -> tuple[int, int, float]:
    """(401 answers, 429 answers, requests per second) for ``seconds`` of wrong keys on one connection."""
    counts = {401: 0, 429: 0}
    sent = 0
    with httpx.Client(base_url=url, headers=_bearer("wrong-" + secrets.token_urlsafe(24)), timeout=10) as client:
        deadline = time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < deadline:
            status = client.get("/v1/schemes").status_code
            counts[status] = counts.get(status, 0) + 1
            sent += 1
        elapsed = time.monotonic() - start
    assert set(counts) == {401, 429}
    return counts[401], counts[429], sent / elapsed


def _serve(servers: list[ServerProcess], tmp_path: Path, db: str, key_file: Path, **env: str) -> ServerProcess:
    server = ServerProcess(
        tmp_path,
        {"SKETCHAUTH_API_KEY_FILE": str(key_file), "SKETCHAUTH_HASH_PROFILE": "test", **env},
        db=db,
    )
    servers.append(server)
    return server.wait_ready()


def _rotation_and_throttle(server: ServerProcess, key_file: Path) -> None:
    old, new = ENROLLER, "rotated-" + secrets.token_urlsafe(24)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.post("/v1/users/bob/enrolment", json=ENROL, headers=_bearer(old)).status_code == 201
        # Rotate: write the new file beside the old one and rename it over (atomic).
        staged = _key_file(key_file.with_suffix(".new"), [f"hr-portal-2:enrol,verify:{new}", f"soc:admin:{AUDITOR}"])
        staged.replace(key_file)
        deadline = time.monotonic() + 5
        while client.get("/v1/schemes", headers=_bearer(new)).status_code != 200:
            assert time.monotonic() < deadline, "the rotated key file was not picked up"
            time.sleep(0.2)
        assert client.get("/v1/schemes", headers=_bearer(old)).status_code == 401  # revoked without a restart
        assert client.post("/v1/users/bob/verification", json={"sample": GENUINE}, headers=_bearer(new)).json() == {
            "verified": True
        }
    accepted, refused, rate = _wrong_key_rate(server.url, 2.0)
    # burst 10 (one already spent above) + 1 per second over 2 s, with a second of slack.
    assert accepted <= 10 + 3, (accepted, refused, rate)
    assert refused > 0
    print(
        f"\nwrong keys over 2 s on one connection: {accepted} checked (401), {refused} refused (429), {rate:.0f} req/s"
    )


@pytest.mark.slow
def test_server_sqlite_rotation_throttle_and_short_keys(tmp_path: Path, servers: list[ServerProcess]) -> None:
    key_file = _key_file(tmp_path / "keys", [f"hr-portal:enrol,verify:{ENROLLER}", f"soc:admin:{AUDITOR}"])
    server = _serve(servers, tmp_path, f"sqlite:///{tmp_path / 'creds.db'}", key_file)
    _rotation_and_throttle(server, key_file)


@pytest.mark.slow
def test_server_postgres_rotation_and_throttle(
    tmp_path: Path, servers: list[ServerProcess], postgres_available: str, postgres_schema: str
) -> None:
    key_file = _key_file(tmp_path / "keys", [f"hr-portal:enrol,verify:{ENROLLER}", f"soc:admin:{AUDITOR}"])
    server = _serve(servers, tmp_path, postgres_available, key_file, SKETCHAUTH_SCHEMA=postgres_schema)
    _rotation_and_throttle(server, key_file)


def test_settings_read_the_key_file_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _key_file(tmp_path / "keys", [f"kiosk:verify:{VERIFIER}"])
    monkeypatch.setenv("SKETCHAUTH_API_KEY_FILE", str(path))
    monkeypatch.delenv("SKETCHAUTH_API_KEYS", raising=False)
    settings = Settings.from_env().replace(hash_profile="test", allow_test_profile=True)
    assert settings.validate().key_source().ring.names == ("kiosk",)
