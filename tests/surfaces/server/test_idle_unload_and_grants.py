"""Idle sessions leave memory and come back on the next request with everything that matters: their history,
the replay script's position, and the grants the user gave "for this session" (stored, not re-asked)."""

from __future__ import annotations

import asyncio

import httpx2

from tests.surfaces.server.conftest import start
from tests.surfaces.server.test_rest import _create, _sse, _wait_for


def _config(idle_ms: int) -> dict[str, object]:
    grant = {"roots": ["."], "allowReplay": True, "maxMode": "always-ask"}
    return {"server": {"idleUnloadMs": idle_ms, "defaultPrincipal": grant}}


async def _loaded(client: httpx2.AsyncClient) -> int:
    return (await client.get("/v1/health")).json()["sessions_loaded"]


async def _answer_first_ask(
    client: httpx2.AsyncClient, session_id: str, prompt: str, answer: dict[str, str]
) -> tuple[dict[str, object], str]:
    """Send ``prompt``, answer the approval it asks for with ``answer``; the request and the turn's text."""
    turn = asyncio.create_task(
        client.post(f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": prompt})
    )
    request = (await _wait_for(client, session_id, "permission_request"))["request"]
    answered = await client.post(f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json=answer)
    assert answered.status_code == 200, answered.text
    return request, (await turn).json()["text"]


async def _wait_unloaded(client: httpx2.AsyncClient) -> None:
    for _ in range(200):  # the janitor runs every half idleUnloadMs
        if await _loaded(client) == 0:
            break
        await asyncio.sleep(0.05)
    assert await _loaded(client) == 0


async def test_an_unloaded_session_returns_with_history_script_position_and_session_grants(tmp_path) -> None:  # type: ignore[no-untyped-def]
    served, context = await start(tmp_path, config=_config(300))
    try:
        (served.workspace / "notes").mkdir()
        script = served.script(
            [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "notes/a.txt", "content": "a"}}
                    ]
                },
                {"text": "wrote a"},
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "notes/b.txt", "content": "b"}}
                    ]
                },
                {"text": "wrote b"},
            ]
        )
        async with served.client() as client:
            session_id = await _create(client, served, script, mode="always-ask")
            request, text = await _answer_first_ask(
                client, session_id, "a", {"decision": "approve_session", "scope": "directory"}
            )
            assert "directory" in [scope["kind"] for scope in request["scopes"]]  # type: ignore[union-attr]
            assert text == "wrote a"
            await _wait_unloaded(client)

            second = await client.post(
                f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": "b"}
            )
            assert second.status_code == 200, second.text
            assert second.json()["text"] == "wrote b"  # the script went on at step 3, not back to step 1
            assert await _loaded(client) == 1
            events = await _sse(client, session_id)
            detail = (await client.get(f"/v1/sessions/{session_id}")).json()
        resolved = [e for e in events if e["type"] == "permission_resolved"]
        assert [r["response"]["approved_by"] for r in resolved] == ["user:alice", "grant:session"]
        assert (served.workspace / "notes" / "b.txt").read_text() == "b"
        assert [m["content"] for m in detail["messages"] if m["role"] == "user"] == ["a", "b"]
        # Events kept counting across the reload: one sequence, no gaps, no repeats.
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    finally:
        await context.__aexit__(None, None, None)


async def test_a_session_with_a_listener_or_a_pending_question_stays_loaded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    served, context = await start(tmp_path, config=_config(200))
    try:
        script = served.script(
            [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
                {"text": "ok"},
            ]
        )
        async with served.client() as client:
            session_id = await _create(client, served, script, mode="always-ask")
            turn = asyncio.create_task(
                client.post(
                    f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": "go"}
                )
            )
            request = (await _wait_for(client, session_id, "permission_request"))["request"]
            await asyncio.sleep(0.8)  # several janitor rounds while the question waits
            assert await _loaded(client) == 1
            await client.post(
                f"/v1/sessions/{session_id}/approvals/{request['request_id']}",
                json={"decision": "approve_once"},
            )
            assert (await turn).json()["text"] == "ok"
    finally:
        await context.__aexit__(None, None, None)


async def test_reject_session_refuses_the_scope_and_the_refusal_survives_an_unload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    served, context = await start(tmp_path, config=_config(300))
    try:
        (served.workspace / "notes").mkdir()
        writes = [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": f"notes/{n}.txt", "content": n}}]}
            for n in ("a", "b")
        ]
        script = served.script([writes[0], {"text": "refused a"}, writes[1], {"text": "refused b"}])
        async with served.client() as client:
            session_id = await _create(client, served, script, mode="always-ask")
            _, text = await _answer_first_ask(
                client, session_id, "a", {"decision": "reject_session", "scope": "directory"}
            )
            assert text == "refused a"
            await _wait_unloaded(client)
            second = await client.post(
                f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"prompt": "b"}
            )
            assert second.status_code == 200 and second.json()["text"] == "refused b"
            events = await _sse(client, session_id)
        resolved = [e["response"] for e in events if e["type"] == "permission_resolved"]
        assert [(r["decision"], r["approved_by"]) for r in resolved] == [
            ("reject_session", "user:alice"),
            ("reject", "refusal:session"),
        ]
        assert not (served.workspace / "notes" / "a.txt").exists()
        assert not (served.workspace / "notes" / "b.txt").exists()
    finally:
        await context.__aexit__(None, None, None)
