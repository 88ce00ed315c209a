"""Shared by the model tests: draining a stream (with a timeout so a hang fails the test), reading what it
streamed, and closing the models and routers a test made (``track``; ``conftest.py`` closes them)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeVar

import pytest

from seepient.models.base import ModelError
from seepient.protocol import Completion, Message, ModelRequest, ModelStreamEvent, TextChunk, ToolCallChunk

HELLO = ModelRequest(model="label", messages=(Message.user("hi"),))


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)
_opened: list[_Closable] = []


def track(thing: _C) -> _C:
    """``thing``, to be closed when the test ends (its pooled connections belong to the test's loop)."""
    _opened.append(thing)
    return thing


async def close_tracked() -> None:
    while _opened:
        await _opened.pop().aclose()


async def collect(model: Any, request: ModelRequest = HELLO) -> list[ModelStreamEvent]:
    events: list[ModelStreamEvent] = []
    async with asyncio.timeout(20):
        async for event in model.stream(request):
            events.append(event)
    return events


async def collect_until_error(
    model: Any, request: ModelRequest = HELLO
) -> tuple[list[ModelStreamEvent], ModelError]:
    events: list[ModelStreamEvent] = []
    with pytest.raises(ModelError) as caught:
        async with asyncio.timeout(20):
            async for event in model.stream(request):
                events.append(event)
    return events, caught.value


def only_completion(events: list[ModelStreamEvent]) -> Completion:
    completions = [event for event in events if isinstance(event, Completion)]
    assert len(completions) == 1
    assert events[-1] is completions[0]
    return completions[0]


def streamed_text(events: list[ModelStreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextChunk))


def streamed_calls(events: list[ModelStreamEvent]) -> dict[int, tuple[str | None, str | None, str]]:
    """index → (id, name, joined argument text) from the tool-call chunks."""
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for event in events:
        if isinstance(event, ToolCallChunk):
            call_id, name, arguments = calls.get(event.index, (None, None, ""))
            calls[event.index] = (call_id or event.id, name or event.name, arguments + event.arguments_delta)
    return calls
