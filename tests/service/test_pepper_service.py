"""The service with a pepper: settings, sealed records, every call, start-up refusals, conversion, rotation.

In-process apps (``TestClient``) on a temporary SQLite database; the database is read directly to
check what is stored. Rotation is driven by the admin endpoint and by ``sketchauth pepper rotate``,
interrupted (bounded runs, a crash inside a batch) and resumed; a clear database is sealed by the
explicit ``sketchauth pepper convert``, never by a rotation.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from http_testing import service_client
from service_testing import ADMIN, AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.pepper import PepperRing, PepperSettingsError, census, rotate
from sketchauth_service.settings import Settings, SettingsError
from sketchauth_service.store.records import RecordCodec
from sketchauth_service.store.sqlite import SQLiteStore

from sketchauth.cli import main
from sketchauth.pepper import PEPPER_NONCE_BYTES, SEAL_TAG_BYTES, Pepper

#: Made by `sketchauth pepper new` (new_pepper_text), as a pepper must be.
PEPPER_A = "skp1_VTWlryKi6NoHkmrQlbPaZNlogoNlM3YGGRD8psdWX9XmOnM_"
PEPPER_B = "skp1_9y0sC5CZW81QvHoYQ5ZY7jDgCgVy8Rw5Yr4HdAGhIGSk8ORy"
N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [987_640, 876_560, 765_400, 654_300]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
PIN, NEW_PIN = "pin-7391-secret", "new-pin-2468"
INTERVAL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}
PINSKETCH = {"scheme": "pinsketch", "params": {"m": 16, "t": 4}, "samples": [[3, 70, 1000, 2024, 65535]]}
PINSKETCH_SAMPLE = [3, 70, 1001, 2024, 65535, 9]


@contextmanager
def app(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), headers=AUTH) as c:
        yield c


def rows(settings: Settings) -> dict[str, tuple[bytes, str | None, bytes | None, bool]]:
    path = settings.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT user_id, helper, pepper_id, pepper_nonce, has_pin FROM users").fetchall()
    return {u: (bytes(h), pid, None if n is None else bytes(n), bool(p)) for u, h, pid, n, p in found}


def opened(settings: Settings, pepper: str | None = PEPPER_A) -> SQLiteStore:
    """The settings' database read through a codec of ``pepper`` (``None``: clear): what the service reads."""
    store = SQLiteStore.from_url(settings.database_url)
    store.use_codec(RecordCodec(None if pepper is None else Pepper.from_text(pepper)))
    return store


def verified(c: TestClient, user: str, sample: list[int], pin: str | None = None) -> bool:
    return service_client(c).verify(user, sample, pin=pin)


def enrol_people(c: TestClient, count: int, prefix: str = "u") -> list[str]:
    api = service_client(c)
    users = [f"{prefix}{i}" for i in range(count)]
    for i, user in enumerate(users):
        api.enrol(user, **{**INTERVAL, "samples": [[x + 1000 * i for x in TEMPLATE]]})
    return users


def all_verify(c: TestClient, users: list[str]) -> bool:
    return all(verified(c, u, [x + 1000 * int(u.lstrip("uvw")) for x in GENUINE]) for u in users)


# -- settings -----------------------------------------------------------------------------------------
def test_required_pepper_missing_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="SKETCHAUTH_REQUIRE_PEPPER is on but no pepper"):
        create_app(test_settings(tmp_path, require_pepper=True))
    with app(test_settings(tmp_path, require_pepper=True, pepper=PEPPER_A)) as c:
        assert c.get("/readyz").status_code == 200


def test_serve_refuses_to_start_without_a_required_pepper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable in ("SKETCHAUTH_PEPPER", "SKETCHAUTH_PEPPER_FILE", "SKETCHAUTH_PEPPER_PREVIOUS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SKETCHAUTH_REQUIRE_PEPPER", "1")
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", "k" * 32)
    assert main(["serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--port", "0"]) == 2
    assert "no pepper is configured" in capsys.readouterr().err


