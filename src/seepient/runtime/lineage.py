"""A session's lineage: a root session (opened by a surface) loads its own settings and state; a child session
(a sub-agent) is handed them by its parent, so it can never end up looser. Assembling a session asks its
lineage instead of asking whether it is a sub-agent."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seepient.approval import Approver
from seepient.audit.log import AuditEntry, AuditLog
from seepient.audit.record import SessionRecord
from seepient.config import SeepientPaths, Settings, load_settings
from seepient.config.settings import PermissionSources
from seepient.context.warnings import ContextWarning
from seepient.protocol import ApprovalRequest, ApprovalResponse
from seepient.runtime.hooks import FunctionHook
from seepient.runtime.interrupted import close_interrupted
from seepient.tools.base import Tool
from seepient.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from collections.abc import Mapping

    from seepient.audit.signing import CheckpointSigner
    from seepient.runtime.options import SessionOptions

__all__ = ["ChildAuditLog", "ChildLineage", "Lineage", "RootLineage"]


@dataclass(frozen=True)
class RootLineage:
    """A session a surface opens: it loads the settings of its workspace, closes what earlier runs left
    interrupted, shows the project's warnings, and may record "always for this project" answers."""

    approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while a person is asked anything on behalf of this session's tree of sub-agents."""

    depth = 0
    parent_session_id = None

    def settings_for(
        self, options: SessionOptions, workspace: Path, paths: SeepientPaths, workspace_rules: Path
    ) -> Settings:
        return load_settings(
            workspace,
            paths=paths,
            config_file=options.config_file,
            overrides=options.settings_overrides,
            project_trust=options.project_trust,
            workspace_rules=workspace_rules,
        )

    def rule_sources(self, settings: Settings) -> PermissionSources:
        return settings.permissions.rule_sources

    def audit_log(
        self, path: Path, *, principal: str | None, signer: CheckpointSigner, witness_path: Path | None
    ) -> AuditLog:
        return AuditLog(path, principal=principal, signer=signer, witness_path=witness_path)

    def begin(
        self, audit: AuditLog, *, session_id: str, workspace: Path, settings: Settings
    ) -> tuple[ContextWarning, ...]:
        """What starting the session does before anything reads the workspace: close the actions earlier runs
        left interrupted (finishing or undoing their commits). Returns what the first prompt warns about: those
        actions, settings keys nothing reads, and what the project's settings tried that did not count."""
        interrupted = close_interrupted(audit, session_id, workspace)
        warnings = [ContextWarning("audit log", line) for line in interrupted.lines]
        if interrupted.problem:
            warnings.append(ContextWarning("audit log", interrupted.problem))
        warnings += [ContextWarning(unknown.file, unknown.message) for unknown in settings.unknown_keys]
        project = settings.project
        if project is not None:
            warnings += [ContextWarning(str(project.path), line) for line in project.warnings(workspace)]
        return tuple(warnings)

    def project_rules(self, workspace_rules: Path) -> Path | None:
        """Where "always for this project" answers go: the user's rules for this workspace."""
        return workspace_rules

    def approver(self, approver: Approver | None) -> Approver | None:
        return approver

    def function_hooks(self, options: SessionOptions) -> list[FunctionHook]:
        # The options' own list: a hook the SDK adds to them before the session opens is the session's.
        return options.hooks

    def adopt_tools(self, registry: ToolRegistry) -> None:
        """A root session offers every tool it built."""


@dataclass(frozen=True)
class ChildLineage:
    """What a sub-agent takes from its parent instead of loading or building it (``runtime/subagent.py``
    says why none of it can make the child looser)."""

    parent_session_id: str
    depth: int
    label: str
    """Who asks, as the person sees it on every approval the child requests."""
    settings: Settings
    """The parent's settings as loaded for the parent's workspace, never a worktree's, and without MCP
    servers: the child is handed the parent's running servers' tools instead."""
    sources: PermissionSources
    """The parent's rules, re-anchored for the child's workspace (``policy.delegation.child_rule_sources``)."""
    tools: tuple[str, ...]
    """The only tools the child offers: a subset of the parent's."""
    shared_tools: tuple[Tool[Any], ...] = ()
    """The parent's instances of given tools the child does not build itself (MCP and SDK-registered tools)."""
    hooks: tuple[FunctionHook, ...] = ()
    """The parent's Python hooks as they were when the child started."""
    approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """The root's lock: asks of the whole tree reach the person one at a time."""

    def settings_for(
        self, options: SessionOptions, workspace: Path, paths: SeepientPaths, workspace_rules: Path
    ) -> Settings:
        return self.settings

    def rule_sources(self, settings: Settings) -> PermissionSources:
        return self.sources

    def audit_log(
        self, path: Path, *, principal: str | None, signer: CheckpointSigner, witness_path: Path | None
    ) -> AuditLog:
        return ChildAuditLog(
            path,
            principal=principal,
            parent_session_id=self.parent_session_id,
            signer=signer,
            witness_path=witness_path,
        )

    def begin(
        self, audit: AuditLog, *, session_id: str, workspace: Path, settings: Settings
    ) -> tuple[ContextWarning, ...]:
        # The root already closed what was interrupted, and warned about the project, when it started.
        return ()

    def project_rules(self, workspace_rules: Path) -> Path | None:
        # "Always for this project" is a decision about the project, not about one delegated task.
        return None

    def approver(self, approver: Approver | None) -> Approver | None:
        return _LabelledApprover(approver, self.label, self.approval_lock) if approver is not None else None

    def function_hooks(self, options: SessionOptions) -> list[FunctionHook]:
        return [*self.hooks, *options.hooks]

    def adopt_tools(self, registry: ToolRegistry) -> None:
        for tool in self.shared_tools:
            if tool.name not in registry:
                registry.register(tool)
        registry.restrict(self.tools)


Lineage = RootLineage | ChildLineage


class ChildAuditLog(AuditLog):
    """The parent's audit log as a sub-agent writes to it: every record names the parent session."""

    def __init__(
        self, path: Path, *, principal: str | None, parent_session_id: str, **log_options: Any
    ) -> None:
        super().__init__(path, principal=principal, **log_options)
        self.parent_session_id = parent_session_id

    def append(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        return super().append(self._stamped(record))

    def append_settling(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        return super().append_settling(self._stamped(record))

    def _stamped(self, record: SessionRecord | Mapping[str, Any]) -> SessionRecord | Mapping[str, Any]:
        if isinstance(record, SessionRecord):
            if record.parent_session_id is None:
                return record.model_copy(update={"parent_session_id": self.parent_session_id})
        elif record.get("parent_session_id") is None:
            return {**record, "parent_session_id": self.parent_session_id}
        return record


class _LabelledApprover:
    """The person's approver, told which sub-agent asks; one question at a time across the session tree."""

    def __init__(self, inner: Approver, label: str, lock: asyncio.Lock) -> None:
        # Wrapping a wrapper would take the tree's one lock twice and never get it: ask the person's own.
        self._inner = inner._inner if isinstance(inner, _LabelledApprover) else inner
        self._label = label
        self._lock = lock

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        labelled = request if request.agent else request.model_copy(update={"agent": self._label})
        async with self._lock:
            return await self._inner.decide(labelled)
