"""The in-process SDK ``Agent`` driving the real runtime with the replay model: sync and async turns,
streaming, approval callbacks (and that a rejection or a missing approver runs nothing), custom tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

import seepient
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovedAction,
    PreparedActionDraft,
    ReadAction,
    TextDelta,
)
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.audit_view import merge_actions
from tests.support.scripts import write_script


def _script(tmp_path: Path, turns: list[dict[str, Any]]) -> str:
    return f"replay:{write_script(tmp_path / 'script.yaml', turns)}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_chat_runs_a_turn_synchronously(tmp_path: Path, workspace: Path) -> None:
    with seepient.Agent(
        workspace=workspace, model=_script(tmp_path, [{"text": "Hello there."}]), home=tmp_path / "h"
    ) as agent:
        reply = agent.chat("hi")
    assert reply.text == "Hello there." and reply.reason == "final"
    assert any(isinstance(e, TextDelta) for e in reply.events)


def test_an_approval_callback_approves_and_sees_the_action(tmp_path: Path, workspace: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    model = _script(tmp_path, [_write("a.txt", "A\n"), {"text": "done"}])
    with seepient.Agent(workspace, model, "always-ask", approve, home=tmp_path / "h") as agent:
        reply = agent.chat("write")
    assert reply.text == "done" and (workspace / "a.txt").read_text() == "A\n"
    assert asked[0].action.tool == "write_file" and asked[0].digest == asked[0].action.digest
    audit = merge_actions(
        [json.loads(line) for line in (tmp_path / "h" / "audit.log").read_text().splitlines()]
    )
    assert [r["surface"] for r in audit if r.get("type") == "action"] == ["sdk"]


async def test_an_async_callback_rejecting_runs_nothing(tmp_path: Path, workspace: Path) -> None:
    async def reject(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(0)
        return ApprovalDecision.REJECT

    model = _script(tmp_path, [_write("no.txt", "x"), {"text": "ok"}])
    async with seepient.Agent(workspace, model, "always-ask", reject, home=tmp_path / "h") as agent:
        reply = await agent.achat("write")
    assert [r.status for r in reply.tool_results] == ["rejected"]
    assert not (workspace / "no.txt").exists()


async def test_without_an_approver_an_ask_is_refused(tmp_path: Path, workspace: Path) -> None:
    model = _script(tmp_path, [_write("no.txt", "x"), {"text": "ok"}])
    async with seepient.Agent(workspace, model, "always-ask", home=tmp_path / "h") as agent:
        reply = await agent.achat("write")
    assert [r.status for r in reply.tool_results] == ["rejected"]
    assert not (workspace / "no.txt").exists()


async def test_stream_yields_events_in_order_and_ends_with_the_turn(tmp_path: Path, workspace: Path) -> None:
    model = _script(tmp_path, [{"text": "one two three"}])
    async with seepient.Agent(workspace, model, home=tmp_path / "h") as agent:
        events = [event async for event in agent.stream("count")]
    assert events[0].type == "turn_started" and events[-1].type == "turn_completed"
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "one two three"


async def test_closing_a_stream_early_interrupts_the_turn(tmp_path: Path, workspace: Path) -> None:
    model = _script(tmp_path, [_write("late.txt", "x"), {"text": "never"}])

    async def slow(request: ApprovalRequest) -> bool:
        await asyncio.sleep(30)
        return True

    async with seepient.Agent(workspace, model, "always-ask", slow, home=tmp_path / "h") as agent:
        async with contextlib.aclosing(agent.stream("go")) as events:
            async for event in events:
                if event.type == "permission_request":
                    break
        last = agent.session.events_since(0)[-1]
    assert last.type == "turn_completed" and last.reason == "interrupted"  # type: ignore[union-attr]
    assert not (workspace / "late.txt").exists()


class _Args(BaseModel):
    a: int
    b: int


class AddTool(Tool[_Args]):
    name: ClassVar[str] = "add"
    description: ClassVar[str] = "add two integers"
    input_model: ClassVar[type[BaseModel]] = _Args
    read_only: ClassVar[bool] = True

    async def prepare(self, args: _Args, ctx: ToolContext) -> PreparedActionDraft:
        return PreparedActionDraft(
            session_id=ctx.session_id,
            call_id=ctx.call_id,
            tool=self.name,
            kind="read",
            payload=ReadAction(
                operation="glob", paths=(str(ctx.workspace),), params={"a": args.a, "b": args.b}
            ),
            read_only=True,
            summary=f"add {args.a} + {args.b}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        params = action.payload.params  # type: ignore[union-attr]
        return ToolOutput(text=str(params["a"] + params["b"]))


def test_a_registered_tool_is_offered_and_runs(tmp_path: Path, workspace: Path) -> None:
    model = _script(
        tmp_path, [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 40}}]}, {"text": "42"}]
    )
    with seepient.Agent(workspace, model, home=tmp_path / "h") as agent:
        assert "add" not in agent.tool_names()
        agent.register_tool(AddTool())
        assert "add" in agent.tool_names() and "read_file" in agent.tool_names()
        reply = agent.chat("add")
    assert [(r.tool, r.status, r.output) for r in reply.tool_results] == [("add", "ok", "42")]


async def test_chat_inside_an_event_loop_says_what_to_use(tmp_path: Path, workspace: Path) -> None:
    agent = seepient.Agent(workspace, _script(tmp_path, [{"text": "x"}]), home=tmp_path / "h")
    with pytest.raises(RuntimeError, match="await agent.achat"):
        agent.chat("hi")


def test_a_bad_approver_is_refused_at_once(workspace: Path) -> None:
    with pytest.raises(TypeError, match="approver"):
        seepient.Agent(workspace, "replay:x", approver="yes")  # type: ignore[arg-type]


def test_images_passed_to_chat_ride_in_the_user_message(tmp_path: Path, workspace: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    with seepient.Agent(
        workspace=workspace, model=_script(tmp_path, [{"text": "a square"}]), home=tmp_path / "h"
    ) as agent:
        with pytest.raises(ValueError, match=r"images\[1\]: not a PNG"):
            agent.chat("look", images=[png, b"GIF??"])
        reply = agent.chat("look", images=[png])
        user = next(m for m in agent.session.history if m.role == "user")
    assert reply.text == "a square"
    assert [i.decoded() for i in user.images] == [png]
