"""The store's part in running several replicas on one PostgreSQL database: notifications sent on commit only,
one replica claiming a session's turn, recovery that closes only the turns of dead replicas, and an approval
answered once from any replica."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from seepient.store import Store
from seepient.store.notify import Change, listen, parse_change
from seepient.store.tables import ReplicaRow
from tests.store.postgres import create_database


@pytest.fixture
async def pair(postgres_sockets: str, request: pytest.FixtureRequest) -> AsyncIterator[tuple[Store, Store]]:
    url = create_database(postgres_sockets, f"replicas_{request.node.name}"[:60])
    a, b = await Store.open(url), await Store.open(url)
    a.replica_id, b.replica_id = "rep-a", "rep-b"
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def _session(store: Store, session_id: str) -> None:
    await store.create_session(
        session_id=session_id, principal="alice", workspace="/w", model="m:x", mode="auto"
    )


async def _next(changes: AsyncIterator[Change]) -> Change:
    return await asyncio.wait_for(anext(changes), 10)


async def test_events_are_announced_on_commit_and_a_failed_batch_announces_nothing(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    await _session(a, "ses_n")
    changes = listen(b)
    first = asyncio.ensure_future(_next(changes))
    await asyncio.sleep(0.3)  # let the listener connect before anything is committed
    await a.append_events("ses_n", [(1, "x", "{}"), (2, "x", "{}")])
    assert await first == Change("events", "rep-a", "ses_n", "2")
    with pytest.raises(IntegrityError):  # seq 2 again: the transaction rolls back, and its notice with it
        await a.append_events("ses_n", [(2, "x", "{}"), (3, "x", "{}")])
    await a.append_events("ses_n", [(3, "x", "{}")])
    assert await _next(changes) == Change("events", "rep-a", "ses_n", "3")
    await changes.aclose()  # type: ignore[attr-defined]


def test_unknown_or_malformed_notices_are_ignored() -> None:
    assert parse_change("e rep ses 5") == Change("events", "rep", "ses", "5")
    assert parse_change("i rep ses") == Change("interrupt", "rep", "ses", "")
    assert parse_change("z rep ses 1") is None
    assert parse_change("e") is None


async def test_one_replica_at_a_time_claims_a_turn(pair: tuple[Store, Store]) -> None:
    a, b = pair
    await _session(a, "ses_c")
    await a.append_events("ses_c", [(1, "x", "{}")])
    claimed = await a.claim_turn("ses_c", "rep-a")
    assert claimed.claimed and claimed.last_seq == 1
    refused = await b.claim_turn("ses_c", "rep-b")
    assert not refused.claimed and refused.owner == "rep-a"
    assert await b.request_interrupt("ses_c") == "rep-a"
    assert await a.interrupts_requested(["ses_c"]) == ["ses_c"]
    await a.release_turn("ses_c", "rep-a")
    assert await b.request_interrupt("ses_c") is None  # nothing runs: nothing to interrupt
    again = await b.claim_turn("ses_c", "rep-b")
    assert again.claimed and again.owner == "rep-b"
    assert await b.interrupts_requested(["ses_c"]) == []  # a new claim starts without the old request


async def test_recovery_closes_only_the_turns_of_dead_replicas(pair: tuple[Store, Store]) -> None:
    a, b = pair
    for session_id, owner in (("ses_live", "rep-a"), ("ses_dead", "rep-dead"), ("ses_gone", "rep-gone")):
        await _session(a, session_id)
        await a.append_events(session_id, [(1, "turn_started", "{}")])
        assert (await a.claim_turn(session_id, owner)).claimed
        await a.start_turn(session_id, f"turn_{session_id}", "go")
        await a.add_pending(session_id, f"apr_{session_id}", {"x": 1}, timeout_s=600)
    await a.heartbeat("rep-a")
    await a.heartbeat("rep-dead")
    async with a.engine.begin() as db:
        await db.execute(
            update(ReplicaRow)
            .where(ReplicaRow.id == "rep-dead")
            .values(heartbeat_at=datetime.now(UTC) - timedelta(minutes=5))
        )

    def close(session_id: str, turn_id: str, seq: int) -> tuple[str, str]:
        return "turn_completed", f'{{"turn_id": "{turn_id}", "seq": {seq}}}'

    cut = await b.recover_after_crash(close=close)
    assert sorted(cut) == [("ses_dead", "turn_ses_dead", 1), ("ses_gone", "turn_ses_gone", 1)]
    assert await b.recover_after_crash(close=close) == []  # each cut turn is closed once
    for session_id in ("ses_dead", "ses_gone"):
        events = await b.events_after(session_id, 0)
        assert [(e.seq, e.type) for e in events] == [(1, "turn_started"), (2, "turn_completed")]
        assert await b.pending(session_id) == []
        assert (await b.claim_turn(session_id, "rep-b")).claimed
    # The live replica's turn, its question and its numbering are untouched.
    assert [e.seq for e in await b.events_after("ses_live", 0)] == [1]
    assert [p.request_id for p in await b.pending("ses_live")] == ["apr_ses_live"]
    assert not (await b.claim_turn("ses_live", "rep-b")).claimed


async def test_an_approval_is_answered_once_from_any_replica(pair: tuple[Store, Store]) -> None:
    a, b = pair
    await _session(a, "ses_q")
    await _session(a, "ses_other")
    await a.add_pending("ses_q", "apr_q", {"digest": "d"}, timeout_s=600)
    assert not await b.answer_pending("ses_other", "apr_q", {"decision": "approve_once"})  # not its request
    assert await b.answer_pending("ses_q", "apr_q", {"decision": "approve_once"})
    assert not await a.answer_pending("ses_q", "apr_q", {"decision": "reject"})
    assert not await a.resolve_pending("apr_q", "expired", None)  # the owner timing out loses to the answer
    row = await a.pending_request("ses_q", "apr_q")
    assert row is not None and row.status == "answered" and row.answer == {"decision": "approve_once"}
    assert await a.pending_request("ses_other", "apr_q") is None
