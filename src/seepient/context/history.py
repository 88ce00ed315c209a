"""History compaction: keeping a conversation inside the model's window without breaking it.

Near ``compactAt`` of the window, old tool outputs are pruned first (their messages stay, so every tool
call keeps its result); if that is not enough, older messages are replaced by one summary written by a
model. Never dropped: the system prompt (it is not part of the history), the latest turns (their user
request always stays word for word) and any tool call without a result. The history is only ever cut
where no tool call is waiting for its result, so call/result pairing stays valid for every provider.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from seepient.context.tokens import MESSAGE_OVERHEAD_TOKENS, TokenEstimator
from seepient.models.base import Model, ModelError
from seepient.protocol import Completion, Message, ModelRequest, TextChunk, ToolSpec
from seepient.protocol.errors import ExecutionError
from seepient.protocol.events import CompactionEvent
from seepient.protocol.fields import same_named

SUMMARY_HEADER = (
    "[Summary of the earlier conversation. It replaced older messages when the history was compacted to "
    "fit the model's context window.]"
)
PRUNED_MARK = "[Output pruned to save context"

Summariser = Callable[[Sequence[Message]], Awaitable[str]]
"""Turns the messages being compacted away into a summary text."""

SUMMARY_INSTRUCTIONS = """You write the memory of a coding agent whose conversation no longer fits its context window.
Summarise the transcript you are given so the agent can continue the work without it. Keep, concisely:
- what the user asked for, in their words where it matters, and every constraint or preference they stated;
- decisions made and why; what was tried and failed;
- files read, created or changed (with paths) and what changed in them; commands run and their outcome;
- the current state of the work and what remains to do next.
Write plain text, no preamble, at most about {max_words} words. Do not invent anything."""


class CompactionInvariantError(ExecutionError, RuntimeError):
    """A compacted history that would break tool-call pairing: a bug, never the user's fault."""


@dataclass(frozen=True)
class CompactionPolicy:
    """When and how far to compact. ``trigger_tokens`` is where compaction starts; it aims for
    ``target_tokens`` so it does not run again at the very next call."""

    window_tokens: int
    compact_at: float = 0.8
    keep_recent_turns: int = 2
    keep_recent_tool_steps: int = 3
    target_ratio: float = 0.6
    summary_max_tokens: int = 2_000
    prune_min_tokens: int = 100
    transcript_max_tokens: int = 60_000

    @property
    def trigger_tokens(self) -> int:
        return int(self.window_tokens * self.compact_at)

    @property
    def target_tokens(self) -> int:
        return int(self.trigger_tokens * self.target_ratio)


@dataclass(frozen=True)
class CompactionResult:
    messages: list[Message]
    reason: Literal["threshold", "forced"]
    tokens_before: int
    tokens_after: int
    window_tokens: int
    pruned_tool_outputs: int = 0
    summarised_messages: int = 0
    summary_model: str | None = None
    summary_error: str | None = None
    summary: str | None = field(default=None, repr=False)

    def event_fields(self) -> dict[str, Any]:
        """The fields of a ``CompactionEvent`` (everything but the new messages), in the event's order."""
        return same_named(self, (name for name in CompactionEvent.model_fields if name in _RESULT_FIELDS))


_RESULT_FIELDS = frozenset(result_field.name for result_field in fields(CompactionResult))


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.content.startswith(SUMMARY_HEADER)


def pairing_problems(messages: Sequence[Message], *, allow_pending_tail: bool = True) -> list[str]:
    """What would make a provider reject ``messages``: a tool result without its call right before it, or a
    tool call whose result does not follow before the next user or assistant message. A call still waiting
    at the very end is allowed when ``allow_pending_tail``."""
    problems: list[str] = []
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in pending:
                problems.append(
                    f"message {index}: a result for tool call {message.tool_call_id!r}, which is not waiting"
                )
            pending.discard(message.tool_call_id or "")
            continue
        if pending:
            problems.append(f"message {index}: tool call(s) {sorted(pending)} have no result before it")
            pending = set()
        if message.role == "assistant":
            pending = {call.id for call in message.tool_calls}
    if pending and not allow_pending_tail:
        problems.append(f"the history ends with tool call(s) {sorted(pending)} unanswered")
    return problems


def _valid_cuts(messages: Sequence[Message]) -> list[int]:
    """Indices ``c`` where ``messages[:c]`` can be replaced: nothing before ``c`` waits for a result, and
    ``messages[c]`` starts a user message or an assistant step."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        if index > 0 and not open_calls and message.role in ("user", "assistant"):
            cuts.append(index)
        if message.role == "assistant":
            open_calls |= {call.id for call in message.tool_calls}
        elif message.role == "tool":
            open_calls.discard(message.tool_call_id or "")
    return cuts


def _turn_starts(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "user" and not is_summary(m)]


def _recent_steps_start(messages: Sequence[Message], steps: int) -> int:
    """Where the last ``steps`` tool-calling assistant messages begin (their results are kept whole)."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            seen += 1
            if seen >= steps:
                return index
    return 0


