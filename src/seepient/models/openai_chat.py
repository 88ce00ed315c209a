"""The OpenAI Chat Completions adapter: streams ``POST {base_url}/chat/completions`` over httpx2 and its SSE
parser, for OpenAI itself and any compatible server (Ollama, vLLM, llama.cpp, LM Studio)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from seepient.models._http import (
    StreamingHTTPModel,
    encode_array,
    encode_body,
    encode_object,
    json_or_none,
)
from seepient.models._wire import (
    answered_call_id,
    count,
    decode_arguments,
    finished_call,
    image_data_url,
    known,
    wire_arguments,
)
from seepient.protocol.messages import Message, ModelRequest, ToolSpec, Usage
from seepient.protocol.stream import Completion, ModelStreamEvent, TextChunk, ToolCallChunk

if TYPE_CHECKING:
    import httpx2


class OpenAIChatModel(StreamingHTTPModel):
    """A ``Model`` speaking the Chat Completions streaming wire format."""

    wire_format = "openai-chat"
    api_root_example = "'https://api.openai.com/v1' or 'http://127.0.0.1:11434/v1'"
    endpoint = "/chat/completions"
    model_example = "'gpt-4o-mini'"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(message) for message in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [_wire_tool(tool) for tool in request.tools]
        return body | self._options(request)

    def request_bytes(self, request: ModelRequest) -> bytes:
        """``request_body`` encoded, each message and schema taken from what earlier requests encoded."""
        parts = self._parts
        fields = {
            "model": encode_body(self.model),
            "messages": encode_array(parts.encoded(message, _wire_message) for message in request.messages),
            "stream": b"true",
            "stream_options": b'{"include_usage":true}',
        }
        if request.tools:
            fields["tools"] = encode_array(parts.encoded(tool, _wire_tool) for tool in request.tools)
        for name, value in self._options(request).items():
            fields[name] = encode_body(value)
        return encode_object(fields)

    def _options(self, request: ModelRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.max_output_tokens is not None:
            # OpenAI's reasoning models refuse the older ``max_tokens``; many compatible servers know only it.
            key = (
                "max_completion_tokens"
                if urlsplit(self.base_url).hostname == "api.openai.com"
                else "max_tokens"
            )
            options[key] = request.max_output_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.reasoning_effort is not None:
            options["reasoning_effort"] = request.reasoning_effort
        return options

    def _assembly(self) -> _StreamAssembly:
        return _StreamAssembly(self)


@dataclass
class _PendingCall:
    id: str | None = None
    name: str | None = None
    argument_parts: list[str] = field(default_factory=list)


@dataclass
class _StreamAssembly:
    """Accumulates the deltas of one streamed choice into the final assistant message."""

    adapter: OpenAIChatModel = field(repr=False)
    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    finished: bool = False

    def feed(self, event: httpx2.ServerSentEvent) -> list[ModelStreamEvent]:
        data = event.data
        if data.strip() == "[DONE]":
            self.finished = True
            return []
        if event.event == "error":
            raise self.adapter._stream_error(json_or_none(data) or {"error": data})
        if not data.strip():
            return []
        chunk = self.adapter._decode_json(data)
        if chunk.get("error"):
            raise self.adapter._stream_error(chunk)
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        out: list[ModelStreamEvent] = []
        for choice in chunk.get("choices") or ():
            # Seepient never asks for n > 1; a server that sends other choices anyway is not heard.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                for key in ("content", "refusal"):
                    text = delta.get(key)
                    if isinstance(text, str) and text:
                        self.text_parts.append(text)
                        out.append(TextChunk(text=text))
                for fragment in delta.get("tool_calls") or ():
                    if isinstance(fragment, dict):
                        chunk_event = self._feed_tool_call(fragment)
                        if chunk_event is not None:
                            out.append(chunk_event)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return out

    def _feed_tool_call(self, fragment: dict[str, Any]) -> ToolCallChunk | None:
        call_id = fragment.get("id") or None
        index = fragment.get("index")
        if not isinstance(index, int):
            index = self._position_of_unindexed(call_id)
        pending = self.calls.setdefault(index, _PendingCall())
        function = fragment.get("function") or {}
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if call_id is not None and pending.id is None:
            pending.id = str(call_id)
        if isinstance(name, str) and name and pending.name is None:
            pending.name = name
        if not isinstance(arguments, str):
            arguments = ""
        pending.argument_parts.append(arguments)
        if call_id is None and not name and not arguments:
            return None
        return ToolCallChunk(
            index=index, id=str(call_id) if call_id else None, name=name or None, arguments_delta=arguments
        )

    def _position_of_unindexed(self, call_id: object) -> int:
        # Some compatible servers (older Ollama) omit ``index`` and send each call whole: a new id starts a
        # new call, a fragment without an id continues the latest one.
        if call_id is None:
            return max(self.calls, default=0)
        for index, pending in self.calls.items():
            if pending.id == str(call_id):
                return index
        return max(self.calls, default=-1) + 1

    def missing(self) -> str | None:
        return "no finish_reason" if self.finish_reason is None else None

    def completion(self, *, fallback_model: str) -> Completion:
        tool_calls = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            raw = "".join(pending.argument_parts)
            arguments, error = decode_arguments(raw)
            call_id = pending.id or f"call_{uuid.uuid4().hex[:24]}"
            tool_calls.append(finished_call(call_id, pending.name or "", raw, arguments, error))
        return Completion(
            message=Message.assistant("".join(self.text_parts), tool_calls=tuple(tool_calls)),
            finish_reason=self.finish_reason or "stop",
            usage=self.usage or Usage(),
            model=self.model or fallback_model,
        )


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=known(raw.get("prompt_tokens")),
        output_tokens=known(raw.get("completion_tokens")),
        cached_input_tokens=count(cached),
    )


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": answered_call_id(message), "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        # OpenAI takes ``null`` or a string here; llama-cpp-python's request schema takes only a string and
        # answers ``null`` with a 500, so the empty string is the shape every server accepts.
        return {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": wire_arguments(call)},
                }
                for call in message.tool_calls
            ],
        }
    if message.role == "user" and message.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
        parts.extend(
            {
                "type": "image_url",
                "image_url": {"url": image.url or image_data_url(image.media_type, image.data or "")},
            }
            for image in message.images
        )
        return {"role": "user", "content": parts}
    return {"role": message.role, "content": message.content}


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }
