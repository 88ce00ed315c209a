"""The Anthropic Messages adapter: streams ``POST {base_url}/messages`` (``message_start`` … ``message_stop``),
assembles ``tool_use`` input from ``input_json_delta`` fragments, keeps thinking blocks with their signatures
to send back unchanged, and marks the stable prefix of every request for prompt caching."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from seepient.models._http import Connection, StreamingHTTPModel, is_transient
from seepient.models._wire import (
    THINKING_BUDGETS,
    add_turn,
    answered_call_id,
    assistant_completion,
    count,
    decode_arguments,
    finished_call,
    index_of,
    known,
    leading_system,
    plus,
)
from seepient.models.base import ModelError
from seepient.protocol.messages import Message, ModelRequest, ToolCall, ToolSpec, Usage
from seepient.protocol.stream import Completion, ModelStreamEvent, ReasoningChunk, TextChunk, ToolCallChunk

if TYPE_CHECKING:
    import httpx2

FORMAT = "anthropic"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
# Separate text blocks of one answer (around a server tool's result, say) read as separate paragraphs.
_BLOCK_JOINER = "\n\n"
_EPHEMERAL = {"type": "ephemeral"}
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_UNCACHEABLE = ("thinking", "redacted_thinking")


class AnthropicModel(StreamingHTTPModel):
    """A ``Model`` speaking the Anthropic Messages streaming wire format.

    ``base_url`` is the API root with its version (``https://api.anthropic.com/v1``); a bare host, as the
    vendor's SDKs take it, gets ``/v1`` added. ``prompt_caching`` puts ``cache_control`` breakpoints at the end
    of the system prompt (or of the tools when there is none) and on the last message, so each request reads
    what the previous one wrote.
    """

    wire_format = FORMAT
    api_root_example = "'https://api.anthropic.com/v1'"
    endpoint = "/messages"
    version_path = "/v1"
    key_header = "x-api-key"
    key_prefix = ""
    fixed_headers = {"anthropic-version": API_VERSION}

    def __init__(
        self,
        model: str,
        *,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        prompt_caching: bool = True,
        **connection: Unpack[Connection],
    ) -> None:
        super().__init__(model, **connection)
        self.default_max_tokens = default_max_tokens
        self.prompt_caching = prompt_caching

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        system, rest = leading_system(request.messages)
        max_tokens = request.max_output_tokens or self.default_max_tokens
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens}
        if system:
            body["system"] = [{"type": "text", "text": system}]
        body["messages"] = _wire_messages(rest)
        if request.tools:
            body["tools"] = [_wire_tool(tool) for tool in request.tools]
        body["stream"] = True
        if request.reasoning_effort is not None:
            # The thinking budget comes out of max_tokens, so the answer keeps the room it was given.
            budget = THINKING_BUDGETS[request.reasoning_effort]
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = max_tokens + budget
        elif request.temperature is not None:
            # Extended thinking accepts no temperature but the default.
            body["temperature"] = request.temperature
        if self.prompt_caching:
            _mark_cache_breakpoints(body)
        return body

    def _assembly(self) -> _MessageAssembly:
        return _MessageAssembly(self)

    def _stream_error(self, payload: Any) -> ModelError:
        message, kind, _ = self._error_details(payload)
        return ModelError(
            f"model {self.name}: the provider reported an error mid-stream ({kind or 'error'}): "
            f"{message or 'no message given'}",
            retryable=is_transient(kind),
        )


@dataclass
class _Block:
    start: dict[str, Any]
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    citations: list[Any] = field(default_factory=list)
    call_index: int | None = None
    closed: bool = False

    @property
    def kind(self) -> str:
        return str(self.start.get("type"))


@dataclass
class _MessageAssembly:
    """Follows the content blocks of one streamed message and assembles the assistant message."""

    adapter: AnthropicModel = field(repr=False)
    blocks: dict[int, _Block] = field(default_factory=dict)
    stop_reason: str | None = None
    finished: bool = False
    model: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    _text_seen: bool = False
    _joiner_pending: bool = False
    _calls: int = 0

    def feed(self, event: httpx2.ServerSentEvent) -> list[ModelStreamEvent]:
        data = event.data
        if not data.strip():
            return []
        payload = self.adapter._decode_json(data)
        kind = payload.get("type") or event.event
        if kind == "content_block_delta":
            block = self.blocks.get(index_of(payload.get("index")))
            delta = payload.get("delta")
            if block is None or not isinstance(delta, dict):
                return []
            return self._delta(block, delta)
        if kind == "content_block_start":
            content = payload.get("content_block")
            if not isinstance(content, dict):
                return []
            return self._start(index_of(payload.get("index")), dict(content))
        if kind == "content_block_stop":
            block = self.blocks.get(index_of(payload.get("index")))
            if block is not None:
                block.closed = True
            return []
        if kind == "message_start":
            message = payload.get("message")
            if isinstance(message, dict):
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                if isinstance(message.get("usage"), dict):
                    self.usage.update(message["usage"])
            return []
        if kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
            # The usage of message_delta is cumulative: its counts replace those of message_start.
            if isinstance(payload.get("usage"), dict):
                self.usage.update(
                    {key: value for key, value in payload["usage"].items() if value is not None}
                )
            return []
        if kind == "message_stop":
            self.finished = True
        elif kind == "error":
            raise self.adapter._stream_error(payload)
        # ping and event types added after this adapter was written carry nothing to stream.
        return []

    def _start(self, index: int, content: dict[str, Any]) -> list[ModelStreamEvent]:
        block = _Block(start=content)
        self.blocks[index] = block
        if block.kind == "text":
            self._joiner_pending = self._text_seen
            text = content.get("text")
            return self._text(block, text) if isinstance(text, str) and text else []
        if block.kind == "tool_use":
            block.call_index = self._calls
            self._calls += 1
            call_id = str(content.get("id") or f"toolu_{uuid.uuid4().hex[:24]}")
            block.start["id"] = call_id
            return [
                ToolCallChunk(index=block.call_index, id=call_id, name=str(content.get("name") or "") or None)
            ]
        return []

    def _delta(self, block: _Block, delta: dict[str, Any]) -> list[ModelStreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return self._text(block, text) if isinstance(text, str) and text else []
        if kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if not isinstance(fragment, str) or not fragment:
                return []
            block.parts.append(fragment)
            if block.call_index is not None:
                return [ToolCallChunk(index=block.call_index, arguments_delta=fragment)]
            return []
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block.parts.append(delta["thinking"])
            return [ReasoningChunk(text=delta["thinking"])] if delta["thinking"] else []
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block.signature = delta["signature"]
        elif kind == "citations_delta" and delta.get("citation") is not None:
            block.citations.append(delta["citation"])
        return []

    def _text(self, block: _Block, text: str) -> list[ModelStreamEvent]:
        block.parts.append(text)
        self._text_seen = True
        if self._joiner_pending:
            self._joiner_pending = False
            return [TextChunk(text=_BLOCK_JOINER), TextChunk(text=text)]
        return [TextChunk(text=text)]

    def missing(self) -> str | None:
        return "no stop_reason" if self.stop_reason is None else None

    def completion(self, *, fallback_model: str) -> Completion:
        items: list[dict[str, Any]] = []
        texts: list[str] = []
        calls: list[ToolCall] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            item, call = self._finish(block)
            if item is None:
                continue
            items.append(item)
            if block.kind == "text" and item["text"]:
                texts.append(item["text"])
            if call is not None:
                calls.append(call)
        return assistant_completion(
            wire_format=FORMAT,
            text=_BLOCK_JOINER.join(texts),
            calls=tuple(calls),
            items=items,
            finish_reason=_STOP_REASONS.get(self.stop_reason or "", self.stop_reason or "stop"),
            usage=self._usage(),
            model=self.model or fallback_model,
        )

    def _finish(self, block: _Block) -> tuple[dict[str, Any] | None, ToolCall | None]:
        """The block as it goes back to the API, and the tool call it makes, if any."""
        if block.kind == "text":
            item: dict[str, Any] = {"type": "text", "text": "".join(block.parts)}
            if block.citations:
                item["citations"] = block.citations
            return item, None
        if block.kind == "thinking":
            signature = block.signature if block.signature is not None else block.start.get("signature", "")
            thinking = "".join(block.parts) or str(block.start.get("thinking") or "")
            return {"type": "thinking", "thinking": thinking, "signature": signature}, None
        if block.kind == "tool_use":
            call = self._tool_call(block)
            # Only the documented request fields go back; response-only extras (``caller``) stay behind.
            return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}, call
        if block.parts:
            # A server tool's input streams like a tool_use's; everything else goes back as received.
            arguments, _ = _partial_object("".join(block.parts))
            return {**block.start, "input": arguments}, None
        return block.start, None

    def _tool_call(self, block: _Block) -> ToolCall:
        raw = "".join(block.parts)
        if not raw and isinstance(block.start.get("input"), dict) and block.start["input"]:
            raw = json.dumps(block.start["input"], ensure_ascii=False)
        arguments, error = decode_arguments(raw)
        if error is not None and (not block.closed or self.stop_reason == "max_tokens"):
            arguments, _ = _partial_object(raw)
            error = (
                f"the answer was cut off (stop reason {self.stop_reason or 'unknown'}) before the arguments of this "
                f"tool call were complete, so it was not run; {error}"
            )
        return finished_call(
            str(block.start["id"]), str(block.start.get("name") or ""), raw, arguments, error
        )

    def _usage(self) -> Usage:
        read = count(self.usage.get("cache_read_input_tokens"))
        written = count(self.usage.get("cache_creation_input_tokens"))
        return Usage(
            # Anthropic counts cache reads and writes apart from input_tokens; Usage counts the whole prompt.
            input_tokens=plus(known(self.usage.get("input_tokens")), read, written),
            output_tokens=known(self.usage.get("output_tokens")),
            cached_input_tokens=read,
            cache_write_input_tokens=written,
        )


def _partial_object(raw: str) -> tuple[dict[str, Any], bool]:
    """What can be read of a JSON object cut off mid-way: complete members and list items, nothing guessed."""
    from pydantic_core import from_json

    try:
        value = from_json(raw, allow_partial=True)
    except ValueError:
        return {}, False
    return (value, True) if isinstance(value, dict) else ({}, False)


def _wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    # The API wants user and assistant turns to alternate: tool results and the text after them share one
    # user turn, tool results first.
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            add_turn(out, "user", "content", [_tool_result(message)])
        elif message.role == "assistant":
            add_turn(out, "assistant", "content", _assistant_blocks(message))
        else:
            add_turn(out, "user", "content", _user_blocks(message))
    return out


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for image in message.images:
        if image.url is not None:
            blocks.append({"type": "image", "source": {"type": "url", "url": image.url}})
        else:
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": image.media_type, "data": image.data},
                }
            )
    # Empty text blocks are refused by the API.
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    return blocks


def _tool_result(message: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": answered_call_id(message)}
    if message.content:
        block["content"] = [{"type": "text", "text": message.content}]
    block["is_error"] = message.is_error
    return block


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    replay = _replayable_blocks(message)
    if replay is not None:
        return replay
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return blocks


def _replayable_blocks(message: Message) -> list[dict[str, Any]] | None:
    """The content blocks to send back unchanged (thinking signatures intact), when the message still says
    what they say."""
    content = message.provider_content
    if content is None or content.format != FORMAT:
        return None
    texts = [
        str(item.get("text")) for item in content.items if item.get("type") == "text" and item.get("text")
    ]
    calls = [
        (item.get("id"), item.get("name"), item.get("input"))
        for item in content.items
        if item.get("type") == "tool_use"
    ]
    expected = [(call.id, call.name, call.arguments) for call in message.tool_calls]
    if _BLOCK_JOINER.join(texts) != message.content or calls != expected:
        return None
    # An empty text block is refused by the API; a streamed one can be empty when the model said nothing.
    return [item for item in content.items if item.get("type") != "text" or item.get("text")]


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """The cache prefix runs tools → system → messages. A breakpoint after the system prompt (or the tools)
    caches what every request shares; one on the last message caches the conversation so far, which the next
    request (the same history plus a few blocks) reads back. Two of the four breakpoints allowed."""
    if body.get("system"):
        body["system"][-1] = {**body["system"][-1], "cache_control": _EPHEMERAL}
    elif body.get("tools"):
        body["tools"][-1] = {**body["tools"][-1], "cache_control": _EPHEMERAL}
    if not body["messages"]:
        return
    blocks = body["messages"][-1]["content"]
    for position in range(len(blocks) - 1, -1, -1):
        # Thinking blocks cannot carry a breakpoint; copying keeps the message's own blocks untouched.
        if blocks[position].get("type") not in _UNCACHEABLE:
            blocks[position] = {**blocks[position], "cache_control": _EPHEMERAL}
            return
