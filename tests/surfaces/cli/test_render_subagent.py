"""The CLI shows a sub-agent's tool activity on stderr, tagged with the sub-agent (nested ones too), and keeps
its text out of stdout, which holds only the session's own answer; the approval prompt names who asks."""

from __future__ import annotations

import io

from seepient.approval.terminal import render_request
from seepient.protocol import (
    ActionKind,
    AgentTask,
    ApprovalRequest,
    PreparedActionDraft,
    SubagentEvent,
    Verdict,
)
from seepient.surfaces.cli.render import HumanRenderer


def _wrapped(event: dict, agent_id: str = "ses_child") -> SubagentEvent:
    return SubagentEvent(
        session_id="ses_parent", seq=1, agent_id=agent_id, call_id="c1", depth=1, event=event
    )


def test_sub_agent_activity_goes_to_stderr_with_its_tag() -> None:
    out, err = io.StringIO(), io.StringIO()
    render = HumanRenderer(out=out, err=err)
    render(
        _wrapped({"type": "text_delta", "session_id": "ses_child", "seq": 1, "turn_id": "t", "text": "hi"})
    )
    render(
        _wrapped(
            {
                "type": "tool_call",
                "session_id": "ses_child",
                "seq": 2,
                "turn_id": "t",
                "call": {"id": "x", "name": "read_file", "arguments": {"path": "calc.py"}},
            }
        )
    )
    grandchild = {
        "type": "subagent_event",
        "session_id": "ses_child",
        "seq": 3,
        "agent_id": "ses_grand",
        "call_id": "c2",
        "depth": 2,
        "event": {
            "type": "tool_result",
            "status": "denied",
            "output": "Denied by policy\nmore",
            "tool": "shell",
        },
    }
    render(_wrapped(grandchild))
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert lines[0] == "  [sub-agent ses_child] → read_file(path=calc.py)"
    assert lines[1] == "  [sub-agent ses_child][sub-agent ses_grand] ⛔ [shell] denied: Denied by policy"


def test_the_approval_prompt_names_the_sub_agent_and_shows_the_task() -> None:
    task = AgentTask(
        task="Fix the parser\nand run its tests",
        tools=("read_file", "edit_file"),
        mode="always-ask",
        workspace="/ws/.seepient/worktrees/p",
        worktree="p",
        depth=2,
        parent_session_id="ses_child",
    )
    action = PreparedActionDraft(
        session_id="ses_child",
        call_id="c",
        tool="agent",
        kind=ActionKind.AGENT,
        payload=task,
        read_only=False,
        summary="Start a sub-agent",
    )
    request = ApprovalRequest(
        session_id="ses_child",
        action=action,
        verdict=Verdict.ask("mode:always-ask", "asks"),
        agent="sub-agent ses_child (depth 1) of ses_parent: fix things",
    )
    shown = render_request(request, colour=False)
    assert "asked by: sub-agent ses_child (depth 1) of ses_parent" in shown
    assert "task:    Fix the parser\nand run its tests" in shown
    assert "tools:   read_file, edit_file" in shown and "always-ask" in shown
