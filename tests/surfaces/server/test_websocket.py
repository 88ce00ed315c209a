"""The WebSocket of a real server: auth by header or subprotocol, approvals and interrupts as frames, and a
reconnect with ``after=SEQ`` that delivers every missed event once, in order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from tests.surfaces.server.conftest import Served


def _ws_url(served: Served, session_id: str, after: int = 0) -> str:
    return served.url.replace("http://", "ws://") + f"/v1/sessions/{session_id}/ws?after={after}"


async def _session(served: Served, turns: list[dict[str, Any]], mode: str = "always-ask") -> str:
    script = served.script(turns)
    async with served.client() as client:
        response = await client.post(
            "/v1/sessions",
            json={"workspace": str(served.workspace), "model": f"replay:{script}", "mode": mode},
        )
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def _until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(await ws.recv())
        frames.append(frame)
        if frame["type"] == kind:
            return frames


def _auth(served: Served, principal: str = "alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {served.tokens[principal]}"}


async def test_a_turn_with_an_approval_answered_over_the_websocket(served: Served) -> None:
    session_id = await _session(
        served,
        [
            {
                "text": "Writing.",
                "tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "ws\n"}}],
            },
            {"text": "Done."},
        ],
    )
    async with connect(_ws_url(served, session_id), additional_headers=_auth(served), max_queue=None) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "write it"}))
        frames = await _until(ws, "permission_request")
        request = frames[-1]["request"]
        assert request["action"]["kind"] == "file_change" and request["action"]["digest"]
        assert "w.txt" in json.dumps(request["action"]["payload"])
        await ws.send(
            json.dumps({"type": "approval", "request_id": request["request_id"], "decision": "approve_once"})
        )
        frames += await _until(ws, "turn_completed")
    assert any(f["type"] == "turn_accepted" for f in frames)
    events = [f for f in frames if "seq" in f]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    resolved = next(e for e in events if e["type"] == "permission_resolved")
    assert resolved["response"]["decision"] == "approve_once"
    assert events[-1]["text"] == "Done."
    assert (served.workspace / "w.txt").read_text() == "ws\n"


async def test_a_rejection_with_feedback_over_the_websocket(served: Served) -> None:
    session_id = await _session(
        served,
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "touch nope"}}]},
            {"text": "OK, not doing it."},
        ],
    )
    async with connect(_ws_url(served, session_id), additional_headers=_auth(served), max_queue=None) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "go"}))
        request = (await _until(ws, "permission_request"))[-1]["request"]
        await ws.send(
            json.dumps(
                {
                    "type": "approval",
                    "request_id": request["request_id"],
                    "decision": "reject",
                    "feedback": "too risky",
                }
            )
        )
        frames = await _until(ws, "turn_completed")
    result = next(f for f in frames if f["type"] == "tool_result")
    assert result["status"] == "rejected" and "too risky" in result["output"]
    assert not (served.workspace / "nope").exists()


async def test_the_token_may_come_as_a_subprotocol_and_is_not_echoed(served: Served) -> None:
    session_id = await _session(served, [{"text": "hello there"}])
    token = served.tokens["alice"]
    async with connect(_ws_url(served, session_id), subprotocols=["seepient.v1", f"bearer.{token}"]) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "seepient.v1"
        assert token not in str(ws.response.headers)
        await ws.send(json.dumps({"type": "message", "prompt": "hi"}))
        frames = await _until(ws, "turn_completed")
    assert frames[-1]["text"] == "hello there"


@pytest.mark.parametrize("who", ["nobody", "forged", "bob"])
async def test_the_websocket_refuses_missing_forged_and_foreign_tokens(served: Served, who: str) -> None:
    session_id = await _session(served, [{"text": "hi"}])
    headers = {
        "nobody": {},
        "forged": {"Authorization": f"Bearer {served.tokens['alice'][:-2]}zz"},
        "bob": _auth(served, "bob"),
    }[who]
    with pytest.raises(InvalidStatus) as refused:
        async with connect(_ws_url(served, session_id), additional_headers=headers):
            pass
    assert refused.value.response.status_code == 403


async def test_a_reconnect_mid_stream_gets_every_missed_event_once(served: Served) -> None:
    words = " ".join(f"w{i}" for i in range(300))
    session_id = await _session(served, [{"text": words}], mode="ask-untrusted")
    seen: list[dict[str, Any]] = []
    async with connect(_ws_url(served, session_id), additional_headers=_auth(served), max_queue=None) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "talk"}))
        while len([f for f in seen if "seq" in f]) < 20:
            seen.append(json.loads(await ws.recv()))
    last = max(f["seq"] for f in seen if "seq" in f)
    async with connect(_ws_url(served, session_id, after=last), additional_headers=_auth(served)) as ws:
        seen += await _until(ws, "turn_completed")
    events = [f for f in seen if "seq" in f]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == words


async def test_a_second_message_while_running_is_refused_and_interrupt_works(served: Served) -> None:
    session_id = await _session(
        served,
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "i.txt", "content": "x"}}]},
            {"text": "x"},
        ],
    )
    async with connect(_ws_url(served, session_id), additional_headers=_auth(served), max_queue=None) as ws:
        await ws.send(json.dumps({"type": "message", "prompt": "one"}))
        await _until(ws, "permission_request")
        await ws.send(json.dumps({"type": "message", "prompt": "two"}))
        busy = await _until(ws, "client_error")
        assert busy[-1]["code"] == "busy"
        await ws.send("not json")
        assert (await _until(ws, "client_error"))[-1]["code"] == "bad_frame"
        await ws.send(json.dumps({"type": "interrupt"}))
        completed = (await _until(ws, "turn_completed"))[-1]
    assert completed["reason"] == "interrupted"
    assert not (served.workspace / "i.txt").exists()


async def test_a_frame_over_the_size_limit_closes_the_socket_and_starts_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from websockets.exceptions import ConnectionClosed

    from tests.surfaces.server.conftest import start

    grant = {"roots": ["."], "allowReplay": True, "maxMode": "always-ask"}
    served, context = await start(
        tmp_path, config={"server": {"maxWsFrameBytes": 4096, "defaultPrincipal": grant}}
    )
    try:
        session_id = await _session(served, [{"text": "never"}])
        async with connect(
            _ws_url(served, session_id), additional_headers=_auth(served), max_queue=None
        ) as ws:
            await ws.send(json.dumps({"type": "message", "prompt": "x" * 5000}))
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        async with served.client() as client:
            detail = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert detail["turns"] == [] and detail["messages"] == []
    finally:
        await context.__aexit__(None, None, None)