@pytest.mark.parametrize(
    "changes,match",
    [
        ({"pepper": "too-short-but-not-machine-made"}, "SKETCHAUTH_PEPPER: a pepper must be made by a machine"),
        ({"pepper": "too-short", "allow_unformatted_pepper": True}, "SKETCHAUTH_PEPPER: a pepper needs at least 128"),
        # a sequence, judged far below 128 bits
        ({"pepper": "0123456789abcdef0123456789abcdef", "allow_unformatted_pepper": True}, "128 bits"),
        ({"pepper": "correct horse battery staple", "allow_unformatted_pepper": True}, "judged to carry"),
        ({"pepper": PEPPER_A[:-2] + "xx"}, "checksum|malformed"),
        ({"pepper_previous": (PEPPER_A,)}, "SKETCHAUTH_PEPPER_PREVIOUS needs a current"),
        ({"pepper": PEPPER_A, "pepper_file": "/nonexistent"}, "not both"),
        ({"pepper_file": "/nonexistent/pepper"}, "cannot read"),
        ({"rollback_ledger": "/tmp/marks.db"}, "SKETCHAUTH_ROLLBACK_LEDGER needs a pepper"),
        ({"deployment_id": "not an id!"}, "SKETCHAUTH_DEPLOYMENT_ID"),
    ],
)
def test_bad_pepper_settings_are_refused_without_quoting_them(tmp_path: Path, changes: dict, match: str) -> None:
    with pytest.raises(SettingsError, match=match) as info:
        test_settings(tmp_path, **changes).validate()
    for value in changes.values():
        if isinstance(value, str) and value.startswith(("too", "0123", "correct")):
            assert value not in str(info.value)


def test_pepper_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pepper"
    path.write_text(PEPPER_A + "\n")
    ring = test_settings(tmp_path, pepper_file=str(path)).pepper_ring()
    assert ring.current == Pepper.from_text(PEPPER_A)


