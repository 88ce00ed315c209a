"""The terminal approver on a real pipe: rendering, answers, scopes, the project rule, feedback, closed input."""

from __future__ import annotations

import io
import os

from seepient.approval.terminal import TerminalApprover, render_diff
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalScope,
    FileChange,
    PreparedActionDraft,
    Verdict,
)

EXACT = ApprovalScope(kind="exact", value="d" * 64, label="this exact action")
DIRECTORY = ApprovalScope(kind="directory", value="src", label="edits under src/")


def _request(
    scopes: tuple[ApprovalScope, ...] = (EXACT, DIRECTORY), project_rule: str | None = "Edit(/src/**)"
) -> ApprovalRequest:
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
    return ApprovalRequest(
        session_id="s",
        action=draft,
        verdict=Verdict.ask("mode:ask-untrusted", "writes need approval"),
        scopes=scopes,
        project_rule=project_rule,
    )


async def _answer(typed: bytes, request: ApprovalRequest | None = None):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, typed)
    os.close(write_fd)
    out = io.StringIO()
    try:
        response = await TerminalApprover(out=out, input_fd=read_fd, colour=False).decide(
            request or _request()
        )
    finally:
        os.close(read_fd)
    return response, out.getvalue()


async def test_shows_diff_and_reason_then_approves_once():
    response, shown = await _answer(b"y\n")
    assert response.decision is ApprovalDecision.APPROVE_ONCE
    assert "+x" in shown and "writes need approval" in shown and "Create a.py" in shown


async def test_reprompts_on_nonsense_then_session_with_the_default_exact_scope():
    response, shown = await _answer(b"maybe\na\n\n")
    assert response.decision is ApprovalDecision.APPROVE_SESSION and response.scope == "exact"
    assert "Please answer y, a, p or n." in shown
    assert "[e] this exact action (default)" in shown and "[d] edits under src/" in shown


async def test_session_scope_is_chosen_from_those_offered():
    response, shown = await _answer(b"a\nc\nd\n")
    assert response.decision is ApprovalDecision.APPROVE_SESSION and response.scope == "directory"
    assert "Please answer e, d" in shown  # 'c' (a command prefix) was not offered for a file change


async def test_a_single_scope_needs_no_second_question():
    response, shown = await _answer(b"a\n", _request(scopes=(EXACT,), project_rule=None))
    assert response.decision is ApprovalDecision.APPROVE_SESSION and response.scope == "exact"
    assert "Scope?" not in shown and "[p]" not in shown


async def test_project_answer_shows_the_rule_before_and_names_it():
    response, shown = await _answer(b"p\n")
    assert response.decision is ApprovalDecision.APPROVE_PROJECT and response.scope == "Edit(/src/**)"
    assert "[p] approve always in this project: adds Edit(/src/**)" in shown.split("Approve?")[0]


async def test_once_only_asks_accept_only_y_and_n():
    request = _request(scopes=(), project_rule=None)
    response, shown = await _answer(b"a\np\ny\n", request)
    assert response.decision is ApprovalDecision.APPROVE_ONCE
    assert "Approve? [y/n]" in shown and shown.count("Please answer y or n.") == 2
    assert "only once" in shown


async def test_reject_reads_feedback():
    response, _ = await _answer(b"n\nplease run the tests first\n")
    assert response.decision is ApprovalDecision.REJECT and response.feedback == "please run the tests first"


async def test_closed_input_rejects():
    response, _ = await _answer(b"")
    assert response.decision is ApprovalDecision.REJECT
    response, _ = await _answer(b"a\n")  # closed while choosing the scope
    assert response.decision is ApprovalDecision.REJECT


def test_colour_marks_additions_and_removals():
    painted = render_diff("-old\n+new\n@@ x @@", colour=True)
    assert "\x1b[31m-old" in painted and "\x1b[32m+new" in painted and "\x1b[36m@@" in painted
