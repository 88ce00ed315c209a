"""Runtime events streamed to every surface, each with a per-session sequence number.

A client that reconnects asks for the events after the last ``seq`` it saw.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from seepient.protocol.approval import ApprovalRequest, ApprovalResponse
from seepient.protocol.frozen import deferred_config
from seepient.protocol.messages import ToolCall, Usage


class _Event(BaseModel):
    model_config = deferred_config(frozen=True, extra="forbid")

    session_id: str
    seq: int
    ts: float = Field(default_factory=time.time)


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    turn_id: str
    prompt: str


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    turn_id: str
    text: str


class ReasoningDelta(_Event):
    """A piece of the model's reasoning (Anthropic thinking, a Responses reasoning summary), shown apart from
    its answer; adapters that receive none emit none."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    turn_id: str
    text: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    turn_id: str
    call: ToolCall


class PermissionRequest(_Event):
    type: Literal["permission_request"] = "permission_request"
    turn_id: str
    request: ApprovalRequest


class PermissionResolved(_Event):
    type: Literal["permission_resolved"] = "permission_resolved"
    turn_id: str
    request_id: str
    response: ApprovalResponse


class ToolResult(_Event):
    """``status`` is ``ok``, ``error`` (the tool failed), ``denied`` (policy) or ``rejected`` (a person)."""

    type: Literal["tool_result"] = "tool_result"
    turn_id: str
    call_id: str
    tool: str
    status: Literal["ok", "error", "denied", "rejected"]
    output: str
    action_id: str | None = None
    digest: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    summary: str | None = None
    """The prepared action's one-line summary; None when the call never became an action."""


class TurnCompleted(_Event):
    """``reason``: ``final`` (the model answered), ``step_limit``, ``budget`` (the turn's token or wall-time
    budget ran out), ``interrupted`` or ``error``."""

    type: Literal["turn_completed"] = "turn_completed"
    turn_id: str
    reason: Literal["final", "step_limit", "budget", "interrupted", "error"]
    text: str = ""
    usage: Usage = Usage()
    steps: int = 0


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    turn_id: str | None = None
    code: str
    message: str


class CompactionEvent(_Event):
    """The history was shortened to fit the model's window: old tool outputs pruned, older turns summarised.

    Token counts are estimates; ``summary_error`` is set when the summary call failed and a plain digest of
    the older turns stood in for it.
    """

    type: Literal["compaction"] = "compaction"
    turn_id: str | None = None
    reason: Literal["threshold", "forced"]
    tokens_before: int
    tokens_after: int
    window_tokens: int
    pruned_tool_outputs: int = 0
    summarised_messages: int = 0
    summary_model: str | None = None
    summary_error: str | None = None


class TodoItem(BaseModel):
    """One entry of the todo list the model keeps (``todo_write``)."""

    model_config = deferred_config(frozen=True, extra="forbid")

    id: str
    content: str
    status: Literal["pending", "in_progress", "completed"]


class TodoUpdated(_Event):
    """The model replaced its todo list; ``items`` is the whole new list, in its order."""

    type: Literal["todo_updated"] = "todo_updated"
    turn_id: str | None = None
    items: tuple[TodoItem, ...] = ()


class SubagentEvent(_Event):
    """An event of a sub-agent's session, relayed to its parent's surfaces: ``agent_id`` is the child session,
    ``call_id`` the parent's ``agent`` call that started it, ``event`` the child's own event as JSON (itself a
    ``subagent_event`` when a grandchild spoke)."""

    type: Literal["subagent_event"] = "subagent_event"
    agent_id: str
    call_id: str
    depth: int
    event: dict[str, Any]


RuntimeEvent = Annotated[
    TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolCallEvent
    | PermissionRequest
    | PermissionResolved
    | ToolResult
    | TurnCompleted
    | ErrorEvent
    | CompactionEvent
    | SubagentEvent
    | TodoUpdated,
    Field(discriminator="type"),
]
