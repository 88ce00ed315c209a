"""Python callables as hooks in the SDK: ``Agent(hooks=...)`` and ``agent.add_hook`` before and after the
session opened; bad registrations fail where they are made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seepient import Agent
from seepient.runtime.hooks import FunctionHook
from tests.support.scripts import write_script


def _agent(tmp_path: Path, turns: list[dict], **kwargs) -> Agent:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    script = write_script(tmp_path / "script.yaml", turns)
    return Agent(workspace=workspace, model=f"replay:{script}", home=tmp_path / "home", **kwargs)


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def test_hooks_given_to_the_agent_and_added_later_both_run(tmp_path: Path) -> None:
    seen: list[str] = []

    def guard(data: dict) -> dict | None:
        seen.append(data["arguments"]["command"])
        return (
            {"decision": "block", "reason": "read-only day"}
            if "touch" in data["arguments"]["command"]
            else None
        )

    agent = _agent(
        tmp_path, [_shell("touch a"), {"text": "first"}, {"text": "second"}], hooks={"preToolUse": guard}
    )
    stops: list[dict] = []
    agent.add_hook("stop", lambda data: stops.append(data), matcher=None)  # before the session opens
    with agent:
        reply = agent.chat("go")
        (result,) = [e for e in reply.events if e.type == "tool_result"]
        assert result.status == "denied" and "read-only day" in result.output and "guard" in result.output
        assert not (tmp_path / "ws" / "a").exists() and seen == ["touch a"]
        later: list[str] = []

        async def note(data: dict) -> None:
            later.append(data["event"])

        agent.add_hook("stop", note)  # after: goes to the open session
        assert agent.chat("again").text == "second"
        assert later == ["stop"] and len(stops) == 2


def test_function_hook_objects_carry_matchers(tmp_path: Path) -> None:
    hits: list[str] = []
    hook = FunctionHook("preToolUse", lambda data: hits.append(data["tool"]), matcher="glob|grep")
    agent = _agent(
        tmp_path,
        [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}, _shell("ls"), {"text": "ok"}],
        hooks=[hook],
    )
    with agent:
        agent.chat("go")
    assert hits == ["glob"]


def test_bad_registrations_fail_where_they_are_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown hook event 'beforeEverything'"):
        _agent(tmp_path, [{"text": "x"}], hooks={"beforeEverything": print})
    agent = _agent(tmp_path, [{"text": "x"}])
    with pytest.raises(re.error):
        agent.add_hook("preToolUse", print, matcher="(")
    with pytest.raises(TypeError, match="callable"):
        agent.add_hook("stop", "not a function")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="FunctionHook"):
        _agent(tmp_path, [{"text": "x"}], hooks=[print])  # type: ignore[list-item]
