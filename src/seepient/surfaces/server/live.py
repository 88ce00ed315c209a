"""Sessions the server is running: a runtime ``Session`` per stored session, its events persisted in order
and fanned out to subscribers, its turn, and the approvals it is waiting on.

Event numbers continue across restarts: a runtime session numbers its events from 1, and the server adds
the last seq stored before it opened (``base``), so a client's ``after=SEQ`` means the same thing forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from seepient.config import SeepientPaths
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    Message,
    PermissionRequest,
    PermissionResolved,
    RuntimeEvent,
    TurnCompleted,
    TurnStarted,
    Usage,
    new_id,
)
from seepient.runtime import Session, SessionOptions, TurnOutcome
from seepient.store import SessionRecord, Store

_log = logging.getLogger("seepient.server")


@dataclass(frozen=True)
class WireEvent:
    """An event as it goes out: its seq, its type and its JSON, serialised once for the store and every client."""

    seq: int
    type: str
    json: str

    @classmethod
    def of(cls, event: RuntimeEvent) -> WireEvent:
        return cls(event.seq, event.type, event.model_dump_json())


_MESSAGE = TypeAdapter(Message)

#: A subscriber that falls this far behind is dropped; it reconnects with ``after=SEQ`` and misses nothing.
_SUBSCRIBER_BACKLOG = 10_000
#: Events stored per transaction at most.
_WRITE_BATCH = 2_000


class SessionBusy(Exception):
    """A turn is already running in this session (HTTP 409): wait for ``turn_completed`` or interrupt it."""


class ApprovalNotPending(Exception):
    """No request with that id is waiting in this session (HTTP 404), or it was already answered (409)."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


@dataclass
class _Waiting:
    request: ApprovalRequest | None
    answer: asyncio.Future[ApprovalResponse]


class _ServerApprover:
    """Parks each approval request until a client answers it or the timeout rejects it."""

    def __init__(self, live: LiveSession) -> None:
        self._live = live

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        return await self._live.wait_for_answer(request)


