"""The facts of handing work elsewhere that the worktree tool, the sub-agent runtime and policy's delegation
check (``policy/checks/delegation.py``) share: worktree names and places, the exact git argv each operation
runs, how far a sub-agent's consent mode may move (only towards stricter), and the rules a sub-agent obeys."""

from __future__ import annotations

import re
import stat
import unicodedata
from pathlib import Path

from seepient.config.settings import PermissionSources, RuleSource
from seepient.policy.modes import MODE_ORDER
from seepient.policy.rules import PolicyRuleError, parse_rule

WORKTREES_RELATIVE = ".seepient/worktrees"
BRANCH_PREFIX = "seepient/"
# Hooks are the user's, for their own checkouts; a worktree made for a sub-agent runs none (a post-checkout
# hook could take minutes or need the network the sandbox does not give).
GIT_PREFIX = ("git", "-c", "core.hooksPath=/dev/null")
LIST_ARGV = ("git", "worktree", "list", "--porcelain")

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
