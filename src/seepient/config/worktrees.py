"""Where a session's worktrees live and the exact git argv each worktree operation runs: what the worktree
tool prepares, policy's delegation check verifies and the sub-agent runtime opens children in."""

from __future__ import annotations

import re
import stat
import unicodedata
from pathlib import Path

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
