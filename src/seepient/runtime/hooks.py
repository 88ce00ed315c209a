"""Hooks: the user's commands (settings) and Python callables (SDK) run at four points of the lifecycle.

Events and what a hook receives (one JSON object on stdin, or the dict a callable is called with):

- ``preToolUse``: ``{event, session_id, cwd, tool, call_id, arguments}``, after the arguments validated and
  before the tool prepares anything.
- ``postToolUse``: the same plus ``status`` (``ok``/``error``), ``output`` (cut to 20,000 characters) and
  ``action`` (``id``, ``kind``, ``summary``, ``digest``), after execution and its audit record.
- ``sessionStart``: ``{event, session_id, cwd}``, before the session's first model request.
- ``stop``: ``{event, session_id, cwd, turn_id, reason, text, stop_hook_active}`` when the model answered
  without tool calls.

The answer is one JSON object on stdout (or the dict a callable returns; ``None`` or empty stdout passes):

- ``{"decision": "pass"}``: nothing to say. ``"context": "..."`` may come with it: for ``sessionStart`` it is
  added to the system prompt (plain, non-JSON stdout counts as context too), for ``postToolUse`` it is
  appended to what the model reads.
- ``{"decision": "block", "reason": "..."}``: ``preToolUse`` refuses the call (the model reads the reason);
  ``postToolUse`` appends the reason to the result; ``stop`` keeps the turn going with the reason as a new
  user message, at most ``MAX_STOP_CONTINUATIONS`` times a turn; ``sessionStart`` refuses to start the turn.
- ``{"decision": "modify", "arguments": {...}}`` (``preToolUse`` only): the call goes on with these
  arguments instead, validated again and then prepared, evaluated by policy and approved as usual.

A hook that fails blocks, naming why: a non-zero exit without a valid answer, stdout that is not a JSON object
of the keys above, a deadline passed (its process group is killed), a callable that raised. Hooks run in the
order they were configured (user, then ``--config``, then managed settings, then SDK callables); the first
block wins, and each ``modify`` is what the next hook sees.

Who may configure them and how they run: command hooks come only from the user's own settings, a
``--config`` file or the managed settings, never from a project's ``.seepient/settings.json`` (a cloned
repository would run its commands on this machine unasked), and never from the model (settings files are
self-protected). They run unsandboxed on the host, as a git hook would, because they are the user's own
programs and often need what a sandbox withholds (a notifier, a formatter writing the workspace, a policy
service on the network); they get the scrubbed environment of sandboxed commands (no ``*_API_KEY``,
``*_TOKEN``, ``*SECRET*``) with the real ``HOME``, the workspace as working directory, and a deadline.
A hook whose program or script is a file inside the workspace (outside ``.seepient/``) is refused, since
the model can rewrite such a file; a hook that reads workspace files indirectly (``make``, ``npm run``,
``python -m``) runs what the model may have written, and that risk is the configuring user's.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seepient.config.sections import HOOK_EVENTS, HookCommand, HookSettings
from seepient.execution.hooks import (
    HookProgramRefused,
    check_hook_program,
    hook_environment,
    run_hook_process,
)
from seepient.protocol import PreparedActionDraft, ToolCall
from seepient.protocol.errors import InvalidInputError
from seepient.tools.base import ToolOutput

HookEvent = Literal["preToolUse", "postToolUse", "sessionStart", "stop"]
HookFunction = Callable[[dict[str, Any]], Any]
"""Called with the event's input dict; returns ``None`` or an answer dict (sync or async)."""

MAX_STOP_CONTINUATIONS = 3
"""How often ``stop`` hooks may keep one turn going; past it the turn ends as the model answered."""
DEFAULT_FUNCTION_TIMEOUT_S = 10.0
_OUTPUT_TO_HOOK = 20_000
_ANSWER_KEYS = frozenset({"decision", "reason", "arguments", "context"})
_STDERR_SHOWN = 500


@dataclass(frozen=True)
class HookAnswer:
    """One hook's answer. ``hook`` names the hook for the messages built from it."""

    decision: Literal["pass", "block", "modify"]
    hook: str
    reason: str = ""
    arguments: dict[str, Any] | None = None
    context: str = ""


class HookProtocolError(InvalidInputError, ValueError):
    """An answer that does not follow the protocol; the hook counts as failed (and so blocks)."""


