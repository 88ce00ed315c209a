"""The policy engine (lifecycle step 5): one verdict per prepared action, from the check for its payload.

Order, first decisive answer wins: deny rules → the action's own check → ask rules → allow rules →
consent mode. The check denies (path guard, self-protection, dangerous commands) or asks in a way no
rule and no mode may skip (a shell line that could not be analysed, a path known only at run time, a
recursive operation that would reach secrets, Seepient's state or files a deny rule protects, code
fetched from the network and run unseen); what else it finds (network access, destruction inside the
workspace, raised privileges) becomes a reason the consent mode weighs.

Each kind of payload has its check in ``policy/checks/``; each check is handed the engine's ``Decider`` (the
consent mode, the rules, the path guard, the fetch address policy), never the engine. Rules come from every
settings source (see ``rules``); when the managed settings allow only their own allow rules, the consent mode's
asks are named ``managed_only:MODE`` instead of ``mode:MODE``, so no session grant, project grant or classifier
may answer them: only a person, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import assert_never

from seepient.config.settings import PermissionSettings, PermissionSources, SettingsError
from seepient.net.address_policy import AddressPolicy
from seepient.policy.checks.change import check_change, check_change_set
from seepient.policy.checks.decider import Decider
from seepient.policy.checks.delegation import check_agent, check_worktree
from seepient.policy.checks.fetch import check_fetch, refused_host
from seepient.policy.checks.lookups import check_knowledge, check_web_search
from seepient.policy.checks.mcp import check_mcp
from seepient.policy.checks.memory_action import check_memory
from seepient.policy.checks.process import check_process
from seepient.policy.checks.read import check_read
from seepient.policy.checks.shell import check_shell
from seepient.policy.checks.state import check_state
from seepient.policy.modes import MODE_ORDER, resolve_mode
from seepient.policy.paths import PathGuard, resolution_memo
from seepient.policy.rules import RuleSet
from seepient.protocol import (
    ActionKind,
    AgentTask,
    Decision,
    FetchRequest,
    FileChange,
    FileChangeSet,
    PreparedActionDraft,
    ReadAction,
    SessionStateChange,
    ShellCommand,
    Verdict,
    WorktreeCommand,
)
from seepient.protocol.actions import (
    KnowledgeQuery,
    McpCall,
    McpServerStart,
    MemoryAction,
    ProcessControl,
    WebSearchRequest,
)


class PolicyModeError(SettingsError):
    """The consent mode asked for is switched off by the managed settings."""


class PolicyEngine:
    """Evaluates prepared actions for one workspace, mode and set of permission rules."""

    def __init__(
        self,
        workspace: Path,
        *,
        seepient_home: Path,
        mode: str,
        permissions: PermissionSettings,
        home: Path | None = None,
        sources: PermissionSources | None = None,
        net_policy: AddressPolicy | None = None,
        protected: Sequence[Path] = (),
    ) -> None:
        """``permissions`` as loaded by ``load_settings`` carries its sources (file and position of every
        rule); ``sources`` overrides them. ``net_policy`` is the fetch address policy of the ``net`` settings
        (default: no allowlist), so a fetch it would refuse is denied here already. A malformed rule raises
        ``PolicyRuleError`` and a mode the managed settings disable ``PolicyModeError``, both
        ``SettingsError``s that stop the run."""
        rules = RuleSet.from_sources(sources if sources is not None else permissions.rule_sources)
        guard = PathGuard(
            workspace,
            seepient_home=seepient_home,
            home=home,
            foreign_allowed=self.user_allows_write,
            extra_protected=protected,
        )
        resolved = resolve_mode(mode)
        self._decider = Decider(resolved, rules, guard, net_policy or AddressPolicy())
        if resolved in rules.disabled_modes:
            where = rules.managed_path or "the managed settings"
            left = [m for m in MODE_ORDER if m not in rules.disabled_modes]
            raise PolicyModeError(
                f"{where}: permissions.disabledModes: the managed settings switch the {resolved} mode off; "
                f"choose another with --mode (one of: {', '.join(left)})"
            )

    @property
    def mode(self) -> str:
        return self._decider.mode

    @mode.setter
    def mode(self, mode: str) -> None:
        # A surface's mode toggle (Session.set_mode, which checks the mode) lands here: the decider is frozen.
        self._decider = replace(self._decider, mode=mode)

    @property
    def rules(self) -> RuleSet:
        return self._decider.rules

    @property
    def guard(self) -> PathGuard:
        return self._decider.guard

    @property
    def net_policy(self) -> AddressPolicy:
        return self._decider.net_policy

    @property
    def workspace(self) -> Path:
        return self._decider.workspace

    def user_allows_write(self, absolute: str) -> bool:
        """Whether an Edit or Write allow rule that names the path, from the user's own settings (user, managed,
        ``--config``, flags or an SDK caller; never a project's file, never a session grant), covers it. What
        other programs run from the workspace may be written only with such a rule."""
        return self._decider.user_allows_write(absolute)

    def user_allows_workspace_write(self, relative: str) -> bool:
        """``user_allows_write`` for a workspace-relative path (what the jail's control guard asks)."""
        return self.user_allows_write(f"{str(self.workspace).rstrip('/')}/{relative}")

    def refused_host(self, host: str) -> str | None:
        """Why a Fetch deny rule refuses ``host``, or None: the egress proxy of sandboxed commands asks this
        for every connection, so a command cannot reach a host the file and fetch tools may not."""
        return refused_host(self._decider.rules, host)

    def evaluate(self, action: PreparedActionDraft) -> Verdict:
        """The verdict on one prepared action; the file system is looked at once, through one memo."""
        with resolution_memo():
            return self._dispatch(action)

    def _dispatch(self, action: PreparedActionDraft) -> Verdict:
        decider = self._decider
        payload = action.payload
        # MCP tools are named mcp__SERVER__TOOL and carry an MCP payload; their rules decide. A tool so named
        # (or declared an MCP action) that carries anything else would escape the check its payload needs:
        # a shell line judged by MCP rules alone could run unanalysed.
        if action.kind is ActionKind.MCP or action.tool.startswith("mcp__"):
            if not isinstance(payload, McpCall | McpServerStart):
                named = check_mcp(decider, action)
                if named.decision is Decision.DENY:
                    return named  # a deny rule for the name says more than the mismatch
                return Verdict.deny(
                    "mcp:mismatch",
                    f"{action.tool} is named or declared as an MCP tool but carries a {payload.type} payload",
                )
            return check_mcp(decider, action)
        match payload:
            case ReadAction():
                return check_read(decider, action, payload)
            case FileChange():
                return check_change(decider, action, payload)
            case FileChangeSet():
                return check_change_set(decider, action, payload)
            case ShellCommand():
                return check_shell(decider, action, payload)
            case FetchRequest():
                return check_fetch(decider, action, payload)
            case ProcessControl():
                return check_process(decider, action, payload)
            case MemoryAction():
                return check_memory(decider, action, payload)
            case KnowledgeQuery():
                return check_knowledge(decider, action, payload)
            case WebSearchRequest():
                return check_web_search(decider, action, payload)
            case SessionStateChange():
                return check_state(decider, action)
            case WorktreeCommand() | AgentTask() | McpCall() | McpServerStart() if (
                action.kind is ActionKind.STATE
            ):
                return check_state(
                    decider, action
                )  # declared a state change, carrying something else: refused
            case WorktreeCommand():
                return check_worktree(decider, action, payload)
            case AgentTask():
                return check_agent(decider, action, payload)
            case McpCall() | McpServerStart():
                # Reached only when not declared an MCP action: nothing checks such a payload on its own.
                return Verdict.ask(
                    f"mode:{decider.mode}", f"policy has no check for {action.kind} actions yet"
                )
            case _:
                assert_never(payload)