def test_pepper_is_never_logged_only_its_id(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = test_settings(tmp_path, pepper=PEPPER_B, pepper_previous=(PEPPER_A,))
    with caplog.at_level(logging.INFO), app(settings) as c:
        assert c.get("/readyz").status_code == 200
    logged = "\n".join(r.getMessage() for r in caplog.records)
    line = next(json.loads(m) for m in logged.splitlines() if '"event": "settings"' in m)
    assert line["pepper"] == f"set (id {Pepper.from_text(PEPPER_B).id})"
    assert line["pepper_previous"] == [f"id {Pepper.from_text(PEPPER_A).id}"]
    assert PEPPER_A not in logged and PEPPER_B not in logged
    assert PEPPER_A not in repr(settings) and PEPPER_B not in repr(settings)
    assert PEPPER_B not in json.dumps(settings.public_view(), default=str)


# -- every call with a pepper ---------------------------------------------------------------------
def test_enrol_verify_key_and_pin_change_with_a_pepper(tmp_path: Path) -> None:
    settings = test_settings(tmp_path, pepper=PEPPER_A)
    pepper = Pepper.from_text(PEPPER_A)
    with app(settings) as c:
        assert c.post("/v1/users/alice/enrolment", json={**INTERVAL, "pin": PIN}).status_code == 201
        assert c.post("/v1/users/bob/enrolment", json=PINSKETCH).status_code == 201
        stored = rows(settings)
        store = opened(settings)
        try:
            for user, (sealed, pepper_id, nonce, has_pin) in stored.items():
                assert pepper_id == pepper.id and nonce is not None and len(nonce) == PEPPER_NONCE_BYTES
                record = store.get(user)
                assert record is not None and record.has_pin == (user == "alice") and not has_pin  # the flag is sealed
                assert record.helper not in sealed and record.secret_hash.encode() not in sealed
                assert len(sealed) > len(record.helper) + len(record.secret_hash) + SEAL_TAG_BYTES
        finally:
            store.close()
        assert verified(c, "alice", GENUINE, PIN)
        assert not verified(c, "alice", GENUINE, "wrong-pin-000")
        assert not verified(c, "alice", IMPOSTOR, PIN)
        assert verified(c, "bob", PINSKETCH_SAMPLE)
        assert not verified(c, "bob", [5, 6, 7, 8, 9, 10])
        keys = [c.post("/v1/users/bob/key", json={"sample": PINSKETCH_SAMPLE, "context": "ctx/v1"}) for _ in range(2)]
        assert keys[0].json()["verified"] and keys[0].json()["key"] == keys[1].json()["key"]
        changed = c.post("/v1/users/alice/pin", json={"sample": GENUINE, "pin": PIN, "new_pin": NEW_PIN})
        assert changed.json() == {"verified": True}
        after = rows(settings)["alice"]
        assert after[1] == pepper.id and after[2] != stored["alice"][2]  # a fresh nonce for the new helper
        assert verified(c, "alice", GENUINE, NEW_PIN) and not verified(c, "alice", GENUINE, PIN)
        assert c.get("/v1/users/alice/report").status_code == 200
    raw = Path(settings.database_url.removeprefix("sqlite:///")).read_bytes()
    assert PEPPER_A.encode() not in raw and b"$argon2id$" not in raw  # no hash in clear: all sealed


def test_a_clear_database_is_sealed_by_the_explicit_one_time_conversion_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = test_settings(tmp_path)
    with app(plain) as c:
        users = enrol_people(c, 3)
    assert {pid for _, pid, _, _ in rows(plain).values()} == {None}
    peppered = test_settings(tmp_path, pepper=PEPPER_A)
    # A configured pepper reads sealed records only: the service refuses to start, naming the command.
    with pytest.raises(PepperSettingsError, match="sketchauth pepper convert"), app(peppered):
        pass
    # A rotation re-seals sealed records only: clear ones stay as they are.
    store = opened(plain, None)
    try:
        result = rotate(store, Pepper.from_text(PEPPER_A))
        assert (result.rewrapped, result.remaining) == (0, 3) and census(store) == {None: 3}
    finally:
        store.close()
    monkeypatch.setenv("SKETCHAUTH_PEPPER", PEPPER_A)
    assert main(["pepper", "convert", "--db", plain.database_url]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "sealed": 3,
        "unreadable": 0,
        "pepper_id": Pepper.from_text(PEPPER_A).id,
    }
    assert main(["pepper", "convert", "--db", plain.database_url]) == 0  # one-time: nothing left to do
    assert json.loads(capsys.readouterr().out)["sealed"] == 0
    with app(peppered) as c:
        assert all_verify(c, users)
        assert c.get("/v1/admin/pepper", headers=ADMIN).json()["records"] == {Pepper.from_text(PEPPER_A).id: 3}
        trail = c.get("/v1/admin/users/u0/audit", headers=ADMIN).json()["events"]
        assert [e["event"] for e in trail][:2] == ["enrol", "seal"]  # audited, record by record


def test_start_refuses_a_database_its_peppers_cannot_read(tmp_path: Path) -> None:
    with app(test_settings(tmp_path, pepper=PEPPER_A)) as c:
        enrol_people(c, 1)
    for settings in (test_settings(tmp_path), test_settings(tmp_path, pepper=PEPPER_B)):
        with pytest.raises(PepperSettingsError, match="no configured pepper has"), app(settings):
            pass


def test_a_wrong_pepper_never_opens(tmp_path: Path) -> None:
    """Reading with the right id but the wrong key (simulated) is refused by the seal's tag."""
    from sketchauth_service.store.records import RecordIntegrityError

    settings = test_settings(tmp_path, pepper=PEPPER_A)
    with app(settings) as c:
        enrol_people(c, 1)
    right, wrong = Pepper.from_text(PEPPER_A), Pepper.from_text(PEPPER_B)
    codec = RecordCodec(wrong)
    codec.peppers[right.id] = wrong  # the id of the right pepper, the key of another
    with sqlite3.connect(settings.database_url.removeprefix("sqlite:///")) as db:
        row = db.execute("SELECT * FROM users").fetchone()
    store = opened(settings)
    try:
        assert store.get("u0") is not None
        from sketchauth_service.store.sql import _USER_COLUMNS

        with store._read() as cur:
            row = store._run(cur, f"SELECT {_USER_COLUMNS} FROM users").fetchone()
        with pytest.raises(RecordIntegrityError, match="does not open"):
            codec.open(row)
    finally:
        store.close()


def test_a_second_biometric_in_another_group_is_peppered(tmp_path: Path) -> None:
    """Interval + PinSketch second biometric: no common symbol group, sealed as one record."""
    from test_second_factor import FIRST, PIN_BITS, SECOND, SECOND_GENUINE, SECOND_WRONG
    from test_second_factor import GENUINE as FIRST_GENUINE
    from test_second_factor import PIN as CHAIN_PIN

    settings = test_settings(tmp_path, pepper=PEPPER_A, pin_min_entropy=PIN_BITS)
    pepper = Pepper.from_text(PEPPER_A)
    with app(settings) as c:
        assert c.post("/v1/users/two/enrolment", json={**FIRST, "second": SECOND}).status_code == 201
        chain = {**FIRST, "second": SECOND, "pin": CHAIN_PIN}  # the chain PIN -> second -> first
        assert c.post("/v1/users/trio/enrolment", json=chain).status_code == 201
        store = opened(settings)
        for user in ("two", "trio"):
            sealed, pepper_id, _, _ = rows(settings)[user]
            assert pepper_id == pepper.id and store.get(user).helper not in sealed  # type: ignore[union-attr]
        store.close()

        def verify(user: str, second: list[int], **extra: str) -> bool:
            body = {"sample": FIRST_GENUINE, "second_sample": second, **extra}
            response = c.post(f"/v1/users/{user}/verification", json=body)
            assert response.status_code == 200, response.text
            return bool(response.json()["verified"])

        assert verify("two", SECOND_GENUINE) and not verify("two", SECOND_WRONG)
        assert verify("trio", SECOND_GENUINE, pin=CHAIN_PIN) and not verify("trio", SECOND_GENUINE, pin="other-pin-1")


# -- rotation -------------------------------------------------------------------------------------------
def test_admin_rotation_bounded_runs_resume_and_every_record_stays_readable(tmp_path: Path) -> None:
    with app(test_settings(tmp_path, pepper=PEPPER_A)) as c:
        users = enrol_people(c, 5)
    rotating = test_settings(tmp_path, pepper=PEPPER_B, pepper_previous=(PEPPER_A,))
    a, b = Pepper.from_text(PEPPER_A).id, Pepper.from_text(PEPPER_B).id
    with app(rotating) as c:
        first = c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={"batch_size": 2, "max_batches": 1})
        assert first.status_code == 200, first.text
        assert first.json() == {
            "new_id": b,
            "rewrapped": 2,
            "unreadable": 0,
            "batches": 1,
            "remaining": 3,
            "complete": False,
        }
        assert c.get("/v1/admin/pepper", headers=ADMIN).json()["records"] == {a: 3, b: 2}
        assert all_verify(c, users)  # half rotated: old and new pepper both read
        rest = c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={}).json()
        assert (rest["rewrapped"], rest["remaining"], rest["complete"]) == (3, 0, True)
        again = c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={}).json()
        assert (again["rewrapped"], again["remaining"], again["complete"]) == (0, 0, True)  # nothing left to do
        assert c.post("/v1/admin/pepper/rotation", json={}).status_code == 403  # the API key lacks the admin scope
    with app(test_settings(tmp_path, pepper=PEPPER_B)) as c:  # the old pepper retired
        assert all_verify(c, users)


