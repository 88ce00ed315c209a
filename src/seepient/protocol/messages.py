"""Conversation messages exchanged with a model: the provider-neutral shape every adapter maps to its wire format."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from pydantic import Field, model_validator

from seepient.protocol.frozen import FrozenModel


class ToolCall(FrozenModel):
    """One tool call the model asked for. ``arguments`` is the decoded JSON object.

    ``arguments_error`` is set when the model sent text that is not a JSON object; the pipeline
    returns it to the model as a validation error rather than guessing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None


class ToolSpec(FrozenModel):
    """What the model is told about a tool: its name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(FrozenModel):
    """Tokens of one model call, or of several summed. ``input_tokens`` counts every prompt token, including
    the ``cached_input_tokens`` read from the provider's prompt cache and the ``cache_write_input_tokens``
    written to it; ``output_tokens`` includes reasoning tokens. Input and output are ``None`` when the provider
    did not report them (llama-cpp-python sends no usage at all, a script has none): unknown, never shown as 0,
    and a sum with an unknown part is unknown (the cache counts are parts of the input, 0 when not reported). ``cost_usd`` is an estimate, set only when prices are configured for
    the model that answered. ``Usage()`` is "nothing reported"; ``Usage.zero()`` is "no call made"."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cost_usd: float | None = None

    @classmethod
    def zero(cls) -> Usage:
        return cls(input_tokens=0, output_tokens=0)

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    def tokens_summary(self) -> str:
        """``1,234 in / 56 out`` as surfaces show it, ``unknown`` for a count nobody reported."""
        return f"{_shown(self.input_tokens)} in / {_shown(self.output_tokens)} out"

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=_sum(self.input_tokens, other.input_tokens),
            output_tokens=_sum(self.output_tokens, other.output_tokens),
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_write_input_tokens=self.cache_write_input_tokens + other.cache_write_input_tokens,
            cost_usd=cost,
        )


def _shown(count: int | None) -> str:
    return "unknown" if count is None else f"{count:,}"


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Anthropic's per-image limit, the smallest of the providers Seepient speaks; larger images are refused where
they enter (a flag, a paste, an API request) rather than by whichever route happens to answer."""

_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(head: bytes) -> str | None:
    """The media type the first bytes announce (PNG, JPEG, GIF, WebP), or None. A name or a declared type is
    never trusted: providers reject a mismatch, and a surface must say so before the request is sent."""
    for signature, media_type in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class ImagePart(FrozenModel):
    """An image attached to a user message: base64 ``data`` or a ``url``, never both."""

    media_type: str = Field(pattern=r"^image/[a-z0-9.+-]+$")
    data: str | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ImagePart:
        if (self.data is None) == (self.url is None):
            raise ValueError("an image needs exactly one of data (base64) or url")
        return self

    @classmethod
    def from_bytes(cls, data: bytes) -> ImagePart:
        """An inline image from its bytes, typed by its content; ``ValueError`` says why it cannot be one."""
        if len(data) > MAX_IMAGE_BYTES:
            raise ValueError(
                f"{len(data)} bytes is over the {MAX_IMAGE_BYTES // (1024 * 1024)} MB image limit; "
                "scale it down or crop it"
            )
        media_type = sniff_image_type(data[:12])
        if media_type is None:
            raise ValueError("not a PNG, JPEG, GIF or WebP image (judged by its first bytes)")
        return cls(media_type=media_type, data=base64.b64encode(data).decode("ascii"))

    def decoded(self) -> bytes:
        """The inline bytes; ``ValueError`` when the image is a URL or its data is not valid base64."""
        if self.data is None:
            raise ValueError("the image is a URL, not inline data")
        try:
            return base64.b64decode(self.data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"image data is not valid base64: {exc}") from None


class ProviderContent(FrozenModel):
    """An assistant message exactly as one wire format returned it (Anthropic content blocks with thinking
    signatures, OpenAI Responses output items with encrypted reasoning, Gemini parts with thought
    signatures). The adapter of the same ``format`` sends ``items`` back unchanged; other adapters use the
    message's plain fields."""

    format: Literal["anthropic", "openai-responses", "gemini"]
    model: str = ""
    items: tuple[dict[str, Any], ...] = ()


class Message(FrozenModel):
    """A conversation entry. ``tool`` messages answer the assistant tool call named by ``tool_call_id``."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()
    provider_content: ProviderContent | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str, images: tuple[ImagePart, ...] = ()) -> Message:
        return cls(role="user", content=text, images=images)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls)

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, *, is_error: bool = False) -> Message:
        return cls(role="tool", content=text, tool_call_id=call.id, name=call.name, is_error=is_error)


class ModelRequest(FrozenModel):
    """Everything a model adapter needs for one streamed completion."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: Literal["low", "medium", "high"] | None = None
