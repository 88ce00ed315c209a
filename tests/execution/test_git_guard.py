"""A git repository that a sandboxed command creates is checked before anything on the host uses it: git's own
`git init` (and an identity) passes; planted hooks, config that runs commands, includes and git files pointing
elsewhere move the whole ``.git`` aside, and the command's result says so. Real bubblewrap, real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from seepient.execution.local import LocalExecutor
from seepient.protocol import ShellCommand, ShellOutcome

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true",
    reason="needs git (every machine CI uses has it, so CI runs these)",
)

INIT = "git init -q -b main ."


async def _run(executor: LocalExecutor, line: str) -> ShellOutcome:
    return await executor.run_shell(
        ShellCommand(command=line, cwd=str(executor.workspace), timeout_ms=30_000)
    )


def _quarantined(workspace: Path) -> list[Path]:
    return sorted(workspace.glob(".git.quarantined-*"))


async def test_a_plain_new_repository_with_an_identity_passes(
    executor: LocalExecutor, workspace: Path
) -> None:
    outcome = await _run(
        executor, f"{INIT} && git config user.name Bot && git config user.email bot@example.invalid"
    )
    assert outcome.exit_code == 0, outcome.stderr
    assert (workspace / ".git" / "HEAD").is_file() and not _quarantined(workspace)
    assert "Seepient moved" not in outcome.stderr


@pytest.mark.parametrize(
    ("plant", "named"),
    [
        (
            "printf '#!/bin/sh\\necho pwned > /tmp/pwned\\n' > .git/hooks/post-checkout && "
            "chmod +x .git/hooks/post-checkout",
            "hooks post-checkout",
        ),
        ("git config core.fsmonitor 'touch /tmp/pwned'", "core.fsmonitor"),
        ("git config core.hooksPath ../planted", "core.hookspath"),
        ("git config alias.st '!touch /tmp/pwned'", "alias.st"),
        ("git config filter.x.smudge 'touch /tmp/pwned'", "filter.x.smudge"),
        ("git config include.path ../evil.cfg", "include.path"),
        ("rm -rf .git/hooks && ln -s ../planted .git/hooks", ".git/hooks is a link"),
    ],
    ids=["hook", "fsmonitor", "hooks-path", "shell-alias", "filter", "include", "hooks-link"],
)
async def test_a_new_repository_carrying_something_that_runs_is_moved_aside(
    executor: LocalExecutor, workspace: Path, plant: str, named: str
) -> None:
    outcome = await _run(executor, f"{INIT} && {plant}")
    assert not (workspace / ".git").exists()
    (moved,) = _quarantined(workspace)
    assert (moved / "HEAD").is_file()  # nothing deleted: the user can look at it
    assert f"moved the git repository this command created to {moved.name}" in outcome.stderr
    assert named in outcome.stderr
    # git on the host now finds no repository here: nothing planted can run.
    status = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", "--git-dir"], capture_output=True, text=True
    )
    assert status.returncode != 0 or Path(status.stdout.strip()).resolve() != (workspace / ".git").resolve()


async def test_a_git_file_pointing_elsewhere_is_moved_aside(executor: LocalExecutor, workspace: Path) -> None:
    outcome = await _run(executor, "mkdir -p elsewhere && printf 'gitdir: elsewhere\\n' > .git")
    assert not (workspace / ".git").exists()
    assert _quarantined(workspace) and "not a plain directory" in outcome.stderr


async def test_an_existing_repository_is_left_alone(executor: LocalExecutor, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "config", "alias.lg", "log --oneline"], check=True)
    outcome = await _run(executor, "git status --short")
    assert outcome.exit_code == 0, outcome.stderr
    assert (workspace / ".git").is_dir() and not _quarantined(workspace)


async def test_unsandboxed_runs_are_checked_too(make_executor, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    executor = make_executor(sandbox="off")
    outcome = await _run(executor, f"{INIT} && git config core.pager 'touch /tmp/pwned'")
    assert _quarantined(workspace) and "core.pager" in outcome.stderr
