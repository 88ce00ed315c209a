"""Sub-agents: the launcher behind the ``agent`` tool, which checks a request against this session's limits,
opens a child session through the factory the session was assembled with (its lineage, ``runtime/lineage.py``,
is what it takes from this one), runs the task as the child's one turn, and reports the answer and actions back.

What a child takes from its parent, and why it cannot end up looser:

- settings: the parent's, as loaded for the parent's workspace. A child working in a worktree does not read
  that checkout's ``.seepient/settings.json``: a repository's committed settings are no more trusted there
  than anywhere. The parent's deny and ask path rules also apply anchored at the parent's workspace
  (``policy.delegation.child_rule_sources``), so a child cannot read what they protect by climbing out.
- tools: a subset of the parent's enabled tools, never one the parent lacks; ``agent`` only below the depth
  limit (``subagents.maxDepth``, default 2; the session itself is depth 0).
- consent mode: the parent's or stricter, in the order ``policy.delegation.MODE_ORDER``.
- approval: the parent's approver (or ``-y``, or headless refusal), with the request labelled with the
  sub-agent that asks; asks are put to the person one at a time across the whole tree. The parent's session
  grants do not carry over (a grant was given for what the parent was doing, not for a task run elsewhere),
  and "approve always for this project" is not offered to a child.
- hooks: the parent's settings' command hooks (the settings are the parent's) and its Python hooks as they are
  when the child starts.
- model: the parent's router, so a child uses the same routes; a replay script is shared, the child playing
  the turns that follow the parent's ``agent`` call until its final answer (then the parent resumes).
- audit: the parent's log; each record of the child carries ``parent_session_id``.
- events: relayed to the parent's surfaces as ``subagent_event`` wrapping the child's own event, except
  ``permission_request`` and ``permission_resolved``, relayed as themselves with the request labelled, so a
  surface that answers approvals from its event stream answers a sub-agent's the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from seepient.config import Settings, SettingsError
from seepient.config.settings import PermissionSources, normalise_mode
from seepient.config.worktrees import WORKTREES_RELATIVE, is_worktree, worktree_name_problem, worktree_path
from seepient.policy.delegation import child_rule_sources, looser_mode
from seepient.policy.modes import MODE_ORDER
from seepient.protocol import (
    AgentTask,
    PermissionRequest,
    PermissionResolved,
    RuntimeEvent,
    SubagentEvent,
    ToolResult,
    new_id,
)
from seepient.runtime.events import EventListener, EventStream
from seepient.runtime.hooks import HookRunner
from seepient.runtime.lineage import ChildLineage
from seepient.runtime.loop import TurnOutcome
from seepient.tools.builtin.agent import AgentTool, SubagentAction, SubagentRefused, SubagentReport
from seepient.tools.registry import ToolRegistry

__all__ = ["ChildOpener", "ChildSession", "SubagentLauncher"]

_LINE_CHARS = 160


class ChildSession(Protocol):
    """What the launcher needs of the session it opens for a task."""

    def subscribe(self, listener: EventListener) -> None: ...

    async def run(self, prompt: str) -> TurnOutcome: ...

    async def aclose(self) -> None: ...


ChildOpener = Callable[[AgentTask, ChildLineage, str], ChildSession]
"""``(task, lineage, child session id) -> session``: made by the session's assembly from the parent's own options
(model, router, approver, sandbox, paths), so the launcher needs to know nothing about opening a session."""


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= _LINE_CHARS else first[: _LINE_CHARS - 1] + "…"


class SubagentLauncher:
    """Starts sub-agents for one session (the launcher its ``agent`` tool is built with)."""

    def __init__(
        self,
        *,
        session_id: str,
        workspace: Path,
        settings: Settings,
        depth: int,
        sources: PermissionSources,
        approval_lock: asyncio.Lock,
        registry: ToolRegistry,
        hooks: HookRunner,
        events: EventStream,
        mode: Callable[[], str],
        open_child: ChildOpener,
    ) -> None:
        self._session_id = session_id
        self._workspace = workspace
        self._settings = settings
        self.depth = depth
        self._sources = sources
        self._approval_lock = approval_lock
        self._registry = registry
        self._hooks = hooks
        self._events = events
        # Read at each request: a surface may switch the session to a stricter mode while it runs.
        self._mode = mode
        self._open_child = open_child
        self.max_depth = settings.subagents.max_depth
        self._slots = asyncio.Semaphore(settings.subagents.max_concurrent)

    # -- checking a request ---------------------------------------------------------------------------

    def prepare_task(
        self, task: str, *, tools: Sequence[str] | None, mode: str | None, worktree: str | None
    ) -> AgentTask:
        depth = self.depth + 1
        if depth > self.max_depth:
            raise SubagentRefused(
                f"sub-agents may nest at most {self.max_depth} deep (subagents.maxDepth) and this session is at "
                f"depth {self.depth}; do the task yourself"
            )
        offered = self._registry.names()
        available = list(offered)
        if depth >= self.max_depth and AgentTool.name in available:
            available.remove(AgentTool.name)
        chosen = list(dict.fromkeys(tools)) if tools is not None else available
        lacking = [name for name in chosen if name not in available]
        if lacking:
            why = (
                f"{AgentTool.name!r} cannot be given at depth {depth}: sub-agents nest at most {self.max_depth} deep"
                if lacking == [AgentTool.name] and AgentTool.name in offered
                else f"this session has no tool {', '.join(repr(n) for n in lacking)} to give"
            )
            raise SubagentRefused(
                f"{why}; a sub-agent gets only tools its parent has: {', '.join(available) or 'none'}"
            )
        child_mode = self._child_mode(mode)
        workspace = self._workspace
        if worktree is not None:
            problem = worktree_name_problem(worktree)
            if problem is not None:
                raise SubagentRefused(problem)
            if not is_worktree(self._workspace, worktree):
                raise SubagentRefused(
                    f"{WORKTREES_RELATIVE}/{worktree} is not a worktree of this workspace; create it first with "
                    "worktree_create, or see worktree_list"
                )
            workspace = Path(worktree_path(self._workspace, worktree))
        return AgentTask(
            task=task,
            tools=tuple(chosen),
            mode=child_mode,
            workspace=str(workspace),
            worktree=worktree,
            depth=depth,
            parent_session_id=self._session_id,
        )

    def _child_mode(self, requested: str | None) -> str:
        parent_mode = self._mode()
        if requested is None:
            return parent_mode
        try:
            mode = normalise_mode(requested)
        except SettingsError as exc:
            raise SubagentRefused(str(exc)) from None
        if looser_mode(mode, parent_mode):
            stricter = MODE_ORDER[: MODE_ORDER.index(parent_mode) + 1]
            raise SubagentRefused(
                f"a sub-agent may not run in {mode}: it is looser than this session's {parent_mode}; choose one "
                f"of {', '.join(stricter)}"
            )
        return mode

    # -- running an approved task ---------------------------------------------------------------------

    async def run(self, task: AgentTask, *, call_id: str) -> SubagentReport:
        # Re-checked here: the task was approved by digest, and what it names must still be what was approved.
        again = self.prepare_task(task.task, tools=task.tools, mode=task.mode, worktree=task.worktree)
        if again != task:
            raise SubagentRefused(
                "the sub-agent task no longer matches what was approved; nothing was started"
            )
        async with self._slots:
            return await self._run_child(task, call_id)

    def _lineage(self, task: AgentTask, child_id: str) -> ChildLineage:
        # Tools a child is given that it does not build itself (the parent's MCP tools, tools registered through
        # the SDK) are the parent's own instances.
        shared = tuple(tool for name in task.tools if (tool := self._registry.get(name)) is not None)
        return ChildLineage(
            parent_session_id=self._session_id,
            depth=task.depth,
            label=f"sub-agent {child_id} (depth {task.depth}) of {self._session_id}: {_one_line(task.task)}",
            # A child starts no MCP server of its own: it is handed the parent's running ones' tools, so no
            # server starts without the consent the parent's session asked for.
            settings=self._settings.model_copy(update={"mcp_servers": {}}),
            sources=child_rule_sources(self._sources, self._workspace, Path(task.workspace)),
            tools=task.tools,
            shared_tools=shared,
            hooks=tuple(self._hooks.functions),
            approval_lock=self._approval_lock,
        )

    async def _run_child(self, task: AgentTask, call_id: str) -> SubagentReport:
        child_id = new_id("ses")
        lineage = self._lineage(task, child_id)
        child = self._open_child(task, lineage, child_id)
        actions: list[SubagentAction] = []
        events = self._events

        def relay(event: RuntimeEvent) -> None:
            # Questions for a person travel as themselves, labelled: every surface that answers approvals by
            # their events (the server, the remote SDK) then answers a sub-agent's too, by the same request id.
            if isinstance(event, PermissionRequest):
                request = (
                    event.request
                    if event.request.agent
                    else event.request.model_copy(update={"agent": lineage.label})
                )
                events.emit(PermissionRequest, turn_id=event.turn_id, request=request)
                return
            if isinstance(event, PermissionResolved):
                events.emit(
                    PermissionResolved,
                    turn_id=event.turn_id,
                    request_id=event.request_id,
                    response=event.response,
                )
                return
            if isinstance(event, ToolResult):
                actions.append(SubagentAction(event.tool, event.status, _one_line(event.output)))
            events.emit(
                SubagentEvent,
                agent_id=child_id,
                call_id=call_id,
                depth=task.depth,
                event=event.model_dump(mode="json"),
            )

        child.subscribe(relay)
        try:
            outcome = await child.run(task.task)
        finally:
            await child.aclose()
        return SubagentReport(
            agent_id=child_id,
            reason=outcome.reason,
            text=outcome.text,
            steps=outcome.steps,
            actions=tuple(actions),
            error=outcome.error,
        )
