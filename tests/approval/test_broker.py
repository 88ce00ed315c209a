"""The approval broker: digest binding, session grants, -y, and headless refusal."""

from __future__ import annotations

from seepient.approval import HEADLESS_REASON, ApprovalBroker
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    PreparedActionDraft,
    ShellCommand,
    Verdict,
)


class ScriptedApprover:
    """A person at the seam: answers from a list and remembers what it was asked."""

    def __init__(self, *answers: ApprovalDecision, digest_override: str | None = None) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []
        self.digest_override = digest_override

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        self.asked.append(request)
        return ApprovalResponse(
            decision=self.answers.pop(0), digest=self.digest_override or request.digest, feedback="fb"
        )


def _request(command: str = "make") -> ApprovalRequest:
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind="shell",
        payload=ShellCommand(command=command, cwd="/w"),
        read_only=False,
        summary=command,
    )
    return ApprovalRequest(
        session_id="s", action=draft, verdict=Verdict.ask("mode:ask-untrusted", "needs a person")
    )


async def test_headless_refuses_at_once_with_reason():
    broker = ApprovalBroker(None)
    assert broker.headless
    response = await broker.resolve(_request())
    assert response.decision is ApprovalDecision.REJECT and response.feedback == HEADLESS_REASON


async def test_yes_flag_approves_and_says_so():
    response = await ApprovalBroker(None, auto_approve=True).resolve(_request())
    assert response.approved and response.approved_by == "flag:-y"


async def test_session_grant_covers_the_same_digest_only():
    person = ScriptedApprover(ApprovalDecision.APPROVE_SESSION, ApprovalDecision.REJECT)
    broker = ApprovalBroker(person)
    assert (await broker.resolve(_request("make"))).approved
    again = await broker.resolve(_request("make"))
    assert again.approved and again.approved_by == "grant:session"
    assert len(person.asked) == 1
    other = await broker.resolve(_request("make install"))
    assert not other.approved and len(person.asked) == 2


async def test_answer_for_another_digest_is_a_rejection():
    broker = ApprovalBroker(ScriptedApprover(ApprovalDecision.APPROVE_SESSION, digest_override="f" * 64))
    response = await broker.resolve(_request())
    assert not response.approved and response.approved_by == "broker:digest_mismatch"
    assert not broker.has_session_grant(_request().digest)


async def test_reject_keeps_feedback():
    response = await ApprovalBroker(ScriptedApprover(ApprovalDecision.REJECT)).resolve(_request())
    assert not response.approved and response.feedback == "fb"
