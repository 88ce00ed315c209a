"""Checks a git repository that a sandboxed command created in the workspace before anything on the host uses it.

The sandbox re-binds an existing ``.git``'s hooks and config read-only, but a ``.git`` that appears during a
command had no such bind: a hook or a config key planted there (``core.fsmonitor``, ``core.hooksPath``, an
``alias.x = !cmd``, a filter driver) would run unsandboxed the first time the user, or their editor, runs git
in the workspace. A new repository passes only with git's own sample hooks and a plain config; anything else
moves the whole ``.git`` aside (nothing is deleted) and the command's result says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

_SAFE_CONFIG = re.compile(
    r"""^(
        core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)
      | extensions\.objectformat
      | init\.defaultbranch
      | user\.(name|email)
      | remote\.[^=\n]+\.(url|fetch|tagopt)
      | branch\.[^=\n]+\.(remote|merge)
    )=""",
    re.VERBOSE,
)
"""What ``git init``, ``git clone`` and setting an identity write: keys that name things, never run them."""


def repository_exists(workspace: Path) -> bool:
    return (workspace / ".git").exists() or (workspace / ".git").is_symlink()


def check_new_repository(workspace: Path) -> str | None:
    """Called after a command when the workspace had no ``.git`` before it. Returns what was done, for the
    command's output, when the new repository carried something that could run on the host; else None."""
    git_dir = workspace / ".git"
    if not repository_exists(workspace):
        return None
    problems = _problems(git_dir)
    if not problems:
        return None
    quarantine = workspace / f".git.quarantined-{time.strftime('%Y%m%dT%H%M%S')}"
    git_dir.rename(quarantine)
    return (
        f"Seepient moved the git repository this command created to {quarantine.name}: "
        + "; ".join(problems)
        + ". Those would run on the host, outside the sandbox, the next time git is used here. Create the "
        "repository with plain `git init` (or ask the user to), and do not add hooks or such config."
    )


def _problems(git_dir: Path) -> list[str]:
    if git_dir.is_symlink() or not git_dir.is_dir():
        return [".git is not a plain directory (a git file or a link can point the repository anywhere)"]
    problems = []
    hooks = git_dir / "hooks"
    if hooks.is_symlink():
        problems.append(".git/hooks is a link")
    elif hooks.is_dir():
        planted = sorted(p.name for p in hooks.iterdir() if not p.name.endswith(".sample"))
        if planted:
            problems.append("hooks " + ", ".join(planted))
    config = git_dir / "config"
    if config.is_symlink():
        problems.append(".git/config is a link")
    elif config.exists():
        unsafe = _unsafe_config_keys(config)
        if unsafe:
            problems.append("config " + ", ".join(unsafe))
    return problems


def _unsafe_config_keys(config: Path) -> list[str]:
    """Keys outside the safe list. ``git config --file`` only parses the file (``--no-includes``: an include is
    itself reported, not followed); a file git cannot parse is unsafe as a whole."""
    git = shutil.which("git")
    if git is None:
        return ["(git is not installed here to read it)"]
    listed = subprocess.run(
        [git, "config", "--file", str(config), "--no-includes", "--list"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"},
        timeout=10,
        check=False,
    )
    if listed.returncode != 0:
        return ["(unreadable: " + (listed.stderr.strip().splitlines() or ["git could not parse it"])[0] + ")"]
    return [line.split("=", 1)[0] for line in listed.stdout.splitlines() if not _SAFE_CONFIG.match(line)]