def _pruned(message: Message, estimator: TokenEstimator) -> Message:
    tool = message.name or "the tool"
    text = (
        f"{PRUNED_MARK}: {len(message.content):,} characters of output from {tool} (about "
        f"{estimator.text(message.content):,} tokens). Run the tool again if you need it.]"
    )
    return message.model_copy(update={"content": text})


async def compact_history(
    system: str,
    history: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    policy: CompactionPolicy,
    estimator: TokenEstimator,
    summarise: Summariser | None,
    summary_model: str | None = None,
    force: bool = False,
) -> CompactionResult | None:
    """The compacted history, or None when it fits (``force`` compacts anyway, for ``/compact``).

    Stages, each only when the one before left the request too big: prune old tool outputs; summarise
    older messages; as a last resort cut the middle out of the newest tool outputs, when they alone
    would overflow the window (a provider would refuse the request otherwise).
    """
    fixed = estimator.text(system) + MESSAGE_OVERHEAD_TOKENS + estimator.tools(tools)
    before = fixed + estimator.messages(history)
    if not force and before <= policy.trigger_tokens:
        return None
    reason: Literal["threshold", "forced"] = "forced" if force else "threshold"
    messages = list(history)
    total, pruned = _prune_old_outputs(messages, before, policy, estimator)
    done = not force and total <= policy.trigger_tokens
    cut = (
        None
        if done
        else _choose_cut(
            messages, policy, estimator, budget=policy.target_tokens - fixed - policy.summary_max_tokens
        )
    )
    summary: str | None = None
    error: str | None = None
    replaced: list[Message] = []
    if cut is not None:
        starts = _turn_starts(messages)
        latest = starts[-1] if starts else None
        keep_prompt = latest is not None and latest < cut
        replaced = [m for i, m in enumerate(messages[:cut]) if not (keep_prompt and i == latest)]
        summary, error = await _summarise(replaced, summarise)
        summary_message = Message.user(f"{SUMMARY_HEADER}\n{summary}")
        head = (
            [messages[latest], summary_message] if keep_prompt and latest is not None else [summary_message]
        )
        messages = head + messages[cut:]
        total = fixed + estimator.messages(messages)
    hard_limit = int(policy.window_tokens * 0.95)
    if total > hard_limit:
        total, shrunk = _shrink_newest_outputs(messages, total, hard_limit, estimator)
        pruned += shrunk
    if not pruned and cut is None:
        return None
    problems = pairing_problems(messages)
    if problems:
        raise CompactionInvariantError("compaction would break the history: " + "; ".join(problems))
    return CompactionResult(
        messages,
        reason,
        before,
        total,
        policy.window_tokens,
        pruned_tool_outputs=pruned,
        summarised_messages=len(replaced),
        summary_model=summary_model if cut is not None and error is None else None,
        summary_error=error,
        summary=summary,
    )


def _prune_old_outputs(
    messages: list[Message], total: int, policy: CompactionPolicy, estimator: TokenEstimator
) -> tuple[int, int]:
    """Replace old tool outputs (oldest first, outside the last few steps) by a short note, in place."""
    pruned = 0
    protected = _recent_steps_start(messages, policy.keep_recent_tool_steps)
    for index in range(protected):
        if total <= policy.target_tokens:
            break
        message = messages[index]
        if message.role != "tool" or message.content.startswith(PRUNED_MARK):
            continue
        cost = estimator.message(message)
        if cost < policy.prune_min_tokens:
            continue
        replacement = _pruned(message, estimator)
        messages[index] = replacement
        total -= cost - estimator.message(replacement)
        pruned += 1
    return total, pruned


async def _summarise(replaced: Sequence[Message], summarise: Summariser | None) -> tuple[str, str | None]:
    """The summary text and, when no model summary could be had, why (a plain digest stands in)."""
    error = None
    summary = ""
    if summarise is None:
        error = "no model is available to write a summary"
    else:
        try:
            summary = (await summarise(replaced)).strip()
            if not summary:
                error = "the summary model returned no text"
        except ModelError as exc:
            error = f"the summary call failed: {exc}"
    if error is not None:
        summary = plain_digest(replaced)
    return summary, error


def _shrink_newest_outputs(
    messages: list[Message], total: int, limit: int, estimator: TokenEstimator
) -> tuple[int, int]:
    """Cut the middle out of the largest tool outputs until the request fits ``limit``, in place."""
    shrunk = 0
    order = sorted(
        (i for i, m in enumerate(messages) if m.role == "tool"),
        key=lambda i: estimator.message(messages[i]),
        reverse=True,
    )
    for index in order:
        if total <= limit:
            break
        message = messages[index]
        cost = estimator.message(message)
        # The notice and rounding cost a little: aim a few tokens lower than the exact excess.
        keep_tokens = max(200, cost - (total - limit) - 64)
        keep_chars = int(len(message.content) * keep_tokens / max(cost, 1))
        if keep_chars >= len(message.content):
            continue
        half = keep_chars // 2
        cut = len(message.content) - 2 * half
        text = (
            message.content[:half]
            + f"\n[… {cut:,} characters cut from the middle of this output to fit the context window …]\n"
            + message.content[len(message.content) - half :]
        )
        replacement = message.model_copy(update={"content": text})
        messages[index] = replacement
        total -= cost - estimator.message(replacement)
        shrunk += 1
    return total, shrunk


