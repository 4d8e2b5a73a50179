"""Machine credentials: named, scoped API keys, reloaded without a restart, and a failure throttle.

Keys
----
A bearer key is a random string the operator generates (``python -c "import secrets;
print(secrets.token_urlsafe(32))"``). Only its SHA-256 digest is kept in memory after loading,
and a presented key is hashed and compared with :func:`hmac.compare_digest` against *every*
configured digest (no early exit), so the time taken does not depend on which key, how much of
one, or how long a key, matched.

Strength: a key must carry at least 128 bits if its characters were drawn uniformly from its
alphabet: at least 32 characters when it is all hexadecimal digits (4 bits each), at least 22
otherwise (a base64url character carries 6 bits; 22 × 6 = 132). Shorter keys stop the service
from starting, except in local mode (``SKETCHAUTH_DEV_MODE=1``), where they are accepted with a
warning. A length rule cannot see a key that is long but guessable (``aaaa…``): generate keys.

Scopes: ``enrol`` (enrol, read the report, revoke, and other changes to an enrolment, a PIN
change included), ``verify`` (verification and key release), ``pin`` (PIN change only: a kiosk
that lets people change their PIN needs neither to enrol nor to verify for others) and ``admin``
(``/v1/admin``: reset, audit trail, pepper). :mod:`sketchauth_service.api.deps` has the table per route.

Sources:

* ``SKETCHAUTH_API_KEYS=k1,k2``: as before; named ``api-key-1``, ``api-key-2``… in the order
  given, scopes ``enrol,verify``;
* ``SKETCHAUTH_ADMIN_KEYS=k1``: named ``admin-key-1``…, scopes ``admin,enrol,verify`` (an admin
  key is accepted wherever an API key is, as before);
* ``SKETCHAUTH_API_KEY_FILE=PATH``: one key per line, ``name:scope1,scope2:key``; blank lines
  and lines starting with ``#`` are ignored; names are ``[A-Za-z0-9._-]{1,64}`` and unique
  across all sources. The file is re-read when it changes (its modification time, size or inode:
  an atomic ``mv`` of a new file counts), checked at most once per second per process, so keys
  are added, removed or rotated without a restart. Emptying or deleting the file revokes every
  key it held (a warning in the log names them). A file that fails to parse or cannot be read
  on reload is ignored with an error in the log and the previous keys stay in force; at start,
  a missing, unreadable or malformed file stops the service.

Throttle
--------
:class:`FailureThrottle` is a token bucket per client address (an IPv6 address counts by its
/64 prefix, which one host usually controls whole): each failed authentication takes a token,
tokens come back at ``rate`` per second up to ``burst``. With no token left, every request of
that address that needs a key is answered ``429`` with ``Retry-After`` *before* its key is
looked at (otherwise the difference between 429 and 200 would still test keys at full speed).
Memory is bounded: at most ``max_clients`` addresses are tracked, the least recently failing
one is forgotten first. The buckets live in each worker process (``--workers N`` gives an
address up to N times the rate).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ADMIN",
    "ENROL",
    "PIN",
    "SCOPES",
    "VERIFY",
    "ApiKey",
    "FailureThrottle",
    "KeyFileError",
    "KeyRing",
    "KeySource",
    "digest",
    "key_weakness",
    "parse_key_file",
]

log = logging.getLogger("sketchauth.service")

ENROL, VERIFY, PIN, ADMIN = "enrol", "verify", "pin", "admin"
SCOPES = frozenset({ENROL, VERIFY, PIN, ADMIN})
#: Smallest key lengths giving 128 bits: all-hex keys, and any other alphabet (base64url and wider).
MIN_HEX_KEY_LENGTH = 32
MIN_KEY_LENGTH = 22
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_HEX = re.compile(r"[0-9a-fA-F]+")
#: How often (seconds) a process looks at the key file's modification time.
RELOAD_CHECK_SECONDS = 1.0


class KeyFileError(ValueError):
    """The key file cannot be read or has a malformed line (the message names the line, never a key)."""


def digest(key: str) -> bytes:
    """SHA-256 of the key's UTF-8 bytes: what is kept and compared."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def key_weakness(key: str) -> str | None:
    """Why ``key`` carries fewer than 128 bits by its length and alphabet, or ``None`` if it does not."""
    if _HEX.fullmatch(key):
        if len(key) < MIN_HEX_KEY_LENGTH:
            return f"a hexadecimal key needs at least {MIN_HEX_KEY_LENGTH} digits (128 bits), got {len(key)}"
        return None
    if len(key) < MIN_KEY_LENGTH:
        return f"a key needs at least {MIN_KEY_LENGTH} base64url characters (128 bits), got {len(key)}"
    return None


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One configured key: its name (written to the audit trail), scopes and SHA-256 digest."""

    name: str
    scopes: frozenset[str]
    digest: bytes
    #: Whether the key is shorter than 128 bits allow (accepted only in local mode).
    weak: bool = False

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The keys in force at one moment."""

    keys: tuple[ApiKey, ...]

    def match(self, presented: str) -> ApiKey | None:
        """The key whose digest equals the presented key's, comparing against every key."""
        given = digest(presented)
        found: ApiKey | None = None
        for key in self.keys:
            if hmac.compare_digest(given, key.digest):
                found = key
        return found

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(key.name for key in self.keys)


