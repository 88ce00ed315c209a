"""What the in-process ``Agent`` and the remote ``Client`` share: the ``Reply`` of a turn and approval callbacks."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    RuntimeEvent,
    ToolResult,
    Usage,
)

ApprovalAnswer = ApprovalResponse | ApprovalDecision | bool
"""What an approval callback returns: ``True`` approves once, ``False`` rejects, or a decision or full response."""

ApprovalCallback = Callable[[ApprovalRequest], ApprovalAnswer | Awaitable[ApprovalAnswer]]


@dataclass(frozen=True)
class Reply:
    """One finished turn: the model's final ``text``, why it ended (``final``, ``step_limit``, ``budget``,
    ``interrupted``, ``error``), and every event the turn produced."""

    turn_id: str
    text: str
    reason: str
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    events: tuple[RuntimeEvent, ...] = ()

    @property
    def tool_results(self) -> list[ToolResult]:
        return [e for e in self.events if isinstance(e, ToolResult)]


async def ask_callback(callback: ApprovalCallback, request: ApprovalRequest) -> ApprovalResponse:
    """Call ``callback`` (sync or async) and turn its answer into a response bound to the request's digest."""
    answer = callback(request)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, ApprovalResponse):
        return answer
    if isinstance(answer, bool):
        decision = ApprovalDecision.APPROVE_ONCE if answer else ApprovalDecision.REJECT
    elif isinstance(answer, ApprovalDecision):
        decision = answer
    else:
        raise TypeError(
            f"an approval callback returns True, False, an ApprovalDecision or an ApprovalResponse, "
            f"not {type(answer).__name__}"
        )
    return ApprovalResponse(decision=decision, digest=request.digest, approved_by="sdk:callback")