def parse_answer(event: str, answer: object, *, hook: str) -> HookAnswer:
    """A hook's decoded answer checked against the protocol; ``HookProtocolError`` says what is wrong."""
    if answer is None:
        return HookAnswer("pass", hook)
    if isinstance(answer, HookAnswer):
        return answer
    if not isinstance(answer, Mapping):
        raise HookProtocolError(f"the answer must be a JSON object, not {type(answer).__name__}")
    unknown = sorted(set(answer) - _ANSWER_KEYS)
    if unknown:
        raise HookProtocolError(
            f"unknown key(s) {', '.join(unknown)}; an answer has decision, reason, arguments, context"
        )
    decision = answer.get("decision", "pass")
    reason = answer.get("reason", "")
    context = answer.get("context", "")
    if not isinstance(reason, str) or not isinstance(context, str):
        raise HookProtocolError("reason and context must be strings")
    if decision == "pass":
        return HookAnswer("pass", hook, context=context)
    if decision == "block":
        return HookAnswer("block", hook, reason=reason or "no reason given", context=context)
    if decision == "modify":
        if event != "preToolUse":
            raise HookProtocolError(f"modify is an answer to preToolUse only, not {event}")
        arguments = answer.get("arguments")
        if not isinstance(arguments, dict):
            raise HookProtocolError('modify needs "arguments": the whole new arguments object')
        return HookAnswer("modify", hook, arguments=arguments, context=context)
    raise HookProtocolError(f"decision must be pass, block or modify, not {decision!r}")


def _matches(matcher: str | None, tool: str | None) -> bool:
    if matcher is None or matcher in ("", "*") or tool is None:
        return True
    return re.fullmatch(matcher, tool) is not None


@dataclass(frozen=True)
class FunctionHook:
    """A Python callable registered through the SDK (``Agent(hooks=...)`` or ``agent.add_hook``)."""

    event: HookEvent
    function: HookFunction
    matcher: str | None = None
    timeout_s: float = DEFAULT_FUNCTION_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {self.event!r}; use one of {', '.join(HOOK_EVENTS)}")
        if self.matcher not in (None, "", "*"):
            re.compile(self.matcher)  # a bad pattern fails where it is registered, not at the first call
        if not callable(self.function):
            raise TypeError("a hook must be callable")

    @property
    def label(self) -> str:
        name = getattr(self.function, "__qualname__", None) or type(self.function).__name__
        return f"hook function {name}"


@dataclass
class StartResult:
    context: str = ""
    blocked: str | None = None


