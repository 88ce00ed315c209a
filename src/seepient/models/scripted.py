"""Scripted models: a conversation given as a list of assistant turns (``ScriptedModel``), a function that
answers each request (``FunctionModel``), and the ``replay:`` script file loader on top of the first
(``ReplayModel``, DESIGN §8). The replay model is the offline demo and the backbone of end-to-end tests; the
other two are test doubles for Python code.

A turn is a mapping with optional ``text``, optional ``tool_calls`` (a list of ``{name, arguments, id?}``) and
optional ``tokens_per_second`` and ``thinking`` (reasoning streamed before the text). Each streams like a real model: text in word-sized chunks, tool calls as
fragments, then one ``Completion``. A paced turn streams its text at that rate, one word-sized chunk per token,
as a provider would (benchmarks use it); otherwise text streams as fast as the consumer takes it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, StrictStr, ValidationError

from seepient.models._wire import json_type
from seepient.models.base import ModelError
from seepient.protocol.frozen import deferred_config
from seepient.protocol.messages import Message, ModelRequest, ToolCall
from seepient.protocol.stream import Completion, ModelStreamEvent, ReasoningChunk, TextChunk, ToolCallChunk

# Split after a run of whitespace, before the next word: joining the pieces gives back the text exactly.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")

Turn = Mapping[str, Any]
"""One assistant turn as a script gives it: ``text``, ``tool_calls`` and ``tokens_per_second``, each optional."""

TurnFunction = Callable[[ModelRequest], Turn | Awaitable[Turn]]


class ScriptError(ModelError):
    """Turns that cannot be played; the message names the script and the turn (or step)."""


class ReplayScriptError(ScriptError):
    """A replay script file that cannot be played; the message names the file and the turn."""


class _ScriptedCall(BaseModel):
    model_config = deferred_config(extra="forbid", frozen=True, strict=True)

    name: StrictStr = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: StrictStr | None = Field(default=None, min_length=1)


class _ScriptedTurn(BaseModel):
    model_config = deferred_config(extra="forbid", frozen=True, strict=True)

    text: StrictStr | None = None
    tool_calls: list[_ScriptedCall] = Field(default_factory=list)
    tokens_per_second: float | None = Field(default=None, gt=0, le=1_000_000)
    thinking: StrictStr | None = None


_ALLOWED_KEYS = {
    _ScriptedTurn: ", ".join(_ScriptedTurn.model_fields),
    _ScriptedCall: ", ".join(_ScriptedCall.model_fields),
}


@dataclass(frozen=True)
class _Turn:
    text: str
    calls: tuple[ToolCall, ...]
    pace: float | None
    thinking: str = ""


class _TurnPlayer:
    """Streams one turn per request; subclasses say which turn. ``requests`` keeps every request received, in
    order, so a test can look at what the runtime sent."""

    name: str
    requests: list[ModelRequest]

    async def aclose(self) -> None:
        return None

    async def _next_turn(self, request: ModelRequest) -> _Turn:
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        turn = await self._next_turn(request)
        text, calls, pace = turn.text, turn.calls, turn.pace
        loop = asyncio.get_running_loop()
        started = loop.time()
        if turn.thinking:
            yield ReasoningChunk(text=turn.thinking)
            await asyncio.sleep(0)
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


class ScriptedModel(_TurnPlayer):
    """Plays ``turns`` in order, one per ``stream()`` call. The turns are checked when the model is made, so a
    broken script fails before the conversation starts, not halfway through it; a call without an ``id`` gets
    ``call_r{turn}_{position}``, the same on every run. Asking for a turn past the last is an error naming the
    step."""

    _error: ClassVar[type[ScriptError]] = ScriptError
    _keeps_requests: ClassVar[bool] = True

    def __init__(self, turns: Iterable[Turn], *, name: str = "scripted") -> None:
        self.name = name
        self.requests = []
        self._played = 0
        self._turns = self._check(list(turns))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, turns={len(self._turns)}, played={self._played})"

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

    def _described(self) -> str:
        return f"scripted model {self.name!r}"

    def _check(self, raw_turns: list[Any]) -> list[_Turn]:
        where = self._described()
        if not raw_turns:
            raise self._error(f"{where} has no turns: add at least one assistant turn")
        checker = _TurnChecker(self._error, "turn", "r")
        return [checker.check(raw, number, where) for number, raw in enumerate(raw_turns, start=1)]

    async def _next_turn(self, request: ModelRequest) -> _Turn:
        if self._keeps_requests:
            self.requests.append(request)
        step = self._played + 1
        if step > len(self._turns):
            raise self._error(
                f"{self._described()} has no turn for step {step}: it has {len(self._turns)} turn(s) and all were "
                "played; add a turn to the script or end the conversation sooner"
            )
        self._played = step
        return self._turns[step - 1]


class FunctionModel(_TurnPlayer):
    """Answers each request with the turn ``fn(request)`` gives (or the awaitable it returns resolves to), so a
    test can answer from what the runtime sent. A call without an ``id`` gets ``call_f{step}_{position}``; a
    turn that is not one is an error naming the step. A ``ModelError`` raised by ``fn`` reaches the caller as a
    provider's would."""

    def __init__(self, fn: TurnFunction, *, name: str = "function") -> None:
        self.name = name
        self.requests = []
        self._fn = fn
        self._checker = _TurnChecker(ScriptError, "step", "f")

    def __repr__(self) -> str:
        return f"FunctionModel(name={self.name!r}, fn={self._fn!r}, steps={len(self.requests)})"

    async def _next_turn(self, request: ModelRequest) -> _Turn:
        self.requests.append(request)
        step = len(self.requests)
        answer = self._fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return self._checker.check(answer, step, f"function model {self.name!r}")


