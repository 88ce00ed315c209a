"""Every purpose is used: a turn with images goes to the vision route with the image in the request; a plan
turn goes to the plan route, offers and runs only read-only tools, and the session continues after approval
with write tools on the text route; a tool that declares the media purpose is handed the media route's model."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from seepient.config import SeepientPaths
from seepient.protocol import (
    ApprovedAction,
    ImagePart,
    Message,
    ModelRequest,
    PreparedActionDraft,
    ReadAction,
    TextChunk,
    ToolResult,
)
from seepient.runtime import Session, SessionOptions
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.support.sse_server import Reply, SSEReplayServer

_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()


def _open(tmp_path: Path, server: SSEReplayServer, **options: object) -> Session:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    settings = {
        "models": {
            "providers": {"local": {"type": "openai-chat", "baseUrl": server.base_url}},
            "routes": {
                "text.standard": {"model": "local:writer"},
                "vision.standard": {"model": "local:eyes"},
                "plan.standard": {"model": "local:planner"},
                "media.standard": {"model": "local:painter", "fallbackModels": ["local:sketcher"]},
            },
            "retry": {"maxAttempts": 1},
        }
    }
    # Providers and their base URLs come from the user's settings: a project never chooses them.
    (tmp_path / "home" / "settings.json").write_text(json.dumps(settings))
    return Session.open(
        SessionOptions(workspace=workspace, paths=SeepientPaths(home=tmp_path / "home"), **options)  # type: ignore[arg-type]
    )


async def test_images_go_to_the_vision_route_and_ride_in_the_request(tmp_path):
    with SSEReplayServer() as server:
        server.queue(Reply.synthesized("a red square"), Reply.synthesized("plain text"))
        session = _open(tmp_path, server)
        try:
            seen = await session.run("what is this?", images=(ImagePart(media_type="image/png", data=_PNG),))
            plain = await session.run("and now without an image")
        finally:
            await session.aclose()
        bodies = [r.json() for r in server.requests]
    assert seen.text == "a red square" and plain.text == "plain text"
    assert [b["model"] for b in bodies] == ["eyes", "writer"]
    user = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]
    image_parts = [p for p in user["content"] if p["type"] == "image_url"]
    assert image_parts == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_PNG}"}}]
    assert {"type": "text", "text": "what is this?"} in user["content"]
    # The image stays in the history the next turn sends, to the text route.
    assert any(isinstance(m["content"], list) for m in bodies[1]["messages"] if m["role"] == "user")


async def test_plan_turn_offers_and_runs_only_read_only_tools_then_continues_with_writes(tmp_path):
    with SSEReplayServer() as server:
        server.queue(
            Reply.synthesized(tool_calls=[{"name": "read_file", "arguments": {"path": "a.py"}}]),
            # The model reaches for a write it was not offered: refused without running.
            Reply.synthesized(
                tool_calls=[{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2\n"}}]
            ),
            Reply.synthesized("Plan: set x to 2 in a.py."),
            Reply.synthesized(
                tool_calls=[{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2\n"}}]
            ),
            Reply.synthesized("Done."),
        )
        session = _open(tmp_path, server, auto_approve=True)
        target = session.workspace / "a.py"
        target.write_text("x = 1\n")
        events: list[object] = []
        session.subscribe(events.append)
        try:
            plan = await session.run("make x two", plan=True)
            assert target.read_text() == "x = 1\n"
            done = await session.carry_out_plan()
        finally:
            await session.aclose()
        bodies = [r.json() for r in server.requests]
    assert plan.reason == "final" and plan.text == "Plan: set x to 2 in a.py."
    assert done.reason == "final" and target.read_text() == "x = 2\n"
    assert [b["model"] for b in bodies] == ["planner"] * 3 + ["writer"] * 2
    offered_in_plan = {t["function"]["name"] for t in bodies[0]["tools"]}
    assert "read_file" in offered_in_plan and "grep" in offered_in_plan
    assert not offered_in_plan & {"write_file", "edit_file", "shell"}
    assert "Plan mode" in bodies[0]["messages"][0]["content"]
    assert "Plan mode" not in bodies[3]["messages"][0]["content"]
    offered_after = {t["function"]["name"] for t in bodies[3]["tools"]}
    assert {"write_file", "edit_file", "shell"} <= offered_after
    results = [(e.tool, e.status) for e in events if isinstance(e, ToolResult)]
    assert results == [("read_file", "ok"), ("write_file", "denied"), ("write_file", "ok")]
    refusal = next(e for e in events if isinstance(e, ToolResult) and e.status == "denied")
    assert "plan is approved" in refusal.output
    # The continuation shares the planning turn's history.
    assert any(m.get("content") == "Plan: set x to 2 in a.py." for m in bodies[3]["messages"])


class _PaintArgs(BaseModel):
    prompt: str


class PaintTool(Tool[_PaintArgs]):
    """An image-generation tool in the shape an SDK user would write: it asks the model of the media route."""

    name: ClassVar[str] = "paint"
    description: ClassVar[str] = "describe a picture for the prompt"
    input_model: ClassVar[type[BaseModel]] = _PaintArgs
    read_only: ClassVar[bool] = True
    model_purpose = "media"

    async def prepare(self, args: _PaintArgs, ctx: ToolContext) -> PreparedActionDraft:
        return PreparedActionDraft(
            session_id=ctx.session_id,
            call_id=ctx.call_id,
            tool=self.name,
            kind="read",
            payload=ReadAction(operation="glob", paths=(str(ctx.workspace),), params={"prompt": args.prompt}),
            read_only=True,
            summary=f"paint {args.prompt}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        assert ctx.model is not None, "a tool that declares a purpose gets that route's model"
        request = ModelRequest(
            model=ctx.model.name.split(":", 1)[1],
            messages=(Message.user(action.payload.params["prompt"]),),  # type: ignore[union-attr]
        )
        chunks = [e.text async for e in ctx.model.stream(request) if isinstance(e, TextChunk)]
        return ToolOutput(text="".join(chunks))


async def test_a_tool_that_declares_the_media_purpose_is_handed_the_media_routes_model(tmp_path):
    with SSEReplayServer() as server:
        server.queue(
            Reply.synthesized(tool_calls=[{"name": "paint", "arguments": {"prompt": "a red fox"}}]),
            Reply.error(503, "painter overloaded"),
            Reply.synthesized("<svg>fox</svg>"),
            Reply.synthesized("Here is your fox."),
        )
        paint = PaintTool()
        session = _open(tmp_path, server, extra_tools=[paint], auto_approve=True)
        try:
            outcome = await session.run("draw a fox")
        finally:
            await session.aclose()
        bodies = [r.json() for r in server.requests]
    assert outcome.text == "Here is your fox."
    # The turn asks the text route; the tool asks the media route, whose fallback answers after a 503.
    assert [b["model"] for b in bodies] == ["writer", "painter", "sketcher", "writer"]
    tool_message = [m for m in bodies[3]["messages"] if m["role"] == "tool"][-1]
    assert tool_message["content"] == "<svg>fox</svg>"
    assert "paint" in {t["function"]["name"] for t in bodies[0]["tools"]}
    # The media request is the tool's own: no tools, none of the turn's history.
    assert bodies[1]["messages"] == [{"role": "user", "content": "a red fox"}] and "tools" not in bodies[1]
