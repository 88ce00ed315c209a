"""End to end: a real ``seepient serve`` process driven by the SDK ``Client`` over HTTP and WebSocket with the
replay model: approvals over the WebSocket, a rejection with feedback, a connection cut mid-stream, foreign
and missing tokens, and ``kill -9`` mid-turn followed by a restart that loses nothing completed."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

import seepient
from seepient.protocol import ApprovalDecision, ApprovalRequest, ApprovalResponse
from seepient.surfaces.sdk.client import ClientError, RemoteSession
from tests.conftest import BIN
from tests.e2e.conftest import Sandboxed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    world: Sandboxed
    root: Path
    database: str
    port: int
    process: subprocess.Popen[str] | None = None
    args: tuple[str, ...] = ()
    """More ``seepient serve`` options."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def token(self, principal: str) -> str:
        done = subprocess.run(
            [
                str(BIN / "seepient"),
                "tokens",
                "create",
                "--principal",
                principal,
                "--database",
                self.database,
            ],
            capture_output=True,
            text=True,
            env=self.world.env,
            timeout=60,
            check=True,
        )
        return done.stdout.strip()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                str(BIN / "seepient"),
                "serve",
                "--port",
                str(self.port),
                "--database",
                self.database,
                *self.args,
            ],
            env=self.world.env,
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"seepient serve exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                if httpx2.get(f"{self.url}/v1/health", timeout=1, trust_env=False).status_code == 200:
                    return
            except httpx2.TransportError:
                time.sleep(0.05)
        raise AssertionError("seepient serve did not answer /v1/health within 30 s")

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> str:
        if self.process is None or self.process.poll() is not None:
            return ""
        self.process.send_signal(signal.SIGINT)
        try:
            _, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


@pytest.fixture
def server(world: Sandboxed, tmp_path: Path) -> Iterator[Server]:
    served = Server(
        world=world, root=tmp_path, database=f"sqlite:///{tmp_path / 'server.db'}", port=_free_port()
    )
    served.tokens = {name: served.token(name) for name in ("alice", "bob")}  # type: ignore[attr-defined]
    served.start()
    try:
        yield served
    finally:
        served.stop()


def _client(server: Server, principal: str = "alice") -> seepient.Client:
    return seepient.Client(server.url, server.tokens[principal])  # type: ignore[attr-defined]


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_a_turn_approved_over_the_websocket_and_one_rejected_with_feedback(server: Server) -> None:
    world = server.world
    script = world.script(
        [
            _write("ok.txt", "approved\n"),
            {"text": "Wrote ok.txt."},
            _write("bad.txt", "x"),
            {"text": "Skipped."},
        ]
    )
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> ApprovalResponse | bool:
        asked.append(request)
        if request.action.payload.path == "bad.txt":  # type: ignore[union-attr]
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT, digest=request.digest, feedback="not that file"
            )
        return True

    with _client(server) as client:
        assert "write_file" in client.tool_names()
        session = client.sessions.create(
            workspace=str(world.workspace), model=f"replay:{script}", mode="always-ask", approver=approver
        )
        first = session.chat("write ok")
        second = session.chat("write bad")
        detail = session.detail()
    assert first.text == "Wrote ok.txt." and (world.workspace / "ok.txt").read_text() == "approved\n"
    assert second.text == "Skipped." and not (world.workspace / "bad.txt").exists()
    rejected = second.tool_results[0]
    assert rejected.status == "rejected" and "not that file" in rejected.output
    assert [a.action.tool for a in asked] == ["write_file", "write_file"]
    assert [t["status"] for t in detail["turns"]] == ["completed", "completed"]
    audit = [r for r in world.audit_records() if r.get("type") == "action"]
    assert [(r["principal"], r["surface"], r["outcome"]["status"]) for r in audit] == [
        ("alice", "server", "ok"),
        ("alice", "server", "rejected"),
    ]
    assert server.tokens["alice"] not in server.stop()  # type: ignore[attr-defined]


def test_another_principal_gets_404_and_no_token_gets_401(server: Server) -> None:
    script = server.world.script([{"text": "hi"}])
    with _client(server) as alice, _client(server, "bob") as bob:
        session = alice.sessions.create(workspace=str(server.world.workspace), model=f"replay:{script}")
        with pytest.raises(ClientError) as foreign:
            bob.sessions.get(session.id)
        assert foreign.value.status == 404
        # The same id aimed at the WebSocket: the handshake is refused and nothing runs.
        hijack = RemoteSession(
            bob, {"id": session.id, "workspace": "", "model": "", "mode": ""}, approver=None
        )
        with pytest.raises(ClientError) as refused:
            hijack.chat("hijack")
        assert refused.value.status == 403
        assert alice.sessions.get(session.id).detail()["turns"] == []
    anonymous = httpx2.get(f"{server.url}/v1/sessions", trust_env=False)
    assert anonymous.status_code == 401
    with (
        seepient.Client(server.url, "spt_0000000000000000_forged") as forged,
        pytest.raises(ClientError) as bad,
    ):
        forged.tool_names()
    assert bad.value.status == 401


