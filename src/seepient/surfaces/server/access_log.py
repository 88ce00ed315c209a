"""The server's request log: one entry per HTTP request or WebSocket connection, written when it ends, to the
sink ``seepient serve``'s options choose (JSON lines on stdout, or ``http_request`` events in the JSON log).

An entry holds the method, the path (never the query string), the status (a WebSocket's close code), the time
taken, the client's address and, when traces are on, the ids of the request's span (the spans of the work it
starts, a turn among them, nest under it). No header is read here, so a bearer token (``Authorization`` or the
``bearer.`` subprotocol) cannot reach the log, nor can a secret someone put in a query string; nor is a client's
``traceparent`` followed: a request's trace starts here.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seepient import telemetry

RequestSink = Callable[[dict[str, Any]], None]
"""Told each finished request's fields; a sink that raises ``OSError``/``ValueError`` (a closed stream) is
ignored, so a lost log never takes requests down with it."""


def json_lines(stream: IO[str]) -> RequestSink:
    """Each request as one JSON object a line on ``stream``, led by its time (``ts``)."""

    def write(fields: dict[str, Any]) -> None:
        line = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
        stream.write(json.dumps(line) + "\n")
        stream.flush()

    return write


def log_events(logger: logging.Logger) -> RequestSink:
    """Each request as an ``http_request`` event of ``logger`` (the JSON log adds ``ts`` and the level)."""

    def write(fields: dict[str, Any]) -> None:
        telemetry.log_event(logger, "http_request", fields)

    return write


class RequestLog:
    """ASGI middleware that hands ``write`` one entry per request and, when traces are on, makes a
    ``seepient.http_request`` span current for the request's life."""

    def __init__(self, app: ASGIApp, write: RequestSink) -> None:
        self.app = app
        self._write = write

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        seen: dict[str, Any] = {"status": None}
        websocket = scope["type"] == "websocket"
        method = "WEBSOCKET" if websocket else scope.get("method")

        async def watched_send(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                seen["status"] = message["status"]
            elif kind == "websocket.accept":
                seen["status"] = 101
            elif kind == "websocket.close":
                seen["close_code"] = message.get("code", 1000)
                if seen["status"] is None:  # refused before the handshake completed
                    seen["status"] = 403
            await send(message)

        async def watched_receive() -> Message:
            message = await receive()
            if message["type"] == "websocket.disconnect" and "close_code" not in seen:
                seen["close_code"] = message.get("code", 1000)
            return message

        attributes = {"http.request.method": method, "url.path": scope.get("path")}
        with telemetry.span("seepient.http_request", attributes) as span:
            seen["ids"] = telemetry.current_ids()
            try:
                await self.app(scope, watched_receive if websocket else receive, watched_send)
            except BaseException:
                if seen["status"] is None:
                    seen["status"] = 500
                raise
            finally:
                span.set("http.response.status_code", seen["status"])
                self._log(scope, method, seen, started)

    def _log(self, scope: Scope, method: str | None, seen: dict[str, Any], started: float) -> None:
        client = scope.get("client")
        fields: dict[str, Any] = {
            "method": method,
            "path": scope.get("path"),
            "status": seen["status"],
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            "client": client[0] if client else None,
        }
        if "close_code" in seen:
            fields["close_code"] = seen["close_code"]
        if seen["ids"] is not None:
            fields["trace_id"], fields["span_id"] = seen["ids"]
        try:
            self._write(fields)
        except (OSError, ValueError):  # a closed log stream must not take requests down with it
            pass
