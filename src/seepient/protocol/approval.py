"""Approval requests shown to a person (or a rule) and their answers, bound to an action digest."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from seepient.protocol.actions import PreparedActionDraft, new_id
from seepient.protocol.verdict import Verdict


class ApprovalDecision(StrEnum):
    APPROVE_ONCE = "approve_once"
    APPROVE_SESSION = "approve_session"
    REJECT = "reject"


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str = Field(default_factory=lambda: new_id("apr"))
    session_id: str
    action: PreparedActionDraft
    verdict: Verdict

    @property
    def digest(self) -> str:
        return self.action.digest


class ApprovalResponse(BaseModel):
    """``digest`` must equal the request's action digest, or the answer does not apply.

    ``approved_by`` says who answered (``user``, ``flag:-y``, ``grant:session``, ``headless``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: ApprovalDecision
    digest: str
    feedback: str | None = None
    scope: str | None = None
    approved_by: str = "user"

    @property
    def approved(self) -> bool:
        return self.decision is not ApprovalDecision.REJECT
