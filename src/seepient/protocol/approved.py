"""An action cleared to run: the prepared draft with the verdict and the approval that let it through. Only the
tool-call pipeline's hand-off to execution makes one, and executors take nothing else."""

from __future__ import annotations

import hmac

from pydantic import BaseModel, ConfigDict, model_validator

from seepient.protocol.actions import ActionKind, ActionPayload, PreparedActionDraft
from seepient.protocol.approval import ApprovalResponse
from seepient.protocol.verdict import Decision, Verdict


class ApprovedAction(BaseModel):
    """``draft`` as policy judged it (``verdict``) and, when policy asked, as someone approved it (``approval``).

    It cannot be made for an action policy denied, one that was asked about and not approved, or with an
    approval of another digest: whatever holds one holds an action that may run. Its digest is the draft's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    draft: PreparedActionDraft
    verdict: Verdict
    approval: ApprovalResponse | None = None

    @model_validator(mode="after")
    def _cleared(self) -> ApprovedAction:
        problem = self.why_not_cleared()
        if problem is not None:
            raise ValueError(problem)
        return self

    def why_not_cleared(self) -> str | None:
        """Why this action may not run, or None when it may. Checked when it is made, and again by executors
        (a copy made with ``model_copy`` is not validated)."""
        if self.verdict.decision is Decision.DENY:
            return f"policy denied this action ({self.verdict.rule}); it cannot be approved"
        if self.approval is not None:
            if not self.approval.approved:
                return "the approval rejects this action; it cannot run"
            # Approvals bind to the digest (DESIGN §3): an answer about another action approves nothing here.
            if not hmac.compare_digest(self.approval.digest, self.draft.digest):
                return "the approval is for another action (its digest differs); nothing runs"
        elif self.verdict.decision is Decision.ASK:
            return "policy asked about this action and nobody approved it; it cannot run"
        return None

    # The draft's own fields, so that what runs reads like what was prepared.

    @property
    def digest(self) -> str:
        return self.draft.digest

    @property
    def payload(self) -> ActionPayload:
        return self.draft.payload

    @property
    def id(self) -> str:
        return self.draft.id

    @property
    def session_id(self) -> str:
        return self.draft.session_id

    @property
    def call_id(self) -> str:
        return self.draft.call_id

    @property
    def tool(self) -> str:
        return self.draft.tool

    @property
    def kind(self) -> ActionKind:
        return self.draft.kind

    @property
    def read_only(self) -> bool:
        return self.draft.read_only

    @property
    def summary(self) -> str:
        return self.draft.summary
