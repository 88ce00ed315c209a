"""Sub-agents: the launcher behind the ``agent`` tool, which opens a child ``Session`` whose permissions are its
parent's or stricter, runs the task as the child's one turn, and reports the answer and the actions back.

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
- model: the parent's router, so a child uses the same routes; a replay script is shared, the child playing
  the turns that follow the parent's ``agent`` call until its final answer (then the parent resumes).
- audit: the parent's log; each record of the child carries ``parent_session_id``.
- events: relayed to the parent's surfaces as ``subagent_event`` wrapping the child's own event, except
  ``permission_request`` and ``permission_resolved``, relayed as themselves with the request labelled, so a
  surface that answers approvals from its event stream answers a sub-agent's the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seepient.approval import Approver
from seepient.audit.log import AuditEntry, AuditLog
from seepient.audit.record import SessionRecord
from seepient.config import SeepientPaths, Settings, SettingsError
from seepient.config.settings import PermissionSources, normalise_mode
from seepient.policy.delegation import (
    MODE_ORDER,
    WORKTREES_RELATIVE,
    child_rule_sources,
    is_worktree,
    looser_mode,
    worktree_name_problem,
    worktree_path,
)
from seepient.protocol import (
    AgentTask,
    ApprovalRequest,
    ApprovalResponse,
    PermissionRequest,
    PermissionResolved,
    RuntimeEvent,
    SubagentEvent,
    ToolResult,
    new_id,
)
from seepient.tools.builtin.agent import AgentTool, SubagentAction, SubagentRefused, SubagentReport

if TYPE_CHECKING:
    from collections.abc import Mapping

    from seepient.runtime.session import Session, SessionOptions

__all__ = ["ChildAuditLog", "SubagentLauncher", "SubagentSpec", "bind_subagents"]

_LINE_CHARS = 160


@dataclass(frozen=True)
class SubagentSpec:
    """What a child session takes from its parent instead of loading or building it itself."""

    parent_session_id: str
    depth: int
    settings: Settings
    sources: PermissionSources
    tools: tuple[str, ...]
    approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def audit_log(self, path: Path, principal: str | None, **log_options: Any) -> AuditLog:
        return ChildAuditLog(
            path, principal=principal, parent_session_id=self.parent_session_id, **log_options
        )


class ChildAuditLog(AuditLog):
    """The parent's audit log as a sub-agent writes to it: every record names the parent session."""

    def __init__(
        self, path: Path, *, principal: str | None, parent_session_id: str, **log_options: Any
    ) -> None:
        super().__init__(path, principal=principal, **log_options)
        self.parent_session_id = parent_session_id

    def append(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        if isinstance(record, SessionRecord):
            if record.parent_session_id is None:
                record = record.model_copy(update={"parent_session_id": self.parent_session_id})
        elif record.get("parent_session_id") is None:
            record = {**record, "parent_session_id": self.parent_session_id}
        return super().append(record)


class _LabelledApprover:
    """The parent's approver, told which sub-agent asks; one question at a time across the session tree."""

    def __init__(self, inner: Approver, label: str, lock: asyncio.Lock) -> None:
        # A grandchild's approver wraps its parent's wrapper: ask the person's own approver directly, under the
        # tree's one lock, with the label of the sub-agent that actually asks.
        self._inner = inner._inner if isinstance(inner, _LabelledApprover) else inner
        self._label = label
        self._lock = lock

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        labelled = request if request.agent else request.model_copy(update={"agent": self._label})
        async with self._lock:
            return await self._inner.decide(labelled)


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= _LINE_CHARS else first[: _LINE_CHARS - 1] + "…"


class SubagentLauncher:
    """Starts sub-agents for one session (the ``SubagentLauncher`` the ``agent`` tool is bound to)."""

    def __init__(self, parent: Session, options: SessionOptions, paths: SeepientPaths, *, depth: int) -> None:
        self._parent = parent
        self._options = options
        self._paths = paths
        self.depth = depth
        limits = parent.settings.subagents
        self.max_depth = limits.max_depth
        self._slots = asyncio.Semaphore(limits.max_concurrent)
        spec = options.subagent
        self._approval_lock = spec.approval_lock if spec is not None else asyncio.Lock()
        self._sources = spec.sources if spec is not None else parent.settings.permissions.rule_sources

    # -- checking a request ---------------------------------------------------------------------------

    def prepare_task(
        self, task: str, *, tools: Sequence[str] | None, mode: str | None, worktree: str | None
    ) -> AgentTask:
        parent = self._parent
        depth = self.depth + 1
        if depth > self.max_depth:
            raise SubagentRefused(
                f"sub-agents may nest at most {self.max_depth} deep (subagents.maxDepth) and this session is at "
                f"depth {self.depth}; do the task yourself"
            )
        available = parent.registry.names()
        if depth >= self.max_depth and AgentTool.name in available:
            available.remove(AgentTool.name)
        chosen = list(dict.fromkeys(tools)) if tools is not None else available
        lacking = [name for name in chosen if name not in available]
        if lacking:
            why = (
                f"{AgentTool.name!r} cannot be given at depth {depth}: sub-agents nest at most {self.max_depth} deep"
                if lacking == [AgentTool.name] and AgentTool.name in parent.registry.names()
                else f"this session has no tool {', '.join(repr(n) for n in lacking)} to give"
            )
            raise SubagentRefused(
                f"{why}; a sub-agent gets only tools its parent has: {', '.join(available) or 'none'}"
            )
        child_mode = self._mode(mode)
        workspace = parent.workspace
        if worktree is not None:
            problem = worktree_name_problem(worktree)
            if problem is not None:
                raise SubagentRefused(problem)
            if not is_worktree(parent.workspace, worktree):
                raise SubagentRefused(
                    f"{WORKTREES_RELATIVE}/{worktree} is not a worktree of this workspace; create it first with "
                    "worktree_create, or see worktree_list"
                )
            workspace = Path(worktree_path(parent.workspace, worktree))
        return AgentTask(
            task=task,
            tools=tuple(chosen),
            mode=child_mode,
            workspace=str(workspace),
            worktree=worktree,
            depth=depth,
            parent_session_id=parent.id,
        )

    def _mode(self, requested: str | None) -> str:
        parent_mode = self._parent.mode
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

    async def _run_child(self, task: AgentTask, call_id: str) -> SubagentReport:
        from seepient.runtime.session import Session, SessionOptions

        parent, options = self._parent, self._options
        child_id = new_id("ses")
        label = f"sub-agent {child_id} (depth {task.depth}) of {parent.id}: {_one_line(task.task)}"
        approver = (
            _LabelledApprover(options.approver, label, self._approval_lock)
            if options.approver is not None
            else None
        )
        spec = SubagentSpec(
            parent_session_id=parent.id,
            depth=task.depth,
            # A child starts no MCP server of its own: it is handed the parent's running ones' tools below,
            # so no server starts without the consent the parent's session asked for.
            settings=parent.settings.model_copy(update={"mcp_servers": {}}),
            sources=child_rule_sources(self._sources, parent.workspace, Path(task.workspace)),
            tools=task.tools,
            approval_lock=self._approval_lock,
        )
        child = Session.open(
            SessionOptions(
                workspace=Path(task.workspace),
                model=options.model,
                mode=task.mode,
                base_url=options.base_url,
                sandbox=parent.sandbox,  # type: ignore[arg-type]
                auto_approve=options.auto_approve,
                approver=approver,
                surface=options.surface,
                max_steps=options.max_steps,
                paths=self._paths,
                environ=options.environ,
                principal=options.principal,
                session_id=child_id,
                router=parent._router,
                subagent=spec,
                hooks=list(options.hooks),
            )
        )
        # Tools a child is given that it does not build itself (the parent's MCP tools, tools registered through
        # the SDK) are the parent's own instances.
        for name in task.tools:
            tool = parent.registry.get(name)
            if child.registry.get(name) is None and tool is not None:
                child.registry.register(tool)
        actions: list[SubagentAction] = []

        def relay(event: RuntimeEvent) -> None:
            # Questions for a person travel as themselves, labelled: every surface that answers approvals by
            # their events (the server, the remote SDK) then answers a sub-agent's too, by the same request id.
            if isinstance(event, PermissionRequest):
                request = (
                    event.request
                    if event.request.agent
                    else event.request.model_copy(update={"agent": label})
                )
                parent._events.emit(PermissionRequest, turn_id=event.turn_id, request=request)
                return
            if isinstance(event, PermissionResolved):
                parent._events.emit(
                    PermissionResolved,
                    turn_id=event.turn_id,
                    request_id=event.request_id,
                    response=event.response,
                )
                return
            if isinstance(event, ToolResult):
                actions.append(SubagentAction(event.tool, event.status, _one_line(event.output)))
            parent._events.emit(
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


def bind_subagents(
    session: Session, options: SessionOptions, paths: SeepientPaths
) -> SubagentLauncher | None:
    """Give the session's ``agent`` tool its launcher; the tool is disabled where no child could start (the
    depth limit is reached), so it is not offered at all."""
    if options.subagent is not None:
        session.registry.restrict(options.subagent.tools)
    tool = session.registry.get(AgentTool.name)
    if not isinstance(tool, AgentTool):
        return None
    depth = options.subagent.depth if options.subagent is not None else 0
    launcher = SubagentLauncher(session, options, paths, depth=depth)
    if depth >= launcher.max_depth:
        session.registry.disable(AgentTool.name)
        return None
    tool.bind(launcher)
    return launcher
