"""The approval broker: routes each ask to a person or a standing answer and keeps session grants.

Every answer is bound to the action's digest; an answer for another digest is treated as a rejection,
so an action that changed after the prompt was shown cannot ride on the old approval.
"""

from __future__ import annotations

import hmac
from typing import Protocol

from seepient.protocol import ApprovalDecision, ApprovalRequest, ApprovalResponse


class Approver(Protocol):
    """A person (or a script standing in for one) who answers approval requests."""

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse: ...


HEADLESS_REASON = (
    "this action needs approval and no one can answer here (no terminal on stdin): "
    "rerun with -y/--yes to approve what policy would ask about, add an allow rule to the settings, "
    "or run in a terminal"
)


class ApprovalBroker:
    """Answers an ``ask`` verdict: a session grant, the ``-y`` flag, the approver, or a headless refusal.

    ``auto_approve`` is the ``-y`` flag: it answers asks only; deny verdicts never reach the broker.
    With neither an approver nor ``auto_approve`` the run is headless and refuses at once.
    """

    def __init__(self, approver: Approver | None, *, auto_approve: bool = False) -> None:
        self._approver = approver
        self._auto_approve = auto_approve
        self._session_grants: set[str] = set()

    @property
    def headless(self) -> bool:
        return self._approver is None and not self._auto_approve

    def has_session_grant(self, digest: str) -> bool:
        return any(hmac.compare_digest(digest, granted) for granted in self._session_grants)

    async def resolve(self, request: ApprovalRequest) -> ApprovalResponse:
        digest = request.digest
        if self.has_session_grant(digest):
            return ApprovalResponse(
                decision=ApprovalDecision.APPROVE_ONCE, digest=digest, approved_by="grant:session"
            )
        if self._auto_approve:
            return ApprovalResponse(
                decision=ApprovalDecision.APPROVE_ONCE, digest=digest, approved_by="flag:-y"
            )
        if self._approver is None:
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=digest,
                feedback=HEADLESS_REASON,
                approved_by="headless",
            )
        response = await self._approver.decide(request)
        if not hmac.compare_digest(response.digest, digest):
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=digest,
                feedback="the approval answered a different version of this action; nothing was run",
                approved_by="broker:digest_mismatch",
            )
        if response.decision is ApprovalDecision.APPROVE_SESSION:
            self._session_grants.add(digest)
        return response
