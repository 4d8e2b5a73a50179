"""The record key in a PKCS#11 token (SoftHSM2): generated inside, never extractable, every seal done there.

A temporary token is made by ``softhsm2-util`` in a temporary directory (``SOFTHSM2_CONF``); the
tests skip only when SoftHSM2 or python-pkcs11 is not installed (``.ci/run`` installs both).
The thief's test: the database plus every file and variable the application has (the settings,
the PIN file, the module path) open no record once the token is gone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_testing import ADMIN, ADMIN_KEY, API_KEY, ServerProcess, test_settings
from sketchauth_service.keyring import TokenError, TokenSettings, generate_token_key, open_token_key
from sketchauth_service.store.records import RecordCodec, RecordIntegrityError
from sketchauth_service.store.sql import _USER_COLUMNS as USER_COLUMNS
from test_red_team_records import V_PIN, V_SAMPLE, V_TEMPLATE, database_of, enrol, service, sql, verified

from sketchauth.cli import main
from sketchauth.errors import SketchFormatError
from sketchauth.pepper import Pepper, new_pepper_text

SOFTHSM_MODULES = ("/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so")
MODULE = next((m for m in SOFTHSM_MODULES if Path(m).is_file()), None)
pytestmark = pytest.mark.skipif(
    MODULE is None or shutil.which("softhsm2-util") is None or importlib.util.find_spec("pkcs11") is None,
    reason="SoftHSM2 (apt-get install softhsm2) and python-pkcs11 (the pkcs11 extra) are needed",
)
PIN = "3141-5926"


#: Tokens made before the module is first loaded (SoftHSM2 reads its token directory once per process).
TOKENS = 8


@pytest.fixture(scope="module")
def token_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Fresh SoftHSM2 tokens in a temporary directory (``SOFTHSM2_CONF``), one per test that asks."""
    home = tmp_path_factory.mktemp("softhsm")
    tokens = home / "tokens"
    tokens.mkdir()
    conf = home / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {tokens}\nobjectstore.backend = file\nlog.level = ERROR\n")
    before = os.environ.get("SOFTHSM2_CONF")
    os.environ["SOFTHSM2_CONF"] = str(conf)
    labels = [f"sketchauth-test-{i}" for i in range(TOKENS)]
    for label in labels:
        subprocess.run(
            ["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", PIN, "--so-pin", "2718-2818"],
            check=True,
            capture_output=True,
        )
    yield labels
    if before is None:
        os.environ.pop("SOFTHSM2_CONF", None)
    else:
        os.environ["SOFTHSM2_CONF"] = before


@pytest.fixture
def token(tmp_path: Path, token_pool: list[str]) -> dict[str, Any]:
    """The settings naming an unused token, its PIN in a file."""
    if not token_pool:
        pytest.fail(f"more than {TOKENS} tests ask for a token: raise TOKENS")
    pin_file = tmp_path / "pin"
    pin_file.write_text(PIN + "\n")
    return {
        "pkcs11_module": MODULE,
        "pkcs11_token_label": token_pool.pop(0),
        "pkcs11_pin_file": str(pin_file),
        "pkcs11_key_label": "records",
    }


def token_settings(token: dict[str, Any]) -> TokenSettings:
    return TokenSettings.of(
        token["pkcs11_module"], token["pkcs11_token_label"], None, token["pkcs11_pin_file"], token["pkcs11_key_label"]
    )


def env_of(token: dict[str, Any]) -> dict[str, str]:
    return {f"SKETCHAUTH_{k.upper()}": str(v) for k, v in token.items()}


