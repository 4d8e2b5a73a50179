"""A red team against the stored records: each attack through the HTTP API and the database, on SQLite and PostgreSQL.

Every attack worked against the earlier helper-only seal (a hand-made SHAKE-256 stream and a
BLAKE2b tag over ``nonce ‖ body``, the hash, key parameters and report in clear) and must now fail:

1. cut-and-paste: M's stored record copied into V's row lets M's sample and PIN in as V;
2. forgery: a clear row (``pepper_id`` NULL) made offline verifies, with or without
   ``SKETCHAUTH_REQUIRE_PEPPER``, and a rotation then seals it;
3. rollback: V's row saved, the PIN changed, the row restored: the old PIN works (detected where
   the rollback ledger is configured; without it the documented limit is shown);
4. tampered bytes (a nonce byte flipped: a counted failure and an integrity alert, never a 500)
   and oversized key parameters (2 GiB, t = 16: refused before any derivation);
5. a thief with the database and without the pepper tests the right secret against the stored
   hash: there is no hash to test against;
7. no hand-written primitive left in the tree: the seal and the KDF are library calls.

The attacker writes the database with the store's own connection (``?`` placeholders, both dialects).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import argon2
import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import ADMIN, ADMIN_KEY, AUTH, REPO, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings
from sketchauth_service.store import open_store
from sketchauth_service.store.records import RecordCodec
from sketchauth_service.store.sql import SqlStore

from sketchauth.enrolment import enrol as enrol_offline
from sketchauth.enrolment import hasher, secret_message
from sketchauth.pepper import Pepper
from sketchauth.sketches.interval import IntervalSketch

PEPPER = "skp1_VTWlryKi6NoHkmrQlbPaZNlogoNlM3YGGRD8psdWX9XmOnM_"
N = 1 << 20
M_TEMPLATE = [987_651, 876_541, 765_431, 654_321]
M_SAMPLE = [987_640, 876_560, 765_400, 654_300]
V_TEMPLATE = [111_111, 222_222, 333_333, 444_444]
V_SAMPLE = [111_100, 222_230, 333_300, 444_460]
PARAMS = {"n": N, "v": 50, "features": 4}
M_PIN, V_PIN, V_NEW_PIN = "m-pin-5501", "v-pin-7391", "v-new-pin-2468"
#: Every column of a user's row the attacker copies or restores (the throttling state aside).
RECORD_COLUMNS = (
    "scheme, params, helper, secret_hash, report, has_pin, pipeline, pipeline_sha256, key_params, "
    "pepper_id, pepper_nonce, record_version"
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Settings changes naming a throw-away database of either backend."""
    if request.param == "sqlite":
        return {"database_url": f"sqlite:///{tmp_path / 'red.db'}"}
    url = request.getfixturevalue("postgres_available")
    return {"database_url": url, "postgres_schema": request.getfixturevalue("postgres_schema")}


def deployment(tmp_path: Path, database: dict[str, str], **changes: Any) -> Settings:
    return test_settings(tmp_path, lockout_threshold=1000, disable_threshold=1000, **database, **changes)


@contextmanager
def service(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), headers=AUTH) as client:
        yield client


@contextmanager
def database_of(settings: Settings) -> Iterator[SqlStore]:
    """The attacker's handle on the database: raw SQL through the store's own connection, no codec."""
    store = open_store(settings.database_url, postgres_schema=settings.postgres_schema, pool_size=1)
    assert isinstance(store, SqlStore)
    try:
        yield store
    finally:
        store.close()