class _CuttingProxy:
    """A TCP proxy that cuts its first WebSocket connection after ``cut_after`` bytes from the server, as a
    network drop would."""

    def __init__(self, target_port: int, cut_after: int) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.connections = 0
        self.cuts = 0
        self._cutting = False
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _CuttingProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        head = await reader.read(65536)
        cut = b"upgrade: websocket" in head.lower() and self.cuts == 0 and not self._cutting
        self._cutting = self._cutting or cut
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        upstream_writer.write(head)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, limit: int | None) -> None:
            sent = 0
            while data := await src.read(4096):
                if limit is not None and sent + len(data) > limit:
                    self.cuts += 1
                    writer.transport.abort()
                    upstream_writer.transport.abort()
                    return
                sent += len(data)
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(
            pipe(reader, upstream_writer, None),
            pipe(upstream_reader, writer, self.cut_after if cut else None),
            return_exceptions=True,
        )


def test_a_stream_cut_mid_turn_resumes_with_every_event_once(server: Server) -> None:
    words = " ".join(f"word{i}" for i in range(400))
    script = server.world.script([{"text": words}])
    with _client(server) as client:
        session = client.sessions.create(workspace=str(server.world.workspace), model=f"replay:{script}")
    with _CuttingProxy(server.port, cut_after=6000) as proxy:
        with seepient.Client(f"http://127.0.0.1:{proxy.port}", server.tokens["alice"]) as via_proxy:  # type: ignore[attr-defined]
            remote = via_proxy.sessions.get(session.id)
            reply = remote.chat("talk")
    assert proxy.cuts == 1 and proxy.connections >= 3  # REST, the cut WebSocket, the resumed one
    seqs = [e.seq for e in reply.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert "".join(e.text for e in reply.events if e.type == "text_delta") == words
    assert reply.text == words


def test_kill_9_mid_turn_then_restart_keeps_everything_completed(server: Server) -> None:
    world = server.world
    # The restored session plays on after the steps its stored history shows: the cut turn's write was never
    # answered, so the continuation asks for it again (a real model would be asked again too) and is refused.
    script = world.script(
        [{"text": "First answer."}, _write("late.txt", "x"), {"text": "Understood, no file."}]
    )
    http = httpx2.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {server.tokens['alice']}"},
        trust_env=False,
        timeout=20,  # type: ignore[attr-defined]
    )
    with http:
        session_id = http.post(
            "/v1/sessions",
            json={"workspace": str(world.workspace), "model": f"replay:{script}", "mode": "always-ask"},
        ).json()["id"]
        first = http.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "one"}).json()
        assert first["text"] == "First answer."
        http.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "two"})
        for _ in range(500):
            pending = http.get(f"/v1/sessions/{session_id}").json()["pending_approvals"]
            if pending:
                break
            time.sleep(0.02)
        assert pending, "the second turn never asked for approval"
        before = http.get(f"/v1/sessions/{session_id}/events?follow=false").text
    server.kill9()
    server.start()
    with httpx2.Client(base_url=server.url, headers=http.headers, trust_env=False, timeout=20) as http:
        detail = http.get(f"/v1/sessions/{session_id}").json()
        after = http.get(f"/v1/sessions/{session_id}/events?follow=false").text
        assert http.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "three"}).status_code == 202
        for _ in range(500):
            pending = http.get(f"/v1/sessions/{session_id}").json()["pending_approvals"]
            if pending:
                break
            time.sleep(0.02)
        assert pending, "the continued turn never asked about the write"
        http.post(
            f"/v1/sessions/{session_id}/approvals/{pending[0]['request_id']}",
            json={"decision": "reject", "feedback": "not after a crash"},
        )
        for _ in range(500):
            turns = http.get(f"/v1/sessions/{session_id}").json()["turns"]
            if len(turns) == 3 and turns[2]["status"] != "running":
                break
            time.sleep(0.02)
        continued = turns[2]
        events = http.get(f"/v1/sessions/{session_id}/events?follow=false").text
    assert [(t["prompt"], t["status"]) for t in detail["turns"]] == [
        ("one", "completed"),
        ("two", "interrupted"),
    ]
    assert detail["turns"][0]["reply"] == "First answer." and detail["pending_approvals"] == []
    assert [m["content"] for m in detail["messages"]][:2] == ["one", "First answer."]
    assert after.startswith(before)  # every event a client saw before the kill survived, in order
    closing = json.loads(after[len(before) :].split("data: ", 1)[1].split("\n", 1)[0])
    assert closing["type"] == "turn_completed" and closing["reason"] == "interrupted"
    assert (continued["status"], continued["reply"]) == ("completed", "Understood, no file.")
    ids = [int(line[4:]) for line in events.splitlines() if line.startswith("id: ")]
    assert ids == list(range(1, len(ids) + 1))  # numbering continues after the restart, nothing reused
    assert not (world.workspace / "late.txt").exists()


def test_the_cli_refuses_an_exposed_bind_without_tokens_and_prints_a_token_once(
    world: Sandboxed, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'fresh.db'}"
    refused = subprocess.run(
        [
            str(BIN / "seepient"),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(_free_port()),
            "--database",
            database,
        ],
        env=world.env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "not a loopback address, with no token" in refused.stderr and "tokens create" in refused.stderr
    created = subprocess.run(
        [str(BIN / "seepient"), "tokens", "create", "--principal", "ci", "--database", database],
        env=world.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    token = created.stdout.strip()
    assert token.startswith("spt_") and token not in created.stderr and "shown once" in created.stderr
    assert token.encode() not in (tmp_path / "fresh.db").read_bytes()
