"""End to end: ``seepient tools`` lists what a session offers (the SDK's ``Agent.tool_names()`` too), the
todo list shows in ``seepient run``'s human and JSON output, and a user's hook guards a real run."""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from seepient import Agent
from seepient.protocol import ApprovedAction, PreparedActionDraft
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.e2e.conftest import SECRET_MARKER, json_events


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _UserTool(Tool[_NoArgs]):
    name: ClassVar[str] = "deploy_preview"
    description: ClassVar[str] = "A tool the user registered through the SDK."
    input_model: ClassVar[type[BaseModel]] = _NoArgs

    async def prepare(self, args: _NoArgs, ctx: ToolContext) -> PreparedActionDraft:
        raise NotImplementedError

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError


def test_tools_json_is_the_sessions_list_and_matches_the_sdk(world, seepient):
    proc = seepient("tools", "--json", "--workspace", str(world.workspace))
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    names = [tool["name"] for tool in listed]
    assert {"read_file", "shell", "todo_write"} <= set(names)
    assert all(tool["description"] and tool["parameters"]["type"] == "object" for tool in listed)
    todo = next(tool for tool in listed if tool["name"] == "todo_write")
    assert "todos" in todo["parameters"]["properties"]

    agent = Agent(workspace=world.workspace, model="ollama:any", home=world.seepient_home)
    try:
        assert agent.tool_names() == names
        agent.register_tool(_UserTool())
        assert agent.tool_names() == [*names, "deploy_preview"]
    finally:
        agent.close()
    early = Agent(
        workspace=world.workspace, model="ollama:any", home=world.seepient_home, tools=[_UserTool()]
    )
    try:
        assert early.tool_names()[-1] == "deploy_preview"
    finally:
        early.close()


def test_tools_human_output_and_a_bad_settings_file(world, seepient):
    proc = seepient("tools", "--workspace", str(world.workspace))
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("todo_write "))
    assert "todo list" in line
    (world.workspace / ".seepient").mkdir()
    (world.workspace / ".seepient" / "settings.json").write_text("{oops")
    bad = seepient("tools", "--workspace", str(world.workspace))
    assert bad.returncode == 2 and "settings.json" in bad.stderr and "invalid JSON" in bad.stderr


def _todo_script(world: Any) -> str:
    return str(
        world.script(
            [
                {
                    "tool_calls": [
                        {
                            "name": "todo_write",
                            "arguments": {
                                "todos": [
                                    {"content": "Read calc.py", "status": "completed"},
                                    {"content": "Fix add", "status": "in_progress"},
                                ]
                            },
                        }
                    ]
                },
                {"text": "Working on it."},
            ]
        )
    )


def test_run_shows_the_todo_list_to_people_and_programs(world, seepient):
    script = _todo_script(world)
    human = seepient("run", "plan", "--model", f"replay:{script}", "--workspace", str(world.workspace))
    assert human.returncode == 0, human.stderr
    assert (
        "todo (1/2 done)" in human.stderr and "☑ Read calc.py" in human.stderr and "▶ Fix add" in human.stderr
    )
    machine = seepient(
        "run", "plan", "--model", f"replay:{script}", "--workspace", str(world.workspace), "--json"
    )
    assert machine.returncode == 0, machine.stderr
    (update,) = [e for e in json_events(machine.stdout) if e["type"] == "todo_updated"]
    assert [(i["content"], i["status"]) for i in update["items"]] == [
        ("Read calc.py", "completed"),
        ("Fix add", "in_progress"),
    ]
    records = [r for r in world.audit_records() if r.get("action", {}).get("kind") == "state"]
    assert len(records) == 2 and all(r["outcome"]["status"] == "ok" for r in records)


def test_a_user_hook_blocks_a_command_in_a_real_run_without_seeing_secrets(world, seepient):
    hooks = world.home / "hooks"
    hooks.mkdir()
    seen = hooks / "seen.json"
    guard = hooks / "guard.py"
    guard.write_text(
        "import json, os, sys\n"
        "call = json.load(sys.stdin)\n"
        f"open({str(seen)!r}, 'w').write(json.dumps({{'call': call, 'env': dict(os.environ)}}))\n"
        "if 'rm ' in call['arguments'].get('command', ''):\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'rm is not allowed by the team hook'}))\n"
    )
    world.seepient_home.mkdir(parents=True, exist_ok=True)
    (world.seepient_home / "settings.json").write_text(
        json.dumps({"hooks": {"preToolUse": [{"matcher": "shell", "command": [sys.executable, str(guard)]}]}})
    )
    (world.workspace / "keep.txt").write_text("precious\n")
    script = world.script(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "rm keep.txt"}}]}, {"text": "ok"}]
    )
    proc = seepient(
        "run", "clean up", "-y", "--model", f"replay:{script}", "--workspace", str(world.workspace), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = [e for e in json_events(proc.stdout) if e["type"] == "tool_result"]
    assert result["status"] == "denied" and "rm is not allowed by the team hook" in result["output"]
    assert (world.workspace / "keep.txt").read_text() == "precious\n"
    recorded = json.loads(seen.read_text())
    assert recorded["call"]["tool"] == "shell" and recorded["call"]["event"] == "preToolUse"
    assert SECRET_MARKER not in json.dumps(recorded["env"])
    refused = [r for r in world.audit_records() if r.get("type") == "call_refused"]
    assert refused and refused[0]["verdict"]["rule"] == "hook:preToolUse"