def sql(store: SqlStore, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with store._transaction() as cur:
        result = store._run(cur, query, params)
        return list(result.fetchall()) if cur.description is not None else []


def row_of(store: SqlStore, user: str) -> tuple[Any, ...]:
    return sql(store, f"SELECT {RECORD_COLUMNS} FROM users WHERE user_id = ?", (user,))[0]


def write_row(store: SqlStore, user: str, values: tuple[Any, ...]) -> None:
    assignments = ", ".join(f"{column.strip()} = ?" for column in RECORD_COLUMNS.split(","))
    sql(store, f"UPDATE users SET {assignments} WHERE user_id = ? RETURNING user_id", (*values, user))


def enrol(client: TestClient, user: str, template: list[int], pin: str | None) -> None:
    service_client(client).enrol(user, "interval", [template], params=PARAMS, pin=pin)


def verified(client: TestClient, user: str, sample: list[int], pin: str | None) -> bool:
    return service_client(client).verify(user, sample, pin=pin)


def key_released(client: TestClient, user: str, sample: list[int], pin: str | None) -> bool:
    return service_client(client).release_key(user, sample, "com.example.red/v1", pin=pin or None) is not None


def events(client: TestClient, user: str) -> list[str]:
    return [e["event"] for e in service_client(client, ADMIN_KEY).audit(user)]


def failures(settings: Settings, user: str) -> int:
    with database_of(settings) as store:
        return int(sql(store, "SELECT failures FROM users WHERE user_id = ?", (user,))[0][0])


# -- 1. cut-and-paste -----------------------------------------------------------------------------------
def test_cut_and_paste_of_another_users_record_does_not_get_in(tmp_path: Path, database: dict[str, str]) -> None:
    settings = deployment(tmp_path, database, pepper=PEPPER)
    with service(settings) as client:
        enrol(client, "mallory", M_TEMPLATE, M_PIN)
        enrol(client, "victim", V_TEMPLATE, V_PIN)
        with database_of(settings) as store:
            write_row(store, "victim", row_of(store, "mallory"))  # every protected column, version included
        assert not verified(client, "victim", M_SAMPLE, M_PIN)
        assert not key_released(client, "victim", M_SAMPLE, M_PIN)
        assert not verified(client, "victim", V_SAMPLE, V_PIN)  # the pasted row is refused whole
        assert events(client, "victim")[-3:] == ["attempt", "integrity", "verify-fail"]
        assert verified(client, "mallory", M_SAMPLE, M_PIN)  # the source row is untouched


def test_control_without_a_pepper_the_paste_gets_in(tmp_path: Path, database: dict[str, str]) -> None:
    """What the attack did before (and still does on a deployment without a pepper: no secret, no integrity)."""
    settings = deployment(tmp_path, database)
    with service(settings) as client:
        enrol(client, "mallory", M_TEMPLATE, M_PIN)
        enrol(client, "victim", V_TEMPLATE, V_PIN)
        with database_of(settings) as store:
            write_row(store, "victim", row_of(store, "mallory"))
        assert verified(client, "victim", M_SAMPLE, M_PIN)


# -- 2. forgery ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("require", [True, False], ids=["require-pepper", "pepper-not-required"])
def test_a_row_forged_offline_is_refused_and_rotation_does_not_seal_it(
    tmp_path: Path, database: dict[str, str], require: bool
) -> None:
    settings = deployment(tmp_path, database, pepper=PEPPER, require_pepper=require)
    sketch = IntervalSketch(**PARAMS)
    forged = enrol_offline(sketch, M_TEMPLATE, password_hasher=hasher("test"))  # any Authenticator, offline
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, None)
        with database_of(settings) as store:
            clear = ("interval", '{"features": 4, "n": 1048576, "v": 50}', forged.helper, forged.secret_hash, "{}")
            write_row(store, "victim", (*clear, False, None, None, forged.key_params, None, None, 1))
        assert not verified(client, "victim", M_SAMPLE, None)
        assert not key_released(client, "victim", M_SAMPLE, None)
        assert events(client, "victim")[-3:] == ["attempt", "integrity", "verify-fail"]
        rotation = client.post("/v1/admin/pepper/rotation", headers=ADMIN, json={}).json()
        assert rotation["rewrapped"] == 0 and rotation["remaining"] == 1  # the forgery stays unsealed
        assert client.get("/v1/admin/pepper", headers=ADMIN).json()["records"] == {"clear": 1}
        assert not verified(client, "victim", M_SAMPLE, None)
        # Forged bytes under the current pepper id: the seal does not open either.
        with database_of(settings) as store:
            pepper_id = Pepper.from_text(PEPPER).id
            sealed_looking = (b"\x00" * 64, "", "{}", False, None, None, None, pepper_id, b"\x01" * 12, 1)
            write_row(store, "victim", (*clear[:2], *sealed_looking))
        assert not verified(client, "victim", M_SAMPLE, None)
        assert client.get("/v1/users/victim/report").status_code == 404  # unusable, never a 500


