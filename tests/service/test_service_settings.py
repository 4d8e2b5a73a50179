"""Settings: one typed pydantic-settings model read from SKETCHAUTH_* variables, with clear errors.

The hand parser wrote every default twice (the dataclass and ``from_env``); these tests pin the
variable names and defaults the service has always had, the errors a deployer sees, and the
refusal of the ``test`` argon2 profile unless it is explicitly allowed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_testing import API_KEY, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings, SettingsError, env_name

from sketchauth.enrolment import DEFAULT_HASH_PROFILE

#: variable -> (field, the value to set, the value read)
VARIABLES: dict[str, tuple[str, str, Any]] = {
    "SKETCHAUTH_DATABASE_URL": ("database_url", "postgresql://u@db:5432/auth", "postgresql://u@db:5432/auth"),
    "SKETCHAUTH_API_KEYS": ("api_keys", " key-one ,key-two,, ", ("key-one", "key-two")),
    "SKETCHAUTH_ADMIN_KEYS": ("admin_keys", "admin-key", ("admin-key",)),
    "SKETCHAUTH_API_KEY_FILE": ("api_key_file", "/etc/sketchauth/keys", "/etc/sketchauth/keys"),
    "SKETCHAUTH_AUTH_FAILURE_RATE": ("auth_failure_rate", "0.5", 0.5),
    "SKETCHAUTH_LOG_KEY": ("log_key", "a-secret-log-key", "a-secret-log-key"),
    "SKETCHAUTH_ACCESS_LOG": ("access_log", "off", False),
    "SKETCHAUTH_AUTH_FAILURE_BURST": ("auth_failure_burst", "3", 3),
    "SKETCHAUTH_DEV_MODE": ("dev_mode", "yes", True),
    "SKETCHAUTH_HASH_PROFILE": ("hash_profile", "rfc9106-low-memory", "rfc9106-low-memory"),
    "SKETCHAUTH_ALLOW_TEST_PROFILE": ("allow_test_profile", "1", True),
    "SKETCHAUTH_LOCKOUT_THRESHOLD": ("lockout_threshold", "3", 3),
    "SKETCHAUTH_LOCKOUT_SECONDS": ("lockout_seconds", "0", 0),
    "SKETCHAUTH_DISABLE_THRESHOLD": ("disable_threshold", "9", 9),
    "SKETCHAUTH_MAX_BODY_BYTES": ("max_body_bytes", "2048", 2048),
    "SKETCHAUTH_BODY_TIMEOUT_SECONDS": ("body_timeout_seconds", "2.5", 2.5),
    "SKETCHAUTH_MAX_IN_FLIGHT": ("max_in_flight", "32", 32),
    "SKETCHAUTH_MAX_IN_FLIGHT_PER_KEY": ("max_in_flight_per_key", "4", 4),
    "SKETCHAUTH_HEADER_TIMEOUT_SECONDS": ("header_timeout_seconds", "3.5", 3.5),
    "SKETCHAUTH_MAX_CONNECTIONS": ("max_connections", "200", 200),
    "SKETCHAUTH_MAX_SAMPLE_LENGTH": ("max_sample_length", "100", 100),
    "SKETCHAUTH_MAX_SAMPLES": ("max_samples", "4", 4),
    "SKETCHAUTH_SCHEMA": ("postgres_schema", "tenant_2", "tenant_2"),
    "SKETCHAUTH_HOST": ("host", "0.0.0.0", "0.0.0.0"),
    "SKETCHAUTH_PORT": ("port", "9000", 9000),
    "SKETCHAUTH_WORKERS": ("workers", "4", 4),
    "SKETCHAUTH_HASH_THREADS": ("hash_threads", "2", 2),
    "SKETCHAUTH_PIPELINES": ("pipelines_dir", "/srv/pipelines", "/srv/pipelines"),
    "SKETCHAUTH_PIN_MIN_ENTROPY": ("pin_min_entropy", "13.29", 13.29),
    # pepper (sketchauth_service.pepper)
    "SKETCHAUTH_PEPPER": ("pepper", "p" * 22, "p" * 22),
    "SKETCHAUTH_PEPPER_FILE": ("pepper_file", "/run/secrets/pepper", "/run/secrets/pepper"),
    "SKETCHAUTH_PEPPER_PREVIOUS": ("pepper_previous", "old-one, old-two", ("old-one", "old-two")),
    "SKETCHAUTH_REQUIRE_PEPPER": ("require_pepper", "on", True),
    "SKETCHAUTH_DEPLOYMENT_ID": ("deployment_id", "eu-west.prod", "eu-west.prod"),
    "SKETCHAUTH_ROLLBACK_LEDGER": ("rollback_ledger", "/var/lib/marks/ledger.db", "/var/lib/marks/ledger.db"),
    "SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER": ("allow_unformatted_pepper", "yes", True),
    # the record key in a PKCS#11 token (sketchauth_service.keyring)
    "SKETCHAUTH_PKCS11_MODULE": ("pkcs11_module", "/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/softhsm/libsofthsm2.so"),
    "SKETCHAUTH_PKCS11_TOKEN_LABEL": ("pkcs11_token_label", "records", "records"),
    "SKETCHAUTH_PKCS11_PIN": ("pkcs11_pin", "1234-5678", "1234-5678"),
    "SKETCHAUTH_PKCS11_PIN_FILE": ("pkcs11_pin_file", "/run/secrets/pin", "/run/secrets/pin"),
    "SKETCHAUTH_PKCS11_KEY_LABEL": ("pkcs11_key_label", "sketchauth-records", "sketchauth-records"),
}

DEFAULTS: dict[str, Any] = {
    "database_url": "sqlite:///./sketchauth.db",
    "api_keys": (),
    "admin_keys": (),
    "api_key_file": None,
    "auth_failure_rate": 1.0,
    "auth_failure_burst": 10,
    "log_key": None,
    "access_log": True,
    "dev_mode": False,
    "hash_profile": "owasp",
    "allow_test_profile": False,
    "lockout_threshold": 5,
    "lockout_seconds": 30,
    "disable_threshold": 50,
    "max_body_bytes": 1 << 20,
    "body_timeout_seconds": 5.0,
    "max_in_flight": 16,
    "max_in_flight_per_key": 8,
    "header_timeout_seconds": 10.0,
    "max_connections": 1000,
    "max_sample_length": 4096,
    "max_samples": 16,
    "postgres_schema": "public",
    "host": "127.0.0.1",
    "port": 8000,
    "workers": 1,
    "hash_threads": 0,
    "pipelines_dir": None,
    "pin_min_entropy": None,
    "pepper": None,
    "pepper_file": None,
    "pepper_previous": (),
    "require_pepper": False,
    "deployment_id": "default",
    "rollback_ledger": None,
    "allow_unformatted_pepper": False,
    "pkcs11_module": None,
    "pkcs11_token_label": None,
    "pkcs11_pin": None,
    "pkcs11_pin_file": None,
    "pkcs11_key_label": None,
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SKETCHAUTH_* variable from outside, and every one restored afterwards (serve exports
    its flags for its workers)."""
    for variable in VARIABLES:
        monkeypatch.setenv(variable, "")
        monkeypatch.delenv(variable)


