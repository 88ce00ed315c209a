"""End to end on a real pseudo-terminal: the approval prompt, a file changed while the prompt is open,
rejection feedback reaching the model, and Ctrl-C ending a turn without leaving a half-done action."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import BIN
from tests.e2e.conftest import json_events


class Terminal:
    """The ``seepient`` command on a pty for stdin and stderr; stdout (JSON events) stays a pipe."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [str(BIN / "seepient"), *args],
            stdin=slave,
            stderr=slave,
            stdout=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(slave)
        self.screen = b""

    def expect(self, needle: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while needle.encode() not in self.screen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"never saw {needle!r}; screen was:\n{self.screen.decode(errors='replace')}"
                )
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096)
                except OSError:
                    break
        return self.screen.decode(errors="replace")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        out, _ = self.proc.communicate(timeout=timeout)
        os.close(self.master)
        return self.proc.returncode, out.decode()


def test_file_changed_while_prompt_is_open_does_not_land(world):
    target = world.workspace / "calc.py"
    target.write_text("def add(a, b):\n    return a - b\n")
    script = world.script(
        [
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                    }
                ]
            },
            {"text": "done"},
        ]
    )
    term = Terminal(["run", "fix", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    screen = term.expect("Approve?")
    assert "return a + b" in screen  # the diff is shown before the question
    target.write_text("def add(a, b):\n    return b - a  # changed by the user meanwhile\n")
    term.send("y\n")
    code, out = term.finish()
    assert code == 0
    assert target.read_text() == "def add(a, b):\n    return b - a  # changed by the user meanwhile\n"
    result = next(e for e in json_events(out) if e["type"] == "tool_result")
    assert result["status"] == "error"
    assert "FILE_CHANGED" in result["output"] or "changed" in result["output"].lower()
    assert world.audit_records()[0]["outcome"]["status"] == "error"


def test_reject_with_feedback_goes_back_to_the_model(world):
    script = world.script(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "touch made-by-model"}}]}, {"text": "ok"}]
    )
    term = Terminal(["run", "x", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    term.expect("Approve?")
    term.send("n\n")
    term.expect("why")
    term.send("use git instead\n")
    code, out = term.finish()
    assert code == 0
    assert not (world.workspace / "made-by-model").exists()
    result = next(e for e in json_events(out) if e["type"] == "tool_result")
    assert result["status"] == "rejected"
    assert "use git instead" in result["output"]


def test_approve_for_session_is_not_asked_twice(world):
    call = {"name": "shell", "arguments": {"command": "touch twice"}}
    script = world.script([{"tool_calls": [call]}, {"tool_calls": [call]}, {"text": "ok"}])
    term = Terminal(["run", "x", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    term.expect("Approve?")
    term.send("a\n")
    term.expect("Scope?")
    term.send("\n")  # Enter: this exact action
    code, out = term.finish()
    assert code == 0, term.screen.decode(errors="replace")
    assert term.screen.decode(errors="replace").count("Approve?") == 1
    statuses = [e["status"] for e in json_events(out) if e["type"] == "tool_result"]
    assert statuses == ["ok", "ok"]


def test_ctrl_c_ends_the_turn_and_kills_the_command(world):
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "shell", "arguments": {"command": "echo $$ > pid; sleep 60; touch finished"}}
                ]
            },
            {"text": "never"},
        ]
    )
    term = Terminal(["run", "x", "-y", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    pid_file = world.workspace / "pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.kill(term.proc.pid, signal.SIGINT)
    code, out = term.finish()
    assert code == 130
    events = json_events(out)
    assert events[-1]["type"] == "turn_completed" and events[-1]["reason"] == "interrupted"
    assert not (world.workspace / "finished").exists()
    records = world.audit_records()
    assert [r["outcome"]["status"] for r in records] == ["interrupted"]
    # The sandboxed shell lived in its own pid namespace; no sleep from it may survive on the host.
    leftovers = subprocess.run(["pgrep", "-f", "sleep 60; touch finished"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
