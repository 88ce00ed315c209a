"""shell: prepare fills the analysis, cwd and timeout; execute runs in the real sandbox and reports status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import ActionKind, Capability, PathDenied, ShellCommand
from seepient.tools.base import ToolInputError
from seepient.tools.builtin import ShellTool

TOOL = ShellTool()


async def test_prepare_fills_commands_capabilities_cwd_and_timeout(
    workspace: Path, prepare: Any, recorder: Any
) -> None:
    draft = await prepare(TOOL, command="ls -la | grep foo > out.txt")
    command = draft.payload
    assert draft.kind is ActionKind.SHELL and not draft.read_only
    assert isinstance(command, ShellCommand)
    assert command.parsed is True
    assert [c.binary for c in command.commands] == ["ls", "grep"]
    assert command.commands[0].argv == ("ls", "-la")
    assert [r.target for r in command.commands[1].redirections] == ["out.txt"]
    assert Capability.WRITE_WORKSPACE in command.capabilities
    assert command.cwd == str(workspace) and command.timeout_ms == 30_000
    assert draft.summary == "Run: ls -la | grep foo > out.txt (in .)"
    assert recorder.calls == []


async def test_prepare_marks_network_and_destructive_commands(prepare: Any) -> None:
    fetch = await prepare(TOOL, command="curl -s https://example.com")
    assert Capability.NETWORK in fetch.payload.capabilities
    wipe = await prepare(TOOL, command="rm -rf build")
    assert Capability.DESTRUCTIVE in wipe.payload.capabilities


async def test_workdir_is_resolved_inside_the_workspace(workspace: Path, prepare: Any) -> None:
    (workspace / "pkg").mkdir()
    draft = await prepare(TOOL, command="pytest -q", workdir="pkg", timeout_ms=5_000)
    assert draft.payload.cwd == str(workspace / "pkg")
    assert draft.payload.timeout_ms == 5_000
    assert draft.summary == "Run: pytest -q (in pkg)"


@pytest.mark.parametrize("workdir", ["..", "/tmp", "pkg/../.."])
async def test_workdir_outside_the_workspace_is_denied(workdir: str, workspace: Path, prepare: Any) -> None:
    (workspace / "pkg").mkdir()
    with pytest.raises(PathDenied):
        await prepare(TOOL, command="ls", workdir=workdir)


async def test_the_session_default_timeout_is_capped_at_ten_minutes(prepare: Any, ctx: Any) -> None:
    ctx.default_timeout_ms = 3_600_000
    draft = await prepare(TOOL, command="make")
    assert draft.payload.timeout_ms == 600_000


async def test_a_background_run_is_a_distinct_shell_action_without_a_default_deadline(prepare: Any) -> None:
    background = await prepare(TOOL, command="npm run dev", run_in_background=True)
    foreground = await prepare(TOOL, command="npm run dev")
    assert background.payload.background and background.payload.timeout_ms == 0
    assert background.summary.startswith("Start in the background: npm run dev")
    # Approving the foreground command must not approve starting it in the background.
    assert background.digest != foreground.digest
    assert "background" not in foreground.payload.model_dump()


async def test_a_long_multi_line_command_gets_a_one_line_summary(prepare: Any) -> None:
    draft = await prepare(TOOL, command="echo one\necho two")
    assert draft.summary == "Run: echo one … (in .)"


async def test_execute_reports_exit_code_and_both_streams(workspace: Path, run: Any) -> None:
    _, out = await run(TOOL, command="echo hello; echo oops >&2; exit 3")
    assert not out.is_error
    assert out.text.startswith("Exit code: 3")
    assert "stdout:\nhello" in out.text and "stderr:\noops" in out.text
    assert out.data["exit_code"] == 3 and out.data["timed_out"] is False


async def test_execute_runs_in_the_workdir_and_writes_land_in_the_workspace(
    workspace: Path, run: Any
) -> None:
    (workspace / "pkg").mkdir()
    _, out = await run(TOOL, command="pwd && echo made > made.txt", workdir="pkg")
    assert out.text.startswith("Exit code: 0")
    assert (workspace / "pkg" / "made.txt").read_text() == "made\n"


async def test_a_silent_command_says_so(run: Any) -> None:
    _, out = await run(TOOL, command="true")
    assert out.text == "Exit code: 0\n\n(no output)"


async def test_a_timeout_is_reported_as_an_error(run: Any) -> None:
    _, out = await run(TOOL, command="sleep 30", timeout_ms=300)
    assert out.is_error and out.data["timed_out"] is True
    assert out.text.startswith("Timed out after 300 ms")


async def test_a_missing_or_file_workdir_is_refused_before_running(workspace: Path, prepare: Any) -> None:
    (workspace / "file.txt").write_text("x")
    with pytest.raises(ToolInputError, match="'nothere' does not exist"):
        await prepare(TOOL, command="ls", workdir="nothere")
    with pytest.raises(ToolInputError, match="is a file, not a directory"):
        await prepare(TOOL, command="ls", workdir="file.txt")
