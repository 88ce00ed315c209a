"""Sessions of the local surfaces (TUI and ``seepient run``) in the home database the server also uses, under a
principal of their own: record turns and grants as they happen, list, load and delete this user's sessions."""

from __future__ import annotations

import asyncio
import getpass
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seepient.protocol.fields import same_named
from seepient.store.home_db import home_database
from seepient.store.records import SessionRecord

if TYPE_CHECKING:
    from seepient.store import Store
    from seepient.store.session_writes import SqliteSessionWrites

_LISTED = 30


def local_principal() -> str:
    """Whose sessions these are. The ``local:`` prefix keeps them apart from the server's token principals."""
    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (some containers): still one principal per home
        return "local:user"


@dataclass(frozen=True)
class StoredSessionSummary:
    id: str
    workspace: str
    model: str
    mode: str
    created_at: datetime
    updated_at: datetime
    turns: int
    first_prompt: str


@dataclass(frozen=True)
class StoredTurn:
    prompt: str
    reply: str
    status: str
    reason: str | None = None


@dataclass(frozen=True)
class StoredSession:
    """Everything kept of one session: enough to show it, and to continue it where it stopped."""

    summary: StoredSessionSummary
    turns: list[StoredTurn]
    messages: list[dict[str, Any]]
    grants: list[tuple[str, str]]


class SessionRecorder:
    """A local surface's writes to its sessions, through the ``Store`` or through the same writes without
    SQLAlchemy (``store/session_writes.py``). A turn's start is written as the turn begins (once the database
    is open), so a killed process leaves it marked running and keeps every earlier turn."""

    def __init__(self, writes: Store | SqliteSessionWrites, workspace: Path | None, principal: str) -> None:
        self._writes = writes
        self._workspace = str(workspace) if workspace is not None else None
        self._principal = principal
        self._known: set[str] = set()

    async def aclose(self) -> None:
        await self._writes.aclose()

    async def turn_started(
        self, *, session_id: str, model: str, mode: str, turn_id: str, prompt: str
    ) -> None:
        await self.ensure_session(session_id, model=model, mode=mode)
        await self._writes.start_turn(session_id, turn_id, prompt)

    async def ensure_session(self, session_id: str, *, model: str, mode: str) -> None:
        """Create the session's record unless it exists: a grant can come before the first turn starts (an
        ``@`` file read through the approval path as the TUI sends its first prompt)."""
        if session_id not in self._known:
            existing = await self._writes.get_session(session_id, self._principal)
            if existing is None:
                if self._workspace is None:
                    raise ValueError("a log opened for every workspace cannot record a new session")
                await self._writes.create_session(
                    session_id=session_id,
                    principal=self._principal,
                    workspace=self._workspace,
                    model=model,
                    mode=mode,
                )
            self._known.add(session_id)

    async def turn_ended(
        self, *, session_id: str, turn_id: str, reason: str, reply: str, messages: list[dict[str, Any]]
    ) -> None:
        status = {"final": "completed", "interrupted": "interrupted", "error": "error"}.get(
            reason, "completed"
        )
        await self._writes.finish_turn(
            session_id, turn_id, status=status, reason=reason, reply=reply, messages=messages
        )

    async def grant_given(self, session_id: str, kind: str, value: str) -> None:
        """Keep a standing session grant (``ApprovalBroker``'s ``on_grant``) so a resumed session has it."""
        await self._writes.add_grant(session_id, kind, value)


async def open_recorder(home: Path, workspace: Path) -> SessionRecorder:
    """The recorder of ``workspace``'s sessions, on the standard library's sqlite3 once the home database is at
    the newest schema, so that recording loads no SQLAlchemy (``StoreError`` when it cannot be opened)."""
    from seepient.store.session_writes import SqliteSessionWrites

    database = home_database(home)
    writes = await SqliteSessionWrites.open(database)
    if writes is None:
        # A new or older database: the store creates or migrates it (SQLAlchemy and alembic, a few tenths of
        # a second) on a thread and event loop of its own, so the turn goes on meanwhile; the writes wait.
        await asyncio.to_thread(_create_or_migrate, home)
        writes = await SqliteSessionWrites.open(database)
    if writes is None:
        return await SessionLog.open(home, workspace)
    return SessionRecorder(writes, workspace, local_principal())


def _create_or_migrate(home: Path) -> None:
    async def open_and_close() -> None:
        from seepient.store import Store, database_url

        await (await Store.open(database_url(None, home))).aclose()

    asyncio.run(open_and_close())


class SessionLog(SessionRecorder):
    """A local surface's side of the store: record its sessions, list, load and delete them."""

    def __init__(self, store: Store, workspace: Path | None, principal: str) -> None:
        super().__init__(store, workspace, principal)
        self._store = store

    @classmethod
    async def open(cls, home: Path, workspace: Path | None) -> SessionLog:
        """The log of ``workspace``'s sessions (``None``: every workspace, for listing and showing)."""
        from seepient.store import Store, database_url

        store = await Store.open(database_url(None, home))
        return cls(store, workspace, local_principal())

    async def recent(
        self, *, exclude: str | None = None, limit: int | None = _LISTED
    ) -> list[StoredSessionSummary]:
        """Sessions with at least one turn (this workspace's, or all when opened for every workspace), most
        recently used first."""
        records = [
            r
            for r in await self._store.list_sessions(self._principal)
            if (self._workspace is None or r.workspace == self._workspace) and r.id != exclude
        ]
        records.sort(key=lambda r: r.updated_at, reverse=True)
        summaries = []
        for record in records:
            if limit is not None and len(summaries) >= limit:
                break
            turns = await self._store.turns(record.id)
            if turns:
                summaries.append(_summary(record, len(turns), turns[0].prompt))
        return summaries

    async def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[StoredTurn]]:
        """The session's stored history (messages as JSON) and its turns, for resuming it."""
        stored = await self.get(session_id)
        self._known.add(session_id)
        return stored.messages, stored.turns

    async def get(self, session_id: str) -> StoredSession:
        """The whole stored session; ``KeyError`` when this user has none with that id."""
        record = await self._store.get_session(session_id, self._principal)
        if record is None:
            raise KeyError(session_id)
        turns = [
            StoredTurn(t.prompt, t.reply, t.status, t.reason) for t in await self._store.turns(session_id)
        ]
        return StoredSession(
            summary=_summary(record, len(turns), turns[0].prompt if turns else ""),
            turns=turns,
            messages=await self._store.messages(session_id),
            grants=await self._store.grants(session_id),
        )

    async def delete(self, session_id: str) -> bool:
        return await self._store.delete_session(session_id, self._principal)


def _summary(record: SessionRecord, turns: int, first_prompt: str) -> StoredSessionSummary:
    kept = same_named(record, ("id", "workspace", "model", "mode", "created_at", "updated_at"))
    return StoredSessionSummary(**kept, turns=turns, first_prompt=first_prompt)
