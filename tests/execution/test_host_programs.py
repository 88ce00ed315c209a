"""Programs Seepient starts on the host are never files the model can write: a planted ``.venv/bin/bwrap``,
``git``, ``rg`` or MCP server in the workspace, reached through an activated project virtualenv on PATH or a
relative PATH entry, is skipped or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seepient.config.sections import McpServerSettings
from seepient.execution.host_programs import host_program
from seepient.execution.local import LocalExecutor
from seepient.execution.mcp_transport import HostMcpConnector
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.tools.mcp import McpStartError
from tests.approved import run_shell


def _plant(folder: Path, name: str, marker: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def activated_venv(workspace: Path, outside_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user started Seepient in the project with its virtualenv activated: ``.venv/bin`` first on PATH."""
    marker = outside_dir / "pwned"
    for name in ("bwrap", "git", "rg", "true", "mcp-server-x"):
        _plant(workspace / ".venv" / "bin", name, marker)
    monkeypatch.setenv("PATH", f"{workspace / '.venv' / 'bin'}:.:{os.environ['PATH']}")
    monkeypatch.chdir(workspace)
    return marker


def test_system_tools_are_never_taken_from_the_workspace(workspace: Path, activated_venv: Path) -> None:
    for name in ("bwrap", "git", "true"):
        found = host_program(name)
        assert found is not None and not found.startswith(str(workspace)), (name, found)
    assert not BwrapSandbox().bwrap.startswith(str(workspace))  # type: ignore[union-attr]


def test_a_relative_path_entry_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    _plant(elsewhere, "only-here-tool", tmp_path / "m")
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("PATH", ".")
    assert host_program("only-here-tool") is None


def test_ripgrep_inside_the_workspace_is_not_used(
    workspace: Path, activated_venv: Path, tmp_path: Path
) -> None:
    executor = LocalExecutor(workspace, seepient_home=tmp_path / "h", ripgrep=str(workspace / ".venv/bin/rg"))
    assert executor.reads.ripgrep is None


async def test_the_jail_runs_with_the_system_bubblewrap(
    workspace: Path, activated_venv: Path, tmp_path: Path
) -> None:
    from seepient.protocol import ShellCommand

    executor = LocalExecutor(workspace, seepient_home=tmp_path / "h")
    outcome = await run_shell(
        executor, ShellCommand(command="echo ran", cwd=str(workspace), timeout_ms=30_000)
    )
    assert outcome.stdout == "ran\n", outcome.stderr
    assert not activated_venv.exists()


async def test_an_mcp_server_inside_the_workspace_is_refused(workspace: Path, activated_venv: Path) -> None:
    connector = HostMcpConnector(workspace, environ=dict(os.environ))
    for command in (
        "mcp-server-x",
        str(workspace / ".venv" / "bin" / "mcp-server-x"),
        "./.venv/bin/mcp-server-x",
    ):
        with pytest.raises(McpStartError, match="inside the workspace"):
            async with connector.connect("x", McpServerSettings(command=command)):
                pass
    assert not activated_venv.exists()
