"""The ACP agent's stdio: JSON-RPC lines in on stdin and out on a private copy of stdout, so nothing but
JSON-RPC ever reaches the editor; a line that is not a JSON-RPC message is answered with a JSON-RPC error
(parse error or invalid request) instead of being dropped, and reading goes on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from typing import Any

_log = logging.getLogger("seepient.acp")

_LINE_LIMIT = 64 * 1024 * 1024
"""Images and embedded files travel inside a line; editors send them whole."""


def claim_stdout() -> int:
    """Keep the real stdout for JSON-RPC and point file descriptor 1 at stderr, so a stray ``print`` (ours, a
    library's, or a child process's that inherits descriptor 1) can never corrupt the protocol stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    os.set_inheritable(protocol_fd, False)
    return protocol_fd


def _envelope_problem(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response; None when it is one."""
    if not isinstance(message, dict):
        return f"a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'a JSON-RPC message carries "jsonrpc": "2.0"'
    if "id" in message and not (message["id"] is None or isinstance(message["id"], str | int)):
        return "an id is a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return "a method is a non-empty string"
        if "params" in message and not isinstance(message["params"], dict | list):
            return "params are an object or an array"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "a message has a method (request or notification) or a result or error (response)"


def _error(code: int, message: str, details: str, request_id: Any = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }


class CheckedLines:
    """A message transport for the SDK's connection (``send``/``receive``/``close``) over newline-delimited
    JSON, which answers malformed lines itself."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the editor's connection is closed")
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        # One write per message: lines of concurrent senders never interleave.
        self._writer.write(line.encode("utf-8"))
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                raw = await self._reader.readline()
            except ValueError:  # longer than the limit: the buffer was dropped
                await self.send(_error(-32600, "Invalid Request", "the line is longer than the agent reads"))
                continue
            if not raw:
                return None
            text = raw.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except (ValueError, UnicodeDecodeError) as exc:
                _log.warning("not JSON: %s", exc)
                await self.send(_error(-32700, "Parse error", f"the line is not JSON: {exc}"))
                continue
            problem = _envelope_problem(message)
            if problem is not None:
                request_id = message.get("id") if isinstance(message, dict) else None
                if not (request_id is None or isinstance(request_id, str | int)):
                    request_id = None
                await self.send(_error(-32600, "Invalid Request", problem, request_id))
                continue
            return message

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()


class _BlockingOut:
    """Writes to a regular file (stdout redirected to one), which asyncio's pipe transport cannot take."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _feed_from_thread(reader: asyncio.StreamReader) -> None:
    """Reads stdin in a thread when it is a regular file (``seepient acp < messages.jsonl``)."""
    loop = asyncio.get_running_loop()

    def read() -> None:
        try:
            for line in iter(sys.stdin.buffer.readline, b""):
                loop.call_soon_threadsafe(reader.feed_data, line)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=read, name="acp-stdin", daemon=True).start()


async def stdio_transport(protocol_fd: int) -> CheckedLines:
    """The transport over stdin and the protocol's copy of stdout (see ``claim_stdout``)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    except ValueError:
        _feed_from_thread(reader)
    writer: Any
    try:
        out = os.fdopen(protocol_fd, "wb", buffering=0, closefd=False)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:
        writer = _BlockingOut(protocol_fd)
    return CheckedLines(reader, writer)