# -- 3. rollback -----------------------------------------------------------------------------------------------
def _roll_back_a_pin_change(settings: Settings, client: TestClient) -> None:
    enrol(client, "victim", V_TEMPLATE, V_PIN)
    with database_of(settings) as store:
        saved = row_of(store, "victim")
    changed = service_client(client).raw.change_pin("victim", V_SAMPLE, V_PIN, V_NEW_PIN)
    assert changed.json() == {"verified": True}
    assert not verified(client, "victim", V_SAMPLE, V_PIN) and verified(client, "victim", V_SAMPLE, V_NEW_PIN)
    with database_of(settings) as store:
        write_row(store, "victim", saved)


def test_a_rolled_back_pin_change_is_detected_with_the_ledger(tmp_path: Path, database: dict[str, str]) -> None:
    settings = deployment(tmp_path, database, pepper=PEPPER, rollback_ledger=str(tmp_path / "marks.db"))
    with service(settings) as client:
        _roll_back_a_pin_change(settings, client)
        before = failures(settings, "victim")
        assert not verified(client, "victim", V_SAMPLE, V_PIN)  # the old PIN no longer works
        assert not key_released(client, "victim", V_SAMPLE, V_PIN)
        assert failures(settings, "victim") == before + 2  # counted failures
        assert events(client, "victim")[-3:] == ["attempt", "integrity", "verify-fail"]
        # A revoked user's row put back is below its mark too; re-enrolment goes on above it.
        enrol(client, "gone", M_TEMPLATE, None)
        with database_of(settings) as store:
            saved = row_of(store, "gone")
        assert client.delete("/v1/users/gone").status_code == 204
        with database_of(settings) as store:
            columns = "user_id, enrolled_at, " + RECORD_COLUMNS
            sql(store, f"INSERT INTO users ({columns}) VALUES (?, 0, {', '.join('?' * 12)})", ("gone", *saved))
        assert not verified(client, "gone", M_SAMPLE, None)
        with database_of(settings) as store:
            sql(store, "DELETE FROM users WHERE user_id = ?", ("gone",))
        enrol(client, "gone", M_TEMPLATE, None)
        assert verified(client, "gone", M_SAMPLE, None)


def test_without_the_ledger_a_full_row_restore_is_the_documented_limit(
    tmp_path: Path, database: dict[str, str]
) -> None:
    """The version in the associated data binds body and version together; a whole old row still opens."""
    settings = deployment(tmp_path, database, pepper=PEPPER)
    with service(settings) as client:
        _roll_back_a_pin_change(settings, client)
        assert verified(client, "victim", V_SAMPLE, V_PIN)
        # Only the body rolled back (the version kept): refused even without the ledger.
        enrol(client, "other", V_TEMPLATE, V_PIN)
        with database_of(settings) as store:
            saved = row_of(store, "other")
        service_client(client).raw.change_pin("other", V_SAMPLE, V_PIN, V_NEW_PIN)
        with database_of(settings) as store:
            version = row_of(store, "other")[-1]
            write_row(store, "other", (*saved[:-1], version))
        assert not verified(client, "other", V_SAMPLE, V_PIN)


