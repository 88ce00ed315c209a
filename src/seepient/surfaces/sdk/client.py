"""``Client``: drive a ``seepient serve`` server from Python. REST for sessions and tools, the WebSocket for
turns: events stream in as the runtime emits them, approval requests go to your callback, and a dropped
connection is resumed with ``after=SEQ`` so no event is lost or repeated.

Example::

    from seepient import Client

    with Client("http://127.0.0.1:7337", token) as client:
        session = client.sessions.create(workspace="/srv/repo", model="replay:/srv/repo/script.yaml",
                                         mode="ask-untrusted", approver=lambda request: True)
        print(session.chat("Fix the failing test").text)
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2
from pydantic import TypeAdapter
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from seepient.protocol import PermissionRequest, RuntimeEvent, TurnCompleted, TurnStarted, Usage
from seepient.protocol.errors import ExecutionError
from seepient.surfaces.sdk._common import ApprovalCallback, Reply, ask_callback

__all__ = ["Client", "ClientError", "RemoteSession"]

_EVENT: TypeAdapter[RuntimeEvent] = TypeAdapter(RuntimeEvent)
_RECONNECTS = 5


class ClientError(ExecutionError):
    """The server refused a request; ``status`` is the HTTP status and the message is the server's reason."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def _check(response: httpx2.Response) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        raise ClientError(response.status_code, detail if isinstance(detail, str) else json.dumps(detail))
    return response.json() if response.content else None


