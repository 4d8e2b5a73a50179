"""A red team against the pepper's maintenance doors: conversion, the start-up check, rotation.

Each attack or mistake goes through the door that was used against it, and must now fail safe:

1. a clear row made by an unpeppered server, written into a sealed database for the victim V:
   the next start is refused without advising ``sketchauth pepper convert``, convert refuses it
   (one line, exit 2, nothing sealed), and the attacker cannot verify as V;
2. a wrong ``SKETCHAUTH_DEPLOYMENT_ID``: refused at start in one line (like a wrong pepper),
   instead of turning every attempt into a counted failure;
3. wrong-typed values written into a user's row (``record_version`` -1, 'abc', 1e30;
   ``pepper_nonce`` 'zz'; ``helper`` 'txt'; ``failures`` 'x'; ``locked_until`` 'x' or inf;
   ``enrolled_at`` 'x'): ``POST /v1/admin/pepper/rotation``, ``sketchauth pepper rotate`` and
   ``sketchauth pepper status --hashes`` skip the row, report it (a count and an ``integrity``
   audit event) and finish.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_testing import ADMIN, test_settings
from sketchauth_service.pepper import PepperSettingsError
from sketchauth_service.settings import Settings
from test_red_team_records import (
    M_PIN,
    M_SAMPLE,
    M_TEMPLATE,
    PEPPER,
    V_PIN,
    V_SAMPLE,
    V_TEMPLATE,
    database_of,
    deployment,
    enrol,
    events,
    failures,
    row_of,
    service,
    sql,
    verified,
    write_row,
)

from sketchauth.cli import main
from sketchauth.pepper import new_pepper_text

NEW_PEPPER = new_pepper_text()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Settings changes naming a throw-away database of either backend."""
    if request.param == "sqlite":
        return {"database_url": f"sqlite:///{tmp_path / 'red.db'}"}
    url = request.getfixturevalue("postgres_available")
    return {"database_url": url, "postgres_schema": request.getfixturevalue("postgres_schema")}


def cli_env(monkeypatch: pytest.MonkeyPatch, settings: Settings, **env: str) -> None:
    """The environment ``sketchauth pepper ...`` reads, as the service reads it."""
    for variable in ("SKETCHAUTH_PEPPER", "SKETCHAUTH_PEPPER_FILE", "SKETCHAUTH_PEPPER_PREVIOUS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SKETCHAUTH_SCHEMA", settings.postgres_schema)
    monkeypatch.setenv("SKETCHAUTH_HASH_PROFILE", "test")
    monkeypatch.setenv("SKETCHAUTH_DEPLOYMENT_ID", settings.deployment_id)
    if settings.rollback_ledger:
        monkeypatch.setenv("SKETCHAUTH_ROLLBACK_LEDGER", settings.rollback_ledger)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sketchauth: error: "), err
    return err[0]


def unpeppered_row(tmp_path: Path, user: str) -> tuple[Any, ...]:
    """The record an unpeppered server makes for ``user`` from the attacker's own template and PIN."""
    theirs = test_settings(tmp_path, database_url=f"sqlite:///{tmp_path / 'theirs.db'}")
    with service(theirs) as client:
        enrol(client, user, M_TEMPLATE, M_PIN)
    with database_of(theirs) as store:
        row = row_of(store, user)
    return (*row[:5], bool(row[5]), *row[6:])  # SQLite's 0/1 flag as the boolean PostgreSQL's column takes


# -- 1. a forged clear row is not converted -----------------------------------------------------------------
@pytest.mark.parametrize("ledger", [False, True], ids=["no-ledger", "rollback-ledger"])
def test_convert_refuses_a_clear_row_forged_into_a_sealed_database(
    tmp_path: Path,
    database: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ledger: bool,
) -> None:
    marks = {"rollback_ledger": str(tmp_path / "marks.db")} if ledger else {}
    settings = deployment(tmp_path, database, pepper=PEPPER, **marks)
    forged = unpeppered_row(tmp_path, "victim")
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
        enrol(client, "bystander", V_TEMPLATE, None)
        with database_of(settings) as store:
            write_row(store, "victim", forged)  # the attacker's clear row in V's place
            # ...and, for good measure, an audit row claiming V enrolled it.
            sql(store, "INSERT INTO audit (at, user_id, event) VALUES (?, ?, ?)", (1.0, "victim", "enrol"))
        assert not verified(client, "victim", M_SAMPLE, M_PIN)  # while running: refused (integrity)
    # The next start is refused, and no longer advises the conversion that would seal the forgery.
    with pytest.raises(PepperSettingsError) as refused, service(settings):
        pass
    assert "pepper convert" not in str(refused.value) and "forgeries" in str(refused.value)
    # Convert refuses it, in one line, and seals nothing.
    cli_env(monkeypatch, settings, SKETCHAUTH_PEPPER=PEPPER)
    capsys.readouterr()  # the services' logs so far
    assert main(["pepper", "convert", "--db", settings.database_url]) == 2
    assert "convert refused, nothing was sealed: it already holds 1 sealed records" in one_line(capsys)
    with database_of(settings) as store:
        assert row_of(store, "victim")[9] is None  # still clear, still unusable under the pepper
        assert sql(store, "SELECT COUNT(*) FROM audit WHERE event = 'seal'")[0][0] == 0
    # The strongest database writer also deletes every sealed row: only the rollback ledger (kept
    # outside the database) still knows V was sealed; without it the database looks never-sealed.
    with database_of(settings) as store:
        sql(store, "DELETE FROM users WHERE user_id = ? RETURNING user_id", ("bystander",))
    code = main(["pepper", "convert", "--db", settings.database_url])
    if ledger:
        assert code == 2 and "the rollback ledger saw sealed (victim)" in one_line(capsys)
        with database_of(settings) as store:
            assert row_of(store, "victim")[9] is None
    else:
        assert code == 0  # the documented limit (docs/security.md): no outside record of what was sealed
        capsys.readouterr()


