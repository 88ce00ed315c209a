"""End to end: ``seepient run`` stores its sessions, ``--continue``/``--resume`` pick them up (history and replay
position), the bare TUI continues them too, and ``seepient sessions list|show|delete`` read and remove them."""

from __future__ import annotations

import json
import shlex

from tests.e2e.conftest import json_events
from tests.e2e.test_tui_tmux import SEEPIENT, exit_status, tmux_run  # noqa: F401  (the fixture)


def _sessions(seepient, *args: str) -> list[dict]:
    proc = seepient("sessions", "list", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_run_stores_the_session_and_continue_plays_on(world, seepient):
    (world.workspace / "b.py").write_text("y = 1\n")
    script = world.script(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "b.py"}}]},
            {"text": "read it"},
            {"text": "second answer"},
        ]
    )
    first = seepient("run", "look at b.py", "--model", f"replay:{script}")
    assert first.returncode == 0, first.stderr
    (stored,) = _sessions(seepient)
    assert stored["turns"] == 1 and stored["first_prompt"] == "look at b.py"
    assert stored["workspace"] == str(world.workspace.resolve())

    # The replay model plays on after the steps the stored history shows: without the history it would
    # answer with the first step (a tool call) again.
    again = seepient("run", "and now?", "--continue", "--model", f"replay:{script}", "--json")
    assert again.returncode == 0, again.stderr
    events = json_events(again.stdout)
    assert events[-1]["type"] == "turn_completed" and events[-1]["text"] == "second answer"
    assert {e["session_id"] for e in events} == {stored["id"]}
    assert f"continuing session {stored['id']}" in again.stderr
    (after,) = _sessions(seepient)
    assert after["id"] == stored["id"] and after["turns"] == 2

    shown = seepient("sessions", "show", stored["id"])
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "› look at b.py" in text and "→ read_file(path=b.py)" in text
    assert "✓ [read_file b.py]" in text and "y = 1" in text
    assert "read it" in text and "› and now?" in text and "second answer" in text
    as_json = json.loads(seepient("sessions", "show", stored["id"], "--json").stdout)
    assert [t["prompt"] for t in as_json["turns"]] == ["look at b.py", "and now?"]
    tool_messages = [m for m in as_json["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "y = 1" in tool_messages[0]["content"]


def test_resume_by_id_and_clear_errors(world, seepient):
    script = world.script([{"text": "one"}, {"text": "two"}])
    assert seepient("run", "first", "--model", f"replay:{script}").returncode == 0
    assert seepient("run", "other", "--model", f"replay:{script}").returncode == 0
    older, newer = sorted(_sessions(seepient), key=lambda s: s["updated_at"])
    resumed = seepient("run", "next", "--resume", older["id"], "--model", f"replay:{script}", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json_events(resumed.stdout)[-1]["text"] == "two"
    assert json_events(resumed.stdout)[0]["session_id"] == older["id"]

    wrong = seepient("run", "next", "--resume", "ses_nope", "--model", f"replay:{script}")
    assert wrong.returncode == 2
    assert "no stored session 'ses_nope'" in wrong.stderr and "sessions list" in wrong.stderr
    assert seepient("run", "x", "-c", "--resume", older["id"]).returncode == 2
    assert seepient("run", "x", "--continue", "--ephemeral").returncode == 2
    assert seepient("sessions", "show", "ses_nope").returncode == 2

    elsewhere = world.outside
    other_ws = seepient(
        "run", "x", "--resume", older["id"], "--workspace", str(elsewhere), "--model", f"replay:{script}"
    )
    assert other_ws.returncode == 2 and str(world.workspace.resolve()) in other_ws.stderr
    nothing_there = seepient("run", "x", "--continue", "--workspace", str(elsewhere))
    assert nothing_there.returncode == 2 and "no stored session for the workspace" in nothing_there.stderr
    assert {s["id"] for s in _sessions(seepient)} == {older["id"], newer["id"]}


def test_ephemeral_stores_nothing_and_list_filters_by_workspace(world, seepient):
    script = world.script([{"text": "one"}])
    assert seepient("run", "quiet", "--ephemeral", "--model", f"replay:{script}").returncode == 0
    assert _sessions(seepient) == []
    assert seepient("run", "kept", "--model", f"replay:{script}").returncode == 0
    assert len(_sessions(seepient, "--workspace", str(world.workspace))) == 1
    assert _sessions(seepient, "--workspace", str(world.outside)) == []
    listed = seepient("sessions", "list")
    assert listed.returncode == 0 and "kept" in listed.stdout


def test_delete_asks_or_takes_yes(world, seepient):
    script = world.script([{"text": "one"}])
    assert seepient("run", "to delete", "--model", f"replay:{script}").returncode == 0
    (stored,) = _sessions(seepient)
    refused = seepient("sessions", "delete", stored["id"])
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert len(_sessions(seepient)) == 1
    assert seepient("sessions", "delete", stored["id"], "--yes").returncode == 0
    assert _sessions(seepient) == []
    assert seepient("sessions", "delete", stored["id"], "--yes").returncode == 2


def test_the_bare_tui_continues_a_run_session(world, seepient, tmux_run):  # noqa: F811
    script = world.script([{"text": "answer one"}, {"text": "answer two from the tui"}])
    assert seepient("run", "started on the cli", "--model", f"replay:{script}").returncode == 0
    (stored,) = _sessions(seepient)
    exit_file = world.home / "exit-code"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in world.env.items())
    command = (
        f"cd {shlex.quote(str(world.workspace))} && env -i {env} TERM=xterm-256color "
        f"{shlex.quote(str(SEEPIENT))} --continue --model {shlex.quote(f'replay:{script}')}; "
        f"echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    term = tmux_run(f"sh -c {shlex.quote(command)}")
    term.expect("/help for commands")
    # The earlier turn is on screen before the prompt, not only in the model's history.
    term.expect(f"earlier in session {stored['id']}")
    term.expect("› started on the cli")
    term.expect("answer one")
    term.send("go on", "Enter")
    term.expect("answer two from the tui")
    term.quit()
    assert exit_status(exit_file) == "0"
    (after,) = _sessions(seepient)
    assert after["id"] == stored["id"] and after["turns"] == 2
