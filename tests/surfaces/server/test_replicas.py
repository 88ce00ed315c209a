"""Two real server replicas on one real PostgreSQL database: a turn running on replica A is followed live from
replica B (WebSocket and SSE) in order and exactly once, a reconnect to B with ``after=`` gets exactly what it
missed, and B forwards approvals and interrupts to A while a second message on B gets 409 naming A."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import ClientConnection, connect

from seepient.config import SeepientPaths
from seepient.store import Store
from seepient.surfaces.server.event_feed import EventWriter
from seepient.surfaces.server.live import LiveSession
from seepient.surfaces.server.replicas import ReplicaLink
from seepient.surfaces.server.run import ServerOptions, running_server
from tests.store.postgres import create_database
from tests.support.scripts import new_script

_WORDS = 300


class Replicas:
    def __init__(self, root: Path, workspace: Path, token: str, urls: list[str]) -> None:
        self.root = root
        self.workspace = workspace
        self.token = token
        self.a, self.b = urls

    def client(self, url: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {self.token}"}, trust_env=False, timeout=30
        )

    def ws(self, url: str, session_id: str, after: int = 0) -> Any:
        return connect(
            f"{url.replace('http://', 'ws://')}/v1/sessions/{session_id}/ws?after={after}",
            additional_headers={"Authorization": f"Bearer {self.token}"},
            max_queue=None,
        )

    async def session(self, turns: list[dict[str, Any]], *, on: str, mode: str = "always-ask") -> str:
        script = new_script(self.root, turns)
        async with self.client(on) as http:
            created = await http.post(
                "/v1/sessions",
                json={"workspace": str(self.workspace), "model": f"replay:{script}", "mode": mode},
            )
        assert created.status_code == 201, created.text
        return str(created.json()["id"])


@pytest.fixture
async def replicas(tmp_path: Path, postgres_sockets: str) -> AsyncIterator[Replicas]:
    database = create_database(postgres_sockets, f"replicas_{tmp_path.name}"[:60])
    root = tmp_path / "root"
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    store = await Store.open(database)
    token = (await store.create_token("alice")).secret
    await store.aclose()
    config = tmp_path / "server.json"
    config.write_text(
        json.dumps({"server": {"defaultPrincipal": {"roots": [str(root)], "allowReplay": True}}})
    )
    async with AsyncExitStack() as stack:
        urls = []
        for name in ("a", "b"):
            options = ServerOptions(
                host="127.0.0.1",
                port=0,
                config_file=config,
                database=database,
                cwd=root,
                paths=SeepientPaths(home=tmp_path / f"home-{name}"),
            )
            urls.append(await stack.enter_async_context(running_server(options)))
        yield Replicas(root, workspace, token, urls)


def _text_then_write(name: str) -> list[dict[str, Any]]:
    return [
        {
            "text": " ".join(f"w{i}" for i in range(_WORDS)),
            "tool_calls": [{"name": "write_file", "arguments": {"path": name, "content": "x\n"}}],
        },
        {"text": "Done."},
    ]


async def _frames_until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if "seq" in frame:
            frames.append(frame)
        if frame["type"] == kind:
            return frames


async def _stored(replicas: Replicas, url: str, session_id: str, after: int = 0) -> list[tuple[int, str]]:
    async with replicas.client(url) as http:
        text = (await http.get(f"/v1/sessions/{session_id}/events?after={after}&follow=false")).text
    ids = [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]
    bodies = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return list(zip(ids, bodies, strict=True))


async def test_a_turn_on_a_is_followed_live_from_b_and_approved_there(replicas: Replicas) -> None:
    session_id = await replicas.session(_text_then_write("from-b.txt"), on=replicas.a)
    async with replicas.ws(replicas.b, session_id) as follower, replicas.ws(replicas.a, session_id) as runner:
        await runner.send(json.dumps({"type": "message", "prompt": "go"}))
        await _frames_until(runner, "turn_accepted")
        # The turn on A is waiting for an answer, so what B shows now it can only have had live.
        seen = await _frames_until(follower, "permission_request")
        request_id = seen[-1]["request"]["request_id"]
        async with replicas.client(replicas.b) as http:
            detail = (await http.get(f"/v1/sessions/{session_id}")).json()
            assert [p["request_id"] for p in detail["pending_approvals"]] == [request_id]
            answered = await http.post(
                f"/v1/sessions/{session_id}/approvals/{request_id}", json={"decision": "approve_once"}
            )
            assert answered.status_code == 200, answered.text
            again = await http.post(
                f"/v1/sessions/{session_id}/approvals/{request_id}", json={"decision": "reject"}
            )
            assert again.status_code == 409
        seen += await _frames_until(follower, "turn_completed")
    assert (replicas.workspace / "from-b.txt").read_text() == "x\n"
    seqs = [f["seq"] for f in seen]
    assert seqs == list(range(1, len(seqs) + 1))
    assert sum(1 for f in seen if f["type"] == "text_delta") == _WORDS + 1  # the words and "Done."
    # What B delivered is exactly what A stored, byte for byte.
    stored = await _stored(replicas, replicas.a, session_id)
    assert [json.loads(body) for _, body in stored] == seen


async def test_a_reconnect_to_b_gets_exactly_the_missed_events(replicas: Replicas) -> None:
    session_id = await replicas.session(_text_then_write("late.txt"), on=replicas.a)
    async with replicas.ws(replicas.b, session_id) as follower:
        async with replicas.client(replicas.a) as http:
            assert (
                await http.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
            ).status_code == 202
        first = await _frames_until(follower, "permission_request")
    cut = first[len(first) // 2]["seq"]
    request_id = first[-1]["request"]["request_id"]
    async with replicas.client(replicas.b) as http:
        # An SSE follower on B from the middle, while the turn still waits on A.
        async with http.stream("GET", f"/v1/sessions/{session_id}/events?after={cut}") as sse:
            await http.post(
                f"/v1/sessions/{session_id}/approvals/{request_id}", json={"decision": "approve_once"}
            )
            ids = []
            async for line in sse.aiter_lines():
                if line.startswith("id: "):
                    ids.append(int(line[4:]))
                if line == "event: turn_completed":
                    break
    assert ids == list(range(cut + 1, ids[-1] + 1))
    stored = await _stored(replicas, replicas.a, session_id)
    assert ids[-1] == stored[-1][0]
    # And a WebSocket reconnect with after= replays the rest from B, once each.
    async with replicas.ws(replicas.b, session_id, after=cut) as again:
        replayed = await _frames_until(again, "turn_completed")
    assert [f["seq"] for f in replayed] == ids


async def test_b_refuses_a_second_message_and_forwards_an_interrupt(replicas: Replicas) -> None:
    session_id = await replicas.session(
        [*_text_then_write("never.txt"), {"text": "Second turn, on B."}], on=replicas.a
    )
    async with replicas.ws(replicas.b, session_id) as follower:
        async with replicas.client(replicas.a) as on_a, replicas.client(replicas.b) as on_b:
            await on_a.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
            await _frames_until(follower, "permission_request")
            busy = await on_b.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "again"})
            assert busy.status_code == 409
            assert "running in this session on replica" in busy.text
            interrupted = await on_b.post(f"/v1/sessions/{session_id}/interrupt")
            assert interrupted.json() == {"interrupted": True}
            ended = await _frames_until(follower, "turn_completed")
            assert ended[-1]["reason"] == "interrupted"
            for _ in range(200):  # A stores the end of the turn just after the event went out
                if (await on_b.get(f"/v1/sessions/{session_id}")).json()["status"] != "running":
                    break
                await asyncio.sleep(0.05)
            # The next turn may now run on B: it continues A's history and numbering.
            reply = await on_b.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "more"})
            assert reply.status_code == 200, reply.text
            done = await _frames_until(follower, "turn_completed")
    assert not (replicas.workspace / "never.txt").exists()
    stored = await _stored(replicas, replicas.a, session_id)
    assert [seq for seq, _ in stored] == list(range(1, len(stored) + 1))
    assert done[-1]["seq"] == stored[-1][0]
    async with replicas.client(replicas.a) as on_a:
        turns = (await on_a.get(f"/v1/sessions/{session_id}")).json()["turns"]
    assert [(t["prompt"], t["status"]) for t in turns] == [("go", "interrupted"), ("more", "completed")]


async def test_a_follower_catches_up_by_polling_alone_and_waits_at_a_gap(
    tmp_path: Path, postgres_sockets: str
) -> None:
    """No notification at all (none is listened for): the poll alone delivers, in order, and an event whose
    predecessor is not committed yet waits for it rather than going out early."""
    database = create_database(postgres_sockets, f"replicas_{tmp_path.name}"[:60])
    runner, follower = await Store.open(database), await Store.open(database)
    follower.replica_id = "rep-b"
    try:
        await runner.create_session(
            session_id="ses_f", principal="alice", workspace="/w", model="m:x", mode="auto"
        )
        record = await follower.get_session("ses_f", "alice")
        assert record is not None
        live = LiveSession(record, follower, EventWriter(follower), approval_timeout_s=60)
        link = ReplicaLink(follower, lambda: [live], {"ses_f": live}.get)
        seen: list[int] = []

        async def collect() -> None:
            async for event in live.events(0, follow=True):
                seen.append(event.seq)

        async def settle(expected: list[int]) -> None:
            for _ in range(100):
                await link.poll()
                await asyncio.sleep(0.02)
                if seen == expected:
                    return
            assert seen == expected

        reader = asyncio.create_task(collect())
        await asyncio.sleep(0.1)
        await runner.append_events("ses_f", [(1, "x", '{"n": 1}'), (2, "x", '{"n": 2}')])
        await settle([1, 2])
        await runner.append_events("ses_f", [(4, "x", '{"n": 4}')])
        await settle([1, 2])
        await asyncio.sleep(0.2)
        assert seen == [1, 2]
        await runner.append_events("ses_f", [(3, "x", '{"n": 3}')])
        await settle([1, 2, 3, 4])
        await live.aclose()
        await asyncio.wait_for(reader, 5)
    finally:
        await runner.aclose()
        await follower.aclose()
