"""Runs a prepared git worktree operation: its exact argv, no shell, in the sandbox, where the workspace's
``.seepient/worktrees`` directory (read-only for every other command) is writable for this one command."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from seepient.execution.environment import scrubbed_environment
from seepient.execution.process import run_process
from seepient.execution.sandbox.bwrap import BwrapSandbox, protected_workspace_paths
from seepient.execution.sandbox.host_view import host_view
from seepient.protocol.actions import WorktreeCommand
from seepient.protocol.outcomes import SandboxUnavailable, ShellOutcome

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


async def run_worktree_command(
    command: WorktreeCommand,
    *,
    workspace: Path,
    seepient_home: Path,
    home: Path,
    environ: Mapping[str, str],
    sandbox_mode: Literal["auto", "off"],
    bwrap: BwrapSandbox,
    max_output_bytes: int,
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> ShellOutcome:
    """Run ``command.argv`` at the workspace root. Only ``create`` and ``remove`` get the writable bind;
    ``list`` runs like any read-only command. ``readable`` and ``hidden`` are the user's additions to the
    jail's view, as for every other command. Raises ``SandboxUnavailable`` when bubblewrap cannot start."""
    root = workspace.resolve()
    cwd = Path(command.cwd)
    if cwd != root:
        raise ValueError(f"a worktree command runs at the workspace root {root}, not {cwd}")
    env = scrubbed_environment(environ, home=str(home))
    timeout_s = command.timeout_ms / 1000
    writable = command.operation in ("create", "remove")
    binds: list[tuple[Path, Path]] = []
    if writable:
        target = await asyncio.to_thread(_ensure_worktrees_dir, root)
        binds.append((target, target))
    if sandbox_mode == "off":
        result = await run_process(
            list(command.argv), env=env, cwd=root, timeout_s=timeout_s, max_output_bytes=max_output_bytes
        )
        return result.shell_outcome("none")
    status = await asyncio.to_thread(bwrap.probe)
    if not status.available:
        raise SandboxUnavailable(status.message)
    full_argv = bwrap.command_argv(
        list(command.argv),
        workspace=root,
        cwd=root,
        network=False,
        view=host_view(
            home=home,
            seepient_home=seepient_home,
            environ=environ,
            workspace=root,
            readable=readable,
            hidden=hidden,
        ),
        read_only_inside=protected_workspace_paths(root),
        env=env,
        extra_binds=binds,
    )
    result = await run_process(full_argv, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
    return result.shell_outcome("bwrap")
