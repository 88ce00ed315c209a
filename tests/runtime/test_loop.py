"""The agent loop: how turns end, ordering and concurrency of tool calls, interrupts and model failures."""

from __future__ import annotations

import asyncio

from seepient.protocol import (
    ErrorEvent,
    ReasoningDelta,
    TextDelta,
    ToolResult,
    TurnCompleted,
    TurnStarted,
)
from tests.runtime.conftest import ProbeTool, SerialProbe, audit_actions


def _calls(*calls):
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


async def test_final_text_ends_the_turn_and_streams(make_session):
    session, events = make_session([{"text": "hello there, general"}])
    outcome = await session.run("hi")
    assert (outcome.reason, outcome.text, outcome.steps) == ("final", "hello there, general", 1)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "hello there, general"
    assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnCompleted)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert session.events_since(events[-2].seq) == [events[-1]]


async def test_reasoning_streams_as_its_own_event_and_stays_out_of_the_answer(make_session):
    session, events = make_session([{"thinking": "weighing it up", "text": "the answer"}])
    outcome = await session.run("hi")
    assert outcome.text == "the answer" and session.history[-1].content == "the answer"
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    assert [e.text for e in reasoning] == ["weighing it up"]
    first_text = next(e for e in events if isinstance(e, TextDelta))
    assert reasoning[0].seq < first_text.seq and reasoning[0].turn_id == first_text.turn_id


async def test_step_limit_ends_the_turn(make_session):
    session, events = make_session([_calls(("glob", {"pattern": "*"}))] * 5, max_steps=3)
    outcome = await session.run("loop forever")
    assert (outcome.reason, outcome.steps) == ("step_limit", 3)
    assert len([e for e in events if isinstance(e, ToolResult)]) == 3


async def test_concurrency_safe_calls_run_together(make_session):
    probe = ProbeTool(barrier=asyncio.Barrier(2))  # deadlocks (and times out) if the calls ran one by one
    session, events = make_session(
        [_calls(("probe", {"label": "a"}), ("probe", {"label": "b"})), {"text": "ok"}], extra_tools=[probe]
    )
    await session.run("x")
    assert [e.status for e in events if isinstance(e, ToolResult)] == ["ok", "ok"]
    assert probe.log[:2] == ["start a", "start b"]


async def test_unsafe_calls_run_one_after_another_in_order(make_session):
    probe = SerialProbe()
    calls = [("serial_probe", {"label": str(i)}) for i in range(4)]
    session, events = make_session([_calls(*calls), {"text": "ok"}], extra_tools=[probe])
    await session.run("x")
    assert probe.log == [f"{kind} {i}" for i in range(4) for kind in ("start", "end")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.output for r in results] == [f"probed {i}" for i in range(4)]


async def test_interrupt_kills_the_command_audits_it_and_keeps_history_valid(make_session):
    session, events = make_session(
        [_calls(("shell", {"command": "sleep 30"})), {"text": "next turn works"}], auto_approve=True
    )
    turn = asyncio.ensure_future(session.run("x"))
    for _ in range(500):
        if any(e.type == "permission_resolved" for e in events):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)
    turn.cancel()
    outcome = await turn
    assert outcome.reason == "interrupted"
    assert [line["outcome"]["status"] for line in audit_actions(session)] == ["interrupted"]
    history = session._loop._history
    assert history[-1].role == "tool" and "Interrupted" in history[-1].content
    again = await session.run("carry on")
    assert again.reason == "final" and again.text == "next turn works"


async def test_model_failure_ends_the_turn_with_an_error_event(make_session):
    session, events = make_session([{"text": "only one turn"}])
    await session.run("first")
    outcome = await session.run("second")
    assert outcome.reason == "error"
    assert outcome.error is not None and "2" in outcome.error
    assert any(isinstance(e, ErrorEvent) for e in events)
