"""How a live session's events go out: serialised once (``WireEvent``), stored many per transaction by one
writer for the whole server (``EventWriter``, which also records turns starting and ending), then handed to each
client's feed (``Subscriber``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from seepient.protocol import RuntimeEvent, TurnCompleted
from seepient.store import Store, StoredEvent, TurnEnd

_log = logging.getLogger("seepient.server")

#: A subscriber that falls this far behind is dropped; it reconnects with ``after=SEQ`` and misses nothing.
SUBSCRIBER_BACKLOG = 10_000
#: Events stored per transaction at most.
_WRITE_BATCH = 2_000


@dataclass(frozen=True)
class WireEvent:
    """An event as it goes out: its seq, its type and its JSON, serialised once for the store and every client."""

    seq: int
    type: str
    json: str

    @classmethod
    def of(cls, event: RuntimeEvent) -> WireEvent:
        return cls(event.seq, event.type, event.model_dump_json())

    @classmethod
    def stored(cls, row: StoredEvent) -> WireEvent:
        return cls(row.seq, row.type, row.data)


class Subscriber:
    """One client's feed: events pile up between its reads and are handed over a batch at a time, so a burst of
    events costs one wake-up of the reader rather than one per event."""

    __slots__ = ("closed", "items", "wake")

    def __init__(self) -> None:
        self.items: list[WireEvent] = []
        self.wake = asyncio.Event()
        self.closed = False

    def push(self, events: list[WireEvent]) -> None:
        self.items.extend(events)
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()

    async def take(self) -> list[WireEvent] | None:
        """The events pushed since the last call (waiting for some); ``None`` once closed and drained."""
        while not self.items:
            if self.closed:
                return None
            self.wake.clear()
            await self.wake.wait()
        items, self.items = self.items, []
        return items


def close_cut_turn(session_id: str, turn_id: str, seq: int) -> tuple[str, str]:
    """The event that ends a turn a dead server cut (``Store.recover_after_crash``)."""
    closing = TurnCompleted(session_id=session_id, seq=seq, turn_id=turn_id, reason="interrupted")
    return closing.type, closing.model_dump_json()


class _Receiver(Protocol):
    """The live session an event belongs to: the writer hands it its events once they are stored."""

    @property
    def id(self) -> str: ...

    def deliver(self, batch: list[WireEvent]) -> None: ...


class EventWriter:
    """Stores the events of every live session, many per transaction, then delivers them.

    A client never sees an event that a crash could take back, so after a restart no seq it saw is reused.
    One writer for the whole server keeps SQLite to a single writing connection and lets a burst of events
    from many sessions share one commit.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pending: list[tuple[_Receiver, WireEvent]] = []
        self._turns: list[tuple[str, str, str, asyncio.Future[None]]] = []
        self._ended: list[tuple[TurnEnd, asyncio.Future[None]]] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def push(self, live: _Receiver, event: WireEvent) -> None:
        self._pending.append((live, event))
        self._kick()

    def start_turn(self, session_id: str, turn_id: str, prompt: str) -> asyncio.Future[None]:
        """Record a started turn with the next batch of events; the future is done once it is committed."""
        stored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns.append((session_id, turn_id, prompt, stored))
        self._kick()
        return stored

    def finish_turn(self, end: TurnEnd) -> asyncio.Future[None]:
        """Record a turn's end (``Store.finish_turn``) once every event pushed before it is stored; the future is
        done once it is committed. When hundreds of turns end together their ends share a commit, instead of each
        queueing its own for the one writer ahead of the events still streaming (other sessions'
        ``turn_completed`` among them)."""
        stored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ended.append((end, stored))
        self._kick()
        return stored

    def _kick(self) -> None:
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
            while self._pending or self._turns or self._ended:
                batch = self._pending[:_WRITE_BATCH]
                turns = self._turns[:]
                # A turn's end is stored after every event pushed before it (its own last ones among them).
                ended = self._ended[:] if len(self._pending) <= _WRITE_BATCH else []
                await self._store.append_events_many(
                    ((live.id, event.seq, event.type, event.json) for live, event in batch),
                    turns=[(session_id, turn_id, prompt) for session_id, turn_id, prompt, _ in turns],
                )
                del self._pending[: len(batch)]
                del self._turns[: len(turns)]
                by_session: dict[_Receiver, list[WireEvent]] = {}
                for live, event in batch:
                    by_session.setdefault(live, []).append(event)
                for live, events in by_session.items():
                    live.deliver(events)
                _resolve(t[-1] for t in turns)
                if ended:
                    # In a transaction of their own, after the events went out: rewriting 200 histories takes
                    # tens of milliseconds, which no client's turn_completed need wait for.
                    await self._store.append_events_many((), ended=[end for end, _ in ended])
                    del self._ended[: len(ended)]
                    _resolve(e[-1] for e in ended)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()


def _resolve(futures: Iterable[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)
