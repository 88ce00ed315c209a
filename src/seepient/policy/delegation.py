"""The facts of handing work to a sub-agent that the sub-agent runtime and policy's delegation check
(``policy/checks/delegation.py``) share: how far a sub-agent's consent mode may move (only towards stricter),
and the rules a sub-agent obeys. Where worktrees live and the git argv they run is ``config/worktrees.py``."""

from __future__ import annotations

from pathlib import Path

from seepient.config.settings import PermissionSources, RuleSource
from seepient.policy.modes import MODE_ORDER
from seepient.policy.rules import PolicyRuleError, parse_rule


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