def _choose_cut(
    messages: Sequence[Message], policy: CompactionPolicy, estimator: TokenEstimator, *, budget: int
) -> int | None:
    """Where to cut: at the start of the last ``keep_recent_turns`` turns when what follows fits ``budget``;
    later (inside those turns, never past the last complete step) when it does not. None when nothing
    before the cut could be summarised."""
    cuts = _valid_cuts(messages)
    starts = _turn_starts(messages)
    latest = starts[-1] if starts else None

    def summarisable(cut: int) -> bool:
        # Something other than the latest request itself (kept word for word) must be replaced.
        return cut >= 2 or (cut == 1 and latest != 0)

    cuts = [c for c in cuts if summarisable(c) and not (latest is not None and c == latest + 1)]
    if not cuts:
        return None
    keep = min(policy.keep_recent_turns, len(starts)) if starts else 0
    preferred = starts[-keep] if keep else 0
    suffix = [0] * (len(messages) + 1)
    for index in range(len(messages) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + estimator.message(messages[index])
    prompt_cost = estimator.message(messages[latest]) if latest is not None else 0

    def tail_cost(cut: int) -> int:
        return suffix[cut] + (prompt_cost if latest is not None and latest < cut else 0)

    at_or_before = [c for c in cuts if c <= preferred]
    if at_or_before and tail_cost(at_or_before[-1]) <= budget:
        return at_or_before[-1]
    later = [c for c in cuts if c > preferred]
    for cut in later:
        if tail_cost(cut) <= budget:
            return cut
    return cuts[-1]


def plain_digest(messages: Sequence[Message], *, limit: int = 300) -> str:
    """A summary written without a model: the user's requests, the assistant's words, the tools used."""
    requests: list[str] = []
    said: list[str] = []
    tools: Counter[str] = Counter()
    for message in messages:
        text = " ".join(message.content.split())
        if message.role == "user":
            if is_summary(message):
                requests.append(
                    "(an earlier summary) " + _clip(text[len(SUMMARY_HEADER) :].strip(), limit * 3)
                )
            elif text:
                requests.append(_clip(text, limit))
        elif message.role == "assistant":
            if text:
                said.append(_clip(text, limit))
            tools.update(call.name for call in message.tool_calls)
    parts = ["No model summary was available; this digest lists what the older messages held."]
    if requests:
        parts.append("The user asked:\n" + "\n".join(f"- {r}" for r in requests))
    if said:
        parts.append("The assistant said:\n" + "\n".join(f"- {s}" for s in said[-10:]))
    if tools:
        parts.append("Tools used: " + ", ".join(f"{name} ×{count}" for name, count in sorted(tools.items())))
    return "\n".join(parts)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_transcript(messages: Sequence[Message], *, max_chars: int) -> str:
    """The messages as plain text for the summary model, each capped; when the whole is still too long, its
    middle is left out (the start says what was asked, the end where the work stands)."""
    blocks: list[str] = []
    for message in messages:
        if message.role == "user":
            label = "EARLIER SUMMARY" if is_summary(message) else "USER"
            images = len(getattr(message, "images", ()))
            extra = f" [{images} image(s) attached]" if images else ""
            blocks.append(f"{label}:{extra}\n{_clip(message.content, 8_000)}")
        elif message.role == "assistant":
            if message.content:
                blocks.append(f"ASSISTANT:\n{_clip(message.content, 8_000)}")
            for call in message.tool_calls:
                arguments = call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False, default=str)
                blocks.append(f"ASSISTANT CALLED {call.name} {_clip(arguments, 1_500)}")
        elif message.role == "tool":
            status = " (error)" if message.is_error else ""
            blocks.append(f"RESULT OF {message.name or 'tool'}{status}:\n{_clip(message.content, 2_000)}")
        elif message.role == "system":
            blocks.append(f"SYSTEM NOTE:\n{_clip(message.content, 2_000)}")
    text = "\n\n".join(blocks)
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + "\n\n[… the middle of the transcript is left out …]\n\n" + text[-half:]


def model_summariser(model: Model, model_name: str, *, max_tokens: int, transcript_chars: int) -> Summariser:
    """A ``Summariser`` that asks ``model`` (the efficient tier, when routing provides one) for the summary."""

    async def summarise(messages: Sequence[Message]) -> str:
        instructions = SUMMARY_INSTRUCTIONS.format(max_words=max(100, int(max_tokens * 0.7)))
        request = ModelRequest(
            model=model_name,
            messages=(
                Message.system(instructions),
                Message.user(
                    "Summarise this transcript:\n\n" + render_transcript(messages, max_chars=transcript_chars)
                ),
            ),
            max_output_tokens=max_tokens,
        )
        pieces: list[str] = []
        completion: Completion | None = None
        async for event in model.stream(request):
            if isinstance(event, TextChunk):
                pieces.append(event.text)
            elif isinstance(event, Completion):
                completion = event
        if completion is not None and completion.message.content:
            return completion.message.content
        return "".join(pieces)

    return summarise
