"""Events a model adapter yields while it streams one completion."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from seepient.protocol.frozen import FrozenModel
from seepient.protocol.messages import Message, Usage


class TextChunk(FrozenModel):
    type: Literal["text"] = "text"
    text: str


class ReasoningChunk(FrozenModel):
    """A piece of the model's reasoning as the provider shows it (Anthropic thinking, a Responses reasoning
    summary): streamed to the surfaces, never part of the answer's text."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallChunk(FrozenModel):
    """A fragment of a tool call as it streams: ``index`` ties fragments of one call together."""

    type: Literal["tool_call_chunk"] = "tool_call_chunk"
    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


class Completion(FrozenModel):
    """The last event of every successful stream: the assembled assistant message."""

    type: Literal["completion"] = "completion"
    message: Message
    finish_reason: str
    usage: Usage = Usage()
    model: str = ""


ModelStreamEvent = Annotated[
    TextChunk | ReasoningChunk | ToolCallChunk | Completion, Field(discriminator="type")
]
