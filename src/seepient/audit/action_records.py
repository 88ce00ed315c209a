"""The records of one session's actions, stamped alike: who asked (surface, session, model), the action, its
verdict and approval; an intent before it runs, or the one record of an action that does not run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seepient.audit.liveness import current_writer
from seepient.audit.record import AuditOutcome, AuditRecord, FileImages, IntentRecord, Surface
from seepient.protocol import ApprovalResponse, PreparedActionDraft, Verdict


@dataclass(frozen=True)
class ActionRecords:
    """Made when a record is due, so a model switched mid-session is the one named."""

    surface: Surface
    session_id: str
    model: str

    def intent(
        self,
        draft: PreparedActionDraft,
        verdict: Verdict,
        approval: ApprovalResponse | None,
        *,
        workspace: str,
        files: tuple[FileImages, ...] = (),
    ) -> IntentRecord:
        """What is about to run, in the workspace it runs in, by this process (``writer``)."""
        return IntentRecord(
            **self._stamp(draft, verdict, approval), workspace=workspace, writer=current_writer(), files=files
        )

    def not_run(
        self,
        draft: PreparedActionDraft,
        verdict: Verdict,
        approval: ApprovalResponse | None,
        outcome: AuditOutcome,
    ) -> AuditRecord:
        """An action that was denied or rejected: its only record."""
        return AuditRecord(**self._stamp(draft, verdict, approval), outcome=outcome)

    def _stamp(
        self, draft: PreparedActionDraft, verdict: Verdict, approval: ApprovalResponse | None
    ) -> dict[str, Any]:
        return {
            "surface": self.surface,
            "session_id": self.session_id,
            "model": self.model,
            "action": draft,
            "verdict": verdict,
            "approval": approval,
        }
