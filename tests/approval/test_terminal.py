"""The terminal approver on a real pipe: rendering, answers, feedback, closed input."""

from __future__ import annotations

import io
import os

from seepient.approval.terminal import TerminalApprover, render_diff
from seepient.protocol import ApprovalDecision, ApprovalRequest, FileChange, PreparedActionDraft, Verdict


def _request() -> ApprovalRequest:
    change = FileChange(
        path="a.py", pre_image_sha256=None, new_content="x\n", diff="--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n"
    )
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="write_file",
        kind="file_change",
        payload=change,
        read_only=False,
        summary="Create a.py",
    )
    return ApprovalRequest(session_id="s", action=draft, verdict=Verdict.ask("mode", "writes need approval"))


async def _answer(typed: bytes):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, typed)
    os.close(write_fd)
    out = io.StringIO()
    try:
        response = await TerminalApprover(out=out, input_fd=read_fd, colour=False).decide(_request())
    finally:
        os.close(read_fd)
    return response, out.getvalue()


async def test_shows_diff_and_reason_then_approves_once():
    response, shown = await _answer(b"y\n")
    assert response.decision is ApprovalDecision.APPROVE_ONCE
    assert "+x" in shown and "writes need approval" in shown and "Create a.py" in shown


async def test_reprompts_on_nonsense_then_session():
    response, shown = await _answer(b"maybe\na\n")
    assert response.decision is ApprovalDecision.APPROVE_SESSION
    assert "Please answer y, a or n." in shown


async def test_reject_reads_feedback():
    response, _ = await _answer(b"n\nplease run the tests first\n")
    assert response.decision is ApprovalDecision.REJECT and response.feedback == "please run the tests first"


async def test_closed_input_rejects():
    response, _ = await _answer(b"")
    assert response.decision is ApprovalDecision.REJECT


def test_colour_marks_additions_and_removals():
    painted = render_diff("-old\n+new\n@@ x @@", colour=True)
    assert "\x1b[31m-old" in painted and "\x1b[32m+new" in painted and "\x1b[36m@@" in painted
