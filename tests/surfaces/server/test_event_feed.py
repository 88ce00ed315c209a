"""The event writer against a store that records its transactions: a turn's end is committed after the events
pushed before it (never ahead of them) and after they went out, ends that come together share a commit, and
each is told only once it is committed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from seepient.store import TurnEnd
from seepient.surfaces.server import event_feed
from seepient.surfaces.server.event_feed import EventWriter, WireEvent


@dataclass(eq=False)
class _Receiver:
    id: str
    delivered: list[int] = field(default_factory=list)

    def deliver(self, batch: list[WireEvent]) -> None:
        self.delivered.extend(e.seq for e in batch)


class _RecordingStore:
    """Each call of ``append_events_many`` is one transaction: what it held, and a pause inside it."""

    def __init__(self) -> None:
        self.transactions: list[tuple[list[tuple[str, int]], list[str], list[str]]] = []

    async def append_events_many(
        self,
        events: Iterable[tuple[str, int, str, str]],
        turns: Iterable[tuple[str, str, str]] = (),
        ended: Iterable[TurnEnd] = (),
    ) -> None:
        held = ([(sid, seq) for sid, seq, _, _ in events], [t[1] for t in turns], [e.turn_id for e in ended])
        if held == ([], [], []):
            return  # as the store does: nothing to write, no transaction
        await asyncio.sleep(0)  # the commit: other tasks run meanwhile
        self.transactions.append(held)


def _end(session_id: str, turn_id: str) -> TurnEnd:
    return TurnEnd(session_id, turn_id, "completed", "final", "", ())


async def test_an_end_after_more_events_than_a_batch_is_stored_after_the_last_of_them() -> None:
    store = _RecordingStore()
    writer = EventWriter(store)  # type: ignore[arg-type]
    live = _Receiver("ses_a")
    count = event_feed._WRITE_BATCH + 5
    for seq in range(1, count + 1):
        writer.push(live, WireEvent(seq, "text_delta", "{}"))
    stored = writer.finish_turn(_end("ses_a", "turn_1"))
    await writer.flush()
    assert stored.done()
    ends_at = [i for i, (_, _, ends) in enumerate(store.transactions) if ends]
    last_event_at = max(
        i for i, (events, _, _) in enumerate(store.transactions) if ("ses_a", count) in events
    )
    assert ends_at == [last_event_at + 1]
    assert store.transactions[ends_at[0]] == ([], [], ["turn_1"])
    assert live.delivered == list(range(1, count + 1))
    await writer.aclose()


async def test_ends_that_come_together_share_a_commit_after_their_events_went_out() -> None:
    store = _RecordingStore()
    writer = EventWriter(store)  # type: ignore[arg-type]
    sessions = [_Receiver(f"ses_{i}") for i in range(50)]
    delivered_when_ends_stored: list[int] = []
    real = store.append_events_many

    async def watching(events: Iterable[tuple[str, int, str, str]], turns=(), ended=()) -> None:  # type: ignore[no-untyped-def]
        ended = list(ended)
        if ended:
            delivered_when_ends_stored.append(sum(len(live.delivered) for live in sessions))
        await real(events, turns, ended)

    store.append_events_many = watching  # type: ignore[method-assign]
    for live in sessions:
        writer.push(live, WireEvent(1, "turn_completed", "{}"))
    ends = [writer.finish_turn(_end(live.id, f"turn_{live.id}")) for live in sessions]
    assert not any(e.done() for e in ends)
    await asyncio.wait_for(asyncio.gather(*ends), 5)
    # The writer's own task stored the 50 events in one transaction and the 50 ends in the next, which began
    # only once every turn_completed had gone out.
    assert [(len(events), ended) for events, _, ended in store.transactions] == [
        (50, []),
        (0, [f"turn_{live.id}" for live in sessions]),
    ]
    assert delivered_when_ends_stored == [50]
    await writer.aclose()


async def test_a_failed_commit_keeps_the_end_for_the_next_round() -> None:
    store = _RecordingStore()
    failures = [RuntimeError("database is locked")]
    real = store.append_events_many

    async def flaky(*args: object, **kwargs: object) -> None:
        if failures:
            raise failures.pop()
        await real(*args, **kwargs)  # type: ignore[arg-type]

    store.append_events_many = flaky  # type: ignore[method-assign]
    writer = EventWriter(store)  # type: ignore[arg-type]
    stored = writer.finish_turn(_end("ses_a", "turn_1"))
    await asyncio.wait_for(stored, 5)
    assert [t[2] for t in store.transactions] == [["turn_1"]]
    await writer.aclose()
