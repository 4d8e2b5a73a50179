"""Rollback marks kept outside the database: the one check that can tell a row went back in time.

A sealed record binds its per-user version (:mod:`sketchauth_service.store.records`), but a whole old row —
body, nonce and version together — is still a valid seal: whoever can write the database can put
back a user's row from before a PIN change, and the old PIN works again. Nothing *inside* the
database can tell, since the attacker rewrites that too. The ledger keeps, **in another file**
(another disk, host or append-only volume, out of reach of whoever can write the database), the
highest record version the service has written for each user:

    user_key = HMAC-SHA256(K, "user" ‖ user id)          (no raw user id in the file)
    mark     = (user_key, version, HMAC-SHA256(K, user_key ‖ version))

with ``K`` derived from the deployment's pepper or token key (``Sealer.derive(b"rollback ledger")``). After
every committed write the store raises the user's mark to the new version (a revocation, past the
deleted one); a read of a row whose version is below its mark is refused as rolled back. The
marks are advanced *after* the database commits, so a crash in between leaves the mark behind the
row (no false alarm), never ahead.

What it detects and what it cannot (the security model, docs/security.md): a restore of one row,
of several rows, or of the whole database to an older state, for every user written since the
ledger was configured; not a restore of the ledger together with the database (keep them apart),
not a user whose mark was deleted from the ledger (a missing mark reads as 0), and not changes of
the throttling state (kept in clear, for atomic SQL counting). A mark forged without ``K`` is
refused; marks made under an earlier pepper are re-made by the rotation for every rotated record.
Marks made under a key the ledger is told to ``also_read`` (an earlier pepper during a rotation, or
a pepper's legacy derivation after an upgrade) count as well; new marks are made under ``K`` only.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from sketchauth.pepper import Pepper, Sealer
from sketchauth_service.store.records import RecordIntegrityError

__all__ = ["RollbackLedger"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS marks (user_key BLOB PRIMARY KEY, version INTEGER NOT NULL, mac BLOB NOT NULL)"
_RAISE = """
INSERT INTO marks (user_key, version, mac) VALUES (?, ?, ?)
ON CONFLICT (user_key) DO UPDATE SET version = excluded.version, mac = excluded.mac
WHERE excluded.version > marks.version"""


class RollbackLedger:
    """Per-user high-water marks of record versions in a SQLite file of their own (WAL; several processes share it)."""

    def __init__(self, path: str | Path, pepper: Sealer, *, also_read: Sequence[Sealer] = ()) -> None:
        self.path = Path(path)
        self._key = pepper.derive(b"rollback ledger")
        read = [*also_read, *([pepper.legacy()] if isinstance(pepper, Pepper) else [])]
        self._read_keys = [k for k in dict.fromkeys(s.derive(b"rollback ledger") for s in read) if k != self._key]
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute(_SCHEMA)

    def _user_key(self, user_id: str, key: bytes | None = None) -> bytes:
        return hmac.new(key or self._key, b"user\x00" + user_id.encode(), hashlib.sha256).digest()

    def _mac(self, user_key: bytes, version: int, key: bytes | None = None) -> bytes:
        return hmac.new(key or self._key, user_key + version.to_bytes(8, "big"), hashlib.sha256).digest()

    def mark(self, user_id: str) -> int:
        """The highest version written for ``user_id`` (0: none); :class:`RecordIntegrityError` if forged."""
        return max(self._mark(user_id, key) for key in (self._key, *self._read_keys))

    def _mark(self, user_id: str, key: bytes) -> int:
        user_key = self._user_key(user_id, key)
        with self._lock:
            row = self._conn.execute("SELECT version, mac FROM marks WHERE user_key = ?", (user_key,)).fetchone()
        if row is None:
            return 0
        version, mac = row[0], row[1]
        if not (isinstance(version, int) and 0 <= version < 1 << 63 and isinstance(mac, bytes)):
            raise RecordIntegrityError("the rollback ledger's mark for this user was altered")
        if not hmac.compare_digest(mac, self._mac(user_key, version, key)):
            raise RecordIntegrityError("the rollback ledger's mark for this user was altered")
        return version

    def advance(self, user_id: str, version: int) -> None:
        """Raise ``user_id``'s mark to ``version`` (a lower one leaves it as it is)."""
        user_key = self._user_key(user_id)
        with self._lock:
            self._conn.execute(_RAISE, (user_key, version, self._mac(user_key, version)))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