def test_defaults_are_the_documented_ones() -> None:
    assert Settings.from_env().model_dump() == DEFAULTS
    assert DEFAULTS["hash_profile"] == DEFAULT_HASH_PROFILE


def test_every_setting_has_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {field for field, _, _ in VARIABLES.values()} == set(Settings.model_fields)
    for variable, (field, raw, _) in VARIABLES.items():
        assert env_name(field) == variable
        monkeypatch.setenv(variable, raw)
    settings = Settings.from_env()
    for variable, (field, _, expected) in VARIABLES.items():
        assert getattr(settings, field) == expected, variable


def test_empty_variables_mean_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in VARIABLES:
        monkeypatch.setenv(variable, "")
    assert Settings.from_env().model_dump() == DEFAULTS


@pytest.mark.parametrize(
    ("variable", "raw", "needles"),
    [
        ("SKETCHAUTH_LOCKOUT_SECONDS", "soon", ["SKETCHAUTH_LOCKOUT_SECONDS", "integer", "'soon'", ">= 0"]),
        ("SKETCHAUTH_LOCKOUT_THRESHOLD", "0", ["SKETCHAUTH_LOCKOUT_THRESHOLD", "greater than or equal to 1"]),
        ("SKETCHAUTH_MAX_SAMPLES", "1", ["SKETCHAUTH_MAX_SAMPLES", "[2, 256]"]),
        ("SKETCHAUTH_MAX_SAMPLES", "257", ["SKETCHAUTH_MAX_SAMPLES", "[2, 256]"]),
        ("SKETCHAUTH_MAX_SAMPLE_LENGTH", "65537", ["SKETCHAUTH_MAX_SAMPLE_LENGTH", "[8, 65536]"]),
        ("SKETCHAUTH_MAX_BODY_BYTES", "100", ["SKETCHAUTH_MAX_BODY_BYTES", ">= 1024"]),
        ("SKETCHAUTH_BODY_TIMEOUT_SECONDS", "0", ["SKETCHAUTH_BODY_TIMEOUT_SECONDS", "(0, 300]"]),
        ("SKETCHAUTH_MAX_IN_FLIGHT", "0", ["SKETCHAUTH_MAX_IN_FLIGHT", "[1, 10000]"]),
        ("SKETCHAUTH_HEADER_TIMEOUT_SECONDS", "0", ["SKETCHAUTH_HEADER_TIMEOUT_SECONDS", "(0, 300]"]),
        ("SKETCHAUTH_MAX_CONNECTIONS", "15", ["SKETCHAUTH_MAX_CONNECTIONS", "[16, 1000000]"]),
        ("SKETCHAUTH_DEV_MODE", "banana", ["SKETCHAUTH_DEV_MODE", "boolean", "yes/no"]),
        ("SKETCHAUTH_PORT", "70000", ["SKETCHAUTH_PORT", "65535"]),
        ("SKETCHAUTH_PIN_MIN_ENTROPY", "lots", ["SKETCHAUTH_PIN_MIN_ENTROPY", "number of bits"]),
    ],
)
def test_malformed_values_name_the_variable_and_what_is_expected(
    monkeypatch: pytest.MonkeyPatch, variable: str, raw: str, needles: list[str]
) -> None:
    monkeypatch.setenv(variable, raw)
    with pytest.raises(SettingsError) as err:
        Settings.from_env()
    for needle in needles:
        assert needle in str(err.value)