def test_the_key_is_generated_inside_the_token_and_cannot_leave_it(token: dict[str, Any]) -> None:
    import pkcs11
    from pkcs11 import Attribute, KeyType, ObjectClass

    key_id = generate_token_key(token_settings(token))
    assert key_id.startswith("p11-") and len(key_id) == 4 + 16
    with pytest.raises(TokenError, match="already holds a key labelled"):
        generate_token_key(token_settings(token))  # never replaced: the records sealed by it would be lost
    session = pkcs11.lib(MODULE).get_token(token_label=token["pkcs11_token_label"]).open(user_pin=PIN)
    try:
        key = session.get_key(object_class=ObjectClass.SECRET_KEY, key_type=KeyType.AES, label="records")
        assert key[Attribute.EXTRACTABLE] is False and key[Attribute.SENSITIVE] is True
        assert key[Attribute.VALUE_LEN] == 32
        with pytest.raises(pkcs11.AttributeSensitive):
            key[Attribute.VALUE]  # the value is not readable
        wrapping = session.generate_key(KeyType.AES, 256, template={Attribute.WRAP: True, Attribute.TOKEN: False})
        with pytest.raises(pkcs11.PKCS11Error):
            wrapping.wrap_key(key)  # nor exportable wrapped under another key
    finally:
        session.close()


def test_token_seal_is_aes_gcm_bound_to_its_associated_data(token: dict[str, Any]) -> None:
    generate_token_key(token_settings(token))
    key = open_token_key(token_settings(token))
    nonce, ad = bytes(range(12)), b"user-1 v1"
    sealed = key.seal(b"a record", nonce, ad)
    assert len(sealed) == len(b"a record") + 16 and b"a record" not in sealed
    assert key.open(sealed, nonce, ad) == b"a record"
    for bad in ((sealed, nonce, b"user-2 v1"), (sealed[:-1] + bytes([sealed[-1] ^ 1]), nonce, ad)):
        with pytest.raises(SketchFormatError):
            key.open(*bad)
    assert key.derive(b"rollback ledger") == key.derive(b"rollback ledger") != key.derive(b"other")


