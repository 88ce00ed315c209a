"""The agent loop for one turn: ask the model, stream its text, run its tool calls, repeat until it answers.

A turn ends on final text (unless a ``stop`` hook keeps it going, a bounded number of times), on the step
limit, on its budget (tokens, checked before each model request, and wall time, enforced even mid-answer), on
a model error, or on interrupt. An answer cut off at the output limit (``finish_reason: "length"``) is not a
final answer: the user is told, and so is the model, which goes on. Tool calls that are not concurrency-safe
for their input run one after another in the order the model gave them; adjacent concurrency-safe calls run
together, at most ``max_parallel_tools`` at once. Results always go back in the model's order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from seepient.context.manager import ConversationContext
from seepient.context.tokens import TokenEstimator
from seepient.models.base import Model, ModelError
from seepient.protocol import (
    CompactionEvent,
    Completion,
    ErrorEvent,
    ImagePart,
    Message,
    ModelRequest,
    ReasoningChunk,
    ReasoningDelta,
    TextChunk,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolCallEvent,
    ToolResult,
    ToolSpec,
    TurnCompleted,
    TurnStarted,
    Usage,
    new_id,
)
from seepient.protocol.errors import ExecutionError
from seepient.runtime.events import EventStream
from seepient.runtime.hooks import MAX_STOP_CONTINUATIONS, StartResult
from seepient.runtime.pipeline import ToolCallPipeline
from seepient.telemetry import content, log_event, metrics, span
from seepient.tools.registry import ToolRegistry

_log = logging.getLogger("seepient.runtime")

PLAN_MODE_NOTE = (
    "Plan mode: this turn only plans. Only read-only tools are available; use them to look at what you need. "
    "Change nothing. Answer with a concise, numbered plan of the changes you would make and how you would "
    "check them; the user approves it before anything is changed."
)

CUT_OFF_NOTE = (
    "Your last reply was cut off at the output limit (models.maxOutputTokens) before you finished. Continue "
    "from where it stopped, in smaller pieces: write a long file in several steps rather than in one call."
)
"""What the model reads after an answer that hit the output limit, so it does not take it as complete."""

PLAN_APPROVED_PROMPT = "The plan is approved. Carry it out now."
"""The user's side of an approved plan, in the history, so the model knows writes are now allowed."""


@dataclass(frozen=True)
class TurnBudget:
    """How much one turn may spend: ``tokens`` (input and output summed over its model calls, estimated
    where the server reports none) and ``wall_time_s``."""

    tokens: int | None = None
    wall_time_s: float | None = None


class _OutOfTime(ExecutionError):
    """The turn's wall time ran out while the model was answering."""


@dataclass(frozen=True)
class TurnOutcome:
    turn_id: str
    reason: str
    text: str
    steps: int
    usage: Usage
    error: str | None = None


StopHook = Callable[..., Awaitable[str | None]]
"""``stop(turn_id=, reason=, text=, active=)``: a reason to keep the turn going, or None."""
StartHook = Callable[[], Awaitable[StartResult]]


def _concurrency_safe(registry: ToolRegistry, call: ToolCall) -> bool:
    """Whether the tool says this call may run alongside others; arguments that do not validate run alone
    (the pipeline reports them)."""
    tool = registry.get(call.name)
    if tool is None or call.arguments_error:
        return False
    try:
        args = tool.input_model.model_validate(call.arguments)
        return bool(tool.is_concurrency_safe(args))
    except Exception:  # arguments that do not validate, or a tool's own check failing: run it alone
        return False


def _batches(calls: Sequence[ToolCall], registry: ToolRegistry) -> list[list[ToolCall]]:
    batches: list[tuple[bool, list[ToolCall]]] = []
    for call in calls:
        safe = _concurrency_safe(registry, call)
        if safe and batches and batches[-1][0]:
            batches[-1][1].append(call)
        else:
            batches.append((safe, [call]))
    return [batch for _, batch in batches]


def _is_read_only(registry: ToolRegistry, name: str) -> bool:
    tool = registry.get(name)
    return tool is not None and tool.read_only