class ReplayModel(ScriptedModel):
    """Plays the replay script at ``path`` (JSON when it ends in ``.json``, YAML otherwise), read and checked
    when the model is made. It keeps no requests: it plays real runs (the demo, a server's sessions), where a
    long conversation must not pile its requests up."""

    _error = ReplayScriptError
    _keeps_requests = False

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        super().__init__(_read_script(self.path), name=f"replay:{self.path}")

    def __repr__(self) -> str:
        return f"ReplayModel(path={str(self.path)!r}, turns={self.turn_count}, played={self.steps_played})"

    def _described(self) -> str:
        return f"replay script {self.path}"


@dataclass
class _TurnChecker:
    """Checks turns one by one, keeping tool call ids unique across them. ``unit`` is what a turn is called in
    messages (a script's ``turn``, a function's ``step``); ``id_letter`` marks the ids it makes up."""

    error: type[ScriptError]
    unit: str
    id_letter: str
    seen_ids: dict[str, int] = field(default_factory=dict)

    def check(self, raw: Any, number: int, where: str) -> _Turn:
        where = f"{where}: {self.unit} {number}"
        if not isinstance(raw, Mapping):
            raise self.error(f"{where} must be a mapping with text and/or tool_calls, not {_kind(raw)}")
        try:
            turn = _ScriptedTurn.model_validate(dict(raw))
        except ValidationError as exc:
            raise self.error(f"{where}: {_describe(exc)}") from exc
        if not turn.text and not turn.tool_calls:
            raise self.error(f"{where} is empty: give it text, tool_calls or both")
        return _Turn(
            turn.text or "", self._calls(turn, number, where), turn.tokens_per_second, turn.thinking or ""
        )

    def _calls(self, turn: _ScriptedTurn, number: int, where: str) -> tuple[ToolCall, ...]:
        calls = []
        for position, call in enumerate(turn.tool_calls, start=1):
            call_id = call.id or f"call_{self.id_letter}{number}_{position}"
            if call_id in self.seen_ids:
                raise self.error(
                    f"{where}: tool call id {call_id!r} is already used in {self.unit} {self.seen_ids[call_id]}; "
                    "ids must be unique"
                )
            self.seen_ids[call_id] = number
            try:
                raw_arguments = json.dumps(call.arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                # YAML reads unquoted dates, timestamps and .nan as values JSON cannot carry.
                raise self.error(
                    f"{where}: tool_calls[{position - 1}].arguments holds a value that is not JSON ({exc}); "
                    "quote it to make it a string"
                ) from exc
            calls.append(
                ToolCall(id=call_id, name=call.name, arguments=call.arguments, raw_arguments=raw_arguments)
            )
        return tuple(calls)


def _read_script(path: Path) -> list[Any]:
    data = _parse(path)
    if data is None:
        raise ReplayScriptError(f"replay script {path} is empty: it must be a list of assistant turns")
    if not isinstance(data, list):
        raise ReplayScriptError(
            f"replay script {path} must be a list of assistant turns (each with text and/or tool_calls), "
            f"not {_kind(data)}"
        )
    return data


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
    return json_type(value, array="a list", mapping="a mapping")
