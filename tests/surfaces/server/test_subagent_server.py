"""A sub-agent in a server session: its approval reaches the client as a labelled ``permission_request`` and
is answered over REST like the session's own; its other events arrive wrapped as ``subagent_event``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from tests.audit_view import merge_actions
from tests.surfaces.server.conftest import Served
from tests.surfaces.server.test_rest import _create, _sse


async def _next_request(client: httpx2.AsyncClient, session_id: str, seen: set[str]) -> dict[str, Any]:
    for _ in range(500):
        for event in await _sse(client, session_id):
            if event["type"] == "permission_request" and event["request"]["request_id"] not in seen:
                seen.add(event["request"]["request_id"])
                return event["request"]
        await asyncio.sleep(0.02)
    raise AssertionError("no new permission_request event")


async def test_a_sub_agents_approval_is_answered_over_rest(served: Served) -> None:
    script = served.script(
        [
            {
                "tool_calls": [
                    {"name": "agent", "arguments": {"task": "write out.txt", "tools": ["write_file"]}}
                ]
            },
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hi\n"}}]},
            {"text": "child wrote it"},
            {"text": "parent done"},
        ]
    )
    seen: set[str] = set()
    async with served.client() as client:
        session_id = await _create(client, served, script)
        accepted = await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "delegate"})
        assert accepted.status_code == 202
        spawn = await _next_request(client, session_id, seen)
        assert spawn["action"]["tool"] == "agent" and spawn["agent"] is None
        answer = await client.post(
            f"/v1/sessions/{session_id}/approvals/{spawn['request_id']}", json={"decision": "approve_once"}
        )
        assert answer.status_code == 200, answer.text
        write = await _next_request(client, session_id, seen)
        assert write["action"]["tool"] == "write_file" and write["agent"].startswith("sub-agent ses_")
        assert write["session_id"] != session_id
        detail = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert [p["request_id"] for p in detail["pending_approvals"]] == [write["request_id"]]
        answer = await client.post(
            f"/v1/sessions/{session_id}/approvals/{write['request_id']}", json={"decision": "approve_once"}
        )
        assert answer.status_code == 200, answer.text
        for _ in range(500):
            events = await _sse(client, session_id)
            if any(e["type"] == "turn_completed" for e in events):
                break
            await asyncio.sleep(0.02)
    completed = next(e for e in events if e["type"] == "turn_completed")
    assert completed["text"] == "parent done"
    relayed = [e for e in events if e["type"] == "subagent_event"]
    assert relayed and relayed[-1]["event"]["type"] == "turn_completed"
    assert (served.workspace / "out.txt").read_text() == "hi\n"
    audit = merge_actions([json.loads(line) for line in (served.home / "audit.log").read_text().splitlines()])
    child = [r for r in audit if r.get("parent_session_id") == session_id]
    assert [r["action"]["tool"] for r in child] == ["write_file"]
    assert child[0]["principal"] == "alice" and child[0]["approval"]["approved_by"] == "user:alice"
