"""Approval requests shown to a person (or a rule) and their answers, bound to an action digest."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from seepient.protocol.actions import PreparedActionDraft, new_id
from seepient.protocol.frozen import deferred_config
from seepient.protocol.verdict import Verdict


class ApprovalDecision(StrEnum):
    APPROVE_ONCE = "approve_once"
    APPROVE_SESSION = "approve_session"
    APPROVE_PROJECT = "approve_project"
    REJECT = "reject"
    REJECT_SESSION = "reject_session"
    """Reject, and refuse every later ask the same offered scope covers for the rest of the session."""


class ApprovalScope(BaseModel):
    """What "approve for this session" would cover: ``exact`` (this digest), ``prefix`` (shell commands whose
    every simple command starts with ``value``'s words) or ``directory`` (file changes under ``value``,
    workspace-relative). ``label`` is the human wording shown with the choice."""

    model_config = deferred_config(frozen=True, extra="forbid")

    kind: Literal["exact", "prefix", "directory"]
    value: str
    label: str


class ApprovalRequest(BaseModel):
    model_config = deferred_config(frozen=True, extra="forbid")

    request_id: str = Field(default_factory=lambda: new_id("apr"))
    session_id: str
    action: PreparedActionDraft
    verdict: Verdict
    scopes: tuple[ApprovalScope, ...] = ()
    """Session scopes offered; empty means only approve-once (or reject) can be answered."""
    project_rule: str | None = None
    """The allow rule "approve always for this project" would write, when that answer is offered."""
    agent: str | None = None
    """Which sub-agent asks (its id, depth and task), shown with the request; None for the session itself."""

    @property
    def digest(self) -> str:
        return self.action.digest

    @property
    def widest_scope(self) -> ApprovalScope:
        """The broadest scope offered (a command prefix or a directory over this exact action): what a
        surface's single "always" choice grants or refuses. This exact action when nothing is offered."""
        for scope in reversed(self.scopes):
            if scope.kind != "exact":
                return scope
        return ApprovalScope(kind="exact", value=self.digest, label="this exact action")


class ApprovalResponse(BaseModel):
    """``digest`` must equal the request's action digest, or the answer does not apply.

    ``approved_by`` says who answered (``user``, ``flag:-y``, ``grant:session``, ``classifier``, ``headless``).
    ``scope`` names the ``kind`` of the offered ``ApprovalScope`` an ``approve_session`` (or ``reject_session``)
    answer chose; a ``reject_session`` without one refuses this exact action.
    """

    model_config = deferred_config(frozen=True, extra="forbid")

    decision: ApprovalDecision
    digest: str
    feedback: str | None = None
    scope: str | None = None
    approved_by: str = "user"

    @property
    def approved(self) -> bool:
        return self.decision not in (ApprovalDecision.REJECT, ApprovalDecision.REJECT_SESSION)