def _entry(name: str, scopes: frozenset[str], key: str) -> ApiKey:
    return ApiKey(name, scopes, digest(key), weak=key_weakness(key) is not None)


def env_keys(api_keys: tuple[str, ...], admin_keys: tuple[str, ...]) -> list[ApiKey]:
    """The keys of ``SKETCHAUTH_API_KEYS`` and ``SKETCHAUTH_ADMIN_KEYS`` with their default names and scopes."""
    keys = [_entry(f"api-key-{i}", frozenset({ENROL, VERIFY}), k) for i, k in enumerate(api_keys, 1)]
    keys += [_entry(f"admin-key-{i}", frozenset(SCOPES), k) for i, k in enumerate(admin_keys, 1)]
    return keys


def parse_key_file(text: str, *, source: str = "key file") -> list[ApiKey]:
    """Parse ``name:scope1,scope2:key`` lines (``#`` comments, blank lines ignored).

    :class:`KeyFileError` names the line and what to change; it never quotes a key.
    """
    keys: list[ApiKey] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(":", 2)
        if len(parts) != 3:
            raise KeyFileError(f"{source} line {number}: expected name:scope1,scope2:key")
        name, scope_text, key = (part.strip() for part in parts)
        if not _NAME.fullmatch(name):
            raise KeyFileError(f"{source} line {number}: a key name is 1 to 64 characters of A-Z a-z 0-9 . _ -")
        scopes = frozenset(s.strip() for s in scope_text.split(",") if s.strip())
        if not scopes or not scopes <= SCOPES:
            raise KeyFileError(
                f"{source} line {number}: scopes must be a comma-separated subset of {', '.join(sorted(SCOPES))}"
            )
        if not key:
            raise KeyFileError(f"{source} line {number}: the key is empty")
        keys.append(_entry(name, scopes, key))
    return keys


def _check_unique(keys: list[ApiKey]) -> None:
    seen: set[str] = set()
    digests: set[bytes] = set()
    for key in keys:
        if key.name in seen:
            raise KeyFileError(f"key name {key.name!r} is used twice: give every key its own name")
        if key.digest in digests:
            raise KeyFileError(f"key {key.name!r} repeats another key: give every client its own key")
        seen.add(key.name)
        digests.add(key.digest)


