"""Service settings: one typed, frozen ``pydantic-settings`` model read from ``SKETCHAUTH_*`` variables.

Every field below is read from the environment variable named in its table row (the field
name upper-cased behind ``SKETCHAUTH_`` unless an alias is given); ``sketchauth serve`` flags
override the environment. Nothing is read at import time: whoever builds the app (the CLI,
tests) calls :meth:`Settings.from_env` (or constructs ``Settings(...)``, which also reads the
environment for the fields it is not given), so importing :mod:`sketchauth_service` has no side effects.

Two levels of checking, each with a :class:`SettingsError` that names the variable and says
what is expected:

* at construction, each value on its own: types, ranges (``SKETCHAUTH_LOCKOUT_SECONDS=soon`` is
  refused, as is ``SKETCHAUTH_MAX_SAMPLES=0``); an empty variable means the default;
* :meth:`Settings.validate`, whether the service may *start*: an API key is required outside
  local mode (``SKETCHAUTH_DEV_MODE=1``), keys of at least 128 bits (22 base64url characters or
  32 hexadecimal digits; shorter ones only in local mode), a readable key file, a known argon2 profile,
  the ``test`` argon2 profile only when explicitly allowed, thresholds in order, a shareable
  database URL, a plain PostgreSQL schema name.

Variables (defaults in brackets):

* ``SKETCHAUTH_DATABASE_URL`` [``sqlite:///./sketchauth.db``]: ``sqlite:///PATH`` (not
  ``:memory:``: workers would not share it) or ``postgresql://user@host:port/db``;
* ``SKETCHAUTH_API_KEYS``: comma-separated bearer keys; the service refuses to start without one
  unless ``SKETCHAUTH_DEV_MODE=1`` (then it warns and accepts no key at all: local use only);
* ``SKETCHAUTH_ADMIN_KEYS``: comma-separated keys that may also use ``/v1/admin`` (reset a
  disabled biometric, read a user's audit trail); admin keys are accepted wherever API keys are;
* ``SKETCHAUTH_API_KEY_FILE``: named, scoped keys, one ``name:scope1,scope2:key`` line each
  (scopes ``enrol``, ``verify``, ``admin``), re-read when the file changes
  (:mod:`sketchauth_service.credentials`); environment keys are named ``api-key-N`` / ``admin-key-N``;
* ``SKETCHAUTH_LOG_KEY``: secret key of the keyed hash (HMAC-SHA256) that stands for user ids in
  the request log; unset, each process draws a random one (lines correlate within a process only);
* ``SKETCHAUTH_ACCESS_LOG`` [on]: one JSON line per request on standard error
  (:mod:`sketchauth_service.observability`; ``sketchauth serve --no-access-log`` turns it off);
* ``SKETCHAUTH_AUTH_FAILURE_RATE`` [1 per second], ``SKETCHAUTH_AUTH_FAILURE_BURST`` [10]: the
  token bucket of failed authentications per client address (``429`` when it is empty);
* ``SKETCHAUTH_DEV_MODE`` [off]: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``;
* ``SKETCHAUTH_HASH_PROFILE`` [``owasp``, :data:`sketchauth.enrolment.DEFAULT_HASH_PROFILE`]:
  a key of ``sketchauth.enrolment.HASH_PROFILES``;
* ``SKETCHAUTH_ALLOW_TEST_PROFILE`` [off]: the ``test`` profile (argon2id t=1, m=8 KiB: an
  offline guess costs microseconds) is refused unless this is on; tests and local experiments only;
* ``SKETCHAUTH_LOCKOUT_THRESHOLD`` [5], ``SKETCHAUTH_LOCKOUT_SECONDS`` [30],
  ``SKETCHAUTH_DISABLE_THRESHOLD`` [50]: NIST SP 800-63B-4 biometric throttling;
* ``SKETCHAUTH_MAX_BODY_BYTES`` [1 MiB], ``SKETCHAUTH_MAX_SAMPLE_LENGTH`` [4096 numbers per
  sample, at most 65,536], ``SKETCHAUTH_MAX_SAMPLES`` [16 samples per enrolment, at most 256]:
  the request limits, published as they are enforced (``GET /v1/schemes`` and the OpenAPI schema);
* ``SKETCHAUTH_HASH_THREADS`` [0: one per CPU]: argon2 hashes one process runs at once;
* ``SKETCHAUTH_MAX_IN_FLIGHT`` [16], ``SKETCHAUTH_MAX_IN_FLIGHT_PER_KEY`` [8]: requests one worker
  handles at once, in all and per API key; beyond, ``503`` / ``429`` with ``Retry-After``
  (:mod:`sketchauth_service.admission`);
* ``SKETCHAUTH_HEADER_TIMEOUT_SECONDS`` [10]: a connection whose request header section is not
  complete this long after its first byte (or after the connection opened) is answered ``408``
  and closed; ``SKETCHAUTH_BODY_TIMEOUT_SECONDS`` [5] does the same for the body;
* ``SKETCHAUTH_MAX_CONNECTIONS`` [1000]: open connections per worker, also held 64 below the
  process's file-descriptor limit; a new connection beyond it closes the one that has waited
  longest for its header section, or is itself closed (:mod:`sketchauth_service.bodies`);
* ``SKETCHAUTH_SCHEMA`` [``public``]: PostgreSQL schema to keep the tables in (tests use a
  unique one per run);
* ``SKETCHAUTH_PIPELINES``: a directory of feature-pipeline JSON files (``sketchauth features fit
  --pipelines DIR``), offered by name as ``"scheme": "pipeline:<file stem>"``; loaded once at
  start-up (:mod:`sketchauth_service.pipelines`), and a bad file stops the service from starting;
* ``SKETCHAUTH_PIN_MIN_ENTROPY``: the min-entropy in bits the deployment declares for its PINs
  (e.g. ``13.29`` for uniformly chosen 4-digit PINs); with it the entropy report of a PIN
  enrolment shows the loss diverted to the PIN, without it those bounds stay open;
* ``SKETCHAUTH_PEPPER``: the deployment's pepper (:mod:`sketchauth_service.pepper`), a secret made by
  ``sketchauth pepper new`` and kept out of the database: every stored record is sealed under
  keys derived from it (argon2id, then HKDF), so two deployments' databases cannot be linked and
  a stolen one tests no guess cheaply; never logged (the settings log shows its public id only).
  ``SKETCHAUTH_PEPPER_FILE``: the same, read from a file (first line) instead;
  ``SKETCHAUTH_ALLOW_UNFORMATTED_PEPPER`` [off]: accept a pepper text of another form (an older
  deployment's), logged as INSECURE;
* ``SKETCHAUTH_PKCS11_MODULE``, ``SKETCHAUTH_PKCS11_TOKEN_LABEL``, ``SKETCHAUTH_PKCS11_PIN_FILE`` (or
  ``SKETCHAUTH_PKCS11_PIN``), ``SKETCHAUTH_PKCS11_KEY_LABEL`` [sketchauth-records]: seal every record
  through a non-extractable key inside a PKCS#11 token instead of a pepper (:mod:`sketchauth_service.keyring`);
* ``SKETCHAUTH_PEPPER_PREVIOUS``: comma-separated earlier peppers, read-only, during a rotation
  (records they wrapped stay readable until ``sketchauth pepper rotate`` re-wraps them);
* ``SKETCHAUTH_REQUIRE_PEPPER`` [off]: refuse to start without a pepper;
* ``SKETCHAUTH_DEPLOYMENT_ID`` [default]: the deployment's name, bound into every sealed record;
* ``SKETCHAUTH_ROLLBACK_LEDGER``: a file of per-user rollback marks outside the database (with a pepper);
* ``SKETCHAUTH_HOST`` [127.0.0.1], ``SKETCHAUTH_PORT`` [8000], ``SKETCHAUTH_WORKERS`` [1]: where
  ``sketchauth serve`` listens and how many processes it runs.
"""

