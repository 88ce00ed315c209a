"""An ACP prompt (text, resource links, embedded resources, images) as the text and images of one turn."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from seepient.protocol import ImagePart
from seepient.protocol.errors import InvalidInputError


class PromptError(InvalidInputError, ValueError):
    """A prompt block this agent cannot take, with the reason the editor is told."""


def _image(data: str, where: str) -> ImagePart:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PromptError(f"{where}: the image data is not base64 ({exc})") from None
    try:
        return ImagePart.from_bytes(raw)
    except ValueError as exc:
        raise PromptError(f"{where}: {exc}") from None


def prompt_parts(blocks: Sequence[Any]) -> tuple[str, tuple[ImagePart, ...]]:
    """The turn's prompt text and images. Resource links stay links in the text (the model reads them with
    its tools, through the same path policy as any read); embedded text resources are quoted with their URI."""
    texts: list[str] = []
    images: list[ImagePart] = []
    for number, block in enumerate(blocks, start=1):
        where = f"prompt block {number}"
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append(_image(block.data, where))
        elif isinstance(block, ResourceContentBlock):
            label = block.title or block.name
            texts.append(f"[{label}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                texts.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
            elif isinstance(resource, BlobResourceContents):
                if (resource.mime_type or "").startswith("image/"):
                    images.append(_image(resource.blob, where))
                else:
                    texts.append(f"[binary resource {resource.uri}, not included]")
        elif isinstance(block, AudioContentBlock):
            raise PromptError(f"{where}: audio prompts are not supported (the agent does not offer them)")
        else:
            raise PromptError(
                f"{where}: unknown content type {getattr(block, 'type', type(block).__name__)!r}"
            )
    text = "\n\n".join(part for part in texts if part)
    if not text and not images:
        raise PromptError("the prompt is empty")
    return text, tuple(images)
