"""Image parts and planning turns over the API: images are checked by their bytes before a turn starts and
ride in the turn's user message; a ``plan`` turn runs only read-only tools and a later message carries it out."""

from __future__ import annotations

import asyncio
import base64
import json

from tests.surfaces.server.conftest import Served
from tests.surfaces.server.test_rest import _create, _sse

_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
_JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 32


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_an_image_rides_in_the_turns_user_message(served: Served) -> None:
    script = served.script([{"text": "a black square"}])
    async with served.client() as client:
        session_id = await _create(client, served, script)
        reply = await client.post(
            f"/v1/sessions/{session_id}/messages",
            params={"wait": "true"},
            json={"prompt": "what is this?", "images": [{"data": _b64(_PNG), "media_type": "image/png"}]},
        )
        assert reply.status_code == 200, reply.text
        detail = (await client.get(f"/v1/sessions/{session_id}")).json()
    user = next(m for m in detail["messages"] if m["role"] == "user")
    assert user["content"] == "what is this?"
    assert [(i["media_type"], base64.b64decode(i["data"])) for i in user["images"]] == [("image/png", _PNG)]


async def test_bad_images_are_refused_before_any_turn_starts(served: Served) -> None:
    script = served.script([{"text": "never"}])
    cases = [
        ({"data": _b64(b"<svg onload=alert(1)/>")}, "not a PNG, JPEG, GIF or WebP"),
        ({"data": "%%% not base64 %%%"}, "not valid base64"),
        ({"data": _b64(_JPEG), "media_type": "image/png"}, "declared image/png but the bytes are image/jpeg"),
        ({"data": _b64(_PNG), "url": "http://169.254.169.254/"}, "Extra inputs are not permitted"),
    ]
    async with served.client() as client:
        session_id = await _create(client, served, script)
        for image, message in cases:
            response = await client.post(
                f"/v1/sessions/{session_id}/messages", json={"prompt": "look", "images": [image]}
            )
            assert response.status_code == 422, response.text
            assert message in json.dumps(response.json()), response.text
        too_many = [{"data": _b64(_PNG)}] * 9
        response = await client.post(
            f"/v1/sessions/{session_id}/messages", json={"prompt": "look", "images": too_many}
        )
        assert response.status_code == 422
        assert [e for e in await _sse(client, session_id) if e["type"] == "turn_started"] == []


async def test_a_plan_turn_runs_only_read_only_tools_and_the_next_message_carries_it_out(
    served: Served,
) -> None:
    (served.workspace / "notes.txt").write_text("greet\n")
    script = served.script(
        [
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "notes.txt"}},
                    {"name": "write_file", "arguments": {"path": "early.txt", "content": "x"}},
                ]
            },
            {"text": "1. write hello.txt"},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}]},
            {"text": "done"},
        ]
    )
    async with served.client() as client:
        session_id = await _create(client, served, script, mode="autonomous-trusted")
        planned = await client.post(
            f"/v1/sessions/{session_id}/messages",
            params={"wait": "true"},
            json={"prompt": "greet", "plan": True},
        )
        assert planned.status_code == 200 and planned.json()["text"] == "1. write hello.txt"
        results = [e for e in await _sse(client, session_id) if e["type"] == "tool_result"]
        assert [(r["tool"], r["status"]) for r in results] == [("read_file", "ok"), ("write_file", "denied")]
        assert not (served.workspace / "early.txt").exists()
        done = await client.post(
            f"/v1/sessions/{session_id}/messages",
            params={"wait": "true"},
            json={"prompt": "The plan is approved. Carry it out now."},
        )
        assert done.status_code == 200 and done.json()["text"] == "done"
    assert (served.workspace / "hello.txt").read_text() == "hi"


async def test_the_python_client_sends_images_over_the_websocket(served: Served) -> None:
    import seepient

    script = served.script([{"text": "a black square"}])
    # The client's REST calls are synchronous and this server runs on the test's own loop: they go to a thread.
    with seepient.Client(served.url, served.tokens["alice"]) as client:  # type: ignore[attr-defined]
        session = await asyncio.to_thread(
            client.sessions.create, workspace=str(served.workspace), model=f"replay:{script}"
        )
        reply = await session.achat("what is this?", images=[_PNG])
        detail = await asyncio.to_thread(session.detail)
    user = next(m for m in detail["messages"] if m["role"] == "user")
    assert reply.text == "a black square"
    assert [base64.b64decode(i["data"]) for i in user["images"]] == [_PNG]