from __future__ import annotations

import math
import os
import re
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sketchauth.enrolment import DEFAULT_HASH_PROFILE, HASH_PROFILES
from sketchauth_service.credentials import MIN_HEX_KEY_LENGTH, MIN_KEY_LENGTH, KeyFileError, KeySource
from sketchauth_service.errors import SettingsError
from sketchauth_service.limits import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_SAMPLE_LENGTH,
    DEFAULT_MAX_SAMPLES,
    RequestLimits,
)
from sketchauth_service.pepper import PepperRing, PepperSettingsError
from sketchauth_service.store.postgres import valid_schema_name

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_MAX_SAMPLE_LENGTH",
    "ENV_PREFIX",
    "MAX_PIN_MIN_ENTROPY",
    "MAX_SAMPLES_CAP",
    "MAX_SAMPLE_LENGTH_CAP",
    "MIN_SAMPLES_SETTING",
    "MIN_SAMPLE_LENGTH_SETTING",
    "TEST_PROFILE",
    "Settings",
    "SettingsError",
]

ENV_PREFIX = "SKETCHAUTH_"
DEFAULT_DATABASE_URL = "sqlite:///./sketchauth.db"
#: The argon2 profile that is refused unless explicitly allowed (t=1, m=8 KiB).
TEST_PROFILE = "test"
#: Cap on a declared PIN min-entropy: the service takes PINs of at most 256 characters.
MAX_PIN_MIN_ENTROPY = 8 * 256
#: Enrolment captures per request (``SKETCHAUTH_MAX_SAMPLES``): default (:mod:`.limits`), smallest and
#: largest setting. The smallest is 2 because the multi-capture schemes (asymmetric interval,
#: weighted vault) enrol from at least two.
MIN_SAMPLES_SETTING = 2
MAX_SAMPLES_CAP = 256
#: Numbers per sample (``SKETCHAUTH_MAX_SAMPLE_LENGTH``): default (:mod:`.limits`), smallest and largest
#: setting. The smallest leaves room for every scheme's smallest parameters (a code-offset sketch
#: needs n >= 3 bytes to correct one error).
MIN_SAMPLE_LENGTH_SETTING = 8
MAX_SAMPLE_LENGTH_CAP = 1 << 16