def test_the_service_seals_every_record_through_the_token(
    tmp_path: Path, token: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in env_of(token).items():
        monkeypatch.setenv(name, value)
    assert main(["pepper", "token-key"]) == 0
    key_id = json.loads(capsys.readouterr().out)["id"]
    settings = test_settings(tmp_path, **token, require_pepper=True)
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
        assert verified(client, "victim", V_SAMPLE, V_PIN)
        assert client.get("/v1/admin/pepper", headers=ADMIN).json()["records"] == {key_id: 1}
    with database_of(settings) as store:
        (pepper_id, helper), *_ = sql(store, "SELECT pepper_id, helper FROM users WHERE user_id = 'victim'")
    assert pepper_id == key_id and len(helper) > 100


def test_database_plus_the_application_environment_and_files_open_nothing_without_the_token(
    tmp_path: Path, token: dict[str, Any]
) -> None:
    generate_token_key(token_settings(token))
    settings = test_settings(tmp_path, **token, rollback_ledger=str(tmp_path / "marks.db"))
    with service(settings) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
    # The thief copies the application's files (database, ledger, PIN file) and its environment, and
    # has the same PKCS#11 module installed, but not the token.
    stolen = tmp_path / "stolen"
    shutil.copytree(tmp_path, stolen, ignore=shutil.ignore_patterns("stolen"))
    (stolen / "tokens").mkdir()
    (stolen / "softhsm2.conf").write_text(f"directories.tokendir = {stolen / 'tokens'}\nobjectstore.backend = file\n")
    env = {
        **os.environ,
        **env_of({**token, "pkcs11_pin_file": str(stolen / "pin")}),
        "SOFTHSM2_CONF": str(stolen / "softhsm2.conf"),
        "SKETCHAUTH_DATABASE_URL": f"sqlite:///{stolen / 'service.db'}",
        "SKETCHAUTH_ROLLBACK_LEDGER": str(stolen / "marks.db"),
        "SKETCHAUTH_HASH_PROFILE": "test",
    }
    thief = subprocess.run(
        [sys.executable, "-m", "sketchauth.cli", "pepper", "status", "--hashes"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert thief.returncode == 2 and "no token labelled" in thief.stderr, thief.stderr
    # Nothing in the stolen material is a key: a pepper made from any of it opens no record.
    with database_of(settings) as store:
        (row,) = sql(store, f"SELECT {USER_COLUMNS} FROM users")
    materials = [PIN, json.dumps(token), settings.model_dump_json(), (stolen / "pin").read_text()]
    for material in materials:
        guess = Pepper.from_text(material[:1000].ljust(22, "#"), unformatted=True, judge=False)
        codec = RecordCodec(guess, deployment=settings.deployment_id)
        with pytest.raises(RecordIntegrityError):
            codec.open((*row[:14], guess.id, *row[15:]))  # the guess's id in the row: the seal itself refuses it
    # With the token back, the same files open it (the control: the test can fail).
    assert RecordCodec(open_token_key(token_settings(token)), deployment=settings.deployment_id).open(row)


def test_a_pepper_deployment_rotates_to_the_token(tmp_path: Path, token: dict[str, Any]) -> None:
    generate_token_key(token_settings(token))
    pepper = new_pepper_text()
    with service(test_settings(tmp_path, pepper=pepper)) as client:
        enrol(client, "victim", V_TEMPLATE, V_PIN)
    with pytest.raises(ValueError, match="not both"):
        test_settings(tmp_path, pepper=pepper, **token).pepper_ring()
    rotating = test_settings(tmp_path, pepper_previous=(pepper,), **token)
    with service(rotating) as client:
        result = client.post("/v1/admin/pepper/rotation", headers=ADMIN, json={}).json()
        assert (result["rewrapped"], result["remaining"]) == (1, 0) and result["new_id"].startswith("p11-")
    with service(test_settings(tmp_path, **token)) as client:  # the pepper retired
        assert verified(client, "victim", V_SAMPLE, V_PIN)


def test_a_wrong_pin_or_label_is_one_clear_line(tmp_path: Path, token: dict[str, Any]) -> None:
    generate_token_key(token_settings(token))
    (tmp_path / "wrong-pin").write_text("0000-0000\n")
    cases = [
        ({"pkcs11_pin_file": str(tmp_path / "wrong-pin")}, "refused the PIN"),
        ({"pkcs11_token_label": "nope"}, "no token labelled 'nope'"),
        ({"pkcs11_key_label": "nope"}, "no AES key labelled 'nope'.*sketchauth pepper token-key"),
        ({"pkcs11_module": "/nonexistent.so"}, "no PKCS#11 module at"),
        ({"pkcs11_pin_file": None}, "PIN is missing"),
    ]
    for changes, match in cases:
        settings = test_settings(tmp_path, **{**token, **changes})
        with pytest.raises(Exception, match=match) as info:
            settings.validate()
        assert PIN not in str(info.value) and "\n" not in str(info.value)


def test_a_served_deployment_of_two_workers_seals_through_the_token(
    tmp_path: Path, token: dict[str, Any], servers: list[ServerProcess]
) -> None:
    """``sketchauth serve --workers 2``: the supervisor checks the token, each worker opens its own session."""
    generate_token_key(token_settings(token))
    env = {
        **env_of(token),
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        "SKETCHAUTH_REQUIRE_PEPPER": "1",
    }
    server = ServerProcess(tmp_path, env, workers=2, db=f"sqlite:///{tmp_path / 'served.db'}")
    servers.append(server)
    server.wait_ready()
    body = {"scheme": "interval", "params": {"n": 1 << 20, "v": 50, "features": 4}, "samples": [V_TEMPLATE]}
    with server.client() as client:
        for user in (f"u{i}" for i in range(6)):
            assert client.post(f"/v1/users/{user}/enrolment", json={**body, "pin": V_PIN}).status_code == 201
        for user in (f"u{i}" for i in range(6)):
            answer = client.post(f"/v1/users/{user}/verification", json={"sample": V_SAMPLE, "pin": V_PIN})
            assert answer.json()["verified"] is True, answer.text
        records = client.get("/v1/admin/pepper", headers=ADMIN).json()["records"]
    assert records == {open_token_key(token_settings(token)).id: 6}
