"""The OpenAI Responses adapter: streams ``POST {base_url}/responses`` and keeps the output items (reasoning
with its encrypted content, messages, function calls) so the next request can send them back unchanged."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from seepient.models._http import (
    StreamingHTTPModel,
    count,
    decode_arguments,
    image_data_url,
    is_transient,
    leading_system,
    openai_error_details,
)
from seepient.models.base import ModelError
from seepient.protocol import (
    Completion,
    Message,
    ModelRequest,
    ModelStreamEvent,
    ProviderContent,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolSpec,
    Usage,
)

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
    """

    wire_format = FORMAT
    api_root_example = "'https://api.openai.com/v1'"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        timeout_s: float = 600,
        name: str | None = None,
        api_key_env: str | None = None,
        reasoning: bool | None = None,
    ) -> None:
        super().__init__(
            model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, name=name, api_key_env=api_key_env
        )
        self._url = f"{self.base_url}/responses"
        # None: decide from the model name; a gateway serving a reasoning model under another name says True.
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

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        body = self.request_body(request)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        assembly = _ResponseAssembly()
        async with self._event_source(self._url, body, headers) as source:
            events = aiter(source)
            async for event in events:
                data = event.data
                if not data.strip() or data.strip() == "[DONE]":
                    continue
                payload = self._decode_json(data)
                kind = payload.get("type") or event.event
                if kind == "error":
                    raise self._stream_error(payload)
                if kind == "response.failed":
                    raise self._stream_error((payload.get("response") or {}).get("error") or payload)
                for out in assembly.feed(kind, payload):
                    yield out
                if assembly.status is not None:
                    break
            await self._finish_body(events)
        if assembly.status is None:
            raise self._incomplete("no response.completed event")
        yield assembly.completion(fallback_model=self.model)

    def _error_details(self, payload: Any) -> tuple[str, str, float | None]:
        message, kind = openai_error_details(payload)
        return message, kind, None

    def _stream_error(self, payload: Any) -> ModelError:
        message, kind, _ = self._error_details(payload)
        return ModelError(
            f"model {self.name}: the provider reported an error mid-stream: {message or 'no message given'}",
            retryable=is_transient(kind),
        )


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

    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    done_items: dict[int, dict[str, Any]] = field(default_factory=dict)
    output: list[dict[str, Any]] | None = None
    status: str | None = None
    incomplete_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    _joiner_pending: bool = False

    def feed(self, kind: str, payload: dict[str, Any]) -> list[ModelStreamEvent]:
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
        if kind == "response.function_call_arguments.delta":
            pending = self.calls.get(_int(payload.get("output_index")))
            delta = payload.get("delta")
            if pending is None or not isinstance(delta, str) or not delta:
                return []
            pending.parts.append(delta)
            return [ToolCallChunk(index=pending.index, arguments_delta=delta)]
        if kind == "response.output_item.added":
            return self._item_added(_int(payload.get("output_index")), payload.get("item"))
        if kind == "response.function_call_arguments.done":
            pending = self.calls.get(_int(payload.get("output_index")))
            if pending is not None and isinstance(payload.get("arguments"), str):
                pending.final = payload["arguments"]
            return []
        if kind == "response.output_item.done":
            item = payload.get("item")
            if isinstance(item, dict):
                self.done_items[_int(payload.get("output_index"))] = item
            return []
        if kind in ("response.created", "response.in_progress"):
            self._note_response(payload.get("response"))
            return []
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
            return []
        # content_part.*, output_text.done, reasoning summaries, annotations: nothing the caller streams.
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
            if not pending.name:
                error = "the model sent a tool call without a tool name"
            tool_calls.append(
                ToolCall(
                    id=pending.call_id,
                    name=pending.name,
                    arguments=arguments,
                    raw_arguments=raw,
                    arguments_error=error,
                )
            )
        model = self.model or fallback_model
        if self.status == "incomplete":
            finish = (
                "length"
                if self.incomplete_reason == "max_output_tokens"
                else (self.incomplete_reason or "length")
            )
        else:
            finish = "tool_calls" if tool_calls else "stop"
        message = Message(
            role="assistant",
            content="".join(self.text_parts),
            tool_calls=tuple(tool_calls),
            provider_content=ProviderContent(format=FORMAT, model=model, items=tuple(items))
            if items
            else None,
        )
        return Completion(message=message, finish_reason=finish, usage=self.usage or Usage(), model=model)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        cached_input_tokens=count(cached),
    )


def _wire_input(messages: tuple[Message, ...], model: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            if not message.tool_call_id:
                raise ModelError(
                    "a tool result message has no tool_call_id: it must answer an assistant tool call"
                )
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}
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
            {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": _arguments(call)}
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
    expected = [(call.id, call.name, _arguments(call)) for call in message.tool_calls]
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


def _arguments(call: ToolCall) -> str:
    # The model's own bytes go back unchanged; prefix-based prompt caches match on them.
    if call.raw_arguments is not None and call.raw_arguments.strip():
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


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