def _file_bytes(path: Path) -> bytes | None:
    """The key file's bytes (``None``: it does not exist); :class:`KeyFileError` if it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KeyFileError(f"cannot read the key file {path}: {type(exc).__name__}") from None


class KeySource:
    """The keys of the environment plus those of an optional key file, re-read when its content changes.

    The file is read whole at most once a second and compared by the SHA-256 of its bytes, never
    by time, size or inode: an in-place rewrite of the same size with its modification time set
    back is still a change, and the keys parsed are those of the very bytes hashed.
    """

    def __init__(
        self,
        api_keys: tuple[str, ...] = (),
        admin_keys: tuple[str, ...] = (),
        key_file: str | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fixed = env_keys(api_keys, admin_keys)
        self._path = Path(key_file) if key_file else None
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._checked = -math.inf
        #: SHA-256 of the key file's bytes last looked at (``None``: no file).
        self._seen: bytes | None = None
        self._ring = self._load(self._read())  # raises KeyFileError at start

    def _read(self) -> bytes | None:
        """The key file's bytes at start (a missing or unreadable file is :class:`KeyFileError`)."""
        if self._path is None:
            return None
        data = _file_bytes(self._path)
        if data is None:
            raise KeyFileError(f"cannot read the key file {self._path}: FileNotFoundError")
        return data

    def _load(self, data: bytes | None) -> KeyRing:
        """The ring of the environment's keys and those of ``data`` (the file's bytes; ``None``: no file)."""
        keys = list(self._fixed)
        if data is not None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise KeyFileError(f"cannot read the key file {self._path}: {type(exc).__name__}") from None
            keys += parse_key_file(text, source=str(self._path))
        _check_unique(keys)
        self._seen = None if data is None else hashlib.sha256(data).digest()
        return KeyRing(tuple(keys))

    def current(self) -> KeyRing:
        """The keys in force; re-reads the key file if its bytes changed since the last look (at most once a second)."""
        if self._path is None:
            return self._ring
        now = self._monotonic()
        if now - self._checked < RELOAD_CHECK_SECONDS:
            return self._ring
        with self._lock:
            if now - self._checked < RELOAD_CHECK_SECONDS:
                return self._ring
            self._checked = now
            self._reload()
        return self._ring

    def _reload(self) -> None:
        if self._path is None:
            return
        try:
            data = _file_bytes(self._path)  # deleted (None): its keys are revoked, not kept
            digest = None if data is None else hashlib.sha256(data).digest()
            if digest == self._seen:
                return
            self._seen = digest  # a refused version is logged once, not every second
            ring = self._load(data)
        except KeyFileError as exc:
            log.error("key file not reloaded, the previous keys stay in force: %s", exc)
            return
        before, after = set(self._ring.names), set(ring.names)
        self._ring = ring
        log.warning(
            "key file %s reloaded: %d keys (added %s; removed %s)",
            self._path,
            len(ring.keys),
            ", ".join(sorted(after - before)) or "none",
            ", ".join(sorted(before - after)) or "none",
        )

    @property
    def ring(self) -> KeyRing:
        return self._ring


@functools.lru_cache(maxsize=4096)
def client_bucket(host: str | None) -> str:
    """The throttling key of a client address: IPv4 as is, IPv6 by its /64 prefix (cached: parsed once per address)."""
    if not host:
        return "?"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class FailureThrottle:
    """A token bucket of failed authentications per client address, with bounded memory.

    Each address starts with ``burst`` tokens; a failure takes one; tokens come back at ``rate``
    per second, up to ``burst``. :meth:`retry_after` is the wait (seconds) before the address
    may present a key again: 0 while it has a token.
    """

    def __init__(self, rate: float, burst: int, max_clients: int = 10_000) -> None:
        if rate <= 0 or burst < 1 or max_clients < 1:
            raise ValueError("rate must be positive, burst and max_clients at least 1")
        self.rate = rate
        self.burst = burst
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        entry = self._buckets.get(client)
        if entry is None:
            return float(self.burst)
        tokens, at = entry
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def retry_after(self, client: str, now: float) -> float:
        """Seconds until ``client`` has a token again (0: it may try now)."""
        with self._lock:
            tokens = self._tokens(client, now)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate

    def fail(self, client: str, now: float) -> None:
        """Take one token for a failed authentication."""
        with self._lock:
            tokens = self._tokens(client, now) - 1
            self._buckets[client] = (max(tokens, 0.0), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)

    def __len__(self) -> int:
        return len(self._buckets)
