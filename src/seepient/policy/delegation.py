"""Policy for the actions that hand work elsewhere: git worktrees (``WorktreeCommand``) and sub-agents
(``AgentTask``), plus the shared facts both sides check: worktree names, the exact git argv each operation
runs, and the order of consent modes from strictest to loosest (a sub-agent may only move left)."""

from __future__ import annotations

import re
import stat
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.config.settings import PermissionSources, RuleSource
from seepient.policy.commands import Word
from seepient.policy.modes import ModeSubject
from seepient.policy.rules import PolicyRuleError, parse_rule
from seepient.protocol import AgentTask, PreparedActionDraft, Verdict, WorktreeCommand

if TYPE_CHECKING:
    from seepient.policy.engine import PolicyEngine

WORKTREES_RELATIVE = ".seepient/worktrees"
BRANCH_PREFIX = "seepient/"
# Hooks are the user's, for their own checkouts; a worktree made for a sub-agent runs none (a post-checkout
# hook could take minutes or need the network the sandbox does not give).
GIT_PREFIX = ("git", "-c", "core.hooksPath=/dev/null")
LIST_ARGV = ("git", "worktree", "list", "--porcelain")

MODE_ORDER = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
"""Consent modes from strictest to loosest. ``auto`` sits between ``ask-untrusted`` and
``autonomous-trusted``: it lets workspace edits through and lets a classifier answer asks a person would get
under ``ask-untrusted``, but it still asks where ``autonomous-trusted`` proceeds."""

RULE_WORKTREE_INVALID = "worktree:invalid"
RULE_AGENT_INVALID = "agent:invalid"
RULE_AGENT_LOOSER = "agent:looser_than_parent"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_BASE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/@^~{}+-]{0,199}$")


