"""The FastAPI application: REST under ``/v1``, Server-Sent Events and the WebSocket, behind bearer auth.

One turn runs per session at a time: a message posted while a turn runs gets ``409 Conflict`` (clients
wait for ``turn_completed`` or interrupt). Request bodies above ``maxRequestBytes`` get ``413``; a token
over its rate gets ``429`` with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request, Response, WebSocket
from fastapi.responses import StreamingResponse
from fastapi_offline import FastAPIOffline
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

import seepient
from seepient.config import SettingsError
from seepient.models.base import ModelError
from seepient.protocol import ApprovalDecision
from seepient.store import Store
from seepient.surfaces.server import observability
from seepient.surfaces.server.access_log import RequestLog, RequestSink
from seepient.surfaces.server.auth import (
    WS_SUBPROTOCOL,
    Principal,
    RateLimiter,
    TokenCache,
    bearer_from_header,
    bearer_from_subprotocols,
)
from seepient.surfaces.server.console_routes import add_console_routes
from seepient.surfaces.server.error_statuses import status_for
from seepient.surfaces.server.event_feed import WireEvent
from seepient.surfaces.server.event_schema import runtime_event_schema
from seepient.surfaces.server.live import ApprovalNotPending, LiveSession, SessionBusy
from seepient.surfaces.server.manager import SessionManager
from seepient.surfaces.server.schemas import (
    ApprovalAnswer,
    ApprovalAnswered,
    CreateSession,
    Health,
    Interrupted,
    PostMessage,
    SessionDetail,
    SessionView,
    ToolView,
    TurnAccepted,
    TurnReply,
    TurnView,
)
from seepient.surfaces.server.tenancy import TenancyError
from seepient.tools.registry import builtin_registry


@dataclass
class ServerState:
    store: Store
    manager: SessionManager
    limiter: RateLimiter
    max_request_bytes: int
    max_ws_frame_bytes: int
    request_log: RequestSink | None = None
    """Where each request's log entry goes (``access_log.RequestLog``); no log when ``None``."""
    stopping: bool = False
    """Set by ``stop_streams`` when the server is asked to stop."""
    tokens: TokenCache = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = TokenCache(self.store.authenticate)

    def stop_streams(self) -> None:
        """End every open event stream cleanly (SSE bodies finish, WebSockets close with 1012), so a server
        asked to stop is not held open by its clients and each client resumes from its last sequence number."""
        self.stopping = True
        self.manager.end_streams()


_UNAUTHORIZED = HTTPException(
    status_code=401,
    detail="missing or invalid bearer token: send Authorization: Bearer TOKEN (create one with seepient tokens create)",
    headers={"WWW-Authenticate": "Bearer"},
)


def _not_found(session_id: str) -> HTTPException:
    # The same answer whether the session does not exist or belongs to someone else.
    return HTTPException(status_code=404, detail=f"no session {session_id}")