class EventWriter:
    """Stores the events of every live session, many per transaction, then delivers them.

    A client never sees an event that a crash could take back, so after a restart no seq it saw is reused.
    One writer for the whole server keeps SQLite to a single writing connection and lets a burst of events
    from many sessions share one commit.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pending: list[tuple[LiveSession, WireEvent]] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def push(self, live: LiveSession, event: WireEvent) -> None:
        self._pending.append((live, event))
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="event-writer")
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except Exception:  # the events stay pending; the next round retries them
                _log.exception("storing events failed; retrying")
                await asyncio.sleep(0.5)
                self._wake.set()

    async def flush(self) -> None:
        """Store and deliver everything pushed so far."""
        async with self._lock:
            while self._pending:
                batch = self._pending[:_WRITE_BATCH]
                await self._store.append_events_many(
                    (live.id, event.seq, event.type, event.json) for live, event in batch
                )
                del self._pending[: len(batch)]
                by_session: dict[LiveSession, list[WireEvent]] = {}
                for live, event in batch:
                    by_session.setdefault(live, []).append(event)
                for live, events in by_session.items():
                    live.deliver(events)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()


class LiveSession:
    def __init__(
        self, record: SessionRecord, store: Store, writer: EventWriter, *, approval_timeout_s: float
    ) -> None:
        self.record = record
        self.id = record.id
        self.principal = record.principal
        self._store = store
        self._timeout = approval_timeout_s
        self._base = record.last_seq
        self._delivered = record.last_seq
        self.runtime: Session | None = None
        self.task: asyncio.Task[TurnOutcome] | None = None
        self._subscribers: set[asyncio.Queue[WireEvent | None]] = set()
        self._writer = writer
        self._waiting: dict[str, _Waiting] = {}
        self._turn_started: asyncio.Future[str] | None = None
        self._turn_stored = asyncio.Event()
        self._turn_ending = False

    # -- opening --------------------------------------------------------------------------------------

    def open_runtime(self, *, paths: SeepientPaths, history: list[Message], config_file: Path | None) -> None:
        """Open the runtime session (raises ``SettingsError``/``ModelError`` with a message for the client)."""
        options = SessionOptions(
            workspace=Path(self.record.workspace),
            model=self.record.model,
            mode=self.record.mode,
            approver=_ServerApprover(self),
            surface="server",
            config_file=config_file,
            paths=paths,
            principal=self.principal,
            session_id=self.id,
            history=history,
        )
        self.runtime = Session.open(options)
        self.runtime.subscribe(self._on_event)

    async def aclose(self) -> None:
        await self.interrupt()
        await self._writer.flush()
        for queue in list(self._subscribers):
            queue.put_nowait(None)
        if self.runtime is not None:
            await self.runtime.aclose()

    # -- events ---------------------------------------------------------------------------------------

    def _on_event(self, event: RuntimeEvent) -> None:
        numbered = event.model_copy(update={"seq": self._base + event.seq})
        self._writer.push(self, WireEvent.of(numbered))
        if isinstance(numbered, TurnStarted) and self._turn_started is not None:
            if not self._turn_started.done():
                self._turn_started.set_result(numbered.turn_id)
        elif isinstance(numbered, TurnCompleted):
            self._turn_ending = True
        elif isinstance(numbered, PermissionRequest):
            # Registered here, synchronously with the event, so an answer that races ahead of the
            # approver's own call still finds its request.
            self._waiting.setdefault(
                numbered.request.request_id,
                _Waiting(numbered.request, asyncio.get_running_loop().create_future()),
            )
        elif isinstance(numbered, PermissionResolved):
            waiting = self._waiting.pop(numbered.request_id, None)
            if waiting is not None and not waiting.answer.done():
                waiting.answer.cancel()

    def deliver(self, batch: list[WireEvent]) -> None:
        """Hand stored events to subscribers (called by the writer right after they were committed)."""
        self._delivered = batch[-1].seq
        for queue in list(self._subscribers):
            if queue.qsize() + len(batch) > _SUBSCRIBER_BACKLOG:
                self._subscribers.discard(queue)
                queue.put_nowait(None)
                continue
            for event in batch:
                queue.put_nowait(event)

    async def events(self, after: int, *, follow: bool) -> AsyncIterator[WireEvent]:
        """Every event after ``after``, in order and once each; with ``follow``, then live ones as they come.

        Only stored events are delivered. The live part is taken and the subscription made in one step of the
        event loop, so no event can fall between what was read and what will be delivered.
        """
        queue: asyncio.Queue[WireEvent | None] = asyncio.Queue()
        runtime_after = max(0, after - self._base)
        delivered = self._delivered
        live_now = (
            [
                WireEvent.of(e.model_copy(update={"seq": self._base + e.seq}))
                for e in self.runtime.events_since(runtime_after)
                if self._base + e.seq <= delivered
            ]
            if self.runtime is not None
            else []
        )
        if follow:
            self._subscribers.add(queue)
        try:
            last = after
            if after < self._base:
                for stored in await self._store.events_after(self.id, after, limit=self._base - after):
                    if stored.seq > self._base:
                        break
                    yield WireEvent(stored.seq, stored.type, stored.data)
                    last = stored.seq
            for event in live_now:
                if event.seq > last:
                    yield event
                    last = event.seq
            while follow:
                item = await queue.get()
                if item is None:
                    return
                if item.seq > last:
                    yield item
                    last = item.seq
        finally:
            self._subscribers.discard(queue)

    # -- turns ----------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def settled(self) -> None:
        """Wait out a turn whose ``turn_completed`` went out but whose storing has not finished.

        A client that acts on seeing ``turn_completed`` (sends the next message, reads the session) must find
        the turn ended, not get 409 or a turn still marked running.
        """
        if self.running and self._turn_ending:
            assert self.task is not None
            await asyncio.shield(self.task)

    async def start_turn(self, prompt: str) -> str:
        """Start a turn and return its id once it has started; ``SessionBusy`` if one is running."""
        await self.settled()
        if self.running:
            raise SessionBusy(
                "a turn is already running in this session: wait for turn_completed or interrupt it"
            )
        assert self.runtime is not None
        loop = asyncio.get_running_loop()
        self._turn_started = loop.create_future()
        self._turn_stored.clear()
        self._turn_ending = False
        self.task = asyncio.create_task(self._run(prompt), name=f"turn:{self.id}")
        started = self._turn_started
        done, _ = await asyncio.wait({started, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if started not in done:
            self.task.result()  # the turn failed before it started: re-raise its error
            raise RuntimeError("the turn ended before it started")
        turn_id = started.result()
        try:
            await self._store.start_turn(self.id, turn_id, prompt)
        finally:
            self._turn_stored.set()
        return turn_id

    async def _run(self, prompt: str) -> TurnOutcome:
        assert self.runtime is not None
        try:
            outcome = await self.runtime.run(prompt)
        except asyncio.CancelledError:
            outcome = TurnOutcome(turn_id="", reason="interrupted", text="", steps=0, usage=Usage())
        await self._turn_stored.wait()
        await self._writer.flush()
        status = {"final": "completed", "interrupted": "interrupted", "error": "error"}.get(
            outcome.reason, "completed"
        )
        turn_id = outcome.turn_id or (self._turn_started.result() if self._turn_started else "")
        await self._store.finish_turn(
            self.id,
            turn_id,
            status=status,
            reason=outcome.reason,
            reply=outcome.text,
            messages=[m.model_dump(mode="json") for m in self.runtime.history],
        )
        return outcome

    async def interrupt(self) -> bool:
        """Cancel the running turn; ``False`` when none was running."""
        task = self.task
        if task is None or task.done():
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return True

    # -- approvals ------------------------------------------------------------------------------------

    async def wait_for_answer(self, request: ApprovalRequest) -> ApprovalResponse:
        waiting = self._waiting.setdefault(
            request.request_id, _Waiting(request, asyncio.get_running_loop().create_future())
        )
        waiting.request = request
        await self._store.add_pending(
            self.id, request.request_id, request.model_dump(mode="json"), timeout_s=self._timeout
        )
        try:
            response = await asyncio.wait_for(asyncio.shield(waiting.answer), self._timeout)
        except TimeoutError:
            await self._store.resolve_pending(request.request_id, "expired", None)
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=request.digest,
                feedback=(
                    f"no one answered this approval request within {self._timeout:g} s, so the action was "
                    "not run; ask again or continue without it"
                ),
                approved_by="server:timeout",
            )
        except asyncio.CancelledError:
            await asyncio.shield(self._store.resolve_pending(request.request_id, "cancelled", None))
            raise
        finally:
            self._waiting.pop(request.request_id, None)
        await self._store.resolve_pending(request.request_id, "answered", response.model_dump(mode="json"))
        return response

    def answer(
        self,
        request_id: str,
        *,
        decision: ApprovalDecision,
        principal: str,
        scope: str | None = None,
        feedback: str | None = None,
    ) -> ApprovalResponse:
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting.request is None:
            raise ApprovalNotPending(f"no approval request {request_id} is waiting in this session")
        if waiting.answer.done():
            raise ApprovalNotPending(f"approval request {request_id} was already answered", answered=True)
        response = ApprovalResponse(
            decision=decision,
            digest=waiting.request.digest,
            scope=scope,
            feedback=feedback,
            approved_by=f"user:{principal}",
        )
        waiting.answer.set_result(response)
        return response

    def pending_requests(self) -> list[ApprovalRequest]:
        return [w.request for w in self._waiting.values() if w.request is not None and not w.answer.done()]


def restore_history(bodies: list[Mapping[str, Any]]) -> list[Message]:
    return [_MESSAGE.validate_python(dict(body)) for body in bodies]


def new_session_id() -> str:
    return new_id("ses")
