"""The check of actions that hand work elsewhere: git worktrees (``WorktreeCommand``) and sub-agents
(``AgentTask``). The payload must be exactly what its fields describe (the git argv at the workspace root, a
sub-agent in this workspace or one of its worktrees, in a mode no looser than this session's); then rules
naming the tool (and Shell rules on the git argv), then the consent mode."""

from __future__ import annotations

from pathlib import Path

from seepient.config.worktrees import (
    BRANCH_PREFIX,
    LIST_ARGV,
    WORKTREES_RELATIVE,
    base_problem,
    create_argv,
    is_worktree,
    remove_argv,
    worktree_name_problem,
    worktree_path,
)
from seepient.policy.checks.decider import Decider
from seepient.policy.checks.shell import literal_words
from seepient.policy.delegation import looser_mode
from seepient.policy.modes import MODE_ORDER, ModeSubject
from seepient.protocol import AgentTask, PreparedActionDraft, Verdict, WorktreeCommand

RULE_WORKTREE_INVALID = "worktree:invalid"
RULE_AGENT_INVALID = "agent:invalid"
RULE_AGENT_LOOSER = "agent:looser_than_parent"


def check_worktree(decider: Decider, action: PreparedActionDraft, command: WorktreeCommand) -> Verdict:
    """The payload must be exactly the git command its fields describe, at the workspace root; then deny and
    ask rules (on the tool, and Shell rules on the argv that runs) → allow rules → the consent mode."""
    workspace = decider.workspace
    if command.cwd != str(workspace):
        return Verdict.deny(
            RULE_WORKTREE_INVALID, f"a worktree command runs at the workspace root {workspace}"
        )
    expected = _expected_argv(workspace, command)
    if isinstance(expected, str):
        return Verdict.deny(RULE_WORKTREE_INVALID, expected)
    if command.argv != expected:
        return Verdict.deny(
            RULE_WORKTREE_INVALID, f"the argv does not match the {command.operation} operation"
        )
    words = literal_words(command.argv)
    shown = " ".join(command.argv)
    for kind, make in (("deny", Verdict.deny), ("ask", Verdict.ask)):
        decided = decider.tool_verdict(action, (kind,), action.tool)
        if decided is not None:
            return decided
        for rule in getattr(decider.rules, kind):
            if rule.tool == "Shell" and rule.matches_argv(words, lenient=True):
                return make(f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers `{shown}`")
    allowed = decider.tool_verdict(action, ("allow",), action.tool)
    if allowed is not None:
        return allowed
    if command.operation == "list":
        return decider.decide(ModeSubject("read", True, description="listing git worktrees"))
    relative = f"{WORKTREES_RELATIVE}/{command.name}"
    if command.operation == "create":
        concerns = [f"it creates the git worktree {relative} and the branch {command.branch}"]
        return decider.decide(ModeSubject("file_change", True, concerns=concerns, description=shown))
    concerns = [f"it removes the git worktree {relative} (its branch {command.branch} is kept)"]
    if command.force:
        concerns.append("force discards the worktree's uncommitted changes")
    subject = ModeSubject(
        "other" if command.force else "file_change", True, concerns=concerns, description=shown
    )
    return decider.decide(subject)


def check_agent(decider: Decider, action: PreparedActionDraft, task: AgentTask) -> Verdict:
    """A sub-agent may work only in this workspace or one of its worktrees, in a mode no looser than this
    session's; then deny and ask rules naming the tool → allow rules → the consent mode (which asks in every
    mode but ``autonomous-trusted``: a sub-agent acts on its own, each of its actions checked again)."""
    workspace = decider.workspace
    if task.worktree is None:
        if task.workspace != str(workspace):
            return Verdict.deny(RULE_AGENT_INVALID, f"a sub-agent without a worktree works in {workspace}")
    else:
        problem = worktree_name_problem(task.worktree)
        if problem is not None:
            return Verdict.deny(RULE_AGENT_INVALID, problem)
        if task.workspace != worktree_path(workspace, task.worktree) or not is_worktree(
            workspace, task.worktree
        ):
            return Verdict.deny(
                RULE_AGENT_INVALID,
                f"{WORKTREES_RELATIVE}/{task.worktree} is not a worktree of {workspace}; create it with worktree_create",
            )
    if task.mode not in MODE_ORDER:
        return Verdict.deny(RULE_AGENT_INVALID, f"unknown consent mode {task.mode!r}")
    if looser_mode(task.mode, decider.mode):
        return Verdict.deny(
            RULE_AGENT_LOOSER,
            f"a sub-agent may not run in {task.mode}, which is looser than this session's {decider.mode}",
        )
    decided = decider.tool_verdict(action, ("deny", "ask", "allow"), action.tool)
    if decided is not None:
        return decided
    where = f" in the worktree {task.worktree}" if task.worktree else ""
    concerns = [
        f"it starts a sub-agent{where} in {task.mode} mode with the tools {', '.join(task.tools) or '(none)'}; "
        "each of its actions goes through policy again"
    ]
    return decider.decide(ModeSubject("other", True, concerns=concerns, description=action.summary))


def _expected_argv(workspace: Path, command: WorktreeCommand) -> tuple[str, ...] | str:
    """The argv the operation must run, or why the payload does not describe one it may run."""
    if command.operation == "list":
        return LIST_ARGV
    name = command.name or ""
    problem = worktree_name_problem(name)
    if problem is not None:
        return problem
    path = worktree_path(workspace, name)
    if command.path != path or command.branch != BRANCH_PREFIX + name:
        return f"a worktree named {name!r} lives at {path} on branch {BRANCH_PREFIX}{name}"
    if command.operation == "create":
        base = command.base or ""
        return base_problem(base) or create_argv(path, BRANCH_PREFIX + name, base)
    return remove_argv(path, command.force)
