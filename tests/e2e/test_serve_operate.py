"""End to end, operating a real ``seepient serve`` process: it says where it listens, logs each request as a JSON
line with no secret in it, serves ``/docs`` from local assets, refuses expired and revoked tokens, and stops on
SIGTERM with SSE and WebSocket streams open, each client getting a clean end it can resume from."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx2
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.conftest import BIN
from tests.e2e.conftest import Sandboxed


class _Served:
    """One ``seepient serve --port 0`` process; its stderr is read until it says where it listens."""

    def __init__(self, world: Sandboxed, root: Path, database: str) -> None:
        self.process = subprocess.Popen(
            [str(BIN / "seepient"), "serve", "--port", "0", "--database", database],
            env=world.env,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.notices: list[str] = []
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.notices.append(line)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+) ", line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise AssertionError(f"seepient serve never said where it listens: {''.join(self.notices)}")
        # Keep draining stderr so the server never blocks on a full pipe.
        self._err = threading.Thread(target=self._drain, daemon=True)
        self._err.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.notices.append(line)

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, list[dict[str, Any]]]:
        """Send ``sig``; the exit status and the request log (stdout's JSON lines). A server that does not stop
        in 20 s fails the test (and is killed)."""
        self.process.send_signal(sig)
        try:
            out, _ = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise AssertionError("seepient serve did not stop on SIGTERM with streams open") from None
        self._err.join(timeout=5)
        return self.process.returncode, [json.loads(line) for line in out.splitlines() if line.strip()]


def _token(world: Sandboxed, database: str, *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "seepient"), "tokens", *args, "--database", database],
        capture_output=True,
        text=True,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)


def test_docs_are_served_from_local_assets(world: Sandboxed, tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'server.db'}"
    served = _Served(world, tmp_path, database)
    try:
        page = httpx2.get(f"{served.url}/docs", trust_env=False, timeout=30)
        assert page.status_code == 200
        assets = _Assets()
        assets.feed(page.text)
        assert any(u.endswith(".js") for u in assets.urls) and any(u.endswith(".css") for u in assets.urls)
        # Nothing from another host: every asset is a path on this server, and it is there.
        assert not re.search(r"https?://", page.text.replace(served.url, "")), page.text
        for url in assets.urls:
            assert url.startswith("/"), url
            got = httpx2.get(f"{served.url}{url}", trust_env=False, timeout=30)
            assert got.status_code == 200 and len(got.content) > 100, url
        assert "'/openapi.json'" in page.text or '"/openapi.json"' in page.text
        assert httpx2.get(f"{served.url}/openapi.json", trust_env=False, timeout=30).status_code == 200
    finally:
        served.stop()


def test_expired_and_revoked_tokens_get_401_and_list_shows_why(world: Sandboxed, tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'server.db'}"
    good = _token(world, database, "create", "--principal", "alice")
    short = _token(world, database, "create", "--principal", "brief", "--expires", "1s")
    revoked = _token(world, database, "create", "--principal", "gone")
    revoked_id = revoked.split("_")[1]
    _token(world, database, "revoke", revoked_id)
    listed = json.loads(_token(world, database, "list", "--json"))
    states = {t["principal"]: t for t in listed}
    assert states["alice"]["state"] == "active" and states["alice"]["expires_at"] is None
    assert states["gone"]["state"] == "revoked"
    assert states["brief"]["expires_at"] is not None
    assert all(secret not in json.dumps(listed) for secret in (good, short, revoked))
    served = _Served(world, tmp_path, database)  # starting takes longer than a second: "brief" has expired
    try:

        def status(token: str) -> int:
            headers = {"Authorization": f"Bearer {token}"}
            return httpx2.get(f"{served.url}/v1/sessions", headers=headers, trust_env=False).status_code

        assert status(good) == 200
        assert status(short) == 401
        assert status(revoked) == 401
    finally:
        served.stop()
    assert json.loads(_token(world, database, "list", "--json"))[1]["state"] == "expired"
    missing = subprocess.run(
        [str(BIN / "seepient"), "tokens", "revoke", "0000", "--database", database],
        capture_output=True,
        text=True,
        env=world.env,
        timeout=60,
    )
    assert missing.returncode == 2 and "no active token" in missing.stderr


def test_sigterm_with_open_streams_stops_cleanly_and_clients_resume(world: Sandboxed, tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'server.db'}"
    token = _token(world, database, "create", "--principal", "alice")
    auth = {"Authorization": f"Bearer {token}"}
    script = world.script([{"text": "first answer"}, {"text": "second answer"}])
    served = _Served(world, tmp_path, database)
    with httpx2.Client(base_url=served.url, headers=auth, trust_env=False, timeout=30) as http:
        created = http.post(
            "/v1/sessions", json={"workspace": str(world.workspace), "model": f"replay:{script}"}
        )
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        assert (
            http.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "one"}).status_code
            == 200
        )

    sse_ids: list[int] = []
    sse_end: dict[str, Any] = {}
    ws_seqs: list[int] = []
    ws_end: dict[str, Any] = {}
    streaming = threading.Barrier(3)

    def follow_sse() -> None:
        with httpx2.Client(trust_env=False, timeout=60) as client:
            try:
                with client.stream("GET", f"{served.url}/v1/sessions/{session_id}/events", headers=auth) as r:
                    for line in r.iter_lines():
                        if line.startswith("id: "):
                            sse_ids.append(int(line[4:]))
                        if line.startswith("event: turn_completed"):
                            streaming.wait(timeout=30)
                sse_end["clean"] = True
            except httpx2.HTTPError as exc:
                sse_end["error"] = repr(exc)

    def follow_ws() -> None:
        ws_url = served.url.replace("http://", "ws://") + f"/v1/sessions/{session_id}/ws"
        with connect(ws_url, additional_headers=auth, open_timeout=30) as ws:
            try:
                while True:
                    frame = json.loads(ws.recv(timeout=60))
                    ws_seqs.append(frame["seq"])
                    if frame["type"] == "turn_completed":
                        streaming.wait(timeout=30)
            except ConnectionClosed as closed:
                ws_end["code"] = closed.rcvd.code if closed.rcvd else None
                ws_end["reason"] = closed.rcvd.reason if closed.rcvd else ""

    threads = [threading.Thread(target=follow_sse), threading.Thread(target=follow_ws)]
    for thread in threads:
        thread.start()
    streaming.wait(timeout=60)  # both clients have replayed the first turn and are now following live
    code, log = served.stop(signal.SIGTERM)
    for thread in threads:
        thread.join(timeout=30)
    assert code in (0, -signal.SIGTERM), served.notices
    assert sse_end == {"clean": True}
    last = max(sse_ids)
    assert ws_end["code"] == 1012 and f"after={last}" in ws_end["reason"]
    assert ws_seqs == sse_ids == list(range(1, last + 1))

    # The request log: one JSON line per request, none with a secret.
    text = json.dumps(log)
    assert token not in text and token.split("_", 2)[2] not in text and "Bearer" not in text
    by_path = {(e["method"], e["path"]): e for e in log}
    assert by_path[("POST", "/v1/sessions")]["status"] == 201
    assert by_path[("GET", f"/v1/sessions/{session_id}/events")]["status"] == 200
    ws_line = by_path[("WEBSOCKET", f"/v1/sessions/{session_id}/ws")]
    assert ws_line["status"] == 101 and ws_line["close_code"] == 1012
    assert all({"ts", "method", "path", "status", "duration_ms"} <= set(e) for e in log)

    # A restarted server: each client picks up from its last sequence number and misses nothing.
    again = _Served(world, tmp_path, database)
    try:
        with httpx2.Client(base_url=again.url, headers=auth, trust_env=False, timeout=30) as http:
            reply = http.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "two"})
            assert reply.status_code == 200 and reply.json()["text"] == "second answer"
            resumed = http.get(
                f"/v1/sessions/{session_id}/events",
                params={"follow": "false"},
                headers={"Last-Event-ID": str(last)},
            )
        ids = [int(line[4:]) for line in resumed.text.splitlines() if line.startswith("id: ")]
        assert ids and ids[0] == last + 1 and ids == list(range(last + 1, last + 1 + len(ids)))
        assert "second answer" in resumed.text
    finally:
        again.stop()