def test_convert_refuses_a_clear_row_without_an_enrolment_in_the_audit_trail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = test_settings(tmp_path)  # a clear deployment before its first pepper
    with service(settings) as client:
        enrol(client, "alice", V_TEMPLATE, V_PIN)
    forged = unpeppered_row(tmp_path, "mallory")
    with database_of(settings) as store:
        columns = "scheme, params, helper, secret_hash, report, has_pin, pipeline, pipeline_sha256, key_params"
        sql(
            store,
            f"INSERT INTO users (user_id, {columns}, pepper_id, pepper_nonce, record_version, enrolled_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING user_id",
            ("mallory", *forged[:9], None, None, 1, 1.0),
        )
    cli_env(monkeypatch, settings, SKETCHAUTH_PEPPER=PEPPER)
    capsys.readouterr()
    assert main(["pepper", "convert", "--db", settings.database_url]) == 2
    assert "without an enrolment in the audit trail (users mallory)" in one_line(capsys)
    with database_of(settings) as store:
        sql(store, "DELETE FROM users WHERE user_id = ? RETURNING user_id", ("mallory",))
    assert main(["pepper", "convert", "--db", settings.database_url]) == 0  # the attributable ones convert
    assert json.loads(capsys.readouterr().out)["sealed"] == 1
    with service(settings.replace(pepper=PEPPER)) as client:
        assert verified(client, "alice", V_SAMPLE, V_PIN)


