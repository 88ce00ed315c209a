"""Runs a prepared git worktree operation: its exact argv, no shell, in the sandbox, where the workspace's
``.seepient/worktrees`` directory (read-only for every other command) is writable for this one command."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

from seepient.execution.jail import Jail
from seepient.protocol.actions import WorktreeCommand
from seepient.protocol.outcomes import ShellOutcome

WORKTREES_DIR = (".seepient", "worktrees")


def worktrees_root(workspace: Path) -> Path:
    """``<workspace>/.seepient/worktrees``: where every worktree of the workspace lives."""
    return workspace.joinpath(*WORKTREES_DIR)


def _ensure_worktrees_dir(workspace: Path) -> Path:
    """Create ``.seepient/worktrees`` when missing, refusing a symbolic link anywhere on the way: a link planted
    there would make the writable bind land somewhere else."""
    current = workspace
    for name in WORKTREES_DIR:
        current = current / name
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            pass
        if current.is_symlink() or not current.is_dir():
            raise PermissionError(
                errno.EACCES,
                "is not a plain directory; refusing to run a worktree command there",
                str(current),
            )
    return current


async def run_worktree_command(command: WorktreeCommand, jail: Jail) -> ShellOutcome:
    """Run ``command.argv`` at the workspace root in ``jail``. Only ``create`` and ``remove`` get the writable
    bind; ``list`` runs like any read-only command. Raises ``SandboxUnavailable`` when bubblewrap cannot start."""
    root = jail.workspace
    cwd = Path(command.cwd)
    if cwd != root:
        raise ValueError(f"a worktree command runs at the workspace root {root}, not {cwd}")
    binds: list[tuple[Path, Path]] = []
    if command.operation in ("create", "remove"):
        target = await asyncio.to_thread(_ensure_worktrees_dir, root)
        binds.append((target, target))
    return await jail.run(command.argv, cwd=root, timeout_s=command.timeout_ms / 1000, extra_binds=binds)
