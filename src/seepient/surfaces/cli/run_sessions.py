"""``seepient run``'s stored sessions: find the session ``--continue`` or ``--resume`` names, and record each turn
and standing grant in the home database as the TUI does, so either surface can pick the session up."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seepient.protocol import Message, RuntimeEvent, TurnCompleted, TurnStarted
from seepient.protocol.errors import NotFoundError, StorageError
from seepient.surfaces.stored_sessions import SessionLog, SessionRecorder, open_recorder


class ResumeError(NotFoundError):
    """The session to continue cannot be found or does not fit this run; the message says what to do."""


@dataclass(frozen=True)
class Resumed:
    """What a stored session hands the session that continues it."""

    session_id: str
    history: list[Message]
    grants: list[tuple[str, str]]
    turns: int


async def find_resumable(home: Path, workspace: Path, *, resume_id: str | None) -> Resumed:
    """The session ``--resume ID`` names, or (``resume_id`` None) this workspace's latest for ``--continue``."""
    try:
        log = await SessionLog.open(home, workspace if resume_id is None else None)
    except StorageError as exc:
        raise ResumeError(f"cannot read the stored sessions: {exc}") from None
    try:
        if resume_id is None:
            latest = await log.recent(limit=1)
            if not latest:
                raise ResumeError(
                    f"no stored session for the workspace {workspace} to continue "
                    "(`seepient sessions list` shows the stored ones)"
                )
            resume_id = latest[0].id
        try:
            stored = await log.get(resume_id)
        except KeyError:
            raise ResumeError(
                f"no stored session {resume_id!r} (`seepient sessions list` shows the stored ones)"
            ) from None
    finally:
        await log.aclose()
    if stored.summary.workspace != str(workspace):
        raise ResumeError(
            f"session {resume_id} belongs to the workspace {stored.summary.workspace}: "
            f"run with --workspace {stored.summary.workspace}"
        )
    try:
        history = [Message.model_validate(m) for m in stored.messages]
    except ValueError as exc:
        raise ResumeError(f"session {resume_id} has a stored history that cannot be read: {exc}") from None
    return Resumed(session_id=resume_id, history=history, grants=stored.grants, turns=len(stored.turns))


class RunRecorder:
    """Subscribed to a session, it writes the turn's start before the model answers and its end with the
    history, in order, from one writer task. The store opens beside the turn, so the run starts no later for
    it. A store that cannot open costs only the ability to resume, and the user is told on stderr; a write
    that fails never fails the run."""

    def __init__(self, home: Path) -> None:
        self._home = home
        self._log: SessionRecorder | None = None
        self._writes: asyncio.Queue[Callable[[SessionRecorder], Awaitable[None]]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._session: Any = None

    async def start(self, session: Any) -> None:
        """Follow ``session`` (a ``runtime.Session``) and open the store in the background."""
        self._session = session
        session.subscribe(self._on_event)
        self._writer = asyncio.create_task(self._write_all(session.workspace))

    def on_grant(self, kind: str, value: str) -> None:
        """``SessionOptions.on_grant``: keep the grant for a session that continues this one."""
        session_id = self._session.id if self._session is not None else None
        if session_id is not None:
            self._writes.put_nowait(lambda log: log.grant_given(session_id, kind, value))

    def _on_event(self, event: RuntimeEvent) -> None:
        session = self._session
        # The writes run later: what may change by then (model, mode, history) is read now.
        if isinstance(event, TurnStarted):
            model, mode = session.model_spec, session.mode
            self._writes.put_nowait(
                lambda log: log.turn_started(
                    session_id=session.id, model=model, mode=mode, turn_id=event.turn_id, prompt=event.prompt
                )
            )
        elif isinstance(event, TurnCompleted):
            messages = [m.model_dump(mode="json") for m in session.history]
            self._writes.put_nowait(
                lambda log: log.turn_ended(
                    session_id=session.id,
                    turn_id=event.turn_id,
                    reason=event.reason,
                    reply=event.text,
                    messages=messages,
                )
            )

    async def _write_all(self, workspace: Path) -> None:
        try:
            self._log = await open_recorder(self._home, workspace)
        except StorageError as exc:
            _warn(f"this session is not saved: {exc}")
            return
        while True:
            write = await self._writes.get()
            try:
                await write(self._log)
            except Exception as exc:  # a lost record must not fail the run: say so
                _warn(f"could not save the session: {exc}")
            finally:
                self._writes.task_done()

    async def aclose(self) -> None:
        """Finish every queued write (once the store is open), then close the store."""
        writer = self._writer
        if writer is not None:
            done = asyncio.ensure_future(self._writes.join())
            # The writer ends early only when the store could not open: then nothing will drain the queue.
            await asyncio.wait((done, writer), return_when=asyncio.FIRST_COMPLETED)
            done.cancel()
            writer.cancel()
            await asyncio.gather(done, writer, return_exceptions=True)
        if self._log is not None:
            await self._log.aclose()
            self._log = None


def _warn(message: str) -> None:
    sys.stderr.write(f"seepient: warning: {message}\n")
