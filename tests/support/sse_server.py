"""A local model server that replays recorded SSE transcripts, records requests and injects faults.

It answers every wire format Seepient speaks under one prefix (default ``/v1``): ``/chat/completions``,
``/responses``, ``/messages`` and ``/models/{model}:streamGenerateContent``, serving queued replies in order
whatever the endpoint, so one test can follow a request across providers. Use it in-process
(``with SSEReplayServer() as server: server.queue(Reply.transcript(...))``, or the ``sse_server`` fixture)
from any test or benchmark, or run it by hand:
``python -m tests.support.sse_server openai_chat_completions__test_parse_nothing.sse``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_REPO_ROOT = Path(__file__).resolve().parents[2]
SSE_CORPUS = _REPO_ROOT / ".." / "shared" / "corpora" / "sse"


def corpus_dir() -> Path:
    """The recorded transcripts, kept beside the repository (CI clones ``shared/`` next to it)."""
    path = SSE_CORPUS.resolve()
    if not (path / "INDEX.jsonl").is_file():
        raise FileNotFoundError(
            f"the SSE corpus is missing: expected {path}/INDEX.jsonl (the 'shared' folder beside the repository)"
        )
    return path


def corpus_index() -> dict[str, dict[str, Any]]:
    """INDEX.jsonl keyed by transcript file name."""
    lines = (corpus_dir() / "INDEX.jsonl").read_text(encoding="utf-8").splitlines()
    return {entry["file"]: entry for entry in map(json.loads, filter(None, lines))}


def transcript_events(name: str | Path) -> list[bytes]:
    """A recorded transcript split into its SSE event blocks, byte for byte, each ending in a blank line."""
    path = Path(name) if Path(name).is_absolute() else corpus_dir() / name
    raw = path.read_bytes().replace(b"\r\n", b"\n")
    return [block + b"\n\n" for block in raw.split(b"\n\n") if block.strip()]


def data_event(payload: Mapping[str, Any] | str) -> bytes:
    """One ``data:`` event carrying ``payload`` (a JSON object, or text sent as is, e.g. ``[DONE]``)."""
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def named_event(payload: Mapping[str, Any]) -> bytes:
    """An ``event: TYPE`` + ``data:`` block, as Anthropic and OpenAI Responses send them (TYPE from the payload)."""
    return f"event: {payload['type']}\n".encode() + data_event(payload)


def chat_chunk(
    *,
    content: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: Mapping[str, Any] | None = None,
    model: str = "gpt-test",
    choices: bool = True,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object; ``choices=False`` gives the usage-only final chunk."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = list(tool_calls)
    chunk: dict[str, Any] = {
        "id": "chatcmpl-local",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}] if choices else [],
    }
    if usage is not None:
        chunk["usage"] = dict(usage)
    return chunk


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request. ``events`` are sent one write each with chunked encoding;
    ``cut_after`` drops the connection after that many events, mid-body."""

    status: int = 200
    events: tuple[bytes, ...] = ()
    body: bytes | None = None
    content_type: str = "text/event-stream"
    headers: Mapping[str, str] = field(default_factory=dict)
    first_byte_delay_s: float = 0.0
    cut_after: int | None = None
    reset: bool = False
    reset_before_headers: bool = False
    coalesce: bool = False
    hold_open_s: float = 0.0

    @classmethod
    def transcript(cls, name: str | Path) -> Reply:
        return cls(events=tuple(transcript_events(name)))

    @classmethod
    def recorded(cls, name: str | Path) -> Reply:
        """A recorded exchange whose first line is ``HTTP STATUS METHOD PATH ...`` (the llama-cpp-python
        recordings): the SSE events after it for a 200, else the body as it came."""
        path = Path(name) if Path(name).is_absolute() else corpus_dir() / name
        status_line, _, rest = path.read_bytes().replace(b"\r\n", b"\n").partition(b"\n")
        status = int(status_line.split()[1])
        if status == 200:
            return cls(events=tuple(block + b"\n\n" for block in rest.split(b"\n\n") if block.strip()))
        return cls(status=status, body=rest.strip(), content_type="application/json")

    @classmethod
    def stream(cls, *payloads: Mapping[str, Any] | str) -> Reply:
        return cls(events=tuple(data_event(payload) for payload in payloads))

    @classmethod
    def synthesized(
        cls,
        text: str = "",
        tool_calls: Iterable[Mapping[str, Any]] = (),
        *,
        model: str = "gpt-test",
        usage: tuple[int, int] = (12, 7),
    ) -> Reply:
        """A well-formed stream for one assistant turn: text in word deltas, each tool call (``name``,
        ``arguments`` object, optional ``id``) as a header fragment plus argument fragments, the finish
        reason, the usage-only chunk and ``[DONE]``."""
        chunks: list[Mapping[str, Any] | str] = [
            chat_chunk(content=piece, model=model) for piece in _words(text)
        ]
        calls = list(tool_calls)
        for index, call in enumerate(calls):
            header = {
                "index": index,
                "id": call.get("id", f"call_local_{index}"),
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            chunks.append(chat_chunk(tool_calls=[header], model=model))
            for piece in _fragments(call):
                fragment = {"index": index, "function": {"arguments": piece}}
                chunks.append(chat_chunk(tool_calls=[fragment], model=model))
        chunks.append(chat_chunk(finish_reason="tool_calls" if calls else "stop", model=model))
        prompt, completion = usage
        usage_body = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        chunks.append(chat_chunk(usage=usage_body, model=model, choices=False))
        chunks.append("[DONE]")
        return cls.stream(*chunks)

    @classmethod
    def json_error(
        cls, status: int, body: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An HTTP error whose body is ``body`` as JSON."""
        return cls(
            status=status,
            body=json.dumps(body).encode(),
            content_type="application/json",
            headers=dict(headers or {}),
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An HTTP error with an OpenAI-shaped JSON body."""
        return cls.json_error(status, _openai_error_body(message, type, code), headers=headers)

    @classmethod
    def anthropic_error(
        cls, status: int, kind: str, message: str, *, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An HTTP error with Anthropic's body: ``{"type": "error", "error": {"type", "message"}}``."""
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return cls.json_error(status, body, headers=headers)

    @classmethod
    def gemini_error(
        cls,
        status: int,
        message: str,
        *,
        state: str,
        retry_delay: str | None = None,
        reason: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An HTTP error in Google's shape: ``{"error": {"code", "message", "status", "details"}}``, with a
        ``RetryInfo`` detail when ``retry_delay`` (e.g. ``"7s"``) is given and an ``ErrorInfo`` for ``reason``."""
        details: list[dict[str, Any]] = []
        if reason is not None:
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": "googleapis.com",
                }
            )
        if retry_delay is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
        body = {"error": {"code": status, "message": message, "status": state, "details": details}}
        return cls.json_error(status, body, headers=headers)

    @classmethod
    def responses_synthesized(
        cls,
        text: str = "",
        tool_calls: Iterable[Mapping[str, Any]] = (),
        *,
        model: str = "gpt-test",
        usage: tuple[int, int] = (12, 7),
        reasoning: str | None = None,
    ) -> Reply:
        """A well-formed Responses stream: an optional reasoning item carrying ``reasoning`` as its
        encrypted content, a message item with the text in word deltas, then each function call."""
        events: list[Mapping[str, Any]] = []
        shell = {
            "id": "resp_local",
            "object": "response",
            "model": model,
            "status": "in_progress",
            "output": [],
        }
        events.append({"type": "response.created", "response": shell})
        output: list[dict[str, Any]] = []
        if reasoning is not None:
            item = {"id": "rs_local", "type": "reasoning", "encrypted_content": reasoning, "summary": []}
            events.append({"type": "response.output_item.added", "output_index": len(output), "item": item})
            events.append({"type": "response.output_item.done", "output_index": len(output), "item": item})
            output.append(item)
        if text:
            index = len(output)
            added = {
                "id": "msg_local",
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            events.append({"type": "response.output_item.added", "output_index": index, "item": added})
            for piece in _words(text):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": "msg_local",
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                    }
                )
            done = {
                **added,
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            events.append({"type": "response.output_item.done", "output_index": index, "item": done})
            output.append(done)
        for number, call in enumerate(tool_calls):
            index = len(output)
            arguments = json.dumps(call.get("arguments", {}))
            item_id = f"fc_local_{number}"
            added = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": call.get("id", f"call_local_{number}"),
                "name": call["name"],
            }
            events.append({"type": "response.output_item.added", "output_index": index, "item": added})
            for piece in _fragments(call):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item_id,
                        "output_index": index,
                        "delta": piece,
                    }
                )
            done = {**added, "status": "completed", "arguments": arguments}
            events.append({"type": "response.output_item.done", "output_index": index, "item": done})
            output.append(done)
        prompt, completion = usage
        final = {
            **shell,
            "status": "completed",
            "output": output,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }
        events.append({"type": "response.completed", "response": final})
        return cls(events=tuple(named_event(event) for event in events))

    @classmethod
    def anthropic_synthesized(
        cls,
        text: str = "",
        tool_calls: Iterable[Mapping[str, Any]] = (),
        *,
        model: str = "claude-test",
        usage: tuple[int, int] = (12, 7),
        thinking: tuple[str, str] | None = None,
        stop_reason: str | None = None,
    ) -> Reply:
        """A well-formed Messages stream: an optional thinking block (text, signature), the text in word
        deltas, each tool_use with its input in ``input_json_delta`` fragments."""
        prompt, completion = usage
        calls = list(tool_calls)
        events: list[Mapping[str, Any]] = [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_local",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": prompt,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            },
            {"type": "ping"},
        ]
        index = 0
        if thinking is not None:
            thought, signature = thinking
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            for piece in _words(thought):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    }
                )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": signature},
                }
            )
            events.append({"type": "content_block_stop", "index": index})
            index += 1
        if text:
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            for piece in _words(text):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                )
            events.append({"type": "content_block_stop", "index": index})
            index += 1
        for number, call in enumerate(calls):
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call.get("id", f"toolu_local_{number}"),
                        "name": call["name"],
                        "input": {},
                    },
                }
            )
            for piece in _fragments(call):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
            events.append({"type": "content_block_stop", "index": index})
            index += 1
        events.append(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": stop_reason or ("tool_use" if calls else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": completion},
            }
        )
        events.append({"type": "message_stop"})
        return cls(events=tuple(named_event(event) for event in events))

    @classmethod
    def gemini_stream(cls, *chunks: Mapping[str, Any]) -> Reply:
        """Gemini's ``alt=sse`` stream: one ``data:`` event per GenerateContentResponse chunk."""
        return cls.stream(*chunks)

    @classmethod
    def gemini_synthesized(
        cls,
        text: str = "",
        tool_calls: Iterable[Mapping[str, Any]] = (),
        *,
        model: str = "gemini-test",
        usage: tuple[int, int] = (12, 7),
        signature: str | None = None,
        finish_reason: str = "STOP",
    ) -> Reply:
        """A well-formed Gemini stream: text split over chunks, then function calls whole (Gemini does not
        stream call arguments), the first call carrying ``signature`` as its thoughtSignature."""
        prompt, completion = usage
        chunks: list[Mapping[str, Any]] = [
            gemini_chunk([{"text": piece}], model=model) for piece in _words(text)
        ]
        parts = []
        for number, call in enumerate(tool_calls):
            part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": call.get("arguments", {})}}
            if "id" in call:
                part["functionCall"]["id"] = call["id"]
            if number == 0 and signature is not None:
                part["thoughtSignature"] = signature
            parts.append(part)
        chunks.append(
            gemini_chunk(
                parts or [{"text": ""}],
                model=model,
                finish_reason=finish_reason,
                usage={
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": completion,
                    "totalTokenCount": prompt + completion,
                },
            )
        )
        return cls.gemini_stream(*chunks)

    def cut(self, after: int) -> Reply:
        """Drop the connection after ``after`` events, leaving the chunked body unfinished."""
        return dataclasses.replace(self, cut_after=after)

    def reset_after(self, after: int) -> Reply:
        """Reset the connection (TCP RST) after ``after`` events: ``reset_after(0)`` resets once the
        headers are out, mid-stream."""
        return dataclasses.replace(self, cut_after=after, reset=True)

    @classmethod
    def reset_before_first_byte(cls) -> Reply:
        """Read the request, then reset the connection without sending a single byte."""
        return cls(reset=True, reset_before_headers=True)

    def truncated(self, keep: int) -> Reply:
        """End the body cleanly after ``keep`` events, as a server that stopped early would."""
        return dataclasses.replace(self, events=self.events[:keep])

    def with_line(self, at: int, raw: bytes = b"data: {not json\n\n") -> Reply:
        """Insert a raw event block (a malformed data line by default) before event ``at``."""
        return dataclasses.replace(self, events=(*self.events[:at], raw, *self.events[at:]))

    def held_open(self, seconds: float) -> Reply:
        """After the last event, wait before ending the body, as a server that lingers after its final event."""
        return dataclasses.replace(self, hold_open_s=seconds)

    def coalesced(self) -> Reply:
        """Send every event in one write, as a proxy that buffers would: the client parses big reads."""
        return dataclasses.replace(self, coalesce=True)

    def delayed(self, seconds: float) -> Reply:
        """Wait before the status line: a slow first byte."""
        return dataclasses.replace(self, first_byte_delay_s=seconds)


LLAMA_CPP_PYTHON = "llama_cpp_python"
"""The corpus folder of the exchanges recorded with a real llama-cpp-python server (see its README)."""


def llama_cpp_python_check(request: RecordedRequest) -> Reply | None:
    """What llama-cpp-python's request validation answers before any model runs: an assistant message whose
    ``content`` is ``null`` gets the recorded HTTP 500 with pydantic's validation errors."""
    if request.endpoint != "chat":
        return None
    messages = request.json().get("messages") or []
    if any(m.get("role") == "assistant" and m.get("content") is None for m in messages):
        return Reply.recorded(f"{LLAMA_CPP_PYTHON}/followup_response_500_content_null.txt")
    return None


def gemini_chunk(
    parts: Sequence[Mapping[str, Any]],
    *,
    model: str = "gemini-test",
    finish_reason: str | None = None,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``GenerateContentResponse`` chunk of a Gemini stream."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [dict(part) for part in parts]},
        "index": 0,
    }
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": "gemini-local"}
    if usage is not None:
        chunk["usageMetadata"] = dict(usage)
    return chunk


def _words(text: str) -> list[str]:
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


def _fragments(call: Mapping[str, Any]) -> list[str]:
    """A scripted call's arguments as JSON text in 8-character pieces, as providers stream them."""
    arguments = json.dumps(call.get("arguments", {}))
    return [arguments[start : start + 8] for start in range(0, len(arguments), 8)]


def _openai_error_body(message: str, kind: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int = 0
    received_at: float = field(default_factory=time.perf_counter)
    """When the request arrived, on this process's ``time.perf_counter`` clock (for the benchmarks)."""

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def endpoint(self) -> str:
        """Which wire format was asked: ``chat``, ``responses``, ``messages`` or ``gemini``."""
        return _endpoint(self.path.split("?", 1)[0]) or "unknown"

    @property
    def model(self) -> str:
        """The model the request named (in the body, or in the path for Gemini)."""
        if self.endpoint == "gemini":
            return self.path.split("/models/", 1)[1].split(":", 1)[0]
        return str(self.json().get("model"))


_GEMINI_PATH = re.compile(r"/models/[^/]+:streamGenerateContent$")


def _endpoint(path: str) -> str | None:
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "messages"
    if _GEMINI_PATH.search(path):
        return "gemini"
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], owner: SSEReplayServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        # Without TCP_NODELAY each separately written event waits for the client's delayed ACK (~40 ms) on
        # a reused connection: Nagle's algorithm meeting delayed ACKs.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops its connection (a test ending, a cancelled stream) is normal here.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # Idle keep-alive connections end on their own instead of holding a thread for the whole run.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        self._record(b"")
        if self.path.rstrip("/") == f"{self.server.owner.prefix}/models":
            self._send_body(200, json.dumps({"object": "list", "data": []}).encode(), "application/json", {})
        else:
            self._not_found()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        prefix = self.server.owner.prefix
        if not path.startswith(f"{prefix}/") or _endpoint(path[len(prefix) :]) is None:
            self._not_found()
            return
        check = self.server.owner.check
        rejected = check(request) if check is not None else None
        # A request the server rejects up front does not use up the reply queued for a valid one.
        reply = rejected or self.server.owner._next_reply()
        if reply.first_byte_delay_s and self.server.owner._stopping.wait(reply.first_byte_delay_s):
            return
        if reply.reset_before_headers:
            self._reset_connection()
            return
        try:
            if reply.body is not None or reply.status >= 400:
                self._send_body(reply.status, reply.body or b"", reply.content_type, reply.headers)
            else:
                self._send_stream(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _record(self, body: bytes) -> RecordedRequest:
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body, client_port=self.client_address[1])
        self.server.owner._record(request)
        return request

    def _not_found(self) -> None:
        message = f"Unknown request URL: {self.command} {self.path}."
        body = _openai_error_body(message, "invalid_request_error", "unknown_url")
        self._send_body(404, json.dumps(body).encode(), "application/json", {})

    def _send_body(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        if reply.coalesce and reply.cut_after is None:
            body = b"".join(reply.events)
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            return
        for sent, event in enumerate(reply.events):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self._end_abruptly(reply)
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        if reply.cut_after is not None:
            self._end_abruptly(reply)
            return
        if reply.hold_open_s and self.server.owner._stopping.wait(reply.hold_open_s):
            return
        self.wfile.write(b"0\r\n\r\n")

    def _end_abruptly(self, reply: Reply) -> None:
        if reply.reset:
            self._reset_connection()
        else:
            self._drop_connection()

    def _drop_connection(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _reset_connection(self) -> None:
        # SO_LINGER with a zero timeout turns close() into a TCP RST instead of an orderly FIN.
        self.close_connection = True
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


class SSEReplayServer:
    """Serves queued ``Reply`` objects, in order, to POSTs on any model endpoint under ``prefix``, on a
    loopback port.

    When the queue is empty, the replies given to ``cycle`` are served round after round, else ``default``
    if set, else a 500 saying nothing was queued. Every request (method, path, lowercased headers, body)
    is kept in ``requests``. ``check`` plays a server's request validation: a reply it returns for a request
    is served instead of the queue's (``llama_cpp_python_check``).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        prefix: str = "/v1",
        default: Reply | None = None,
        check: Callable[[RecordedRequest], Reply | None] | None = None,
    ) -> None:
        self.host = host
        self.prefix = prefix.rstrip("/")
        self.default = default
        self.check = check
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._cycle: tuple[Reply, ...] = ()
        self._cycled = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server((host, port), self)
        # A short poll keeps stop() quick: shutdown() waits for serve_forever to look at its flag.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="sse-replay-server",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.prefix}"

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self.requests[-1]

    def queue(self, *replies: Reply) -> SSEReplayServer:
        with self._lock:
            self._replies.extend(replies)
        return self

    def cycle(self, *replies: Reply) -> SSEReplayServer:
        with self._lock:
            self._cycle, self._cycled = replies, 0
        return self

    def start(self) -> SSEReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SSEReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            if self._cycle:
                self._cycled += 1
                return self._cycle[(self._cycled - 1) % len(self._cycle)]
        if self.default is not None:
            return self.default
        return Reply.error(500, "sse replay server: no reply queued for this request", type="server_error")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("transcripts", nargs="+", help="transcript file names in the corpus, or paths")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--loop", action="store_true", help="start over after the last transcript")
    args = parser.parse_args(argv)
    replies = [Reply.transcript(name) for name in args.transcripts]
    server = SSEReplayServer(args.host, args.port)
    if args.loop:
        server.cycle(*replies)
    else:
        server.queue(*replies)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server:
        print(server.base_url, flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
