"""Sessions the server is running: a runtime ``Session`` per stored session, its events persisted in order
and fanned out to subscribers, its turn, and the approvals it is waiting on.

Event numbers continue across restarts: a runtime session numbers its events from 1, and the server adds
the last seq stored before it opened (``base``), so a client's ``after=SEQ`` means the same thing forever.

On a shared (PostgreSQL) store several replicas serve the same sessions. One replica runs a session's turn at
a time (``claim_turn`` records it as the owner); the others deliver that turn's events to their own clients by
reading them from the store when told (``catch_up``), answer approvals by writing them to the store for the
owner to pick up, and forward interrupts the same way. A message for a session whose turn runs elsewhere gets
``SessionBusy`` (409) naming the replica, exactly like a second message on the same replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from seepient.config import SeepientPaths
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    ImagePart,
    Message,
    PermissionRequest,
    PermissionResolved,
    RuntimeEvent,
    TurnCompleted,
    TurnStarted,
    Usage,
    new_id,
)
from seepient.protocol.errors import ConflictError, NotFoundError
from seepient.runtime import Session, SessionOptions, TurnOutcome
from seepient.store import SessionRecord, Store, TurnEnd
from seepient.surfaces.server.event_feed import SUBSCRIBER_BACKLOG, EventWriter, Subscriber, WireEvent

_log = logging.getLogger("seepient.server")


_MESSAGE = TypeAdapter(Message)

#: Events read from the store per query when replaying or catching up.
_READ_PAGE = 2_000


class SessionBusy(ConflictError):
    """A turn is already running in this session (HTTP 409): wait for ``turn_completed`` or interrupt it."""


class ApprovalNotPending(NotFoundError):
    """No request with that id is waiting in this session (HTTP 404), or it was already answered (409)."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


def _already_answered(request_id: str) -> ApprovalNotPending:
    return ApprovalNotPending(f"approval request {request_id} was already answered", answered=True)