# -- 2. a wrong deployment id ---------------------------------------------------------------------------------
def test_a_wrong_deployment_id_is_refused_at_start_in_one_line(
    tmp_path: Path, database: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = deployment(tmp_path, database, pepper=PEPPER, deployment_id="prod-eu")
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
    wrong = settings.replace(deployment_id="prod-us")
    with (
        pytest.raises(PepperSettingsError, match="SKETCHAUTH_DEPLOYMENT_ID=prod-us: none of the 1 newest"),
        service(wrong),
    ):
        pass
    # Through the operator's door: one JSON line, exit status 2, nothing counted.
    cli_env(monkeypatch, wrong, SKETCHAUTH_PEPPER=PEPPER, SKETCHAUTH_API_KEYS="k" * 32)
    monkeypatch.setenv("SKETCHAUTH_ALLOW_TEST_PROFILE", "1")
    capsys.readouterr()
    assert main(["serve", "--db", settings.database_url, "--port", "0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "SKETCHAUTH_DEPLOYMENT_ID" in json.loads(lines[0])["message"], lines
    assert failures(settings, "victim") == 0  # nobody was counted
    with service(settings) as client:  # the right id still serves
        assert verified(client, "victim", V_SAMPLE, V_PIN)


# -- 3. wrong-typed stored values do not block a rotation ---------------------------------------------------
#: (column, value) pairs SQLite stores as given (PostgreSQL's column types refuse all but a negative version).
WRONG_TYPED = [
    ("record_version", -1),
    ("record_version", "abc"),
    ("record_version", 1e30),
    ("pepper_nonce", "zz"),
    ("helper", "txt"),
    ("failures", "x"),
    ("locked_until", "x"),
    ("locked_until", float("inf")),
    ("enrolled_at", "x"),
]


@pytest.mark.parametrize(("column", "value"), WRONG_TYPED, ids=[f"{c}={v!r}" for c, v in WRONG_TYPED])
def test_rotation_skips_reports_and_finishes_over_wrong_typed_values(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    column: str,
    value: Any,
) -> None:
    settings = deployment(tmp_path, {"database_url": f"sqlite:///{tmp_path / 'red.db'}"}, pepper=PEPPER)
    with service(settings) as client:
        for user in ("u0", "u1", "u2"):
            enrol(client, user, V_TEMPLATE, None)
    with database_of(settings) as store:
        sql(store, f"UPDATE users SET {column} = ? WHERE user_id = ? RETURNING user_id", (value, "u1"))
    rotating = settings.replace(pepper=NEW_PEPPER, pepper_previous=(PEPPER,))
    with service(rotating) as client:
        response = client.post("/v1/admin/pepper/rotation", headers=ADMIN, json={})
        assert response.status_code == 200, response.text
        result = response.json()
        assert (result["rewrapped"], result["unreadable"], result["complete"]) == (2, 1, True)
        assert "integrity" in events(client, "u1")
    cli_env(monkeypatch, rotating, SKETCHAUTH_PEPPER=NEW_PEPPER, SKETCHAUTH_PEPPER_PREVIOUS=PEPPER)
    capsys.readouterr()
    assert main(["pepper", "status", "--hashes", "--db", settings.database_url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["hashes"]["unreadable"] == 1 and status["hashes"]["current"] == 2
    assert main(["pepper", "rotate", "--db", settings.database_url]) == 1  # finishes, reports the skipped row
    out = capsys.readouterr()
    assert json.loads(out.out)["unreadable"] == 1 and json.loads(out.out)["complete"] is True
    assert "Traceback" not in out.err and "wrong-typed" in out.err


# -- 4. records sealed before the memory-hard step keep working and are migrated by a rotation ------------
class LegacySealer:
    """The seal of the earlier derivation (HKDF of the pepper alone), as an upgraded database holds it."""

    def __init__(self, text: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        from sketchauth.pepper import Pepper, kdf

        secret = Pepper.from_text(text).legacy()
        self.id = secret.id
        self._aead = ChaCha20Poly1305(kdf(_secret_of(text), info=b"record seal key", salt=b"sketchauth/pepper/v2"))

    def seal(self, record: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        return bytes(self._aead.encrypt(nonce, record, associated_data))

    def open(self, stored: bytes, nonce: bytes, associated_data: bytes) -> bytes:
        return bytes(self._aead.decrypt(nonce, stored, associated_data))

    def derive(self, info: bytes, length: int = 32) -> bytes:
        raise NotImplementedError


def _secret_of(text: str) -> bytes:
    import base64

    body = text.removeprefix("skp1_")
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))[:32]


class _Kept(logging.Handler):
    """The messages of the records it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _warnings_of(name: str) -> Iterator[list[str]]:
    """The warnings logged on logger ``name`` meanwhile, from a handler on that logger itself."""
    logger, kept = logging.getLogger(name), _Kept()
    level, disabled = logger.level, logger.disabled
    logger.addHandler(kept)
    logger.setLevel(logging.WARNING)
    logger.disabled = False
    try:
        yield kept.messages
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
        logger.disabled = disabled


def test_records_of_the_legacy_derivation_still_open_and_a_rotation_migrates_them(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sketchauth_service.store.records import Content, RecordCodec

    from sketchauth.pepper import Pepper

    settings = deployment(tmp_path, {"database_url": f"sqlite:///{tmp_path / 'red.db'}"}, pepper=PEPPER)
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
    # The row as the release before the memory-hard step sealed it: under the legacy id and keys.
    legacy = LegacySealer(PEPPER)
    with database_of(settings) as store:
        codec = RecordCodec(Pepper.from_text(PEPPER), deployment=settings.deployment_id)
        row = sql(store, f"SELECT {USER_COLUMNS} FROM users WHERE user_id = 'victim'")[0]
        record = codec.open(row)
        columns = codec.columns("victim", Content.of(record), record.version, pepper=legacy)
        write_row(store, "victim", columns.values())
        assert row_of(store, "victim")[9] == legacy.id != Pepper.from_text(PEPPER).id
    # The warning read on the service's own logger: what an earlier test in this worker left on the
    # root (its level, its handlers) does not decide whether it is seen.
    with _warnings_of("sketchauth.service") as warned, service(settings) as client:  # works, warns to rotate
        assert verified(client, "victim", V_SAMPLE, V_PIN)
    assert any("legacy derivation" in message for message in warned)
    cli_env(monkeypatch, settings, SKETCHAUTH_PEPPER=PEPPER)
    capsys.readouterr()
    assert main(["pepper", "rotate", "--db", settings.database_url]) == 0  # the same pepper: re-sealed in place
    assert json.loads(capsys.readouterr().out)["rewrapped"] == 1
    with database_of(settings) as store:
        assert row_of(store, "victim")[9] == Pepper.from_text(PEPPER).id
    with service(settings) as client:
        assert verified(client, "victim", V_SAMPLE, V_PIN)


USER_COLUMNS = (
    "user_id, scheme, params, helper, secret_hash, report, has_pin, failures, locked_until, disabled, enrolled_at, "
    "pipeline, pipeline_sha256, key_params, pepper_id, pepper_nonce, record_version"
)


def test_the_pepper_commands_refuse_an_unformatted_pepper_unless_allowed_and_then_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = test_settings(tmp_path)
    human = "sketchauth-production-pepper-2026-v1-do-not-share"
    cli_env(monkeypatch, settings, SKETCHAUTH_PEPPER=human)
    assert main(["pepper", "rotate", "--db", settings.database_url]) == 2
    line = one_line(capsys)
    assert "made by a machine" in line and "sketchauth pepper new" in line and human not in line
    monkeypatch.setenv("SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER", "1")
    assert main(["pepper", "rotate", "--db", settings.database_url]) == 0
    assert "sketchauth: warning: INSECURE" in capsys.readouterr().err