def test_errors_never_quote_keys_or_the_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", "short,s3cret-key-value")
    monkeypatch.setenv("SKETCHAUTH_DATABASE_URL", "mysql://root:hunter2@db/x")
    settings = Settings.from_env()
    with pytest.raises(SettingsError) as err:
        settings.validate()
    assert "128 bits" in str(err.value) and "api-key-1" in str(err.value) and "short" not in str(err.value)
    with pytest.raises(SettingsError) as err:
        settings.replace(api_keys=("long-enough-0123456789-abcdef",)).validate()
    assert "SKETCHAUTH_DATABASE_URL" in str(err.value) and "hunter2" not in str(err.value)
    assert "hunter2" not in repr(settings) and "s3cret" not in repr(settings)
    with pytest.raises(SettingsError) as err:
        Settings(api_keys=[object()])
    assert "SKETCHAUTH_API_KEYS" in str(err.value) and "object" not in str(err.value)


def test_unknown_settings_and_bad_changes_are_refused() -> None:
    with pytest.raises(SettingsError, match="colour"):
        Settings(colour="blue")
    with pytest.raises(SettingsError, match="SKETCHAUTH_WORKERS"):
        Settings().replace(workers=0)
    assert Settings().replace(port=None, workers=3).workers == 3  # None: an unset flag


def test_validation_refuses_limits_over_the_cost_caps(tmp_path: Path) -> None:
    # Checked with the other settings, so `sketchauth serve` refuses before any worker starts.
    over = test_settings(tmp_path, max_samples=64, max_sample_length=65536)
    with pytest.raises(SettingsError, match="SKETCHAUTH_MAX_SAMPLES x SKETCHAUTH_MAX_SAMPLE_LENGTH"):
        over.validate()
    test_settings(tmp_path, max_samples=16, max_sample_length=16384).validate()  # 2^18: at the cap


def test_the_test_profile_is_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cheap = test_settings(tmp_path, allow_test_profile=False)
    with pytest.raises(SettingsError, match="SKETCHAUTH_ALLOW_TEST_PROFILE=1") as err:
        create_app(cheap)
    assert "--allow-insecure-test-profile" in str(err.value)
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", API_KEY)
    monkeypatch.setenv("SKETCHAUTH_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("SKETCHAUTH_HASH_PROFILE", "test")
    with pytest.raises(SettingsError, match="tests only"):
        Settings.from_env().validate()
    monkeypatch.setenv("SKETCHAUTH_ALLOW_TEST_PROFILE", "1")
    caplog.set_level(logging.WARNING, logger="sketchauth.service")
    with TestClient(create_app(Settings.from_env())) as client:
        assert client.get("/healthz").status_code == 200
    assert "INSECURE" in caplog.text and "'test'" in caplog.text


def test_serve_refuses_the_test_profile_without_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sketchauth_service import app as app_module

    from sketchauth.cli import main

    started: list[Settings] = []
    monkeypatch.setattr(app_module, "run_server", lambda settings, **_: started.append(settings) or 0)
    monkeypatch.setenv("SKETCHAUTH_API_KEYS", API_KEY)
    db = f"sqlite:///{tmp_path / 'serve.db'}"
    assert main(["serve", "--db", db, "--hash-profile", "test"]) == 2
    assert "for tests only" in capsys.readouterr().err and not started
    assert main(["serve", "--db", db, "--hash-profile", "test", "--allow-insecure-test-profile", "--port", "8123"]) == 0
    (settings,) = started
    assert settings.hash_profile == "test" and settings.allow_test_profile and settings.port == 8123
    assert "WARNING: INSECURE" in capsys.readouterr().err
    # The default profile starts without a word about it.
    monkeypatch.delenv("SKETCHAUTH_HASH_PROFILE")
    monkeypatch.delenv("SKETCHAUTH_ALLOW_TEST_PROFILE")
    assert main(["serve", "--db", db]) == 0
    assert started[-1].hash_profile == DEFAULT_HASH_PROFILE and "INSECURE" not in capsys.readouterr().err
