"""The ``replay:`` model: plays a scripted list of assistant turns (JSON or YAML, DESIGN §8), one per request.

It is the offline demo and the backbone of end-to-end tests, so it streams like a real model: text in
word-sized chunks, tool calls as fragments, then one ``Completion``. A turn may set ``tokens_per_second`` to
stream its text at that pace, one word-sized chunk per token, as a provider would (benchmarks use it);
without it the text streams as fast as the consumer takes it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from seepient.models.base import ModelError
from seepient.protocol import (
    Completion,
    Message,
    ModelRequest,
    ModelStreamEvent,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)

# Split after a run of whitespace, before the next word: joining the pieces gives back the text exactly.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


class ReplayScriptError(ModelError):
    """A replay script that cannot be played; the message names the file and the turn."""


class _ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: StrictStr = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: StrictStr | None = Field(default=None, min_length=1)


class _ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    text: StrictStr | None = None
    tool_calls: list[_ScriptedCall] = Field(default_factory=list)
    tokens_per_second: float | None = Field(default=None, gt=0, le=1_000_000)


_ALLOWED_KEYS = {
    _ScriptedTurn: ", ".join(_ScriptedTurn.model_fields),
    _ScriptedCall: ", ".join(_ScriptedCall.model_fields),
}


class ReplayModel:
    """Plays ``path`` one turn per ``stream()`` call. The script is read and checked when the model is made,
    so a broken script fails before the conversation starts, not halfway through it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path}"
        self._turns, self._paces = _load_script(self.path)
        self._played = 0

    def __repr__(self) -> str:
        return f"ReplayModel(path={str(self.path)!r}, turns={len(self._turns)}, played={self._played})"

    @property
    def turn_count(self) -> int:
        return len(self._turns)

    @property
    def steps_played(self) -> int:
        return self._played

    def resume_after(self, steps: int) -> None:
        """Continue a restored conversation: its history shows ``steps`` steps already played (one assistant
        message each), so the next request plays the step after them, not the script's first."""
        self._played = max(self._played, min(steps, len(self._turns)))

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        step = self._played + 1
        if step > len(self._turns):
            raise ModelError(
                f"replay script {self.path} has no turn for step {step}: it has {len(self._turns)} turn(s) and "
                "all were played; add a turn to the script or end the conversation sooner"
            )
        self._played = step
        text, calls = self._turns[step - 1]
        pace = self._paces[step - 1]
        loop = asyncio.get_running_loop()
        started = loop.time()
        # Yielding to the loop between chunks lets consumers, cancellation and timeouts interleave with
        # the stream as they would with a network model. A paced turn keeps to its schedule from the start,
        # so time the consumer spends on a chunk does not slow the stream down.
        for number, piece in enumerate(_WORD_BOUNDARY.split(text) if text else (), start=1):
            yield TextChunk(text=piece)
            await asyncio.sleep(max(0.0, started + number / pace - loop.time()) if pace else 0)
        for index, call in enumerate(calls):
            yield ToolCallChunk(index=index, id=call.id, name=call.name)
            await asyncio.sleep(0)
            yield ToolCallChunk(index=index, arguments_delta=call.raw_arguments or "{}")
            await asyncio.sleep(0)
        yield Completion(
            message=Message.assistant(text, tool_calls=calls),
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
        )


def _load_script(path: Path) -> tuple[list[tuple[str, tuple[ToolCall, ...]]], list[float | None]]:
    data = _parse(path)
    if data is None:
        raise ReplayScriptError(f"replay script {path} is empty: it must be a list of assistant turns")
    if not isinstance(data, list):
        raise ReplayScriptError(
            f"replay script {path} must be a list of assistant turns (each with text and/or tool_calls), "
            f"not {_kind(data)}"
        )
    if not data:
        raise ReplayScriptError(f"replay script {path} has no turns: add at least one assistant turn")
    turns: list[tuple[str, tuple[ToolCall, ...]]] = []
    paces: list[float | None] = []
    seen_ids: dict[str, int] = {}
    for number, raw in enumerate(data, start=1):
        where = f"replay script {path}: turn {number}"
        if not isinstance(raw, dict):
            raise ReplayScriptError(
                f"{where} must be a mapping with text and/or tool_calls, not {_kind(raw)}"
            )
        try:
            turn = _ScriptedTurn.model_validate(raw)
        except ValidationError as exc:
            raise ReplayScriptError(f"{where}: {_describe(exc)}") from exc
        if not turn.text and not turn.tool_calls:
            raise ReplayScriptError(f"{where} is empty: give it text, tool_calls or both")
        calls = []
        for position, call in enumerate(turn.tool_calls, start=1):
            call_id = call.id or f"call_r{number}_{position}"
            if call_id in seen_ids:
                raise ReplayScriptError(
                    f"{where}: tool call id {call_id!r} is already used in turn {seen_ids[call_id]}; ids must be unique"
                )
            seen_ids[call_id] = number
            try:
                raw_arguments = json.dumps(call.arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                # YAML reads unquoted dates, timestamps and .nan as values JSON cannot carry.
                raise ReplayScriptError(
                    f"{where}: tool_calls[{position - 1}].arguments holds a value that is not JSON ({exc}); "
                    "quote it to make it a string"
                ) from exc
            calls.append(
                ToolCall(id=call_id, name=call.name, arguments=call.arguments, raw_arguments=raw_arguments)
            )
        turns.append((turn.text or "", tuple(calls)))
        paces.append(turn.tokens_per_second)
    return turns, paces


def _parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayScriptError(f"replay script {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayScriptError(f"replay script {path} cannot be read: {exc}") from exc
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReplayScriptError(
                f"replay script {path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
            ) from exc
    import yaml  # costs ~30 ms; only replay runs need it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        position = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ReplayScriptError(f"replay script {path}{position}: invalid YAML: {problem}") from exc


def _describe(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ""
    for part in error["loc"]:
        if isinstance(part, int) or str(part).startswith("["):
            location += f"[{part}]" if isinstance(part, int) else str(part)
        else:
            location += f".{part}" if location else str(part)
    if error["type"] == "extra_forbidden":
        model = _ScriptedCall if "tool_calls" in location else _ScriptedTurn
        return f"unknown key {location!r} (allowed: {_ALLOWED_KEYS[model]})"
    if error["type"] == "missing":
        return f"{location} is required"
    if error["type"] == "string_type":
        return f"{location} must be a string, not {_kind(error['input'])}; quote it"
    if location.endswith(".arguments") and error["type"] == "dict_type":
        return f"{location} must be an object (argument names to values), not {_kind(error['input'])}"
    return f"{location}: {error['msg']} (got {_kind(error['input'])})"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
