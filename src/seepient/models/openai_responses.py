"""The OpenAI Responses adapter: streams ``POST {base_url}/responses`` and keeps the output items (reasoning
with its encrypted content, messages, function calls) so the next request can send them back unchanged."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from seepient.models._http import Connection, StreamingHTTPModel
from seepient.models._wire import (
    answered_call_id,
    assistant_completion,
    count,
    decode_arguments,
    finished_call,
    image_data_url,
    index_of,
    known,
    leading_system,
    wire_arguments,
)
from seepient.protocol.messages import Message, ModelRequest, ToolSpec, Usage
from seepient.protocol.stream import Completion, ModelStreamEvent, ReasoningChunk, TextChunk, ToolCallChunk

if TYPE_CHECKING:
    import httpx2

FORMAT = "openai-responses"
# Separate output messages of one response are separate paragraphs.
_MESSAGE_JOINER = "\n\n"
# Model families that reason before answering; only they return (and accept) encrypted reasoning items.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex)", re.IGNORECASE)


class OpenAIResponsesModel(StreamingHTTPModel):
    """A ``Model`` speaking the Responses streaming wire format.

    Requests are stateless (``store: false``): the whole conversation is sent each time, and for reasoning
    models the reasoning items come back encrypted (``include: reasoning.encrypted_content``) and are returned
    with the function calls they led to, as the API requires for reasoning to carry across tool calls.
    ``reasoning`` None decides from the model name; a gateway serving a reasoning model under another name
    says True.
    """

    wire_format = FORMAT
    api_root_example = "'https://api.openai.com/v1'"
    endpoint = "/responses"

    def __init__(
        self, model: str, *, reasoning: bool | None = None, **connection: Unpack[Connection]
    ) -> None:
        super().__init__(model, **connection)
        self._reasoning = reasoning

    def _reasons(self, request: ModelRequest) -> bool:
        if self._reasoning is not None:
            return self._reasoning
        return request.reasoning_effort is not None or bool(_REASONING_MODEL.match(self.model))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        instructions, rest = leading_system(request.messages)
        body: dict[str, Any] = {"model": self.model}
        if instructions:
            body["instructions"] = instructions
        body["input"] = _wire_input(rest, self.model)
        if request.tools:
            body["tools"] = [_wire_tool(tool) for tool in request.tools]
        body["stream"] = True
        # Seepient keeps the conversation itself; nothing needs to stay on the provider's side.
        body["store"] = False
        if self._reasons(request):
            body["include"] = ["reasoning.encrypted_content"]
            if request.reasoning_effort is not None:
                body["reasoning"] = {"effort": request.reasoning_effort}
        if request.max_output_tokens is not None:
            body["max_output_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def _assembly(self) -> _ResponseAssembly:
        return _ResponseAssembly(self)


@dataclass
class _PendingCall:
    index: int
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)
    final: str | None = None


@dataclass
class _ResponseAssembly:
    """Follows the streamed output items of one response and assembles the assistant message."""

    adapter: OpenAIResponsesModel = field(repr=False)
    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    done_items: dict[int, dict[str, Any]] = field(default_factory=dict)
    output: list[dict[str, Any]] | None = None
    status: str | None = None
    incomplete_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    finished: bool = False
    _joiner_pending: bool = False

    def feed(self, event: httpx2.ServerSentEvent) -> list[ModelStreamEvent]:
        data = event.data
        if not data.strip() or data.strip() == "[DONE]":
            return []
        payload = self.adapter._decode_json(data)
        kind = payload.get("type") or event.event
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = payload.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            self.text_parts.append(delta)
            if self._joiner_pending:
                self._joiner_pending = False
                self.text_parts.insert(-1, _MESSAGE_JOINER)
                return [TextChunk(text=_MESSAGE_JOINER), TextChunk(text=delta)]
            return [TextChunk(text=delta)]
        if kind == "response.reasoning_summary_text.delta":
            delta = payload.get("delta")
            return [ReasoningChunk(text=delta)] if isinstance(delta, str) and delta else []
        if kind == "response.function_call_arguments.delta":
            pending = self.calls.get(index_of(payload.get("output_index")))
            delta = payload.get("delta")
            if pending is None or not isinstance(delta, str) or not delta:
                return []
            pending.parts.append(delta)
            return [ToolCallChunk(index=pending.index, arguments_delta=delta)]
        if kind == "response.output_item.added":
            return self._item_added(index_of(payload.get("output_index")), payload.get("item"))
        if kind == "response.function_call_arguments.done":
            pending = self.calls.get(index_of(payload.get("output_index")))
            if pending is not None and isinstance(payload.get("arguments"), str):
                pending.final = payload["arguments"]
            return []
        if kind == "response.output_item.done":
            item = payload.get("item")
            if isinstance(item, dict):
                self.done_items[index_of(payload.get("output_index"))] = item
            return []
        if kind in ("response.created", "response.in_progress"):
            self._note_response(payload.get("response"))
            return []
        if kind == "error":
            raise self.adapter._stream_error(payload)
        if kind == "response.failed":
            raise self.adapter._stream_error((payload.get("response") or {}).get("error") or payload)
        if kind in ("response.completed", "response.incomplete"):
            response = payload.get("response")
            self._note_response(response)
            if isinstance(response, dict):
                if isinstance(response.get("output"), list):
                    self.output = [item for item in response["output"] if isinstance(item, dict)]
                if isinstance(response.get("usage"), dict):
                    self.usage = _usage(response["usage"])
                details = response.get("incomplete_details")
                if isinstance(details, dict) and isinstance(details.get("reason"), str):
                    self.incomplete_reason = details["reason"]
            self.status = "completed" if kind == "response.completed" else "incomplete"
            self.finished = True
            return []
        # content_part.*, output_text.done, reasoning summary parts, annotations: nothing the caller streams.
        return []

    def _item_added(self, output_index: int, item: Any) -> list[ModelStreamEvent]:
        if not isinstance(item, dict):
            return []
        if item.get("type") == "message":
            self._joiner_pending = bool(self.text_parts)
            return []
        if item.get("type") != "function_call":
            return []
        index = len(self.calls)
        call_id = str(item.get("call_id") or item.get("id") or f"call_{uuid.uuid4().hex[:24]}")
        name = str(item.get("name") or "")
        pending = _PendingCall(index=index, call_id=call_id, name=name)
        self.calls[output_index] = pending
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            pending.parts.append(arguments)
        return [
            ToolCallChunk(
                index=index,
                id=call_id,
                name=name or None,
                arguments_delta=arguments if isinstance(arguments, str) else "",
            )
        ]

    def _note_response(self, response: Any) -> None:
        if isinstance(response, dict) and isinstance(response.get("model"), str) and response["model"]:
            self.model = response["model"]

    def missing(self) -> str | None:
        return "no response.completed event" if self.status is None else None

    def completion(self, *, fallback_model: str) -> Completion:
        items = self.output
        if items is None:
            items = [self.done_items[index] for index in sorted(self.done_items)]
        tool_calls = []
        for pending in sorted(self.calls.values(), key=lambda call: call.index):
            raw = pending.final if pending.final is not None else "".join(pending.parts)
            arguments, error = decode_arguments(raw)
            if error and self.status == "incomplete":
                error = (
                    f"the response stopped ({self.incomplete_reason or 'incomplete'}) before the arguments of "
                    f"this tool call were complete; {error}"
                )
            tool_calls.append(finished_call(pending.call_id, pending.name, raw, arguments, error))
        model = self.model or fallback_model
        if self.status == "incomplete":
            finish = (
                "length"
                if self.incomplete_reason == "max_output_tokens"
                else (self.incomplete_reason or "length")
            )
        else:
            finish = "tool_calls" if tool_calls else "stop"
        return assistant_completion(
            wire_format=FORMAT,
            text="".join(self.text_parts),
            calls=tuple(tool_calls),
            items=items,
            finish_reason=finish,
            usage=self.usage,
            model=model,
        )


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=known(raw.get("input_tokens")),
        output_tokens=known(raw.get("output_tokens")),
        cached_input_tokens=count(cached),
    )


def _wire_input(messages: tuple[Message, ...], model: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": answered_call_id(message),
                    "output": message.content,
                }
            )
        elif message.role == "assistant":
            items.extend(_wire_assistant(message, model))
        elif message.role == "user" and message.images:
            content: list[dict[str, Any]] = (
                [{"type": "input_text", "text": message.content}] if message.content else []
            )
            content.extend(
                {
                    "type": "input_image",
                    "image_url": image.url or image_data_url(image.media_type, image.data or ""),
                }
                for image in message.images
            )
            items.append({"role": "user", "content": content})
        else:
            items.append({"role": message.role, "content": message.content})
    return items


def _wire_assistant(message: Message, model: str) -> list[dict[str, Any]]:
    replay = _replayable_items(message, model)
    if replay is not None:
        return replay
    items: list[dict[str, Any]] = []
    if message.content:
        items.append({"role": "assistant", "content": message.content})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": wire_arguments(call),
            }
        )
    return items


def _replayable_items(message: Message, model: str) -> list[dict[str, Any]] | None:
    """The output items to send back unchanged, when the message still says what they say."""
    content = message.provider_content
    if content is None or content.format != FORMAT:
        return None
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    for item in content.items:
        if item.get("type") == "message":
            texts.append(
                "".join(
                    part.get("text") or part.get("refusal") or ""
                    for part in item.get("content") or ()
                    if isinstance(part, dict)
                )
            )
        elif item.get("type") == "function_call":
            calls.append((str(item.get("call_id")), str(item.get("name")), str(item.get("arguments"))))
    expected = [(call.id, call.name, wire_arguments(call)) for call in message.tool_calls]
    if _MESSAGE_JOINER.join(text for text in texts if text) != message.content or calls != expected:
        return None
    # Encrypted reasoning is bound to the model that produced it, and an item known only by id cannot be
    # found again under ``store: false``; such items are left out rather than failing the request.
    same_model = content.model == model or content.model.startswith(f"{model}-")
    return [
        item
        for item in content.items
        if item.get("type") != "reasoning" or (same_model and item.get("encrypted_content"))
    ]


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    # strict mode would demand every property be required and additionalProperties false: Seepient's tool
    # schemas have optional arguments, so the model is held to them by validation in the pipeline instead.
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": False,
    }
