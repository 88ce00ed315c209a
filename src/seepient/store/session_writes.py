"""A local surface's session writes (create a session, start and finish a turn, keep a grant) on the standard
library's sqlite3, for a home database already at the newest schema: the rows and transactions of ``Store``'s
methods of the same names, without loading SQLAlchemy, a fifth of a ``seepient run``'s start. A test holds
the rows to ``Store``'s, column for column."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from seepient.store.home_db import newest_revision
from seepient.store.records import SessionRecord, TurnRecord, aware
from seepient.store.sqlite_files import private_sqlite_file, sqlite_pragmas

_T = TypeVar("_T")

_SESSION_COLUMNS = "id, principal, workspace, model, mode, status, last_seq, created_at, updated_at"


def _stamp(value: datetime) -> str:
    # SQLAlchemy's SQLite DATETIME text, the zone dropped (every stamp is UTC): what ``Store`` reads back.
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


def _session(row: tuple[Any, ...]) -> SessionRecord:
    *head, created, updated = row
    return SessionRecord(
        *head, aware(datetime.fromisoformat(created)), aware(datetime.fromisoformat(updated))
    )


class SqliteSessionWrites:
    """One connection to the home database; each method is one transaction, committed before it returns (a
    kill leaves it whole or absent). Calls run one at a time on a worker thread, so a database another process
    holds busy never blocks the event loop."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        self._one_at_a_time = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteSessionWrites | None:
        """The writes of the database at ``path``; ``None`` when it does not exist yet, is at another schema
        revision or cannot be read: ``Store.open`` then creates or migrates it (and names what is wrong)."""
        return await asyncio.to_thread(cls._open, path)

    @classmethod
    def _open(cls, path: Path) -> SqliteSessionWrites | None:
        if not path.is_file():
            return None
        connection: sqlite3.Connection | None = None
        try:
            private_sqlite_file(path)
            connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            sqlite_pragmas(connection, None)
            revisions = connection.execute("SELECT version_num FROM alembic_version").fetchall()
            if revisions == [(newest_revision(),)]:
                return cls(connection)
        except (OSError, sqlite3.Error):
            pass
        if connection is not None:
            connection.close()
        return None

    async def aclose(self) -> None:
        async with self._one_at_a_time:
            self._db.close()

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        async with self._one_at_a_time:
            return await asyncio.to_thread(work, self._db)

    async def _transaction(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        def run(db: sqlite3.Connection) -> _T:
            # IMMEDIATE: take the write lock first (waiting out another writer through the busy timeout),
            # so a transaction that reads before it writes is never refused halfway.
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self._run(run)

    async def get_session(self, session_id: str, principal: str) -> SessionRecord | None:
        def read(db: sqlite3.Connection) -> SessionRecord | None:
            row = db.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ? AND principal = ?",
                (session_id, principal),
            ).fetchone()
            return _session(row) if row is not None else None

        return await self._run(read)

    async def create_session(
        self, *, session_id: str, principal: str, workspace: str, model: str, mode: str
    ) -> SessionRecord:
        now = datetime.now(UTC)
        row = (session_id, principal, workspace, model, mode, "idle", 0, now, now)

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                f"INSERT INTO sessions ({_SESSION_COLUMNS}, owner, interrupt_requested) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0)",
                (*row[:-2], _stamp(now), _stamp(now)),
            )

        await self._transaction(write)
        return SessionRecord(*row)

    async def start_turn(self, session_id: str, turn_id: str, prompt: str) -> TurnRecord:
        now = _stamp(datetime.now(UTC))

        def write(db: sqlite3.Connection) -> int:
            (count,) = db.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)).fetchone()
            db.execute(
                "INSERT INTO turns (id, session_id, number, prompt, status, reply, reason, created_at, "
                "finished_at) VALUES (?, ?, ?, ?, 'running', '', NULL, ?, NULL)",
                (turn_id, session_id, count + 1, prompt, now),
            )
            db.execute(
                "UPDATE sessions SET status = 'running', updated_at = ? WHERE id = ?", (now, session_id)
            )
            return int(count) + 1

        number = await self._transaction(write)
        return TurnRecord(turn_id, session_id, number, prompt, "running", "", None)

    async def finish_turn(
        self,
        session_id: str,
        turn_id: str,
        *,
        status: str,
        reason: str,
        reply: str,
        messages: Sequence[dict[str, Any]],
    ) -> None:
        """Close a turn and replace the session's stored history with ``messages``, in one transaction."""
        now = _stamp(datetime.now(UTC))
        bodies = [(session_id, i, json.dumps(body)) for i, body in enumerate(messages)]

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE turns SET status = ?, reason = ?, reply = ?, finished_at = ? WHERE id = ?",
                (status, reason, reply, now, turn_id),
            )
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            db.executemany("INSERT INTO messages (session_id, position, body) VALUES (?, ?, ?)", bodies)
            db.execute("UPDATE sessions SET status = 'idle', updated_at = ? WHERE id = ?", (now, session_id))

        await self._transaction(write)

    async def add_grant(self, session_id: str, kind: str, value: str) -> None:
        now = _stamp(datetime.now(UTC))
        await self._transaction(
            lambda db: db.execute(
                "INSERT INTO grants (session_id, kind, value, created_at) VALUES (?, ?, ?, ?)",
                (session_id, kind, value, now),
            )
        )
