"""An action cleared to run: the prepared draft with the verdict and the approval that let it through. Only the
tool-call pipeline's hand-off to execution makes one, and executors take nothing else."""

from __future__ import annotations

import hmac
from typing import Any

from pydantic import BaseModel, PrivateAttr, model_validator

from seepient.protocol.actions import PreparedActionDraft
from seepient.protocol.approval import ApprovalResponse
from seepient.protocol.frozen import deferred_config
from seepient.protocol.verdict import Decision, Verdict


class _OfTheDraft:
    """An attribute of an approved action that is its draft's own (``payload``, ``summary``, ``digest``…)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, action: ApprovedAction | None, owner: type | None = None) -> Any:
        return self if action is None else getattr(action.draft, self._name)


class ApprovedAction(BaseModel):
    """``draft`` as policy judged it (``verdict``) and, when policy asked, as someone approved it (``approval``).

    It cannot be made for an action policy denied, one that was asked about and not approved, or with an
    approval of another digest: whatever holds one holds an action that may run. Its digest is the draft's.
    """

    model_config = deferred_config(frozen=True, extra="forbid", ignored_types=(_OfTheDraft,))

    draft: PreparedActionDraft
    verdict: Verdict
    approval: ApprovalResponse | None = None
    _bound: tuple[PreparedActionDraft, ApprovalResponse] | None = PrivateAttr(default=None)
    """The draft and approval objects whose digests were found equal: a large change's digest costs
    milliseconds, and the executor's second look need not pay it again for the very same objects."""

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
            if not self._binds(self.approval):
                return "the approval is for another action (its digest differs); nothing runs"
        elif self.verdict.decision is Decision.ASK:
            return "policy asked about this action and nobody approved it; it cannot run"
        return None

    def _binds(self, approval: ApprovalResponse) -> bool:
        # Approvals bind to the digest (DESIGN §3): an answer about another action approves nothing here. A copy
        # with another draft or approval (model_copy keeps _bound) holds other objects and is compared afresh.
        bound = self._bound
        if bound is not None and bound[0] is self.draft and bound[1] is approval:
            return True
        if not hmac.compare_digest(approval.digest, self.draft.digest):
            return False
        self._bound = (self.draft, approval)
        return True

    # The draft's own fields, so that what runs reads like what was prepared (and tools written against drafts
    # keep working).
    id = _OfTheDraft()
    session_id = _OfTheDraft()
    call_id = _OfTheDraft()
    tool = _OfTheDraft()
    kind = _OfTheDraft()
    payload = _OfTheDraft()
    read_only = _OfTheDraft()
    summary = _OfTheDraft()
    digest = _OfTheDraft()