async def _principal_of(
    request: Request, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
) -> Principal:
    state: ServerState = request.app.state.server
    token = bearer_from_header(authorization)
    if token is None:
        raise _UNAUTHORIZED
    found = await state.tokens.authenticate(token)
    if found is None:
        raise _UNAUTHORIZED
    token_id, name = found
    wait = state.limiter.allow(token_id)
    if wait is not None:
        raise HTTPException(
            status_code=429,
            detail="rate limit reached for this token; retry later",
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    return Principal(name=name, token_id=token_id)


Caller = Annotated[Principal, Depends(_principal_of)]


class _BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413, whether or not Content-Length was sent."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(send, self.limit)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            if len(body) > self.limit:
                await _too_large(send, self.limit)
                return
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    payload = json.dumps({"detail": f"request body is larger than the limit of {limit} bytes"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def create_app(state: ServerState, *, on_shutdown: Callable[[], Awaitable[None]] | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        janitor = asyncio.create_task(state.manager.unload_idle_forever(), name="unload-idle-sessions")
        replicas = asyncio.create_task(state.manager.follow_replicas(), name="follow-replicas")
        yield
        janitor.cancel()
        await asyncio.gather(janitor, return_exceptions=True)
        await state.manager.aclose()
        # Leave the other replicas only once this one's turns are closed and stored.
        replicas.cancel()
        await asyncio.gather(replicas, return_exceptions=True)
        if on_shutdown is not None:
            await on_shutdown()

    # /docs and /redoc from assets in an installed package: the page works with no internet and loads nothing
    # from a third party into a browser holding the operator's token.
    app: FastAPI = FastAPIOffline(title="Seepient", version=seepient.__version__, lifespan=lifespan)
    app.add_middleware(_BodyLimit, limit=state.max_request_bytes)
    if state.request_log is not None:
        app.add_middleware(RequestLog, write=state.request_log)

    app.state.server = state
    observability.install(app, state.manager)

    async def live_or_404(session_id: str, caller: Principal) -> LiveSession:
        try:
            live = await state.manager.live(session_id, caller.name)
        except TenancyError as exc:
            raise HTTPException(status_code=status_for(exc), detail=str(exc)) from None
        except (SettingsError, ModelError) as exc:
            raise HTTPException(
                status_code=status_for(exc), detail=f"cannot reopen the session: {exc}"
            ) from None
        if live is None:
            raise _not_found(session_id)
        return live

    @app.get("/v1/health", response_model=Health)
    async def health() -> Health:
        return Health(version=seepient.__version__, sessions_loaded=state.manager.loaded_count)

    @app.get("/v1/schema/events")
    async def event_schema(caller: Caller) -> dict[str, Any]:
        """The JSON Schema of the runtime events streamed by ``/events`` and the WebSocket."""
        return runtime_event_schema()

    @app.get("/v1/tools", response_model=list[ToolView])
    async def tools(caller: Caller) -> list[ToolView]:
        return _builtin_tool_views()

    @app.post("/v1/sessions", response_model=SessionView, status_code=201)
    async def create_session(body: CreateSession, caller: Caller) -> SessionView:
        try:
            live = await state.manager.create(
                caller.name, workspace=body.workspace, model=body.model, mode=body.mode
            )
        except TenancyError as exc:
            raise HTTPException(status_code=status_for(exc), detail=str(exc)) from None
        except (SettingsError, ModelError) as exc:
            raise HTTPException(status_code=status_for(exc), detail=str(exc)) from None
        return _view(live.record, live)

    @app.get("/v1/sessions", response_model=list[SessionView])
    async def list_sessions(caller: Caller) -> list[SessionView]:
        records = await state.store.list_sessions(caller.name)
        return [_view(r, state.manager.loaded(r.id)) for r in records]

    @app.get("/v1/sessions/{session_id}", response_model=SessionDetail)
    async def get_session(session_id: str, caller: Caller) -> SessionDetail:
        record = await state.store.get_session(session_id, caller.name)
        if record is None:
            raise _not_found(session_id)
        live = state.manager.loaded(session_id)
        if live is not None:
            await live.settled()
        turns = await state.store.turns(session_id)
        return SessionDetail(
            **_view(record, live).model_dump(),
            turns=[TurnView(**{k: getattr(t, k) for k in TurnView.model_fields}) for t in turns],
            messages=await state.store.messages(session_id),
            pending_approvals=await live.stored_pending_requests() if live is not None else [],
        )

    @app.delete("/v1/sessions/{session_id}", status_code=204)
    async def delete_session(session_id: str, caller: Caller) -> Response:
        if not await state.manager.delete(session_id, caller.name):
            raise _not_found(session_id)
        return Response(status_code=204)

    @app.post(
        "/v1/sessions/{session_id}/messages",
        status_code=202,
        response_model=TurnAccepted | TurnReply,
        responses={409: {"description": "a turn is already running in this session"}},
    )
    async def post_message(
        session_id: str, body: PostMessage, caller: Caller, response: Response, wait: bool = False
    ) -> TurnAccepted | TurnReply:
        live = await live_or_404(session_id, caller)
        try:
            turn_id = await live.start_turn(body.prompt, body.image_parts(), plan=body.plan)
        except SessionBusy as exc:
            raise HTTPException(status_code=status_for(exc), detail=str(exc)) from None
        if not wait:
            return TurnAccepted(turn_id=turn_id)
        assert live.task is not None
        outcome = await asyncio.shield(live.task)
        response.status_code = 200
        return TurnReply(
            turn_id=turn_id,
            reason=outcome.reason,
            text=outcome.text,
            steps=outcome.steps,
            error=outcome.error,
        )

    @app.get("/v1/sessions/{session_id}/events", response_class=StreamingResponse)
    async def events(
        session_id: str,
        caller: Caller,
        after: Annotated[int, Query(ge=0)] = 0,
        follow: bool = True,
        last_event_id: Annotated[str | None, Header(include_in_schema=False)] = None,
    ) -> StreamingResponse:
        live = await live_or_404(session_id, caller)
        if last_event_id is not None and last_event_id.isdigit():
            after = max(after, int(last_event_id))

        async def stream() -> AsyncIterator[bytes]:
            # Ends (cleanly) when the server stops: the client reconnects with Last-Event-ID and misses nothing.
            async for event in live.events(after, follow=follow):
                yield _sse(event)

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
        )

    @app.post(
        "/v1/sessions/{session_id}/approvals/{request_id}",
        response_model=ApprovalAnswered,
        responses={404: {"description": "no such pending request"}, 409: {"description": "already answered"}},
    )
    async def answer_approval(
        session_id: str, request_id: str, body: ApprovalAnswer, caller: Caller
    ) -> ApprovalAnswered:
        live = await live_or_404(session_id, caller)
        try:
            await live.submit_answer(
                request_id,
                decision=ApprovalDecision(body.decision),
                principal=caller.name,
                scope=body.scope,
                feedback=body.feedback,
            )
        except ApprovalNotPending as exc:
            raise HTTPException(
                status_code=409 if exc.answered else status_for(exc), detail=str(exc)
            ) from None
        return ApprovalAnswered(request_id=request_id, decision=body.decision)

    @app.post("/v1/sessions/{session_id}/interrupt", response_model=Interrupted)
    async def interrupt(session_id: str, caller: Caller) -> Interrupted:
        live = await live_or_404(session_id, caller)
        return Interrupted(interrupted=await live.interrupt_anywhere())

    @app.websocket("/v1/sessions/{session_id}/ws")
    async def websocket(websocket: WebSocket, session_id: str, after: int = 0) -> None:
        await _serve_websocket(state, websocket, session_id, max(0, after))

    add_console_routes(app, state, _principal_of)
    return app


@functools.cache
def _builtin_tool_views() -> list[ToolView]:
    """The built-in tools every session starts with. Their JSON schemas are derived from pydantic models, which
    costs milliseconds per tool, and they never change while the server runs: worked out once."""
    return [ToolView(**spec.model_dump()) for spec in builtin_registry().specs()]


def _view(record: Any, live: LiveSession | None) -> SessionView:
    view = SessionView.model_validate(record, from_attributes=True)
    return view.model_copy(update={"status": "running"}) if live is not None and live.running else view


def _sse(event: WireEvent) -> bytes:
    return f"id: {event.seq}\nevent: {event.type}\ndata: {event.json}\n\n".encode()


async def _serve_websocket(state: ServerState, websocket: WebSocket, session_id: str, after: int) -> None:
    offered = websocket.scope.get("subprotocols") or []
    token = bearer_from_header(websocket.headers.get("authorization")) or bearer_from_subprotocols(offered)
    found = await state.tokens.authenticate(token) if token else None
    if found is None:
        # 1008 (policy violation) before accept: the handshake fails with 403 and nothing leaks.
        await websocket.close(code=1008, reason="missing or invalid bearer token")
        return
    token_id, name = found
    if state.limiter.allow(token_id) is not None:
        await websocket.close(code=1013, reason="rate limit reached for this token")
        return
    try:
        live = await state.manager.live(session_id, name)
    except (TenancyError, SettingsError, ModelError) as exc:
        await websocket.close(code=1008, reason=str(exc)[:120])
        return
    if live is None:
        await websocket.close(code=1008, reason=f"no session {session_id}")
        return
    await websocket.accept(subprotocol=WS_SUBPROTOCOL if WS_SUBPROTOCOL in offered else None)
    caller = Principal(name=name, token_id=token_id)
    outgoing = _Outgoing(websocket)

    async def pump() -> None:
        last = after
        async for event in live.events(after, follow=True):
            await outgoing.send(event.json)
            last = event.seq
        if state.stopping:
            # 1012 "service restart": the client reconnects (to this server or another replica) from ``last``.
            with contextlib.suppress(RuntimeError, WebSocketDisconnected, WebSocketDisconnect):
                await websocket.close(code=1012, reason=f"server stopping; reconnect with ?after={last}")

    sender = asyncio.create_task(pump())
    try:
        while True:
            raw = await websocket.receive_text()
            if len(raw) > state.max_ws_frame_bytes:
                await websocket.close(code=1009, reason="frame too large")
                return
            if state.limiter.allow(token_id) is not None:
                await outgoing.client_error("rate_limited", "rate limit reached for this token")
                continue
            await _handle_frame(live, caller, outgoing, raw)
    except (WebSocketDisconnect, WebSocketDisconnected):
        pass
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnected, WebSocketDisconnect):
            await sender


class _Outgoing:
    """Frames to one client, one at a time: events from the pump and replies to the client's own frames."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket
        self._lock = asyncio.Lock()

    async def send(self, text: str) -> None:
        async with self._lock:
            await self._websocket.send_text(text)

    async def client_error(self, code: str, message: str) -> None:
        await self.send(json.dumps({"type": "client_error", "code": code, "message": message}))


async def _handle_frame(live: LiveSession, caller: Principal, outgoing: _Outgoing, raw: str) -> None:
    try:
        frame = json.loads(raw)
    except json.JSONDecodeError:
        await outgoing.client_error("bad_frame", "frames are JSON objects with a type")
        return
    kind = frame.get("type") if isinstance(frame, dict) else None
    try:
        if kind == "message":
            body = PostMessage.model_validate(
                {k: v for k, v in frame.items() if k in ("prompt", "images", "plan")}
            )
            turn_id = await live.start_turn(body.prompt, body.image_parts(), plan=body.plan)
            await outgoing.send(json.dumps({"type": "turn_accepted", "turn_id": turn_id}))
        elif kind == "approval":
            answer = ApprovalAnswer.model_validate(
                {k: v for k, v in frame.items() if k not in ("type", "request_id")}
            )
            await live.submit_answer(
                str(frame.get("request_id", "")),
                decision=ApprovalDecision(answer.decision),
                principal=caller.name,
                scope=answer.scope,
                feedback=answer.feedback,
            )
        elif kind == "interrupt":
            await live.interrupt_anywhere()
        else:
            await outgoing.client_error("bad_frame", "frame type must be message, approval or interrupt")
    except ValidationError as exc:
        await outgoing.client_error("invalid", str(exc.errors(include_url=False, include_input=False)))
    except SessionBusy as exc:
        await outgoing.client_error("busy", str(exc))
    except ApprovalNotPending as exc:
        await outgoing.client_error("not_pending", str(exc))
