"""Hook processes on the host: input on stdin, scrubbed environment, deadline kills the group, and the refusal
of programs the model could have written (workspace files, through a symlink or the PATH)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from seepient.execution.hooks import (
    HookProgramRefused,
    check_hook_program,
    hook_environment,
    run_hook_process,
)
from tests.execution.exec_helpers import wait_until_gone


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".seepient" / "hooks").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "hook.sh").write_text("#!/bin/sh\n")
    (ws / ".seepient" / "hooks" / "ok.sh").write_text("#!/bin/sh\n")
    return ws


def _check(command: str | list[str], workspace: Path, path: str = "/usr/bin:/bin") -> None:
    check_hook_program(command, workspace=workspace, env={"PATH": path}, protected=[workspace / ".seepient"])


@pytest.mark.parametrize(
    "command",
    [
        "./scripts/hook.sh",
        "sh scripts/hook.sh --fast",
        "python3 ./scripts/hook.sh",
        ["bash", "scripts/hook.sh"],
        "true && sh scripts/hook.sh",
    ],
)
def test_workspace_scripts_are_refused(workspace: Path, command: str | list[str]) -> None:
    with pytest.raises(HookProgramRefused, match="inside the workspace"):
        _check(command, workspace)


def test_absolute_paths_into_the_workspace_and_symlinks_are_refused(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(HookProgramRefused):
        _check(f"sh {workspace / 'scripts' / 'hook.sh'}", workspace)
    # A link the model may repoint sits in the workspace even when it points outside today.
    outside = tmp_path / "real.sh"
    outside.write_text("#!/bin/sh\n")
    (workspace / "link.sh").symlink_to(outside)
    with pytest.raises(HookProgramRefused):
        _check("sh link.sh", workspace)
    # And a link outside that points into the workspace leads to a file the model controls.
    (tmp_path / "in.sh").symlink_to(workspace / "scripts" / "hook.sh")
    with pytest.raises(HookProgramRefused):
        _check(f"sh {tmp_path / 'in.sh'}", workspace)


def test_a_program_found_on_a_path_inside_the_workspace_is_refused(workspace: Path) -> None:
    tool = workspace / "scripts" / "lint-hook"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    with pytest.raises(HookProgramRefused):
        _check("lint-hook --check", workspace, path=f"{workspace / 'scripts'}:/usr/bin:/bin")


def test_programs_outside_and_under_dot_seepient_are_allowed(workspace: Path, tmp_path: Path) -> None:
    hook = tmp_path / "mine.sh"
    hook.write_text("#!/bin/sh\n")
    _check(f"sh {hook}", workspace)
    _check("sh .seepient/hooks/ok.sh", workspace)
    _check("ruff format .", workspace)  # the workspace itself as data, not a program
    _check(["/bin/echo", "scripts"], workspace)  # a directory named in the workspace is not a program


async def test_the_hook_reads_stdin_and_gets_no_secrets(tmp_path: Path) -> None:
    env = hook_environment(
        {"PATH": os.environ["PATH"], "HOME": "/home/u", "OPENAI_API_KEY": "sk-x", "DB_PASSWORD": "p"}
    )
    assert env["HOME"] == "/home/u" and "OPENAI_API_KEY" not in env and "DB_PASSWORD" not in env
    result = await run_hook_process(
        [sys.executable, "-c", "import sys, os; print(sys.stdin.read().upper(), sorted(os.environ))"],
        stdin=b'{"tool": "shell"}',
        cwd=tmp_path,
        env=env,
        timeout_s=20,
    )
    assert result.exit_code == 0 and not result.timed_out
    assert '{"TOOL": "SHELL"}' in result.stdout and "OPENAI_API_KEY" not in result.stdout


async def test_a_hook_that_ignores_stdin_and_floods_stdout_is_capped(tmp_path: Path) -> None:
    result = await run_hook_process(
        "head -c 2000000 /dev/zero | tr '\\0' a",
        stdin=b"x" * 200_000,
        cwd=tmp_path,
        env=hook_environment({"PATH": "/usr/bin:/bin"}),
        timeout_s=20,
    )
    assert result.exit_code == 0 and len(result.stdout) == 256 * 1024


async def test_the_deadline_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = await run_hook_process(
        f"sleep 30 & echo $! > {pid_file}; wait",
        stdin=b"",
        cwd=tmp_path,
        env=hook_environment({"PATH": "/usr/bin:/bin"}),
        timeout_s=0.5,
    )
    assert result.timed_out and result.exit_code is None
    child = int(pid_file.read_text())
    assert wait_until_gone([child], deadline_s=2) == [], "the hook's background child outlived its deadline"