class Client:
    """A server at ``base_url`` (``http://host:port``) used with bearer ``token``."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._http = httpx2.Client(
            base_url=self.base_url, headers=self._auth(), timeout=timeout, trust_env=False
        )
        self.sessions = _Sessions(self)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    def _ws_url(self, path: str) -> str:
        scheme, rest = self.base_url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}{path}"

    def _request(self, method: str, path: str, **kw: Any) -> Any:
        return _check(self._http.request(method, path, **kw))

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/v1/health")  # type: ignore[no-any-return]

    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self._request("GET", "/v1/tools")]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Sessions:
    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self, *, workspace: str, model: str, mode: str | None = None, approver: ApprovalCallback | None = None
    ) -> RemoteSession:
        view = self._client._request(
            "POST", "/v1/sessions", json={"workspace": workspace, "model": model, "mode": mode}
        )
        return RemoteSession(self._client, view, approver=approver)

    def get(self, session_id: str, *, approver: ApprovalCallback | None = None) -> RemoteSession:
        return RemoteSession(
            self._client, self._client._request("GET", f"/v1/sessions/{session_id}"), approver=approver
        )

    def list(self) -> list[dict[str, Any]]:
        return self._client._request("GET", "/v1/sessions")  # type: ignore[no-any-return]


class RemoteSession:
    """A session on the server. ``approver`` answers its approval requests during ``chat``/``stream``; without
    one they stay pending for another client (or the server's timeout rejects them)."""

    def __init__(self, client: Client, view: dict[str, Any], *, approver: ApprovalCallback | None) -> None:
        self._client = client
        self.id: str = view["id"]
        self.workspace: str = view["workspace"]
        self.model: str = view["model"]
        self.mode: str = view["mode"]
        self.last_seq: int = view.get("last_seq", 0)
        self.approver = approver

    def detail(self) -> dict[str, Any]:
        return self._client._request("GET", f"/v1/sessions/{self.id}")  # type: ignore[no-any-return]

    def interrupt(self) -> bool:
        return bool(self._client._request("POST", f"/v1/sessions/{self.id}/interrupt")["interrupted"])

    def delete(self) -> None:
        self._client._request("DELETE", f"/v1/sessions/{self.id}")

    def chat(
        self, prompt: str, *, approver: ApprovalCallback | None = None, images: Sequence[bytes] = ()
    ) -> Reply:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.achat(prompt, approver=approver, images=images))
        raise RuntimeError("chat() cannot run inside an event loop: use `await session.achat(prompt)` there")

    async def achat(
        self, prompt: str, *, approver: ApprovalCallback | None = None, images: Sequence[bytes] = ()
    ) -> Reply:
        events = [event async for event in self.stream(prompt, approver=approver, images=images)]
        last = events[-1]
        if not isinstance(last, TurnCompleted):
            raise ClientError(0, "the turn's stream ended without turn_completed")
        return Reply(
            turn_id=last.turn_id,
            text=last.text,
            reason=last.reason,
            steps=last.steps,
            usage=last.usage or Usage(),
            events=tuple(events),
        )

    async def stream(
        self, prompt: str, *, approver: ApprovalCallback | None = None, images: Sequence[bytes] = ()
    ) -> AsyncIterator[RuntimeEvent]:
        """Start a turn over the WebSocket and yield its events until ``turn_completed``.

        A connection that drops is reopened with ``after`` = the last seq received (up to five times), so the
        turn's events arrive in order and once each. The turn is told apart from earlier events by the id
        the server acknowledges the message with, or, when the acknowledgement was lost with a dropped
        connection, by the first ``turn_started`` after the message was sent (a session runs one turn at a
        time: a message that would start a second is refused).
        """
        answer = approver or self.approver
        message: dict[str, Any] = {"type": "message", "prompt": prompt}
        if images:
            # The server judges each image by its bytes and refuses the message (before any turn) otherwise.
            message["images"] = [{"data": base64.b64encode(image).decode("ascii")} for image in images]
        turn_id: str | None = None
        early: list[RuntimeEvent] = []
        sent = False
        sent_after = self.last_seq
        for attempt in range(_RECONNECTS + 1):
            try:
                async with self._connect(self.last_seq) as ws:
                    if not sent:
                        sent_after = self.last_seq
                        await ws.send(json.dumps(message))
                        sent = True
                    async for raw in ws:
                        frame = json.loads(raw)
                        kind = frame.get("type")
                        if kind == "client_error":
                            raise ClientError(409 if frame.get("code") == "busy" else 400, frame["message"])
                        if kind == "turn_accepted":
                            turn_id = frame["turn_id"]
                            ready, early = [e for e in early if getattr(e, "turn_id", None) == turn_id], []
                        else:
                            event = _EVENT.validate_python(frame)
                            self.last_seq = max(self.last_seq, event.seq)
                            if turn_id is None and isinstance(event, TurnStarted) and event.seq > sent_after:
                                turn_id = event.turn_id
                                early = [e for e in early if getattr(e, "turn_id", None) == turn_id]
                                for seen in early:
                                    yield seen
                                early = []
                            if turn_id is None:
                                early.append(event)
                                continue
                            ready = [event] if getattr(event, "turn_id", None) in (turn_id, None) else []
                        for event in ready:
                            yield event
                            if isinstance(event, PermissionRequest) and answer is not None:
                                await self._answer(ws, event, answer)
                            if isinstance(event, TurnCompleted):
                                return
            except InvalidStatus as exc:
                raise ClientError(exc.response.status_code, "the server refused the WebSocket") from None
            except (ConnectionClosed, OSError):
                if attempt == _RECONNECTS:
                    raise
            await asyncio.sleep(min(2.0, 0.1 * 2**attempt))
        raise ClientError(
            0, f"the connection to {self._client.base_url} kept dropping; the turn may still run"
        )

    @staticmethod
    async def _answer(ws: ClientConnection, event: PermissionRequest, answer: ApprovalCallback) -> None:
        response = await ask_callback(answer, event.request)
        frame: dict[str, Any] = {
            "type": "approval",
            "request_id": event.request.request_id,
            "decision": response.decision.value,
        }
        if response.scope is not None:
            frame["scope"] = response.scope
        if response.feedback is not None:
            frame["feedback"] = response.feedback
        await ws.send(json.dumps(frame))

    def _connect(self, after: int) -> Any:
        return connect(
            self._client._ws_url(f"/v1/sessions/{self.id}/ws?after={after}"),
            additional_headers=self._client._auth(),
            max_queue=None,
            open_timeout=self._client._timeout,
        )