#: Fields whose values are never quoted in an error message.
_SECRET_FIELDS = frozenset(
    {"api_keys", "admin_keys", "database_url", "log_key", "pepper", "pepper_previous", "pkcs11_pin"}
)

KeyList = Annotated[tuple[str, ...], NoDecode]


class Settings(BaseSettings):
    """Everything the service can be told. Build with :meth:`from_env`, adjust with :meth:`replace`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
    )

    database_url: str = Field(
        DEFAULT_DATABASE_URL, repr=False, description="sqlite:///PATH or postgresql://user@host:port/db"
    )
    api_keys: KeyList = Field((), repr=False, description="comma-separated bearer keys of at least 128 bits each")
    admin_keys: KeyList = Field((), repr=False, description="comma-separated admin keys (may also reset)")
    api_key_file: str | None = Field(None, description="file of name:scope1,scope2:key lines, re-read when it changes")
    auth_failure_rate: float = Field(
        1.0, gt=0, le=1000, description="failed authentications per second a client address gets back, in (0, 1000]"
    )
    auth_failure_burst: int = Field(
        10, ge=1, le=10_000, description="failed authentications a client address may make at once, in [1, 10000]"
    )
    log_key: str | None = Field(
        None, repr=False, description="secret key of the keyed hash of user ids in the request log"
    )
    access_log: bool = Field(
        True, description="one JSON line per request on standard error (1/0, true/false, yes/no, on/off)"
    )
    dev_mode: bool = Field(False, description="local mode: no API key needed (1/0, true/false, yes/no, on/off)")
    hash_profile: str = Field(
        DEFAULT_HASH_PROFILE, description="argon2id profile name (sketchauth.enrolment.HASH_PROFILES)"
    )
    allow_test_profile: bool = Field(
        False, description="allow the insecure 'test' argon2 profile (1/0, true/false, yes/no, on/off)"
    )
    lockout_threshold: int = Field(
        5, ge=1, description="consecutive failures before waits are imposed, an integer >= 1"
    )
    lockout_seconds: int = Field(30, ge=0, description="wait after each further failure in seconds, an integer >= 0")
    disable_threshold: int = Field(
        50, ge=1, description="consecutive failures that disable the biometric, an integer >= 1"
    )
    max_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES, ge=1024, description="largest request body in bytes, an integer >= 1024"
    )
    body_timeout_seconds: float = Field(
        5.0, gt=0, le=300, description="longest time to receive a request body in seconds, a number in (0, 300]"
    )
    # -- load (sketchauth_service.admission, sketchauth_service.bodies) -----------------------------------------
    max_in_flight: int = Field(
        16, ge=1, le=10_000, description="requests one worker handles at once (503 beyond), an integer in [1, 10000]"
    )
    max_in_flight_per_key: int = Field(
        8,
        ge=1,
        le=10_000,
        description="requests of one API key one worker handles at once (429 beyond), an integer in [1, 10000]",
    )
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="longest time to receive a request's header section in seconds, a number in (0, 300]",
    )
    max_connections: int = Field(
        1000,
        ge=16,
        le=1_000_000,
        description="open connections one worker keeps (also held under its file-descriptor limit), "
        "an integer in [16, 1000000]",
    )
    max_sample_length: int = Field(
        DEFAULT_MAX_SAMPLE_LENGTH,
        ge=MIN_SAMPLE_LENGTH_SETTING,
        le=MAX_SAMPLE_LENGTH_CAP,
        description=f"numbers per sample, an integer in [{MIN_SAMPLE_LENGTH_SETTING}, {MAX_SAMPLE_LENGTH_CAP}]",
    )
    max_samples: int = Field(
        DEFAULT_MAX_SAMPLES,
        ge=MIN_SAMPLES_SETTING,
        le=MAX_SAMPLES_CAP,
        description=f"enrolment captures per request, an integer in [{MIN_SAMPLES_SETTING}, {MAX_SAMPLES_CAP}]",
    )
    postgres_schema: str = Field(
        "public", validation_alias="SKETCHAUTH_SCHEMA", description="PostgreSQL schema: a lower-case identifier"
    )
    host: str = Field("127.0.0.1", description="address sketchauth serve listens on")
    port: int = Field(8000, ge=0, le=65535, description="port sketchauth serve listens on, an integer in [0, 65535]")
    workers: int = Field(1, ge=1, description="worker processes of sketchauth serve, an integer >= 1")
    #: Hashes (decode + argon2) one process runs at once; 0: one per CPU.
    hash_threads: int = Field(
        0, ge=0, description="argon2 hashes one process runs at once, an integer >= 0 (0: one per CPU)"
    )
    #: Directory of pipeline configurations offered by name (``None``: no pipelines).
    pipelines_dir: str | None = Field(
        None, validation_alias="SKETCHAUTH_PIPELINES", description="directory of feature-pipeline <name>.json files"
    )
    #: Declared min-entropy of PINs in bits (``None``: undeclared, PIN bounds stay open).
    pin_min_entropy: float | None = Field(
        None,
        description=f"declared min-entropy of PINs, a number of bits in (0, {MAX_PIN_MIN_ENTROPY}]",
    )

    # -- pepper (sketchauth_service.pepper) ---------------------------------------------------------------
    pepper: str | None = Field(
        None,
        repr=False,
        description="the deployment's pepper: a machine-drawn secret judged to carry at least 128 bits "
        "(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
    )
    pepper_file: str | None = Field(None, description="file whose first line is the pepper")
    pepper_previous: KeyList = Field(
        (), repr=False, description="comma-separated earlier peppers, read-only during a rotation"
    )
    require_pepper: bool = Field(
        False, description="refuse to start without a pepper (1/0, true/false, yes/no, on/off)"
    )
    deployment_id: str = Field(
        "default",
        pattern=r"^[A-Za-z0-9._-]{1,64}$",
        description="this deployment's name, bound into every sealed record (1-64 of A-Z a-z 0-9 . _ -)",
    )
    rollback_ledger: str | None = Field(
        None, description="SQLite file of rollback marks, kept outside the database's storage (needs a pepper)"
    )
    allow_unformatted_pepper: bool = Field(
        False,
        description="accept a SKETCHAUTH_PEPPER not made by 'sketchauth pepper new' (an older deployment's; "
        "logged as INSECURE at start)",
    )
    pkcs11_module: str | None = Field(None, description="PKCS#11 module (.so) of the token holding the record key")
    pkcs11_token_label: str | None = Field(None, description="label of the token holding the record key")
    pkcs11_pin: str | None = Field(None, repr=False, description="the token's user PIN (prefer the PIN file)")
    pkcs11_pin_file: str | None = Field(None, description="file whose first line is the token's user PIN")
    pkcs11_key_label: str | None = Field(None, description="label of the record key in the token [sketchauth-records]")
    # -- end pepper ----------------------------------------------------------------------------

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None

    # -- parsing --------------------------------------------------------------------------------
    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        """Surrounding blanks are ignored (an empty variable is the same as an unset one)."""
        return value.strip() if isinstance(value, str) else value

    @field_validator("api_keys", "admin_keys", "pepper_previous", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(key.strip() for key in value.split(",") if key.strip())
        return value

    @field_validator("pin_min_entropy")
    @classmethod
    def _bits_in_range(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and 0 < value <= MAX_PIN_MIN_ENTROPY):
            raise ValueError("out of range")
        return value

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_env(cls) -> Settings:
        """The settings the ``SKETCHAUTH_*`` environment variables give (:class:`SettingsError` if malformed)."""
        return cls()

    def replace(self, **changes: object) -> Settings:
        """A checked copy with some fields changed (``None`` values are ignored: unset CLI flags)."""
        values = self.model_dump()
        values.update({k: v for k, v in changes.items() if v is not None})
        # Every field is given, so the environment cannot override any of them.
        return type(self)(**values)

    def effective_hash_threads(self) -> int:
        """How many verifications one process hashes at once.

        More than the process's share of the CPUs does not add throughput: argon2 is CPU- and
        memory-bound, so extra concurrent hashes only thrash caches and stretch every latency.
        Requests beyond it wait their turn in the thread pool.
        """
        if self.hash_threads:
            return self.hash_threads
        # Not CPUs / workers: connections need not spread evenly over the workers, and a worker
        # held to its share would idle a core while another queues.
        return os.cpu_count() or 1

    def key_source(self) -> KeySource:
        """The API keys of the environment and the key file (:class:`SettingsError` if the file is bad)."""
        try:
            return KeySource(self.api_keys, self.admin_keys, self.api_key_file)
        except KeyFileError as exc:
            raise SettingsError(f"SKETCHAUTH_API_KEY_FILE: {exc}") from None

    def public_view(self) -> dict[str, Any]:
        """The effective settings without secrets: keys by name and scopes, the database URL without a password."""
        values = self.model_dump(
            exclude={"api_keys", "admin_keys", "log_key", "pepper", "pepper_previous", "pkcs11_pin"}
        )
        values["database_url"] = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", self.database_url)
        values["log_key"] = "set" if self.log_key else "random per process"
        values.update(self._pepper_view())  # pepper: ids only, never the secrets
        values["api_keys"] = [{"name": key.name, "scopes": sorted(key.scopes)} for key in self.key_source().ring.keys]
        return values

    @property
    def insecure_hash_profile(self) -> bool:
        """Whether the argon2 profile is the ``test`` one (allowed only with ``allow_test_profile``)."""
        return self.hash_profile == TEST_PROFILE

    # -- start-up checks ------------------------------------------------------------------------
    def validate(self) -> Settings:  # type: ignore[override]  # pydantic's deprecated classmethod
        """Raise :class:`SettingsError` unless the service may start with these settings."""
        keys = self.key_source()  # reads and checks the key file
        if not keys.ring.keys and not self.dev_mode:
            raise SettingsError(
                "no API key: set SKETCHAUTH_API_KEYS=key1,key2 or SKETCHAUTH_API_KEY_FILE=PATH "
                "(or SKETCHAUTH_DEV_MODE=1 for local use only)"
            )
        weak = [key.name for key in keys.ring.keys if key.weak]
        if weak and not self.dev_mode:
            raise SettingsError(
                f"API keys {', '.join(weak)} carry fewer than 128 bits: a key needs at least {MIN_KEY_LENGTH} "
                f"base64url characters or {MIN_HEX_KEY_LENGTH} hexadecimal digits; generate one with "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))' "
                "(weaker keys are accepted only with SKETCHAUTH_DEV_MODE=1, for local use)"
            )
        if self.hash_profile not in HASH_PROFILES:
            raise SettingsError(f"unknown argon2 profile {self.hash_profile!r}; known: {', '.join(HASH_PROFILES)}")
        if self.insecure_hash_profile and not self.allow_test_profile:
            raise SettingsError(_TEST_PROFILE_REFUSED)
        if self.disable_threshold < self.lockout_threshold:
            raise SettingsError("SKETCHAUTH_DISABLE_THRESHOLD must be at least SKETCHAUTH_LOCKOUT_THRESHOLD")
        if not self.database_url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise SettingsError("SKETCHAUTH_DATABASE_URL must be sqlite:///PATH or postgresql://...")
        if self.database_url in {"sqlite:///:memory:", "sqlite://"}:
            raise SettingsError("an in-memory SQLite database cannot be shared; give a file path")
        ring = self.pepper_ring()  # pepper: refuses a weak, unreadable or required-but-missing pepper
        if self.rollback_ledger and ring.current is None:
            raise SettingsError("SKETCHAUTH_ROLLBACK_LEDGER needs a pepper: its marks are keyed by SKETCHAUTH_PEPPER")
        RequestLimits.of(self)  # the cost caps: refused here, before any worker builds the app
        if not valid_schema_name(self.postgres_schema):
            raise SettingsError(
                "SKETCHAUTH_SCHEMA must be a lower-case identifier of at most 63 characters: a-z, 0-9 and _, "
                "not starting with a digit"
            )
        return self

    # -- pepper ---------------------------------------------------------------------------------
    def pepper_ring(self) -> PepperRing:
        """The configured peppers (:class:`SettingsError` if weak, unreadable or required but missing)."""
        try:
            return PepperRing.from_settings(self)
        except PepperSettingsError as exc:
            raise SettingsError(str(exc)) from None

    def _pepper_view(self) -> dict[str, Any]:
        try:
            ring = self.pepper_ring()
        except SettingsError:
            return {"pepper": "invalid", "pepper_previous": [], "require_pepper": self.require_pepper}
        return {
            "pepper": f"set (id {ring.current.id})" if ring.current else "not set",
            "pepper_previous": [f"id {p.id}" for p in ring.previous],
        }


_TEST_PROFILE_REFUSED = (
    f"argon2 profile {TEST_PROFILE!r} (t=1, m=8 KiB) makes an offline guess against a stolen database cost "
    "microseconds: it is for tests only. Use 'owasp' or 'rfc9106-low-memory', or allow it explicitly with "
    "SKETCHAUTH_ALLOW_TEST_PROFILE=1 (sketchauth serve --allow-insecure-test-profile)"
)
#: What the service logs (and ``sketchauth serve`` prints) when the test profile is allowed.
TEST_PROFILE_WARNING = (
    f"INSECURE: argon2 profile {TEST_PROFILE!r} (t=1, m=8 KiB) is in use because it was explicitly allowed; "
    "stored hashes can be attacked offline almost for free. Never use it with real users."
)


def env_name(field: str) -> str:
    """The environment variable of a settings field (``postgres_schema`` → ``SKETCHAUTH_SCHEMA``)."""
    alias = Settings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + field.upper()


def _field_of(loc: tuple[Any, ...]) -> str | None:
    """The field an error location names (a field name or an env-var alias)."""
    if not loc:
        return None
    head = str(loc[0])
    if head in Settings.model_fields:
        return head
    for name, info in Settings.model_fields.items():
        if info.validation_alias == head:
            return name
    return None


def _describe(exc: ValidationError) -> str:
    """One line per bad setting: the variable, what is wrong, what is expected (secrets never quoted)."""
    lines = []
    for err in exc.errors():
        field = _field_of(tuple(err.get("loc", ())))
        if field is None:
            lines.append(f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err['msg']}")
            continue
        message = err["msg"].removeprefix("Value error, ")
        if field not in _SECRET_FIELDS and "input" in err and err["type"] != "extra_forbidden":
            message += f" (got {err['input']!r})"
        description = Settings.model_fields[field].description
        lines.append(f"{env_name(field)}: {message}" + (f"; expected {description}" if description else ""))
    return "; ".join(lines)
