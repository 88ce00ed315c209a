"""A person at the approval seam: answers each request from a list, in order, and remembers what it was asked."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from seepient.protocol import ApprovalDecision, ApprovalRequest, ApprovalResponse


@dataclass(frozen=True)
class Answer:
    """One answer: the decision, the feedback the model reads, and the offered scope an approve-for-the-session
    answer picks."""

    decision: ApprovalDecision
    feedback: str | None = None
    scope: str | None = None


class ScriptedApprover:
    """Answers are given as an ``ApprovalDecision``, a ``(decision, feedback)`` pair or an ``Answer``.
    ``feedback`` is used by every answer that names none; ``digest`` replaces the request's digest in every
    answer (an approver answering for another action). Being asked with no answer left fails the test,
    naming the request."""

    def __init__(
        self,
        *answers: ApprovalDecision | tuple[ApprovalDecision, str | None] | Answer,
        feedback: str | None = None,
        digest: str | None = None,
    ) -> None:
        self.answers = [_answer(given, feedback) for given in answers]
        self.asked: list[ApprovalRequest] = []
        self._digest = digest

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        self.asked.append(request)
        if not self.answers:
            raise AssertionError(
                f"the scripted approver was asked about {request.action.summary!r} but has no answer left "
                f"({len(self.asked) - 1} given)"
            )
        answer = self.answers.pop(0)
        # A person takes a moment: other asks may arrive meanwhile, as they would at a real prompt.
        await asyncio.sleep(0)
        return ApprovalResponse(
            decision=answer.decision,
            digest=self._digest or request.digest,
            feedback=answer.feedback,
            scope=answer.scope,
        )


def _answer(
    given: ApprovalDecision | tuple[ApprovalDecision, str | None] | Answer, feedback: str | None
) -> Answer:
    if isinstance(given, Answer):
        return given if given.feedback is not None else Answer(given.decision, feedback, given.scope)
    if isinstance(given, tuple):
        decision, own = given
        return Answer(decision, own if own is not None else feedback)
    return Answer(given, feedback)
