"""``agent``: hand a task to a sub-agent, a child session with a subset of this session's tools, its own history
and (optionally) its own worktree, whose permissions are this session's or stricter. The child itself is
started by the runtime through the ``SubagentLauncher`` the session builds this tool with (tools cannot import
the runtime)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from pydantic import Field

from seepient.protocol import AgentTask, ApprovedAction, PreparedActionDraft
from seepient.protocol.errors import RefusalError
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import expect_payload

MAX_TASK_CHARS = 20_000
_SUMMARY_TASK_CHARS = 120


@dataclass(frozen=True)
class SubagentAction:
    """One action the sub-agent attempted, as the parent is told about it."""

    tool: str
    status: str
    line: str


@dataclass(frozen=True)
class SubagentReport:
    """How a sub-agent's run ended: ``reason`` as a turn's (``final``, ``step_limit``, ``interrupted``,
    ``error``), its last text, and every action it attempted in order."""

    agent_id: str
    reason: str
    text: str
    steps: int
    actions: tuple[SubagentAction, ...] = ()
    error: str | None = None


class SubagentRefused(RefusalError, ValueError):
    """A sub-agent that cannot be started as asked; the message says why and what is allowed."""


class SubagentLauncher(Protocol):
    """What the runtime gives the ``agent`` tool: checks a request against this session's limits and
    permissions, and runs an approved task as a child session."""

    def prepare_task(
        self, task: str, *, tools: Sequence[str] | None, mode: str | None, worktree: str | None
    ) -> AgentTask:
        """The task as it would run; raises ``SubagentRefused`` for a tool this session lacks, a looser mode,
        an unknown worktree or the depth limit."""
        ...

    async def run(self, task: AgentTask, *, call_id: str) -> SubagentReport:
        """Run the child to its final answer (waiting for a free slot under the concurrency limit)."""
        ...


class AgentInput(ToolInput):
    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    """Everything the sub-agent needs to know: it sees none of this conversation. Say what to do, where, and
    what to report back."""
    tools: list[str] | None = None
    """Tool names the sub-agent may use, a subset of yours; omit for all of yours. For research give read-only
    tools such as read_file, glob and grep."""
    worktree: str | None = None
    """The name of a worktree made with worktree_create: the sub-agent then works in that isolated checkout
    instead of this workspace."""
    mode: str | None = None
    """Consent mode for the sub-agent: the same as yours (the default) or stricter (always-ask is the
    strictest); never looser."""


def _one_line(text: str, limit: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def format_report(report: SubagentReport) -> str:
    """What the parent model reads: how the child ended, its answer, then one line per action."""
    ended = {
        "final": "finished",
        "step_limit": "stopped at its step limit",
        "budget": "stopped at its turn budget (tokens or wall time)",
        "interrupted": "was interrupted",
        "error": "failed",
    }.get(report.reason, report.reason)
    parts = [f"Sub-agent {report.agent_id} {ended} after {report.steps} step(s)."]
    if report.error:
        parts.append(f"Error: {report.error}")
    parts.append("Answer:\n" + (report.text.strip() or "(no text)"))
    if report.actions:
        lines = [f"- {a.tool} [{a.status}] {a.line}".rstrip() for a in report.actions]
        parts.append(f"Actions ({len(report.actions)}):\n" + "\n".join(lines))
    else:
        parts.append("Actions: none.")
    return "\n\n".join(parts)


class AgentTool(Tool[AgentInput], concurrency_safe=True):
    """Start a sub-agent: a separate agent with its own context that carries out `task` with a subset of your
    tools and returns its final answer plus a list of the actions it took. Use it for self-contained work (a
    search across the code, a change in a worktree) so your own context stays small. Its permissions are yours
    or stricter; its actions are checked and may need approval like yours."""

    name: ClassVar[str] = "agent"
    # Several sub-agents of one step may run together; the launcher bounds how many at once.
    max_result_chars: ClassVar[int] = 40_000

    def __init__(self, launcher: SubagentLauncher | None = None) -> None:
        """``launcher``: the session's, which opens its children; without one (a registry listing tools, a
        session at the depth limit) the tool refuses every call."""
        self._launcher = launcher

    def _launcher_for(self) -> SubagentLauncher:
        if self._launcher is None:
            raise ToolInputError("sub-agents are not available in this session; do the task yourself")
        return self._launcher

    def tools_named(self, args: AgentInput) -> Sequence[str]:
        return tuple(args.tools or ())

    async def prepare(self, args: AgentInput, ctx: ToolContext) -> PreparedActionDraft:
        launcher = self._launcher_for()
        if not args.task.strip():
            raise ToolInputError("task is blank; describe what the sub-agent should do")
        try:
            payload = launcher.prepare_task(
                args.task, tools=args.tools, mode=args.mode, worktree=args.worktree
            )
        except SubagentRefused as exc:
            raise ToolInputError(str(exc)) from None
        where = f" in worktree {payload.worktree}" if payload.worktree else ""
        tools = ", ".join(payload.tools) or "none"
        return ctx.draft(
            self.name,
            payload,
            summary=f"Start a sub-agent{where} ({payload.mode}; tools: {tools}): "
            f"{_one_line(payload.task, _SUMMARY_TASK_CHARS)}",
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        task = expect_payload(action, AgentTask)
        report = await self._launcher_for().run(task, call_id=ctx.call_id)
        return ToolOutput(
            format_report(report),
            is_error=report.reason != "final",
            data={
                "agent_id": report.agent_id,
                "reason": report.reason,
                "actions": [{"tool": a.tool, "status": a.status, "line": a.line} for a in report.actions],
            },
        )