def test_admin_rotation_needs_a_pepper(tmp_path: Path) -> None:
    with app(test_settings(tmp_path)) as c:
        response = c.post("/v1/admin/pepper/rotation", headers=ADMIN, json={})
        assert response.status_code == 409 and response.json()["type"].endswith("no-pepper")


def test_rotation_interrupted_inside_a_batch_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash in the middle of a batch rolls the whole batch back: every record is old or new."""
    settings = test_settings(tmp_path, pepper=PEPPER_A)
    with app(settings) as c:
        users = enrol_people(c, 6)
    new, old = Pepper.from_text(PEPPER_B), Pepper.from_text(PEPPER_A)
    calls = {"n": 0}
    real = RecordCodec.columns

    def crashing(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 5:  # the second record of the second batch
            raise RuntimeError("power cut")
        return real(self, *args, **kwargs)

    store = SQLiteStore.from_url(settings.database_url)
    try:
        monkeypatch.setattr(RecordCodec, "columns", crashing)
        with pytest.raises(RuntimeError, match="power cut"):
            rotate(store, new, [old], batch_size=3)
        assert census(store) == {old.id: 3, new.id: 3}  # the first batch committed, the second rolled back
        monkeypatch.setattr(RecordCodec, "columns", real)
        result = rotate(store, new, [old], batch_size=3)
        assert (result.rewrapped, result.remaining, result.complete) == (3, 0, True)
    finally:
        store.close()
    with app(test_settings(tmp_path, pepper=PEPPER_B)) as c:
        assert all_verify(c, users)


def test_rotation_leaves_an_altered_record_alone_and_rotates_the_others(tmp_path: Path) -> None:
    """A record whose seal no longer verifies (one bit flipped in the database) is counted
    unreadable and left as it is; the rotation of every other record goes through."""
    settings = test_settings(tmp_path, pepper=PEPPER_A)
    with app(settings) as c:
        users = enrol_people(c, 4)
    path = settings.database_url.removeprefix("sqlite:///")
    altered = bytearray(rows(settings)["u1"][0])
    altered[0] ^= 1
    with sqlite3.connect(path) as db:
        db.execute("UPDATE users SET helper = ? WHERE user_id = 'u1'", (bytes(altered),))
    new, old = Pepper.from_text(PEPPER_B), Pepper.from_text(PEPPER_A)
    store = SQLiteStore.from_url(settings.database_url)
    try:
        result = rotate(store, new, [old], batch_size=2)
        assert (result.rewrapped, result.unreadable, result.remaining) == (3, 1, 1)
        assert census(store) == {old.id: 1, new.id: 3}
    finally:
        store.close()
    assert rows(settings)["u1"][0] == bytes(altered)
    with app(test_settings(tmp_path, pepper=PEPPER_B, pepper_previous=(PEPPER_A,))) as c:
        assert all_verify(c, [u for u in users if u != "u1"])


def test_cli_rotation_reads_peppers_from_env_and_files_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = test_settings(tmp_path)
    with app(plain) as c:
        clear_users = enrol_people(c, 2, prefix="v")
    db = plain.database_url
    monkeypatch.delenv("SKETCHAUTH_PEPPER_PREVIOUS", raising=False)
    monkeypatch.setenv("SKETCHAUTH_PEPPER", PEPPER_A)
    assert main(["pepper", "convert", "--db", db]) == 0  # the clear records, sealed once by A
    capsys.readouterr()
    with app(test_settings(tmp_path, pepper=PEPPER_A)) as c:
        users = enrol_people(c, 3, prefix="w")
    monkeypatch.setenv("SKETCHAUTH_PEPPER", PEPPER_B)
    # No old pepper given: A's records are reported unreadable (exit 1) and left alone.
    assert main(["pepper", "rotate", "--db", db]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["unreadable"] == 5 and "left as they are" in out.err
    old_file = tmp_path / "old-pepper"
    old_file.write_text(PEPPER_A + "\n")
    # Interrupted: one batch of one record, then the rest.
    assert (
        main(["pepper", "rotate", "--db", db, "--old-file", str(old_file), "--batch-size", "1", "--max-batches", "1"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["remaining"] == 4
    monkeypatch.setenv("OLD_PEPPER", PEPPER_A)
    assert main(["pepper", "rotate", "--db", db, "--old-env", "OLD_PEPPER"]) == 0
    assert json.loads(capsys.readouterr().out)["remaining"] == 0
    assert main(["pepper", "status", "--db", db]) == 0
    assert json.loads(capsys.readouterr().out) == {Pepper.from_text(PEPPER_B).id: 5}
    with app(test_settings(tmp_path, pepper=PEPPER_B)) as c:
        assert all_verify(c, users + clear_users)


def test_status_counts_hashes_upgraded_at_the_next_verification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hashes inside the seal are re-made with a new argon2 profile at each user's next successful
    verification (a new record version); ``pepper status --hashes`` counts what is left — and,
    without the pepper, sees nothing it could test."""
    settings = test_settings(tmp_path, pepper=PEPPER_A)  # the cheap test profile
    with app(settings) as c:
        users = enrol_people(c, 2)
    db = settings.database_url
    monkeypatch.setenv("SKETCHAUTH_HASH_PROFILE", "owasp")
    monkeypatch.delenv("SKETCHAUTH_PEPPER_PREVIOUS", raising=False)
    monkeypatch.delenv("SKETCHAUTH_PEPPER", raising=False)
    assert main(["pepper", "status", "--db", db, "--hashes"]) == 0
    assert json.loads(capsys.readouterr().out)["hashes"] == {"current": 0, "rehash_pending": 0, "unreadable": 2}
    monkeypatch.setenv("SKETCHAUTH_PEPPER", PEPPER_A)
    assert main(["pepper", "status", "--db", db, "--hashes"]) == 0
    assert json.loads(capsys.readouterr().out)["hashes"] == {"current": 0, "rehash_pending": 2, "unreadable": 0}
    with app(test_settings(tmp_path, pepper=PEPPER_A, hash_profile="owasp")) as c:
        assert all_verify(c, users[:1])
    assert main(["pepper", "status", "--db", db, "--hashes"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status == {
        "records": {Pepper.from_text(PEPPER_A).id: 2},
        "hashes": {"current": 1, "rehash_pending": 1, "unreadable": 0},
    }
    store = opened(settings)
    try:
        assert store.get("u0").version == 2 and store.get("u1").version == 1  # type: ignore[union-attr]
    finally:
        store.close()


def test_cli_never_takes_a_pepper_from_the_command_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("SKETCHAUTH_PEPPER", raising=False)
    assert main(["pepper", "rotate", "--db", "sqlite:///unused.db"]) == 2
    assert "never taken from the command line" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["pepper", "rotate", "--new", PEPPER_A])


def test_ring_ignores_a_previous_pepper_equal_to_the_current_one(tmp_path: Path) -> None:
    ring = PepperRing.from_settings(test_settings(tmp_path, pepper=PEPPER_A, pepper_previous=(PEPPER_A, PEPPER_B)))
    assert [p.id for p in ring.previous] == [Pepper.from_text(PEPPER_B).id]


def test_every_attempt_opens_one_record_enrolled_unknown_or_tampered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One mechanism for every endpoint: the store opens exactly one record per attempt — the id's
    own, or for an unknown id or a tampered record the last one opened (its decoy) — so unsealing
    does not tell them apart, and the attempt is verified against the decoy it hands out."""
    settings = test_settings(tmp_path, pepper=PEPPER_A, lockout_threshold=1000, disable_threshold=1000)
    calls: list[str] = []
    real = RecordCodec.open
    monkeypatch.setattr(RecordCodec, "open", lambda self, row: calls.append(row[0]) or real(self, row))
    with app(settings) as c:
        enrol_people(c, 2)
        path = settings.database_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as db:  # u1's seal: one byte flipped
            sealed = bytearray(db.execute("SELECT helper FROM users WHERE user_id = 'u1'").fetchone()[0])
            sealed[3] ^= 1
            db.execute("UPDATE users SET helper = ? WHERE user_id = 'u1'", (bytes(sealed),))
        for user, opened_ in (("u0", ["u0"]), ("nobody", ["u0"]), ("u1", ["u1", "u0"]), ("nobody", ["u0"])):
            calls.clear()
            assert not verified(c, user, IMPOSTOR)
            assert calls == opened_, user
        events = [e["event"] for e in c.get("/v1/admin/users/u1/audit", headers=ADMIN).json()["events"]]
        assert events[-3:] == ["attempt", "integrity", "verify-fail"]


@pytest.mark.postgres
def test_rotation_on_postgresql_interrupted_and_resumed(
    tmp_path: Path, postgres_available: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on PostgreSQL (rows locked FOR UPDATE per batch, BYTEA nonces): a crash inside a
    batch rolls it back, the re-run finishes, every call works with the new pepper."""
    from sketchauth_service.store.postgres import PostgresStore

    def on_postgres(**changes: object) -> Settings:
        return test_settings(tmp_path, database_url=postgres_available, postgres_schema=postgres_schema, **changes)

    with app(on_postgres(pepper=PEPPER_A)) as c:
        users = enrol_people(c, 5)
        assert c.post("/v1/users/pin-user/enrolment", json={**INTERVAL, "pin": PIN}).status_code == 201
    new, old = Pepper.from_text(PEPPER_B), Pepper.from_text(PEPPER_A)
    real, calls = RecordCodec.columns, {"n": 0}

    def crashing(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("power cut")
        return real(self, *args, **kwargs)

    store = PostgresStore(postgres_available, schema=postgres_schema, max_size=1)
    try:
        monkeypatch.setattr(RecordCodec, "columns", crashing)
        with pytest.raises(RuntimeError, match="power cut"):
            rotate(store, new, [old], batch_size=2)
        assert census(store) == {old.id: 4, new.id: 2}
        monkeypatch.setattr(RecordCodec, "columns", real)
        assert rotate(store, new, [old], batch_size=2).remaining == 0
    finally:
        store.close()
    with app(on_postgres(pepper=PEPPER_B)) as c:
        assert all_verify(c, users)
        assert verified(c, "pin-user", GENUINE, PIN)
        changed = c.post("/v1/users/pin-user/pin", json={"sample": GENUINE, "pin": PIN, "new_pin": NEW_PIN})
        assert changed.json() == {"verified": True} and verified(c, "pin-user", GENUINE, NEW_PIN)
