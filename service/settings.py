"""Service settings: one typed, frozen object read from the environment (SPEC §5).

Every knob has a ``SKETCHAUTH_*`` environment variable; ``sketchauth serve`` flags override the
environment. Nothing is read at import time: :meth:`Settings.from_env` is called by whoever
builds the app (the CLI, tests), so importing :mod:`service` has no side effects.

Variables:

* ``SKETCHAUTH_DATABASE_URL``: ``sqlite:///./sketchauth.db`` (default; ``sqlite:///:memory:``
  is not allowed because workers would not share it) or ``postgresql://user@host:port/db``;
* ``SKETCHAUTH_API_KEYS``: comma-separated bearer keys; the service refuses to start without one
  unless ``SKETCHAUTH_DEV_MODE=1`` (then it warns and accepts no key at all: local use only);
* ``SKETCHAUTH_ADMIN_KEYS``: comma-separated keys that may also reset a disabled biometric
  (``POST /v1/admin/users/{id}/reset``); admin keys are accepted wherever API keys are;
* ``SKETCHAUTH_HASH_PROFILE``: argon2id profile, a key of ``sketchauth.enrolment.HASH_PROFILES``
  (default ``owasp``; see README for the trade-off against ``rfc9106-low-memory``);
* ``SKETCHAUTH_LOCKOUT_THRESHOLD`` (5), ``SKETCHAUTH_LOCKOUT_SECONDS`` (30),
  ``SKETCHAUTH_DISABLE_THRESHOLD`` (50): NIST SP 800-63B-4 biometric throttling;
* ``SKETCHAUTH_MAX_BODY_BYTES`` (1 MiB), ``SKETCHAUTH_MAX_SAMPLE_LENGTH`` (4096 numbers per
  sample), ``SKETCHAUTH_MAX_SAMPLES`` (16 samples per enrolment);
* ``SKETCHAUTH_HASH_THREADS``: argon2 hashes one process runs at once (default: one per CPU);
* ``SKETCHAUTH_SCHEMA``: PostgreSQL schema to keep the tables in (default ``public``; tests use a
  unique one per run);
* ``SKETCHAUTH_PIPELINES``: a directory of feature-pipeline JSON files (``sketchauth features fit
  --pipelines DIR``), offered by name as ``"scheme": "pipeline:<file stem>"``; loaded once at
  start-up (:mod:`service.pipelines`), and a bad file stops the service from starting;
* ``SKETCHAUTH_PIN_MIN_ENTROPY``: the min-entropy in bits the deployment declares for its PINs
  (e.g. ``13.29`` for uniformly chosen 4-digit PINs); with it the entropy report of a PIN
  enrolment shows the loss diverted to the PIN, without it those bounds stay open.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Settings", "SettingsError", "DEFAULT_DATABASE_URL"]

DEFAULT_DATABASE_URL = "sqlite:///./sketchauth.db"
#: Cap on a declared PIN min-entropy: the service takes PINs of at most 256 characters.
MAX_PIN_MIN_ENTROPY = 8 * 256


class SettingsError(ValueError):
    """A setting is missing or malformed; the service must not start."""


def _int(env: Mapping[str, str], name: str, default: int, low: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < low:
        raise SettingsError(f"{name} must be at least {low}, got {value}")
    return value


def _bits(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of bits, got {raw!r}") from None


def _keys(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in env.get(name, "").split(",") if k.strip())


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the service can be told. Build with :meth:`from_env`, adjust with :meth:`replace`."""

    database_url: str = DEFAULT_DATABASE_URL
    api_keys: tuple[str, ...] = ()
    admin_keys: tuple[str, ...] = ()
    dev_mode: bool = False
    hash_profile: str = "owasp"
    lockout_threshold: int = 5
    lockout_seconds: int = 30
    disable_threshold: int = 50
    max_body_bytes: int = 1 << 20
    max_sample_length: int = 4096
    max_samples: int = 16
    postgres_schema: str = "public"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    #: Hashes (decode + argon2) one process runs at once; 0: one per CPU.
    hash_threads: int = 0
    #: Directory of pipeline configurations offered by name (``None``: no pipelines).
    pipelines_dir: str | None = None
    #: Declared min-entropy of PINs in bits (``None``: undeclared, PIN bounds stay open).
    pin_min_entropy: float | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the ``SKETCHAUTH_*`` variables (``os.environ`` by default)."""
        env = os.environ if env is None else env
        return cls(
            database_url=env.get("SKETCHAUTH_DATABASE_URL", "").strip() or DEFAULT_DATABASE_URL,
            api_keys=_keys(env, "SKETCHAUTH_API_KEYS"),
            admin_keys=_keys(env, "SKETCHAUTH_ADMIN_KEYS"),
            dev_mode=_flag(env, "SKETCHAUTH_DEV_MODE"),
            hash_profile=env.get("SKETCHAUTH_HASH_PROFILE", "").strip() or "owasp",
            lockout_threshold=_int(env, "SKETCHAUTH_LOCKOUT_THRESHOLD", 5),
            lockout_seconds=_int(env, "SKETCHAUTH_LOCKOUT_SECONDS", 30, low=0),
            disable_threshold=_int(env, "SKETCHAUTH_DISABLE_THRESHOLD", 50),
            max_body_bytes=_int(env, "SKETCHAUTH_MAX_BODY_BYTES", 1 << 20, low=1024),
            max_sample_length=_int(env, "SKETCHAUTH_MAX_SAMPLE_LENGTH", 4096),
            max_samples=_int(env, "SKETCHAUTH_MAX_SAMPLES", 16),
            postgres_schema=env.get("SKETCHAUTH_SCHEMA", "").strip() or "public",
            hash_threads=_int(env, "SKETCHAUTH_HASH_THREADS", 0, low=0),
            pipelines_dir=env.get("SKETCHAUTH_PIPELINES", "").strip() or None,
            pin_min_entropy=_bits(env, "SKETCHAUTH_PIN_MIN_ENTROPY"),
        )

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

    def replace(self, **changes: object) -> Settings:
        """A copy with some fields changed (``None`` values are ignored: unset CLI flags)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def validate(self) -> Settings:
        """Raise :class:`SettingsError` unless the service may start with these settings."""
        from sketchauth.enrolment import HASH_PROFILES

        if not self.api_keys and not self.dev_mode:
            raise SettingsError(
                "no API key: set SKETCHAUTH_API_KEYS=key1,key2 (or SKETCHAUTH_DEV_MODE=1 for local use only)"
            )
        if any(len(k) < 6 for k in self.api_keys + self.admin_keys):
            raise SettingsError("every API key must be at least 6 characters long")
        if self.hash_profile not in HASH_PROFILES:
            raise SettingsError(f"unknown argon2 profile {self.hash_profile!r}; known: {', '.join(HASH_PROFILES)}")
        if self.disable_threshold < self.lockout_threshold:
            raise SettingsError("SKETCHAUTH_DISABLE_THRESHOLD must be at least SKETCHAUTH_LOCKOUT_THRESHOLD")
        if not (self.database_url.startswith("sqlite:///") or self.database_url.startswith(("postgresql://", "postgres://"))):
            raise SettingsError("SKETCHAUTH_DATABASE_URL must be sqlite:///PATH or postgresql://...")
        if self.database_url in {"sqlite:///:memory:", "sqlite://"}:
            raise SettingsError("an in-memory SQLite database cannot be shared; give a file path")
        from service.store.postgres import valid_schema_name

        if not valid_schema_name(self.postgres_schema):
            raise SettingsError(
                "SKETCHAUTH_SCHEMA must be a lower-case identifier of at most 63 characters: a-z, 0-9 and _, "
                "not starting with a digit"
            )
        if self.pin_min_entropy is not None and not (
            math.isfinite(self.pin_min_entropy) and 0 < self.pin_min_entropy <= MAX_PIN_MIN_ENTROPY
        ):
            raise SettingsError(
                f"SKETCHAUTH_PIN_MIN_ENTROPY must be a number of bits in (0, {MAX_PIN_MIN_ENTROPY}], "
                f"got {self.pin_min_entropy!r}"
            )
        return self
