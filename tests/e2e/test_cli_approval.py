"""End to end on a real pseudo-terminal: approving for the session with a command-prefix scope, and approving
always for the project, which writes the rule that lets the next (headless) run go ahead without asking."""

from __future__ import annotations

import json
import os
import select
import time

from tests.e2e.conftest import json_events
from tests.e2e.test_cli_terminal import Terminal


def _expect_nth(term: Terminal, needle: str, count: int, timeout: float = 30) -> str:
    """Read the terminal until ``needle`` has appeared ``count`` times (a later prompt repeats earlier text)."""
    deadline = time.monotonic() + timeout
    while term.screen.decode(errors="replace").count(needle) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(
                f"saw {needle!r} fewer than {count} times; screen was:\n{term.screen.decode(errors='replace')}"
            )
        ready, _, _ = select.select([term.master], [], [], remaining)
        if ready:
            try:
                term.screen += os.read(term.master, 4096)
            except OSError:
                break
    return term.screen.decode(errors="replace")


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def test_session_prefix_grant_covers_the_prefix_and_nothing_chained_to_it(world):
    script = world.script(
        [_shell("touch one"), _shell("touch two"), _shell("touch three && rm one"), {"text": "ok"}]
    )
    term = Terminal(["run", "x", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    screen = term.expect("Approve?")
    assert "[a] approve for this session: this exact action; commands starting with `touch`" in screen
    term.send("a\n")
    term.expect("Scope?")
    term.send("c\n")
    screen = _expect_nth(term, "Approve?", 2)  # the compound line is asked about again
    assert "command: touch three && rm one" in screen.split("Scope?")[-1]
    assert "command: touch two" not in screen  # the prefix grant answered it
    term.send("n\n")
    _expect_nth(term, "Tell the model why", 1)
    term.send("do not delete files\n")
    code, out = term.finish()
    assert code == 0, term.screen.decode(errors="replace")
    results = [e for e in json_events(out) if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["ok", "ok", "rejected"]
    assert "do not delete files" in results[2]["output"]
    assert (world.workspace / "one").exists() and (world.workspace / "two").exists()
    assert not (world.workspace / "three").exists()
    approvals = [r["approval"] for r in world.audit_records()]
    assert [(a["decision"], a["approved_by"]) for a in approvals] == [
        ("approve_session", "user"),
        ("approve_once", "grant:session"),
        ("reject", "user"),
    ]


def test_approve_always_writes_the_project_rule_and_the_next_run_does_not_ask(world, seepient):
    settings = world.workspace / ".seepient" / "settings.json"
    script = world.script([_shell("mkdir -p build/out"), {"text": "ok"}])
    term = Terminal(["run", "x", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    screen = term.expect("Approve?")
    assert "[p] approve always in this project: adds Shell(mkdir:*) to your rules for this project" in screen
    assert not settings.exists()
    term.send("p\n")
    code, out = term.finish()
    assert code == 0, term.screen.decode(errors="replace")
    # The user's decision lives in the user's state for this workspace, never in the repository.
    assert not settings.exists()
    (rules,) = (world.seepient_home / "projects").glob("*/settings.json")
    assert json.loads(rules.read_text()) == {"permissions": {"allow": ["Shell(mkdir:*)"]}}
    assert rules.parent.name.startswith("ws-")
    assert (world.workspace / "build" / "out").is_dir()
    (record,) = world.audit_records()
    assert record["approval"]["decision"] == "approve_project"
    assert record["approval"]["scope"] == "Shell(mkdir:*)"

    # No terminal and no -y: anything that asked would be refused. The rule answers instead.
    again = world.script(
        [_shell("mkdir -p dist"), _shell("mkdir x && rm -rf build"), {"text": "ok"}], "again.yaml"
    )
    proc = seepient("run", "x", "--model", f"replay:{again}", "--json")
    assert proc.returncode == 5, proc.stderr  # the rm was refused for want of a person
    events = json_events(proc.stdout)
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["ok", "rejected"]  # the rule covers mkdir, not rm
    assert (world.workspace / "dist").is_dir() and (world.workspace / "build").is_dir()
    asked = [e["request"]["action"]["summary"] for e in events if e["type"] == "permission_request"]
    assert len(asked) == 1 and "rm -rf build" in asked[0]
    assert world.audit_records()[1]["verdict"]["rule"] == "allow:Shell(mkdir:*)"


def test_auto_mode_from_the_command_line_asks_the_classifier_and_audits_its_answer(world, seepient):
    decide = {
        "name": "decide",
        "arguments": {"decision": "allow", "reason": "the user asked for a build dir"},
    }
    script = world.script([_shell("mkdir build"), {"tool_calls": [decide]}, {"text": "ok"}])
    proc = seepient("run", "make a build dir", "--mode", "auto", "--model", f"replay:{script}", "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = [e for e in json_events(proc.stdout) if e["type"] == "tool_result"]
    assert result["status"] == "ok" and (world.workspace / "build").is_dir()
    (record,) = world.audit_records()
    assert record["approval"]["approved_by"] == "classifier"
    assert record["approval"]["feedback"] == "the user asked for a build dir"
