"""End to end: ``seepient run`` with a replay script that makes a worktree and hands a fix to a sub-agent
working there; real git, real bubblewrap, one audit log that verifies."""

from __future__ import annotations

from tests.e2e.conftest import json_events
from tests.git_helpers import git


def test_a_sub_agent_fixes_code_in_its_worktree(world, seepient):
    (world.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(world.workspace, "init", "-q", "-b", "main")
    git(world.workspace, "add", "calc.py")
    git(world.workspace, "commit", "-q", "-m", "init")
    script = world.script(
        [
            {"tool_calls": [{"name": "worktree_create", "arguments": {"name": "fix-add"}}]},
            {
                "tool_calls": [
                    {
                        "name": "agent",
                        "arguments": {
                            "task": "In calc.py make add return a + b.",
                            "worktree": "fix-add",
                            "tools": ["read_file", "edit_file"],
                        },
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                    }
                ]
            },
            {"text": "Changed add in the worktree."},
            {"text": "The fix is on branch seepient/fix-add."},
        ]
    )
    proc = seepient(
        "run", "fix add", "-y", "--model", f"replay:{script}", "--workspace", str(world.workspace), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    checkout = world.workspace / ".seepient/worktrees/fix-add"
    assert "a + b" in (checkout / "calc.py").read_text()
    assert "a - b" in (world.workspace / "calc.py").read_text()
    events = json_events(proc.stdout)
    agent_result = next(e for e in events if e["type"] == "tool_result" and e["tool"] == "agent")
    assert agent_result["status"] == "ok" and "edit_file [ok]" in agent_result["output"]
    child_id = agent_result["data"]["agent_id"]
    relayed = [e for e in events if e["type"] == "subagent_event"]
    assert relayed and {e["agent_id"] for e in relayed} == {child_id}
    records = world.audit_records()
    child = [r for r in records if r["session_id"] == child_id]
    assert [r["action"]["tool"] for r in child] == ["edit_file"]
    parent_id = child[0]["parent_session_id"]
    assert [r["action"]["tool"] for r in records if r["session_id"] == parent_id] == [
        "worktree_create",
        "agent",
    ]
    verify = seepient("audit", "verify")
    assert verify.returncode == 0, verify.stdout
