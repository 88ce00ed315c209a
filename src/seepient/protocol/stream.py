"""Events a model adapter yields while it streams one completion."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from seepient.protocol.messages import Message, Usage


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextChunk(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ToolCallChunk(_Frozen):
    """A fragment of a tool call as it streams: ``index`` ties fragments of one call together."""

    type: Literal["tool_call_chunk"] = "tool_call_chunk"
    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


class Completion(_Frozen):
    """The last event of every successful stream: the assembled assistant message."""

    type: Literal["completion"] = "completion"
    message: Message
    finish_reason: str
    usage: Usage = Usage()
    model: str = ""


ModelStreamEvent = Annotated[TextChunk | ToolCallChunk | Completion, Field(discriminator="type")]
