"""Conversation messages exchanged with a model: the provider-neutral shape every adapter maps to its wire format."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """One tool call the model asked for. ``arguments`` is the decoded JSON object.

    ``arguments_error`` is set when the model sent text that is not a JSON object; the pipeline
    returns it to the model as a validation error rather than guessing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None


class ToolSpec(_Frozen):
    """What the model is told about a tool: its name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


class Message(_Frozen):
    """A conversation entry. ``tool`` messages answer the assistant tool call named by ``tool_call_id``."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls)

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, *, is_error: bool = False) -> Message:
        return cls(role="tool", content=text, tool_call_id=call.id, name=call.name, is_error=is_error)


class ModelRequest(_Frozen):
    """Everything a model adapter needs for one streamed completion."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
