"""The Google Gemini adapter: streams ``POST {base_url}/models/{model}:streamGenerateContent?alt=sse`` and
keeps the model's parts (with their thought signatures) to send back exactly where they came from."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import quote

from seepient.models._http import Connection, StreamingHTTPModel, protobuf_duration_seconds
from seepient.models._wire import (
    THINKING_BUDGETS,
    add_turn,
    answered_call_id,
    assistant_completion,
    count,
    finished_call,
    known,
    leading_system,
    plus,
)
from seepient.models.base import ModelError
from seepient.protocol.messages import Message, ModelRequest, ToolCall, ToolSpec, Usage
from seepient.protocol.stream import Completion, ModelStreamEvent, TextChunk, ToolCallChunk

if TYPE_CHECKING:
    import httpx2

FORMAT = "gemini"
_BLOCKED = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY")
_GENERATED_ID_PREFIX = "gemini_call_"
_PLAIN_TEXT = frozenset({"text", "thought"})


class GeminiModel(StreamingHTTPModel):
    """A ``Model`` speaking Gemini's ``streamGenerateContent`` wire format with server-sent events.

    ``base_url`` is the API root with its version (``https://generativelanguage.googleapis.com/v1beta``); a bare
    host gets ``/v1beta`` added; a model id may be given as ``models/NAME``. Tool schemas go as
    ``parametersJsonSchema``, which takes JSON Schema as is. Function calls arrive whole, so each streams as
    one chunk.
    """

    wire_format = FORMAT
    api_root_example = "'https://generativelanguage.googleapis.com/v1beta'"
    version_path = "/v1beta"
    key_header = "x-goog-api-key"
    key_prefix = ""

    def __init__(self, model: str, **connection: Unpack[Connection]) -> None:
        super().__init__(model.removeprefix("models/"), **connection)

    def _stream_url(self) -> str:
        return f"{self.base_url}/models/{quote(self.model, safe='.-_')}:streamGenerateContent?alt=sse"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        system, rest = leading_system(request.messages)
        body: dict[str, Any] = {}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        body["contents"] = _wire_contents(rest)
        if request.tools:
            body["tools"] = [{"functionDeclarations": [_wire_tool(tool) for tool in request.tools]}]
        config: dict[str, Any] = {}
        if request.max_output_tokens is not None:
            config["maxOutputTokens"] = request.max_output_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.reasoning_effort is not None:
            config["thinkingConfig"] = {"thinkingBudget": THINKING_BUDGETS[request.reasoning_effort]}
        if config:
            body["generationConfig"] = config
        return body

    def _assembly(self) -> _CandidateAssembly:
        return _CandidateAssembly(self)

    def _error_details(self, payload: Any) -> tuple[str, str, float | None]:
        if not isinstance(payload, dict):
            return "", "", None
        error = payload.get("error", payload)
        if isinstance(error, list) and error and isinstance(error[0], dict):
            # Some Google front ends wrap the error object in a one-element list.
            error = error[0].get("error", error[0])
        if isinstance(error, str):
            return error, "", None
        if not isinstance(error, dict):
            return "", "", None
        kinds = [str(error.get("status") or "")]
        wait = None
        for detail in error.get("details") or ():
            if not isinstance(detail, dict):
                continue
            if isinstance(detail.get("reason"), str):
                kinds.append(detail["reason"])
            wait = protobuf_duration_seconds(detail.get("retryDelay")) or wait
        message = error.get("message")
        return (message if isinstance(message, str) else ""), " ".join(kinds).strip().lower(), wait

    async def _http_error(self, response: Any, url: str) -> ModelError:
        error = await super()._http_error(response, url)
        # Google answers a bad key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), not 401.
        if error.status == 400 and "api key" in str(error).lower():
            return ModelError(f"{error}; {self._key_hint()}", status=400)
        return error


@dataclass
class _CandidateAssembly:
    """Accumulates the parts of the first candidate across chunks. Gemini ends a stream by ending the body."""

    adapter: GeminiModel = field(repr=False)
    parts: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    _pieces: list[str] = field(default_factory=list)
    finished: bool = False

    def feed(self, event: httpx2.ServerSentEvent) -> list[ModelStreamEvent]:
        data = event.data
        if not data.strip():
            return []
        chunk = self.adapter._decode_json(data)
        if chunk.get("error"):
            raise self.adapter._stream_error(chunk)
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked and not chunk.get("candidates"):
            raise ModelError(
                f"model {self.adapter.name}: the provider refused the prompt ({blocked}); rephrase the request "
                "or remove the content it objects to"
            )
        if isinstance(chunk.get("modelVersion"), str) and chunk["modelVersion"]:
            self.model = chunk["modelVersion"]
        if isinstance(chunk.get("usageMetadata"), dict):
            self.usage = _usage(chunk["usageMetadata"])
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
            return []
        # Seepient asks for one candidate.
        candidate = candidates[0]
        out: list[ModelStreamEvent] = []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                out.extend(self._part(dict(part)))
        if isinstance(candidate.get("finishReason"), str):
            self.finish_reason = candidate["finishReason"]
        return out

    def _part(self, part: dict[str, Any]) -> list[ModelStreamEvent]:
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._flush()
            self.parts.append(part)
            return [self._call(call)]
        text = part.get("text")
        if isinstance(text, str):
            self._keep_text(part)
            # Thought parts are the model's reasoning summary, not its answer.
            if text and not part.get("thought"):
                self.text_parts.append(text)
                return [TextChunk(text=text)]
            return []
        self._flush()
        self.parts.append(part)
        return []

    def _keep_text(self, part: dict[str, Any]) -> None:
        # Streamed text arrives a few words per chunk; adjacent plain pieces are one part again (joined once,
        # at the end). A piece with a thought signature stays whole and separate: the signature must go back
        # on the part it came with.
        plain = part.keys() <= _PLAIN_TEXT
        if plain and self._pieces and bool(self.parts[-1].get("thought")) == bool(part.get("thought")):
            self._pieces.append(part["text"])
            return
        self._flush()
        self.parts.append(part)
        if plain:
            self._pieces = [part["text"]]

    def _flush(self) -> None:
        if self._pieces:
            self.parts[-1]["text"] = "".join(self._pieces)
            self._pieces = []

    def _call(self, call: dict[str, Any]) -> ToolCallChunk:
        name = str(call.get("name") or "")
        args = call.get("args")
        arguments = args if isinstance(args, dict) else {}
        raw = json.dumps(arguments, ensure_ascii=False)
        call_id = str(call.get("id") or f"{_GENERATED_ID_PREFIX}{uuid.uuid4().hex[:20]}")
        error = None if args is None or isinstance(args, dict) else "tool arguments must be a JSON object"
        index = len(self.calls)
        self.calls.append(finished_call(call_id, name, raw, arguments, error))
        return ToolCallChunk(index=index, id=call_id, name=name or None, arguments_delta=raw)

    def missing(self) -> str | None:
        return "no finishReason" if self.finish_reason is None else None

    def completion(self, *, fallback_model: str) -> Completion:
        self._flush()
        reason = self.finish_reason or "STOP"
        if reason == "STOP":
            finish = "tool_calls" if self.calls else "stop"
        elif reason == "MAX_TOKENS":
            finish = "length"
        elif reason in _BLOCKED:
            finish = "content_filter"
        else:
            finish = reason.lower()
        return assistant_completion(
            wire_format=FORMAT,
            text="".join(self.text_parts),
            calls=tuple(self.calls),
            items=[part for part in self.parts if part != {"text": ""}],
            finish_reason=finish,
            usage=self.usage,
            model=self.model or fallback_model,
        )


def _usage(raw: dict[str, Any]) -> Usage:
    # promptTokenCount includes cached content; thinking tokens are billed as output.
    return Usage(
        input_tokens=known(raw.get("promptTokenCount")),
        output_tokens=plus(known(raw.get("candidatesTokenCount")), count(raw.get("thoughtsTokenCount"))),
        cached_input_tokens=count(raw.get("cachedContentTokenCount")),
    )


def _wire_contents(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    # Gemini matches a functionResponse to its call by the id Gemini gave, when it gave one.
    native_ids: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            parts = _model_parts(message)
            native_ids.update(
                str(part["functionCall"]["id"])
                for part in parts
                if isinstance(part.get("functionCall"), dict) and part["functionCall"].get("id")
            )
            add_turn(contents, "model", "parts", parts)
        elif message.role == "tool":
            add_turn(contents, "user", "parts", [_function_response(message, native_ids)])
        else:
            add_turn(contents, "user", "parts", _user_parts(message))
    return contents


def _user_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
    for image in message.images:
        if image.url is not None:
            parts.append({"fileData": {"mimeType": image.media_type, "fileUri": image.url}})
        else:
            parts.append({"inlineData": {"mimeType": image.media_type, "data": image.data}})
    return parts


def _function_response(message: Message, native_ids: set[str]) -> dict[str, Any]:
    call_id = answered_call_id(message)
    if not message.name:
        raise ModelError(
            f"the tool result for call {message.tool_call_id} has no tool name; Gemini matches results by name"
        )
    # The API reads "output" as the function's result and "error" as its failure.
    response: dict[str, Any] = {
        "name": message.name,
        "response": {"error" if message.is_error else "output": message.content},
    }
    if call_id in native_ids:
        response["id"] = call_id
    return {"functionResponse": response}


def _model_parts(message: Message) -> list[dict[str, Any]]:
    replay = _replayable_parts(message)
    if replay is not None:
        return replay
    parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
    for call in message.tool_calls:
        parts.append({"functionCall": {"name": call.name, "args": call.arguments}})
    return parts


def _replayable_parts(message: Message) -> list[dict[str, Any]] | None:
    """The parts to send back unchanged (thought signatures on the parts they came with), when the message
    still says what they say."""
    content = message.provider_content
    if content is None or content.format != FORMAT:
        return None
    text = "".join(
        str(part.get("text"))
        for part in content.items
        if isinstance(part.get("text"), str) and not part.get("thought")
    )
    calls = [
        (part["functionCall"].get("name"), part["functionCall"].get("args") or {})
        for part in content.items
        if isinstance(part.get("functionCall"), dict)
    ]
    if text != message.content or calls != [(call.name, call.arguments) for call in message.tool_calls]:
        return None
    return list(content.items)


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters}