def worktree_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a worktree (no ``/``, ``..``, leading ``-``, control characters), or None."""
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        return f"worktree name {name!r} contains a control character; use letters, digits, '.', '_' or '-'"
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".", ".lock")):
        return (
            f"worktree name {name!r} is not allowed: use 1 to 63 letters, digits, '.', '_' or '-', starting with "
            "a letter or digit, without '..', '/' or a trailing '.' or '.lock' (for example 'fix-parser')"
        )
    return None


def base_problem(base: str) -> str | None:
    """Why ``base`` is not a revision the worktree tool passes to git (it must not read as an option), or None."""
    bad = not _BASE.fullmatch(base) or ".." in base or "@{" in base or "//" in base
    if bad or base.endswith((".", "/", ".lock")):
        return (
            f"base {base!r} is not a branch, tag or commit name this tool accepts: give a branch, a tag, a commit "
            "id or HEAD~N (letters, digits and . _ / ^ ~ -, not starting with '-'), or omit it for HEAD"
        )
    return None


def worktree_path(workspace: Path, name: str) -> str:
    return str(workspace / WORKTREES_RELATIVE / name)


def create_argv(path: str, branch: str, base: str) -> tuple[str, ...]:
    return (*GIT_PREFIX, "worktree", "add", "-b", branch, "--", path, base)


def remove_argv(path: str, force: bool) -> tuple[str, ...]:
    # git finds the worktree by this exact path, not by a name: a repointed administrative file cannot make
    # it remove some other directory.
    return (*GIT_PREFIX, "worktree", "remove", *(("--force",) if force else ()), "--", path)


def is_worktree(workspace: Path, name: str) -> bool:
    """Whether ``.seepient/worktrees/<name>`` is a worktree checkout: a real directory with a ``.git`` file."""
    directory = Path(worktree_path(workspace, name))
    try:
        if directory.is_symlink() or not directory.is_dir():
            return False
        return stat.S_ISREG((directory / ".git").lstat().st_mode)
    except OSError:
        return False


def mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode)


def looser_mode(child: str, parent: str) -> bool:
    """Whether ``child`` would let through something ``parent`` asks about."""
    return mode_rank(child) > mode_rank(parent)


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


def _tool_rule(engine: PolicyEngine, action: PreparedActionDraft, kind: str) -> Verdict | None:
    make = {"deny": Verdict.deny, "ask": Verdict.ask, "allow": Verdict.allow}[kind]
    for rule in getattr(engine.rules, kind):
        if rule.bare and rule.tool == action.tool:
            return make(f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers {action.tool}")
    return None


def evaluate_worktree(engine: PolicyEngine, action: PreparedActionDraft, command: WorktreeCommand) -> Verdict:
    """The payload must be exactly the git command its fields describe, at the workspace root; then deny and
    ask rules (on the tool, and Shell rules on the argv that runs) → allow rules → the consent mode."""
    workspace = engine.workspace
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
    words = [Word(word) for word in command.argv]
    shown = " ".join(command.argv)
    for kind, make in (("deny", Verdict.deny), ("ask", Verdict.ask)):
        decided = _tool_rule(engine, action, kind)
        if decided is not None:
            return decided
        for rule in getattr(engine.rules, kind):
            if rule.tool == "Shell" and rule.matches_argv(words, lenient=True):
                return make(f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers `{shown}`")
    allowed = _tool_rule(engine, action, "allow")
    if allowed is not None:
        return allowed
    if command.operation == "list":
        return engine._decide(ModeSubject("read", True, description="listing git worktrees"))
    relative = f"{WORKTREES_RELATIVE}/{command.name}"
    if command.operation == "create":
        concerns = [f"it creates the git worktree {relative} and the branch {command.branch}"]
        return engine._decide(ModeSubject("file_change", True, concerns=concerns, description=shown))
    concerns = [f"it removes the git worktree {relative} (its branch {command.branch} is kept)"]
    if command.force:
        concerns.append("force discards the worktree's uncommitted changes")
    kind = "other" if command.force else "file_change"
    return engine._decide(ModeSubject(kind, True, concerns=concerns, description=shown))  # type: ignore[arg-type]


def evaluate_agent(engine: PolicyEngine, action: PreparedActionDraft, task: AgentTask) -> Verdict:
    """A sub-agent may work only in this workspace or one of its worktrees, in a mode no looser than this
    session's; then deny and ask rules naming the tool → allow rules → the consent mode (which asks in every
    mode but ``autonomous-trusted``: a sub-agent acts on its own, each of its actions checked again)."""
    workspace = engine.workspace
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
    if looser_mode(task.mode, engine.mode):
        return Verdict.deny(
            RULE_AGENT_LOOSER,
            f"a sub-agent may not run in {task.mode}, which is looser than this session's {engine.mode}",
        )
    for kind in ("deny", "ask", "allow"):
        decided = _tool_rule(engine, action, kind)
        if decided is not None:
            return decided
    where = f" in the worktree {task.worktree}" if task.worktree else ""
    concerns = [
        f"it starts a sub-agent{where} in {task.mode} mode with the tools {', '.join(task.tools) or '(none)'}; "
        "each of its actions goes through policy again"
    ]
    return engine._decide(ModeSubject("other", True, concerns=concerns, description=action.summary))


def anchored_at(text: str, workspace: Path) -> str:
    """A workspace-relative path rule rewritten to name the same files from anywhere (``//`` + the workspace):
    ``Read(.env)`` → ``Read(//ws/**/.env)``, ``Edit(/src/x)`` → ``Edit(//ws/src/x)``. Other rules unchanged."""
    try:
        rule = parse_rule(text)
    except PolicyRuleError:
        return text
    if rule.pattern is None or rule.anchor != "workspace":
        return text
    pattern = rule.pattern
    if pattern != "**" and "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern  # gitignore: a name without a slash matches at any depth
    root = str(workspace).strip("/")
    return f"{rule.tool}(//{root}/{pattern.lstrip('/')})"


def child_rule_sources(sources: PermissionSources, parent: Path, child: Path) -> PermissionSources:
    """The rules a sub-agent in ``child`` obeys: every rule of its parent (workspace-relative ones then name
    the same places in the child's checkout), plus the parent's deny and ask path rules anchored at the parent's
    workspace, so a child in a worktree cannot read what the parent may not by climbing out of it. Allow rules
    are not re-anchored: that could only widen."""
    if child == parent:
        return sources
    extra = RuleSource(
        kind="settings",
        name=f"the parent session's rules, anchored at {parent}",
        deny=tuple(anchored_at(t, parent) for s in sources.sources for t in s.deny if isinstance(t, str)),
        ask=tuple(anchored_at(t, parent) for s in sources.sources for t in s.ask if isinstance(t, str)),
    )
    return PermissionSources(
        sources=(*sources.sources, extra),
        allow_managed_rules_only=sources.allow_managed_rules_only,
        disabled_modes=sources.disabled_modes,
        managed_path=sources.managed_path,
    )