# -- 4. tampered bytes and oversized key parameters ------------------------------------------------------------
@pytest.mark.parametrize("column", ["pepper_nonce", "helper", "record_version"])
def test_tampered_bytes_are_a_counted_failure_and_an_alert_never_a_500(
    tmp_path: Path, database: dict[str, str], column: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = deployment(tmp_path, database, pepper=PEPPER)
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
        with database_of(settings) as store:
            value = sql(store, f"SELECT {column} FROM users WHERE user_id = ?", ("victim",))[0][0]
            altered = value + 1 if column == "record_version" else bytes([value[0] ^ 1]) + bytes(value[1:])
            sql(store, f"UPDATE users SET {column} = ? WHERE user_id = ?", (altered, "victim"))
        before = failures(settings, "victim")
        assert not verified(client, "victim", V_SAMPLE, V_PIN)
        assert not key_released(client, "victim", V_SAMPLE, V_PIN)
        pin = service_client(client).raw.change_pin("victim", V_SAMPLE, V_PIN, V_NEW_PIN)
        assert pin.status_code == 200 and pin.json() == {"verified": False}
        assert client.get("/v1/users/victim/report").status_code == 404
        assert failures(settings, "victim") == before + 3
        assert events(client, "victim").count("integrity") == 4
        assert "integrity alert" in caplog.text and "victim" not in caplog.text  # the cause, not the user


def test_oversized_key_parameters_are_refused_before_any_derivation(tmp_path: Path, database: dict[str, str]) -> None:
    """Sealed, key parameters cannot be changed at all; in clear (no pepper), 2 GiB and t = 16 are refused."""
    settings = deployment(tmp_path, database)
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, None)
        with database_of(settings) as store:
            big = "$argon2id$v=19$m=2097152,t=16,p=1$AAAAAAAAAAAAAAAAAAAAAA"  # one derivation: 14.5 s, 2.08 GB
            sql(store, "UPDATE users SET key_params = ? WHERE user_id = ?", (big, "victim"))
        assert not key_released(client, "victim", V_SAMPLE, None)
        assert not verified(client, "victim", V_SAMPLE, None)
        assert events(client, "victim")[-3:] == ["attempt", "integrity", "verify-fail"]


# -- 5. the thief with the database and without the pepper ----------------------------------------------------------
def _testable(stolen: tuple[Any, ...], guess: bytes) -> int:
    """How many argon2 hashes in a stolen row accept ``guess``: what a thief can check offline."""
    tester, accepted = argon2.PasswordHasher(), 0
    for value in stolen:
        text = bytes(value).decode("latin-1") if isinstance(value, (bytes, memoryview)) else str(value)
        for candidate in re.findall(r"\$argon2id?\$[^\s\"]+", text):
            with suppress(argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
                accepted += tester.verify(candidate, guess)
    return accepted


@pytest.mark.parametrize("pepper", [PEPPER, None], ids=["pepper", "control-without-pepper"])
def test_a_database_thief_without_the_pepper_cannot_test_even_the_right_secret(
    tmp_path: Path, database: dict[str, str], pepper: str | None
) -> None:
    settings = deployment(tmp_path, database, pepper=pepper)
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, None)
    right = secret_message(IntervalSketch(**PARAMS), V_TEMPLATE)  # the thief guessed the secret exactly
    with database_of(settings) as store:
        stolen = sql(store, "SELECT * FROM users WHERE user_id = ?", ("victim",))[0]
        if pepper is None:
            assert _testable(stolen, right) == 1  # the control: a clear row checks the right guess
            return
        assert _testable(stolen, right) == 0  # nothing in the sealed row checks a guess, not even the right one
        # Database *and* pepper: the same row opens, and the right secret checks (one argon2id per guess).
        store.use_codec(RecordCodec(Pepper.from_text(pepper)))
        record = store.get("victim")
        assert record is not None and argon2.PasswordHasher().verify(record.secret_hash, right)


# -- 7. no home-made primitives ----------------------------------------------------------------------------------
def test_the_seal_and_the_kdf_are_library_calls() -> None:
    """No hand-written HKDF, stream cipher or keyed BLAKE2b MAC, and no argon2-cffi internals, anywhere but the
    format-preserving mixing of Fang's thesis (sketchauth/mixing/, a PRF pad by design)."""
    # Assembled from parts, so that a search of the tree for these patterns does not find this test.
    patterns = ("def " + "hkdf", "shake" + r"_256\(", "blake" + r"2b\(.*key=", r"low_level\.(ffi|lib|core)")
    forbidden = re.compile("|".join(patterns))
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for root in ("sketchauth", "service")
        for path in (REPO / root).rglob("*.py")
        if "mixing" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if forbidden.search(line)
    ]
    assert offenders == []
