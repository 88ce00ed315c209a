"""The scheduler's memory of spent dispatches: a SQLite file under ``stateDir`` so a replay is refused
even after a restart, with one atomic insert deciding which of two racing deliveries wins.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from pathlib import Path

from seepient.protocol.errors import StorageError

NONCE_DATABASE = "nonces.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spent_dispatch (
    nonce TEXT PRIMARY KEY,
    dispatch_id TEXT NOT NULL UNIQUE,
    expires_at TEXT NOT NULL,
    spent_at TEXT NOT NULL
)
"""


class NonceStoreError(StorageError):
    """The nonce store cannot be opened or written; the scheduler must refuse dispatches until it can."""


class NonceStore:
    """Single-use record of (nonce, dispatch id) pairs, durable across restarts."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._connection = connection
        self._lock = threading.Lock()

    @classmethod
    def open(cls, state_dir: Path) -> NonceStore:
        path = state_dir / NONCE_DATABASE
        try:
            state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            # isolation_level=None: each statement commits on its own, so a spent nonce is on disk
            # (synchronous=FULL) before the dispatch it belongs to is acted on.
            connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise NonceStoreError(f"cannot open the nonce store {path}: {exc}") from None
        return cls(path, connection)

    def consume(self, nonce: str, dispatch_id: str, *, expires_at: dt.datetime, now: dt.datetime) -> bool:
        """Record the pair as spent; False when the nonce or the dispatch id was spent before.

        The primary-key and unique constraints make the insert itself the check, so two processes or
        threads delivering the same dispatch at once cannot both see it as new.
        """
        with self._lock:
            try:
                self._connection.execute(
                    "INSERT INTO spent_dispatch (nonce, dispatch_id, expires_at, spent_at) VALUES (?, ?, ?, ?)",
                    (nonce, dispatch_id, _iso(expires_at), _iso(now)),
                )
            except sqlite3.IntegrityError:
                return False
            except sqlite3.Error as exc:
                raise NonceStoreError(f"cannot record a nonce in {self.path}: {exc}") from None
        return True

    def prune(self, *, before: dt.datetime) -> int:
        """Forget dispatches that expired before ``before``; the expiry check refuses those anyway.

        Pass a time earlier than now by at least the accepted clock skew, or a just-expired dispatch
        could be accepted again by a scheduler whose clock runs behind.
        """
        with self._lock:
            cursor = self._connection.execute(
                "DELETE FROM spent_dispatch WHERE expires_at < ?", (_iso(before),)
            )
        return cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _iso(moment: dt.datetime) -> str:
    # Fixed-width UTC text so that SQLite's string comparison orders moments correctly.
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
