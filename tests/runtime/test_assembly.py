"""Assembling a session: one that cannot open holds nothing open, and a session's tools are built with its
own state (the skills its prompt lists, its todo list) while tools outside a session work alone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from seepient.config import SeepientPaths, SettingsError
from seepient.execution.local import LocalExecutor
from seepient.policy.paths import PathGuard
from seepient.protocol import TodoUpdated, ToolResult
from seepient.runtime import Session, SessionOptions
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.agent import AgentInput, AgentTool
from seepient.tools.registry import builtin_registry


def _open_files_under(folder: Path) -> list[str]:
    """What this process holds open below ``folder``."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder.resolve())):
            found.append(target)
    return found


def _script(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    script = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.yaml"
    script.write_text(yaml.safe_dump(turns))
    return script


async def test_a_session_that_fails_to_open_leaves_the_audit_log_closed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    paths = SeepientPaths(home=home)
    first = Session.open(
        SessionOptions(
            workspace=workspace,
            model=f"replay:{_script(tmp_path, [_call('todo_write', todos=[]), {'text': 'ok'}])}",
            paths=paths,
        )
    )
    await first.run("go")
    await first.aclose()
    assert (home / "audit.log").exists() and _open_files_under(home) == []
    # The worker backend without its certificates fails after the audit log was opened and read.
    (home / "settings.json").write_text(json.dumps({"execution": {"backend": "docker-worker"}}))
    with pytest.raises(SettingsError, match="docker-worker") as failed:
        Session.open(
            SessionOptions(
                workspace=workspace, model=f"replay:{_script(tmp_path, [{'text': 'x'}])}", paths=paths
            )
        )
    # Still holding the error (and through its traceback every local of the failed open), nothing is open.
    assert failed.value is not None
    assert _open_files_under(home) == []


def _skill(workspace: Path, name: str) -> None:
    folder = workspace / ".agents" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does {name}.\n---\nSTEPS {name}\n")


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


async def test_the_sessions_tools_work_on_its_own_skills_and_todo_list(make_session, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _skill(workspace, "listed")
    session, events = make_session(
        [
            _call("skill", name="listed"),
            _call("skill", name="planted"),  # written after the prompt listed the skills: not the session's
            _call("todo_write", todos=[{"content": "a", "status": "pending"}]),
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    _skill(workspace, "planted")
    await session.run("go")
    await session.aclose()
    listed, planted, todo = [e for e in events if isinstance(e, ToolResult)]
    assert listed.status == "ok" and "STEPS listed" in listed.output
    assert planted.status == "error" and "Available skills: listed." in planted.output
    (updated,) = [e for e in events if isinstance(e, TodoUpdated)]
    assert todo.status == "ok" and [i.content for i in updated.items] == ["a"]
    assert session.todos == updated.items


async def test_a_registry_outside_a_session_refuses_to_delegate(tmp_path: Path) -> None:
    agent = builtin_registry().get(AgentTool.name)
    assert isinstance(agent, AgentTool)
    ctx = ToolContext(
        workspace=tmp_path,
        session_id="ses",
        call_id="call",
        paths=PathGuard(tmp_path, seepient_home=tmp_path / "home"),
        executor=(local := LocalExecutor(tmp_path, seepient_home=tmp_path / "home")),
        reads=local.reads,
    )
    with pytest.raises(ToolInputError, match="sub-agents are not available in this session"):
        await agent.prepare(AgentInput(task="anything"), ctx)