@dataclass
class HookRunner:
    """The hooks of one session: settings commands first, then SDK callables, each event in that order."""

    settings: HookSettings
    workspace: Path
    session_id: str
    environ: Mapping[str, str] | None = None
    functions: list[FunctionHook] = field(default_factory=list)

    def add(
        self,
        event: HookEvent,
        function: HookFunction,
        *,
        matcher: str | None = None,
        timeout_s: float = DEFAULT_FUNCTION_TIMEOUT_S,
    ) -> FunctionHook:
        hook = FunctionHook(event, function, matcher, timeout_s)
        self.functions.append(hook)
        return hook

    def configured(self, event: HookEvent) -> bool:
        return bool(self.settings.for_event(event)) or any(h.event == event for h in self.functions)

    # -- the four events ------------------------------------------------------------------------------

    async def pre_tool_use(self, call: ToolCall) -> str | ToolCall | None:
        """A ``PreHook`` for the pipeline: a block reason, the call with changed arguments, or None."""
        current = [call]  # what the next hook sees: the last modify's arguments
        for answer in self._answers("preToolUse", call.name, lambda: self._tool_input(current[0])):
            decided = await answer()
            if decided.decision == "block":
                return f"{decided.hook}: {decided.reason}"
            if decided.decision == "modify" and decided.arguments is not None:
                current[0] = current[0].model_copy(update={"arguments": decided.arguments})
        return current[0] if current[0] is not call else None

    async def post_tool_use(self, draft: PreparedActionDraft, output: ToolOutput) -> str | None:
        """A ``PostHook``: text to append to what the model reads (feedback, blocks, context), or None."""
        notes: list[str] = []

        def payload() -> dict[str, Any]:
            return {
                **self._base("postToolUse"),
                "tool": draft.tool,
                "call_id": draft.call_id,
                "status": "error" if output.is_error else "ok",
                "output": output.text[:_OUTPUT_TO_HOOK],
                "action": {
                    "id": draft.id,
                    "kind": str(draft.kind),
                    "summary": draft.summary,
                    "digest": draft.digest,
                },
            }

        for answer in self._answers("postToolUse", draft.tool, payload):
            decided = await answer()
            if decided.decision == "block":
                notes.append(f"[postToolUse {decided.hook} blocked: {decided.reason}]")
            if decided.context:
                notes.append(decided.context)
        return "\n".join(notes) or None

    async def session_start(self) -> StartResult:
        result = StartResult()
        contexts: list[str] = []
        for answer in self._answers("sessionStart", None, lambda: self._base("sessionStart")):
            decided = await answer()
            if decided.decision == "block":
                result.blocked = f"{decided.hook}: {decided.reason}"
                return result
            if decided.context:
                contexts.append(decided.context)
        result.context = "\n\n".join(contexts)
        return result

    async def stop(self, *, turn_id: str, reason: str, text: str, active: bool) -> str | None:
        """The reason to keep the turn going (fed to the model as a user message), or None to stop."""

        def payload() -> dict[str, Any]:
            return {
                **self._base("stop"),
                "turn_id": turn_id,
                "reason": reason,
                "text": text,
                "stop_hook_active": active,
            }

        for answer in self._answers("stop", None, payload):
            decided = await answer()
            if decided.decision == "block":
                return f"{decided.hook}: {decided.reason}"
        return None

    # -- running hooks ---------------------------------------------------------------------------------

    def _base(self, event: str) -> dict[str, Any]:
        return {"event": event, "session_id": self.session_id, "cwd": str(self.workspace)}

    def _tool_input(self, call: ToolCall) -> dict[str, Any]:
        return {
            **self._base("preToolUse"),
            "tool": call.name,
            "call_id": call.id,
            "arguments": json.loads(json.dumps(call.arguments, default=str)),
        }

    def _answers(
        self, event: HookEvent, tool: str | None, payload: Callable[[], dict[str, Any]]
    ) -> list[Callable[[], Awaitable[HookAnswer]]]:
        """One starter per matching hook, called in order; ``payload`` is built when a hook starts, so a
        ``modify`` is what the next hook sees."""
        runs: list[Callable[[], Awaitable[HookAnswer]]] = []
        for command in self.settings.for_event(event):
            if _matches(command.matcher, tool):
                runs.append(lambda c=command: self._run_command(event, c, payload()))  # type: ignore[misc]
        for hook in self.functions:
            if hook.event == event and _matches(hook.matcher, tool):
                runs.append(lambda h=hook: self._run_function(event, h, payload()))  # type: ignore[misc]
        return runs

    async def _run_command(self, event: HookEvent, hook: HookCommand, data: dict[str, Any]) -> HookAnswer:
        shown = hook.command if isinstance(hook.command, str) else " ".join(hook.command)
        label = f"hook `{shown if len(shown) <= 80 else shown[:79] + '…'}`"
        env = hook_environment(self.environ, workspace=self.workspace)
        try:
            check_hook_program(
                hook.command, workspace=self.workspace, env=env, protected=[self.workspace / ".seepient"]
            )
        except HookProgramRefused as exc:
            return HookAnswer("block", label, reason=f"not run: {exc}")
        except ValueError as exc:  # unbalanced quotes in the shell line
            return HookAnswer("block", label, reason=f"not run: cannot read the command line ({exc})")
        try:
            result = await run_hook_process(
                hook.command,
                stdin=json.dumps(data).encode(),
                cwd=self.workspace,
                env=env,
                timeout_s=hook.timeout_ms / 1000,
            )
        except OSError as exc:
            return HookAnswer("block", label, reason=f"failed to start: {exc.strerror or exc}")
        if result.timed_out:
            return HookAnswer(
                "block", label, reason=f"timed out after {hook.timeout_ms} ms (its processes were killed)"
            )
        stdout = result.stdout.strip()
        try:
            if not stdout:
                decoded: object = None
            elif event == "sessionStart" and not stdout.startswith("{"):
                decoded = {"context": stdout}
            else:
                decoded = json.loads(stdout)
            answer = parse_answer(event, decoded, hook=label)
        except (json.JSONDecodeError, HookProtocolError) as exc:
            why = f"its answer is not valid: {exc}"
            if result.exit_code != 0:
                why = f"failed (exit {result.exit_code}){_stderr(result.stderr)}; {why}"
            return HookAnswer("block", label, reason=why)
        if result.exit_code != 0 and decoded is None:
            return HookAnswer(
                "block", label, reason=f"failed (exit {result.exit_code}){_stderr(result.stderr)}"
            )
        return answer

    async def _run_function(self, event: HookEvent, hook: FunctionHook, data: dict[str, Any]) -> HookAnswer:
        label = hook.label
        try:
            async with asyncio.timeout(hook.timeout_s):
                returned = hook.function(data)
                if inspect.isawaitable(returned):
                    returned = await returned
            return parse_answer(event, returned, hook=label)
        except TimeoutError:
            return HookAnswer("block", label, reason=f"timed out after {hook.timeout_s:g} s")
        except HookProtocolError as exc:
            return HookAnswer("block", label, reason=f"its answer is not valid: {exc}")
        except Exception as exc:  # a broken hook blocks; it never passes silently
            return HookAnswer("block", label, reason=f"raised {type(exc).__name__}: {exc}")


def _stderr(stderr: str) -> str:
    text = stderr.strip()
    if not text:
        return ""
    return ": " + (text if len(text) <= _STDERR_SHOWN else "…" + text[-_STDERR_SHOWN:])
