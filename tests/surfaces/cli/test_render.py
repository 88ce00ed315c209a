"""What a person and a program see of runtime events."""

from __future__ import annotations

import io
import json

from seepient.protocol import TextDelta, ToolCall, ToolCallEvent, ToolResult, TurnCompleted
from seepient.surfaces.cli.render import HumanRenderer, JsonRenderer


def _events():
    return [
        TextDelta(session_id="s", seq=1, turn_id="t", text="Looking"),
        ToolCallEvent(
            session_id="s",
            seq=2,
            turn_id="t",
            call=ToolCall(id="c", name="read_file", arguments={"path": "a.py"}),
        ),
        ToolResult(
            session_id="s",
            seq=3,
            turn_id="t",
            call_id="c",
            tool="read_file",
            status="denied",
            output="Denied: /etc/shadow\n" + "\n".join(f"l{i}" for i in range(20)),
        ),
        TurnCompleted(session_id="s", seq=4, turn_id="t", reason="step_limit", steps=3),
    ]


def test_human_output_keeps_the_answer_on_stdout_and_activity_on_stderr():
    out, err = io.StringIO(), io.StringIO()
    render = HumanRenderer(out=out, err=err)
    for event in _events():
        render(event)
    assert out.getvalue() == "Looking\n"
    shown = err.getvalue()
    assert "→ read_file(path=a.py)" in shown
    assert "denied: Denied: /etc/shadow" in shown and "more lines" in shown
    assert "turn ended: step_limit after 3 step(s)" in shown


def test_json_output_is_one_event_per_line():
    out = io.StringIO()
    render = JsonRenderer(out=out)
    for event in _events():
        render(event)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["type"] for e in lines] == ["text_delta", "tool_call", "tool_result", "turn_completed"]
    assert [e["seq"] for e in lines] == [1, 2, 3, 4]
