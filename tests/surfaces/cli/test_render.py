"""What a person and a program see of runtime events."""

from __future__ import annotations

import io
import json

from seepient.protocol import TextDelta, ToolCall, ToolCallEvent, ToolResult, TurnCompleted, Usage
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


def test_usage_is_shown_after_the_turn_and_unknown_counts_say_so():
    out, err = io.StringIO(), io.StringIO()
    render = HumanRenderer(out=out, err=err)
    render(TurnCompleted(session_id="s", seq=1, turn_id="t", reason="final", steps=1))
    render(
        TurnCompleted(
            session_id="s",
            seq=2,
            turn_id="t",
            reason="final",
            usage=Usage(input_tokens=1200, output_tokens=7),
        )
    )
    assert err.getvalue() == "tokens unknown in / unknown out\ntokens 1,200 in / 7 out\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_model_text_and_tool_output_cannot_send_escape_sequences_to_the_terminal() -> None:
    """Red team (after issue 16): model text streamed raw to the terminal could conceal (SGR 8), switch the
    character set or move the cursor, garbling the approval prompt printed next; tool output on stderr too."""
    out, err = _Terminal(), io.StringIO()
    render = HumanRenderer(out=out, err=err)
    render(TextDelta(session_id="s", seq=1, turn_id="t", text="done\x1b[8m\x1b(0\u202e\n"))
    render(
        ToolResult(
            session_id="s",
            seq=2,
            turn_id="t",
            call_id="c",
            tool="shell",
            status="ok",
            output="x\x1b[2K\ry\x1b]52;c;aWQK\x07",
        )
    )
    for stream in (out, err):
        text = stream.getvalue()
        assert "\x1b" not in text and "\r" not in text and "\u202e" not in text and "\x07" not in text, text
    assert "\\x1b[8m" in out.getvalue() and "\\x1b[2K" in err.getvalue()
    piped = io.StringIO()
    HumanRenderer(out=piped, err=io.StringIO())(
        TextDelta(session_id="s", seq=1, turn_id="t", text="raw\x1b[1m\n")
    )
    assert piped.getvalue() == "raw\x1b[1m\n"  # a file or a pipe gets the answer as the model wrote it
