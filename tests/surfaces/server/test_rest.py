"""The REST API of a real server: sessions, turns with approvals over HTTP, SSE replay, and the OpenAPI document."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from tests.audit_view import merge_actions
from tests.surfaces.server.conftest import Served, start


async def _create(client: httpx2.AsyncClient, served: Served, script: Any, mode: str = "always-ask") -> str:
    response = await client.post(
        "/v1/sessions",
        json={"workspace": str(served.workspace), "model": f"replay:{script}", "mode": mode},
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def _sse(client: httpx2.AsyncClient, session_id: str, after: int = 0) -> list[dict[str, Any]]:
    response = await client.get(
        f"/v1/sessions/{session_id}/events", params={"after": after, "follow": "false"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            event = json.loads(lines["data"])
            assert int(lines["id"]) == event["seq"] and lines["event"] == event["type"]
            events.append(event)
    return events


async def _wait_for(client: httpx2.AsyncClient, session_id: str, kind: str) -> dict[str, Any]:
    for _ in range(500):
        for event in await _sse(client, session_id):
            if event["type"] == kind:
                return event
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {kind} event")


async def test_health_and_openapi_need_no_token(served: Served) -> None:
    async with served.client(None) as client:
        assert (await client.get("/v1/health")).json()["status"] == "ok"
        document = (await client.get("/openapi.json")).json()
        assert "/v1/sessions/{session_id}/messages" in document["paths"]


async def test_tools_lists_the_builtin_tools(served: Served) -> None:
    async with served.client() as client:
        names = [tool["name"] for tool in (await client.get("/v1/tools")).json()]
    assert {"read_file", "write_file", "edit_file", "shell"} <= set(names)


async def test_a_turn_with_an_approval_answered_over_rest(served: Served) -> None:
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hi\n"}}]},
            {"text": "Wrote it."},
        ]
    )
    async with served.client() as client:
        session_id = await _create(client, served, script)
        accepted = await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "write"})
        assert accepted.status_code == 202
        turn_id = accepted.json()["turn_id"]
        request = (await _wait_for(client, session_id, "permission_request"))["request"]
        detail = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert [p["request_id"] for p in detail["pending_approvals"]] == [request["request_id"]]
        assert detail["status"] == "running"
        busy = await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "again"})
        assert busy.status_code == 409
        answer = await client.post(
            f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json={"decision": "approve_once"}
        )
        assert answer.status_code == 200
        twice = await client.post(
            f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json={"decision": "approve_once"}
        )
        assert twice.status_code in (404, 409)
        completed = await _wait_for(client, session_id, "turn_completed")
        assert completed["turn_id"] == turn_id and completed["text"] == "Wrote it."
        detail = (await client.get(f"/v1/sessions/{session_id}")).json()
    assert (served.workspace / "out.txt").read_text() == "hi\n"
    assert detail["turns"][0]["status"] == "completed" and detail["turns"][0]["reply"] == "Wrote it."
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "tool", "assistant"]
    audit = merge_actions([json.loads(line) for line in (served.home / "audit.log").read_text().splitlines()])
    action = [r for r in audit if r.get("type") == "action"][-1]
    assert action["principal"] == "alice" and action["surface"] == "server"
    assert action["session_id"] == session_id
    assert action["approval"]["approved_by"] == "user:alice"


async def test_a_rejection_with_feedback_reaches_the_model_and_nothing_runs(served: Served) -> None:
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "no.txt", "content": "x"}}]},
            {"text": "Understood."},
        ]
    )
    async with served.client() as client:
        session_id = await _create(client, served, script)
        turn = asyncio.create_task(
            client.post(f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": "go"})
        )
        request = (await _wait_for(client, session_id, "permission_request"))["request"]
        await client.post(
            f"/v1/sessions/{session_id}/approvals/{request['request_id']}",
            json={"decision": "reject", "feedback": "use a different name"},
        )
        reply = await turn
        events = await _sse(client, session_id)
    assert reply.status_code == 200 and reply.json()["text"] == "Understood."
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["status"] == "rejected" and "use a different name" in result["output"]
    assert not (served.workspace / "no.txt").exists()


async def test_sse_replays_exactly_the_events_after_a_seq(served: Served) -> None:
    script = served.script([{"text": "one two three"}])
    async with served.client() as client:
        session_id = await _create(client, served, script, mode="ask-untrusted")
        reply = await client.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "count"})
        assert reply.json()["reason"] == "final"
        everything = await _sse(client, session_id)
        seqs = [e["seq"] for e in everything]
        assert seqs == list(range(1, len(seqs) + 1))
        tail = await _sse(client, session_id, after=2)
        resumed = await client.get(
            f"/v1/sessions/{session_id}/events", params={"follow": "false"}, headers={"Last-Event-ID": "2"}
        )
    assert [e["seq"] for e in tail] == seqs[2:]
    assert resumed.text.count("id: ") == len(seqs) - 2


async def test_an_interrupt_ends_a_turn_waiting_for_approval(served: Served) -> None:
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
            {"text": "done"},
        ]
    )
    async with served.client() as client:
        session_id = await _create(client, served, script)
        await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
        await _wait_for(client, session_id, "permission_request")
        assert (await client.post(f"/v1/sessions/{session_id}/interrupt")).json() == {"interrupted": True}
        completed = await _wait_for(client, session_id, "turn_completed")
        detail = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (await client.post(f"/v1/sessions/{session_id}/interrupt")).json() == {"interrupted": False}
    assert completed["reason"] == "interrupted"
    assert detail["turns"][0]["status"] == "interrupted" and detail["pending_approvals"] == []
    assert not (served.workspace / "x.txt").exists()


async def test_sessions_list_and_delete(served: Served) -> None:
    script = served.script([{"text": "hi"}])
    async with served.client() as client:
        session_id = await _create(client, served, script)
        assert [s["id"] for s in (await client.get("/v1/sessions")).json()] == [session_id]
        assert (await client.delete(f"/v1/sessions/{session_id}")).status_code == 204
        assert (await client.get(f"/v1/sessions/{session_id}")).status_code == 404
        assert (await client.get("/v1/sessions")).json() == []


async def test_an_unanswered_approval_times_out_into_a_rejection_the_model_sees(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = {
        "server": {
            "approvalTimeoutMs": 300,
            "defaultPrincipal": {"roots": [str(tmp_path / "root")], "allowReplay": True, "maxMode": "auto"},
        }
    }
    served, context = await start(tmp_path, config=config)
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "t.txt", "content": "x"}}]},
            {"text": "gave up"},
        ]
    )
    try:
        async with served.client() as client:
            session_id = await _create(client, served, script)
            reply = await client.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "go"})
            events = await _sse(client, session_id)
    finally:
        await context.__aexit__(None, None, None)
    assert reply.json()["text"] == "gave up"
    resolved = next(e for e in events if e["type"] == "permission_resolved")
    assert resolved["response"]["approved_by"] == "server:timeout"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["status"] == "rejected" and "no one answered" in result["output"]
    assert not (served.workspace / "t.txt").exists()