@dataclass
class _Waiting:
    request: ApprovalRequest | None
    answer: asyncio.Future[ApprovalResponse]
    stored: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the request is in the store, where an answer from any replica is recorded first."""


class _ServerApprover:
    """Parks each approval request until a client answers it or the timeout rejects it."""

    def __init__(self, live: LiveSession) -> None:
        self._live = live

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        return await self._live.wait_for_answer(request)


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
        self._local_last = record.last_seq
        self.runtime: Session | None = None
        self.task: asyncio.Task[TurnOutcome] | None = None
        self._subscribers: set[Subscriber] = set()
        self._streams_ended = False
        self._catching_up: asyncio.Task[None] | None = None
        self._catch_up_again = False
        self._reopen: dict[str, Any] = {}
        self._writer = writer
        self._waiting: dict[str, _Waiting] = {}
        self._turn_started: asyncio.Future[str] | None = None
        self._turn_stored = asyncio.Event()
        self._turn_ending = False
        self._grant_writes: set[asyncio.Task[None]] = set()
        self.last_active = time.monotonic()

    # -- opening --------------------------------------------------------------------------------------

    def open_runtime(
        self,
        *,
        paths: SeepientPaths,
        history: list[Message],
        config_file: Path | None,
        grants: list[tuple[str, str]] | None = None,
        project_trust: bool = False,
    ) -> None:
        """Open the runtime session (raises ``SettingsError``/``ModelError`` with a message for the client).
        With ``grants`` it is a stored session coming back: its history and standing grants carry on.
        ``project_trust`` is the server's decision (``trustedRoots``); the user's trust store never counts here."""
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
            grants=grants or (),
            on_grant=self._store_grant,
            # Every event is in the store, which replays them: the runtime need not keep them in memory.
            event_history=0,
            resumed=grants is not None,
            project_trust=project_trust,
        )
        self.runtime = Session.open(options)
        self.runtime.subscribe(self._on_event)
        self._reopen = {"paths": paths, "config_file": config_file, "project_trust": project_trust}

    async def _reload(self, last_seq: int) -> None:
        """Reopen the runtime from the store: another replica ran turns since this one was opened."""
        history = restore_history(await self._store.messages(self.id))
        grants = await self._store.grants(self.id)
        old = self.runtime
        self.runtime = None
        if old is not None:
            await old.aclose()
        self._base = self._local_last = last_seq
        self._delivered = max(self._delivered, last_seq)
        self.open_runtime(history=history, grants=grants, **self._reopen)

    def _store_grant(self, kind: str, value: str) -> None:
        task = asyncio.get_running_loop().create_task(self._store.add_grant(self.id, kind, value))
        self._grant_writes.add(task)
        task.add_done_callback(self._grant_writes.discard)

    @property
    def idle(self) -> bool:
        """Nothing depends on this session being in memory: no turn, no listener, no question waiting."""
        return not self.running and not self._subscribers and not self._waiting and not self._grant_writes

    async def aclose(self) -> None:
        await self.interrupt()
        if self._catching_up is not None:
            self._catching_up.cancel()
            await asyncio.gather(self._catching_up, return_exceptions=True)
        if self._grant_writes:
            await asyncio.gather(*self._grant_writes, return_exceptions=True)
        await self._writer.flush()
        for subscriber in list(self._subscribers):
            subscriber.close()
        if self.runtime is not None:
            await self.runtime.aclose()

    # -- events ---------------------------------------------------------------------------------------

    def _on_event(self, event: RuntimeEvent) -> None:
        self.last_active = time.monotonic()
        numbered = event.model_copy(update={"seq": self._base + event.seq}) if self._base else event
        self._local_last = numbered.seq
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

    def end_streams(self) -> None:
        """End every ``events`` stream once it has handed over what was delivered; later ones only replay."""
        self._streams_ended = True
        for subscriber in list(self._subscribers):
            subscriber.close()

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    @property
    def delivered_seq(self) -> int:
        """The last event handed to subscribers (every event up to it is stored)."""
        return self._delivered

    def deliver(self, batch: list[WireEvent]) -> None:
        """Hand stored events to subscribers: called by the writer right after it committed them, or by
        ``catch_up`` with events another replica stored. Each seq goes out once, whichever comes first."""
        if batch and batch[0].seq <= self._delivered:
            batch = [e for e in batch if e.seq > self._delivered]
        if not batch:
            return
        self._delivered = batch[-1].seq
        for subscriber in list(self._subscribers):
            if len(subscriber.items) + len(batch) > SUBSCRIBER_BACKLOG:
                self._subscribers.discard(subscriber)
                subscriber.close()
                continue
            subscriber.push(batch)

    def request_catch_up(self) -> None:
        """Deliver, soon, the events another replica stored for this session (coalesces repeated calls)."""
        if self._catching_up is not None and not self._catching_up.done():
            self._catch_up_again = True
            return
        self._catching_up = asyncio.get_running_loop().create_task(self._catch_up_loop())

    async def _catch_up_loop(self) -> None:
        self._catch_up_again = True
        while self._catch_up_again:
            self._catch_up_again = False
            try:
                await self.catch_up()
            except Exception:  # the next notification or poll tries again
                _log.exception("reading events of session %s from the store failed", self.id)
                return

    async def catch_up(self) -> None:
        """Deliver the stored events after the last delivered one, in order, stopping at a gap (a gap is a
        transaction not committed yet: the next call fills it)."""
        while True:
            rows = await self._store.events_after(self.id, self._delivered, limit=_READ_PAGE)
            fresh: list[WireEvent] = []
            expected = self._delivered + 1
            for row in rows:
                if row.seq != expected:
                    break
                fresh.append(WireEvent.stored(row))
                expected += 1
            self.deliver(fresh)
            if len(fresh) < _READ_PAGE:
                return

    async def events(self, after: int, *, follow: bool) -> AsyncIterator[WireEvent]:
        """Every event after ``after``, in order and once each; with ``follow``, then live ones as they come.

        Only stored events are delivered. What was delivered so far is fixed and the subscription made in one
        step of the event loop, so no event can fall between what is replayed (from the store, where every
        delivered event is) and what the subscription brings.
        """
        if self._store.shared and not self.running:
            # Another replica may have stored events this one has not heard of yet.
            await self.catch_up()
        subscriber = Subscriber()
        delivered = self._delivered
        follow = follow and not self._streams_ended
        if follow:
            self._subscribers.add(subscriber)
        try:
            last = after
            while last < delivered:
                rows = await self._store.events_after(self.id, last, limit=min(_READ_PAGE, delivered - last))
                if not rows:
                    break
                for row in rows:
                    yield WireEvent.stored(row)
                    last = row.seq
            while follow:
                items = await subscriber.take()
                if items is None:
                    return
                for item in items:
                    if item.seq > last:
                        yield item
                        last = item.seq
        finally:
            self._subscribers.discard(subscriber)

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

    async def start_turn(self, prompt: str, images: tuple[ImagePart, ...] = (), *, plan: bool = False) -> str:
        """Start a turn and return its id once it has started; ``SessionBusy`` if one is running. Images send
        it to the vision route; ``plan`` makes it a read-only planning turn (``Session.run``)."""
        await self.settled()
        if self.running:
            raise SessionBusy(
                "a turn is already running in this session: wait for turn_completed or interrupt it"
            )
        claimed = False
        if self._store.shared:
            replica = self._store.replica_id or "-"
            claim = await self._store.claim_turn(self.id, replica)
            if not claim.claimed:
                raise SessionBusy(
                    f"a turn is already running in this session on replica {claim.owner}: wait for "
                    "turn_completed or interrupt it"
                )
            claimed = True
            try:
                if claim.last_seq != self._local_last:
                    # Another replica ran turns since: pass its events on, then continue from its history.
                    await self.catch_up()
                    await self._reload(claim.last_seq)
            except BaseException:
                await asyncio.shield(self._store.release_turn(self.id, replica))
                raise
        try:
            return await self._start(prompt, images, plan)
        except BaseException:
            if claimed and not self.running:
                await asyncio.shield(self._store.release_turn(self.id, self._store.replica_id or "-"))
            raise

    async def _start(self, prompt: str, images: tuple[ImagePart, ...], plan: bool) -> str:
        assert self.runtime is not None
        loop = asyncio.get_running_loop()
        self._turn_started = loop.create_future()
        self._turn_stored.clear()
        self._turn_ending = False
        self.task = asyncio.create_task(self._run(prompt, images, plan), name=f"turn:{self.id}")
        started = self._turn_started
        done, _ = await asyncio.wait({started, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if started not in done:
            self.task.result()  # the turn failed before it started: re-raise its error
            raise RuntimeError("the turn ended before it started")
        turn_id = started.result()
        try:
            await asyncio.shield(self._writer.start_turn(self.id, turn_id, prompt))
        finally:
            self._turn_stored.set()
        return turn_id

    async def _run(self, prompt: str, images: tuple[ImagePart, ...], plan: bool) -> TurnOutcome:
        assert self.runtime is not None
        try:
            outcome = await self.runtime.run(prompt, images, plan=plan)
        except asyncio.CancelledError:
            outcome = TurnOutcome(turn_id="", reason="interrupted", text="", steps=0, usage=Usage.zero())
        await self._turn_stored.wait()
        status = {"final": "completed", "interrupted": "interrupted", "error": "error"}.get(
            outcome.reason, "completed"
        )
        turn_id = outcome.turn_id or (self._turn_started.result() if self._turn_started else "")
        end = TurnEnd(
            session_id=self.id,
            turn_id=turn_id,
            status=status,
            reason=outcome.reason,
            reply=outcome.text,
            messages=tuple(m.model_dump(mode="json") for m in self.runtime.history),
        )
        # Stored with (or after) the turn's last events. The task ends only once it is, interrupted or not, so
        # a next turn (which waits for this task) never starts ahead of this one's end.
        stored = self._writer.finish_turn(end)
        try:
            await asyncio.shield(stored)
        except asyncio.CancelledError:
            await asyncio.shield(stored)
            raise
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
        waiting.stored.set()
        try:
            response = await asyncio.wait_for(asyncio.shield(waiting.answer), self._timeout)
        except TimeoutError:
            if not await self._store.resolve_pending(request.request_id, "expired", None):
                # Answered from another replica as the time ran out: the stored answer stands.
                row = await self._store.pending_request(self.id, request.request_id)
                if row is not None and row.status == "answered" and row.answer is not None:
                    return ApprovalResponse.model_validate(row.answer)
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

    async def submit_answer(
        self,
        request_id: str,
        *,
        decision: ApprovalDecision,
        principal: str,
        scope: str | None = None,
        feedback: str | None = None,
    ) -> ApprovalResponse:
        """Answer a request whether it waits here or on the replica running the turn (shared store): the
        first answer committed to the store wins, and the replica waiting on it is told."""

        def response_to(request: ApprovalRequest) -> ApprovalResponse:
            return ApprovalResponse(
                decision=decision,
                digest=request.digest,
                scope=scope,
                feedback=feedback,
                approved_by=f"user:{principal}",
            )

        waiting = self._waiting.get(request_id)
        if waiting is not None and waiting.request is not None:
            if waiting.answer.done():
                raise _already_answered(request_id)
            if not self._store.shared:
                response = response_to(waiting.request)
                waiting.answer.set_result(response)
                return response
            try:  # the turn is storing the request: the answer must land after it
                await asyncio.wait_for(waiting.stored.wait(), 30)
            except TimeoutError:
                raise ApprovalNotPending(
                    f"approval request {request_id} could not be stored; answer it again"
                ) from None
            request = waiting.request
        else:
            row = await self._store.pending_request(self.id, request_id) if self._store.shared else None
            if row is None:
                raise ApprovalNotPending(f"no approval request {request_id} is waiting in this session")
            if row.status != "pending":
                raise _already_answered(request_id)
            request = ApprovalRequest.model_validate(row.body)
        response = response_to(request)
        if not await self._store.answer_pending(self.id, request_id, response.model_dump(mode="json")):
            raise _already_answered(request_id)
        waiting = self._waiting.get(request_id)
        if waiting is not None and not waiting.answer.done():
            waiting.answer.set_result(response)
        return response

    async def take_stored_answers(self, request_ids: list[str] | None = None) -> None:
        """Hand the turn the answers other replicas stored for the requests it waits on (never trusting a
        notification for the answer itself: it is read from the store)."""
        for request_id, waiting in list(self._waiting.items()):
            if request_ids is not None and request_id not in request_ids:
                continue
            if waiting.answer.done() or not waiting.stored.is_set():
                continue
            row = await self._store.pending_request(self.id, request_id)
            if row is not None and row.status == "answered" and row.answer is not None:
                if not waiting.answer.done():
                    waiting.answer.set_result(ApprovalResponse.model_validate(row.answer))

    async def interrupt_anywhere(self) -> bool:
        """Interrupt the turn here, or ask the replica running it (shared store); ``False`` when none runs."""
        if await self.interrupt():
            return True
        if self._store.shared:
            return await self._store.request_interrupt(self.id) is not None
        return False

    async def stored_pending_requests(self) -> list[ApprovalRequest]:
        """The requests waiting in this session, also when its turn runs on another replica."""
        if self.running or not self._store.shared:
            return self.pending_requests()
        return [ApprovalRequest.model_validate(p.body) for p in await self._store.pending(self.id)]

    def pending_requests(self) -> list[ApprovalRequest]:
        return [w.request for w in self._waiting.values() if w.request is not None and not w.answer.done()]


def restore_history(bodies: list[Mapping[str, Any]]) -> list[Message]:
    return [_MESSAGE.validate_python(dict(body)) for body in bodies]


def new_session_id() -> str:
    return new_id("ses")