class AgentLoop:
    def __init__(
        self,
        *,
        model: Model,
        model_name: str,
        registry: ToolRegistry,
        pipeline: ToolCallPipeline,
        events: EventStream,
        history: list[Message],
        system_prompt: str,
        max_steps: int,
        context: ConversationContext | None = None,
        max_parallel_tools: int = 10,
        stop_hook: StopHook | None = None,
        start_hook: StartHook | None = None,
        budget: TurnBudget | None = None,
    ) -> None:
        self._model = model
        self._model_name = model_name
        self._registry = registry
        self._pipeline = pipeline
        self._events = events
        self._history = history
        self._system = system_prompt
        self._max_steps = max_steps
        self._context = context
        self._max_parallel = max(1, max_parallel_tools)
        self._stop_hook = stop_hook
        self._start_hook = start_hook
        self._start_context = ""
        self._budget = budget or TurnBudget()
        self._estimator = context.estimator if context is not None else TokenEstimator()

    async def run_turn(
        self,
        prompt: str,
        images: tuple[ImagePart, ...] = (),
        *,
        model: Model | None = None,
        model_name: str | None = None,
        plan: bool = False,
    ) -> TurnOutcome:
        """Run one turn. ``model``/``model_name`` answer this turn instead of the loop's own (a vision or plan
        route); ``plan`` offers and runs only the registry's read-only tools and asks for a plan as the answer."""
        turn_id = new_id("turn")
        with span("seepient.turn", {"seepient.turn.id": turn_id, "seepient.turn.plan": plan}) as traced:
            traced.set("seepient.prompt", content(prompt))
            outcome = await self._run_turn(turn_id, prompt, images, model, model_name, plan)
            traced.set("seepient.turn.reason", outcome.reason)
            traced.set("seepient.turn.steps", outcome.steps)
            traced.set("gen_ai.usage.input_tokens", outcome.usage.input_tokens)
            traced.set("gen_ai.usage.output_tokens", outcome.usage.output_tokens)
            traced.set("seepient.answer", content(outcome.text))
            if outcome.error is not None:
                traced.fail(outcome.reason)
            answered_by = model_name or self._model_name
            metrics.turn(answered_by, outcome.reason, outcome.usage)
            fields = {
                "turn_id": turn_id,
                "reason": outcome.reason,
                "steps": outcome.steps,
                "model": answered_by,
            }
            log_event(_log, "turn_completed", fields)
            return outcome

    async def _run_turn(
        self,
        turn_id: str,
        prompt: str,
        images: tuple[ImagePart, ...],
        model: Model | None,
        model_name: str | None,
        plan: bool,
    ) -> TurnOutcome:
        read_only = plan
        self._events.emit(TurnStarted, turn_id=turn_id, prompt=prompt)
        if self._start_hook is not None:
            try:
                blocked = await self._session_start(turn_id)
            except asyncio.CancelledError:
                return self._complete(turn_id, "interrupted", "", 0, Usage.zero())
            if blocked is not None:
                return self._complete(turn_id, "error", "", 0, Usage.zero(), error=blocked)
        self._history.append(Message.user(prompt, images=images))
        turn_model = (model or self._model, model_name or self._model_name)
        if self._context is not None:
            with span("seepient.context.assemble") as traced:
                self._system = self._context.start_turn(prompt)
                traced.set("seepient.context.system_chars", len(self._system))
        usage = Usage.zero()
        text = ""
        step = 0
        continuations = 0
        spent = 0
        deadline = self._deadline()
        try:
            while step < self._max_steps:
                over = self._over_budget(spent, deadline)
                if over is not None:
                    return self._out_of_budget(turn_id, over, text, step, usage)
                step += 1
                try:
                    completion, tokens = await self._stream_step(turn_id, turn_model, read_only, deadline)
                except _OutOfTime:
                    return self._out_of_budget(turn_id, self._over_time(), text, step, usage)
                usage = usage + completion.usage
                spent += tokens
                message = completion.message
                self._history.append(message)
                text = message.content
                if completion.finish_reason == "length":
                    await self._cut_off(turn_id, message, read_only)
                    continue
                if not message.tool_calls:
                    if self._stop_hook is not None and continuations < MAX_STOP_CONTINUATIONS:
                        reason = await self._stop_hook(
                            turn_id=turn_id, reason="final", text=text, active=continuations > 0
                        )
                        if reason:
                            continuations += 1
                            self._history.append(Message.user(f"A stop hook asks you to go on: {reason}"))
                            continue
                    return self._complete(turn_id, "final", text, step, usage)
                await self._run_calls(message.tool_calls, turn_id, read_only)
            return self._complete(turn_id, "step_limit", text, step, usage)
        except asyncio.CancelledError:
            self._close_open_calls()
            return self._complete(turn_id, "interrupted", text, step, usage)
        except ModelError as exc:
            self._events.emit(ErrorEvent, turn_id=turn_id, code="model_error", message=str(exc))
            return self._complete(turn_id, "error", text, step, usage, error=str(exc))

    def _offered(self, read_only: bool) -> tuple[ToolSpec, ...]:
        specs = self._registry.specs()
        if not read_only:
            return tuple(specs)
        return tuple(s for s in specs if _is_read_only(self._registry, s.name))

    def _deadline(self) -> float | None:
        if self._budget.wall_time_s is None:
            return None
        return asyncio.get_running_loop().time() + self._budget.wall_time_s

    def _over_budget(self, spent: int, deadline: float | None) -> str | None:
        """Why the turn may not make another model request, or None."""
        if deadline is not None and asyncio.get_running_loop().time() >= deadline:
            return self._over_time()
        if self._budget.tokens is not None and spent >= self._budget.tokens:
            return (
                f"the turn used about {spent:,} tokens, its budget is {self._budget.tokens:,} "
                "(runtime.turnTokenBudget); the model may be looping"
            )
        return None

    def _over_time(self) -> str:
        return (
            f"the turn ran for its whole wall-time budget of {self._budget.wall_time_s:g} s "
            "(runtime.turnTimeoutMs); the model may be looping or the server stalled"
        )

    def _out_of_budget(self, turn_id: str, why: str, text: str, steps: int, usage: Usage) -> TurnOutcome:
        self._close_open_calls()
        self._events.emit(ErrorEvent, turn_id=turn_id, code="turn_budget", message=f"turn stopped: {why}")
        return self._complete(turn_id, "budget", text, steps, usage, error=why)

    async def _cut_off(self, turn_id: str, message: Message, read_only: bool) -> None:
        """An answer that hit the output limit: the user is told, its complete calls run (a cut call's
        arguments fail to parse and it is reported as such), and the model is told to go on."""
        self._events.emit(
            ErrorEvent,
            turn_id=turn_id,
            code="output_limit",
            message="the model's answer was cut off at its output limit (models.maxOutputTokens); "
            "it was told so and goes on",
        )
        if message.tool_calls:
            await self._run_calls(message.tool_calls, turn_id, read_only)
        self._history.append(Message.user(CUT_OFF_NOTE))

    async def _stream_step(
        self, turn_id: str, turn_model: tuple[Model, str], read_only: bool, deadline: float | None
    ) -> tuple[Completion, int]:
        """One model request: its completion and the tokens it cost (reported, else estimated)."""
        model, model_name = turn_model
        tools = self._offered(read_only)
        if self._context is not None:
            with span("seepient.context.fit"):
                await self._fit_history(turn_id, tools)
        system = f"{self._system}\n\n{self._start_context}" if self._start_context else self._system
        system = f"{system}\n\n{PLAN_MODE_NOTE}" if read_only else system
        request = ModelRequest(
            model=model_name,
            messages=(Message.system(system), *self._history),
            tools=tools,
        )
        completion: Completion | None = None
        try:
            async with asyncio.timeout_at(deadline):
                async for event in model.stream(request):
                    if isinstance(event, TextChunk):
                        self._events.emit(TextDelta, turn_id=turn_id, text=event.text)
                    elif isinstance(event, ReasoningChunk):
                        self._events.emit(ReasoningDelta, turn_id=turn_id, text=event.text)
                    elif isinstance(event, ToolCallChunk):
                        if event.name:  # a call's first fragment names its tool
                            self._pipeline.anticipate(event.name)
                    elif isinstance(event, Completion):
                        completion = event
        except TimeoutError:
            if deadline is not None and asyncio.get_running_loop().time() >= deadline:
                raise _OutOfTime from None
            raise
        if completion is None:
            raise ModelError("the model stream ended without a completion", retryable=True)
        if self._context is not None:
            self._context.observe(request, completion.usage)
        tokens = completion.usage.total_tokens
        if tokens is None:
            tokens = self._estimator.request(system, self._history, tools) + self._estimator.message(
                completion.message
            )
        return completion, tokens

    async def _fit_history(self, turn_id: str, tools: tuple[ToolSpec, ...]) -> None:
        """Compact the history in place when the next request would come near the model's window."""
        assert self._context is not None
        result = await self._context.fit(self._system, self._history, tools)
        if result is not None:
            self._history[:] = result.messages
            self._events.emit(CompactionEvent, turn_id=turn_id, **result.event_fields())

    async def _run_calls(self, calls: Sequence[ToolCall], turn_id: str, read_only: bool = False) -> None:
        for call in calls:
            self._events.emit(ToolCallEvent, turn_id=turn_id, call=call)
        limit = asyncio.Semaphore(self._max_parallel)

        async def bounded(call: ToolCall) -> Message:
            async with limit:
                return await self._run_call(call, turn_id, read_only)

        for batch in _batches(calls, self._registry):
            results = await asyncio.gather(*(bounded(c) for c in batch))
            self._history.extend(results)

    async def _session_start(self, turn_id: str) -> str | None:
        """Run the ``sessionStart`` hooks once, before the first model request; a block fails this turn (and
        they run again at the next one)."""
        assert self._start_hook is not None
        result = await self._start_hook()
        if result.blocked is not None:
            message = f"a sessionStart hook blocked the session: {result.blocked}"
            self._events.emit(ErrorEvent, turn_id=turn_id, code="hook_blocked", message=message)
            return message
        self._start_hook = None
        if result.context:
            self._start_context = f"Context from the user's sessionStart hooks:\n{result.context}"
        return None

    async def _run_call(self, call: ToolCall, turn_id: str, read_only: bool) -> Message:
        # A model may name a tool it was not offered; in plan mode such a call must not reach the pipeline,
        # where an approval could still let a write through before the plan is approved.
        if read_only and not _is_read_only(self._registry, call.name):
            text = (
                f"Plan mode: {call.name!r} is not available until the plan is approved; only read-only tools "
                "run now. Finish with the plan as your answer."
            )
            self._events.emit(
                ToolResult, turn_id=turn_id, call_id=call.id, tool=call.name, status="denied", output=text
            )
            return Message.tool_result(call, text, is_error=True)
        return (await self._pipeline.run(call, turn_id)).message

    def _close_open_calls(self) -> None:
        """After an interrupt, answer every tool call that has no result yet, so the history stays valid
        for the next turn (providers reject an assistant tool call without its result)."""
        answered = {m.tool_call_id for m in self._history if m.role == "tool"}
        for message in reversed(self._history):
            if message.role == "assistant":
                for call in message.tool_calls:
                    if call.id not in answered:
                        self._history.append(
                            Message.tool_result(
                                call, "Interrupted by the user before this ran.", is_error=True
                            )
                        )
                break

    def _complete(
        self, turn_id: str, reason: str, text: str, steps: int, usage: Usage, error: str | None = None
    ) -> TurnOutcome:
        self._events.emit(TurnCompleted, turn_id=turn_id, reason=reason, text=text, usage=usage, steps=steps)
        return TurnOutcome(turn_id=turn_id, reason=reason, text=text, steps=steps, usage=usage, error=error)
