"""What the wire formats share once the bytes are read: tool-call arguments both ways, token counts, the system
prompt split off, conversation turns merged by role, and the assistant message assembled at the end."""

from __future__ import annotations

import json
from typing import Any

from seepient.models.base import ModelError
from seepient.protocol import Completion, Message, ProviderContent, ToolCall, Usage

# The reasoning budget (in tokens) each effort buys, for the formats that take a budget rather than an effort.
THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
NO_TOOL_NAME = "the model sent a tool call without a tool name"


def decode_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """A tool call's argument text as an object, or the reason it is not one."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"tool arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, not {json_type(value)}"
    return value, None


def wire_arguments(call: ToolCall) -> str:
    """A call's arguments as they go back on the wire: the model's own bytes when it sent some (prefix-based
    prompt caches match on them), else the arguments encoded."""
    if call.raw_arguments is not None and call.raw_arguments.strip():
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def finished_call(
    call_id: str, name: str, raw: str, arguments: dict[str, Any], error: str | None
) -> ToolCall:
    """The tool call as the runtime gets it; one without a name cannot be run, whatever its arguments say."""
    return ToolCall(
        id=call_id,
        name=name,
        arguments=arguments,
        raw_arguments=raw,
        arguments_error=NO_TOOL_NAME if not name else error,
    )


def assistant_completion(
    *,
    wire_format: str,
    text: str,
    calls: tuple[ToolCall, ...],
    items: list[dict[str, Any]],
    finish_reason: str,
    usage: Usage | None,
    model: str,
) -> Completion:
    """The final assistant message, keeping the provider's own ``items`` (reasoning, signatures) to send back
    unchanged when there are any."""
    message = Message(
        role="assistant",
        content=text,
        tool_calls=calls,
        provider_content=ProviderContent(format=wire_format, model=model, items=tuple(items))
        if items
        else None,
    )
    return Completion(message=message, finish_reason=finish_reason, usage=usage or Usage(), model=model)


def json_type(value: object, *, array: str = "an array", mapping: str = "an object") -> str:
    """How an error message names a JSON (or YAML) value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return array
    return mapping if isinstance(value, dict) else type(value).__name__


def count(value: object) -> int:
    """A token count from a usage object, or 0 for anything that is not a non-negative integer (for the
    optional counts, such as cache reads, whose absence means none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def known(value: object) -> int | None:
    """A token count the provider must report, or ``None`` (unknown) when it did not."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def plus(value: int | None, *more: int) -> int | None:
    """``value`` with ``more`` added, staying unknown when ``value`` is."""
    return None if value is None else value + sum(more)


def index_of(value: object) -> int:
    """A stream's ``index``/``output_index`` field, or -1 when it is not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def image_data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def leading_system(messages: tuple[Message, ...]) -> tuple[str, tuple[Message, ...]]:
    """The leading system messages joined into one text (the wire formats that take the system prompt as a
    separate field), and the conversation after them."""
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    return "\n\n".join(m.content for m in messages[:lead] if m.content), messages[lead:]


def answered_call_id(message: Message) -> str:
    """The id of the call a tool result answers; a result without one cannot be sent."""
    if not message.tool_call_id:
        raise ModelError("a tool result message has no tool_call_id: it must answer an assistant tool call")
    return message.tool_call_id


def add_turn(turns: list[dict[str, Any]], role: str, key: str, parts: list[dict[str, Any]]) -> None:
    """Append ``parts`` under ``key`` as a ``role`` turn, into the last turn when it has that role: the formats
    that want user and model turns to alternate get a tool result and the text after it in one turn."""
    if not parts:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(parts)
    else:
        turns.append({"role": role, key: list(parts)})


def error_body_details(payload: Any) -> tuple[str, str, float | None]:
    """The human message and the machine type/code of an error body that names no wait:
    ``{"error": {"message", "type", "code"}}`` (OpenAI), ``{"type": "error", "error": {"type", "message"}}``
    (Anthropic), ``{"error": "..."}`` (Ollama), ``{"message", "type"}`` (vLLM)."""
    if not isinstance(payload, dict):
        return "", "", None
    error = payload.get("error", payload)
    if isinstance(error, str):
        return error, "", None
    if not isinstance(error, dict):
        return "", "", None
    message = error.get("message")
    kind = " ".join(str(error.get(key)) for key in ("type", "code") if error.get(key) is not None)
    return (message if isinstance(message, str) else ""), kind.lower(), None
