"""The pipeline's one hand-off to execution, through a real session: a tool's ``execute`` receives the
``ApprovedAction`` of exactly the draft it prepared, with the verdict that let it through and, when policy
asked, the answer the person gave; the executor it hands that action to carries it out."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from seepient.protocol import (
    ApprovalDecision,
    ApprovedAction,
    CommitOutcome,
    Decision,
    FileChange,
    PreparedActionDraft,
    ReadAction,
    ToolResult,
)
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.runtime.conftest import audit_lines
from tests.support.approver import ScriptedApprover


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    write: bool = False


class HandOffProbe(Tool[_Args]):
    """Prepares a read, or the creation of ``probe.txt``, and keeps the action its ``execute`` was handed."""

    name: ClassVar[str] = "hand_off_probe"
    description: ClassVar[str] = "test"
    input_model: ClassVar[type[BaseModel]] = _Args

    def __init__(self) -> None:
        self.prepared: list[PreparedActionDraft] = []
        self.handed: list[Any] = []

    async def prepare(self, args: _Args, ctx: ToolContext) -> PreparedActionDraft:
        if args.write:
            change = FileChange(path="probe.txt", pre_image_sha256=None, new_content="landed\n")
            draft = ctx.draft(self.name, change, summary="Write probe.txt")
        else:
            read = ReadAction(operation="glob", paths=(str(ctx.workspace),))
            draft = ctx.draft(self.name, read, summary="peek")
        self.prepared.append(draft)
        return draft

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        self.handed.append(action)
        if isinstance(action.payload, FileChange):
            outcome = await ctx.executor.execute(action)
            assert isinstance(outcome, CommitOutcome)
            return ToolOutput(text=outcome.code, is_error=not outcome.ok)
        return ToolOutput(text="peeked")


def _call(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "hand_off_probe", "arguments": arguments}]}


async def test_an_allowed_read_is_handed_over_with_its_verdict_and_no_approval(make_session) -> None:
    probe = HandOffProbe()
    session, _ = make_session([_call(), {"text": "ok"}], extra_tools=[probe])
    await session.run("x")
    await session.aclose()
    (action,) = probe.handed
    assert isinstance(action, ApprovedAction) and action.draft == probe.prepared[0]
    assert action.verdict.decision is Decision.ALLOW and action.approval is None


async def test_an_approved_change_is_handed_over_with_the_answer_bound_to_its_digest(make_session) -> None:
    probe = HandOffProbe()
    approver = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call(write=True), {"text": "ok"}], extra_tools=[probe], approver=approver
    )
    await session.run("x")
    await session.aclose()
    (action,) = probe.handed
    assert action.draft == probe.prepared[0] and action.verdict.decision is Decision.ASK
    assert action.approval is not None and action.approval.decision is ApprovalDecision.APPROVE_ONCE
    assert action.approval.digest == action.digest == approver.asked[0].digest
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.status == "ok" and (session.workspace / "probe.txt").read_text() == "landed\n"
    intent = next(line for line in audit_lines(session) if line["type"] == "intent")
    assert intent["action"]["id"] == action.id and intent["approval"]["digest"] == action.digest


async def test_a_rejected_change_is_never_handed_over(make_session) -> None:
    probe = HandOffProbe()
    approver = ScriptedApprover((ApprovalDecision.REJECT, "no"))
    session, _ = make_session([_call(write=True), {"text": "ok"}], extra_tools=[probe], approver=approver)
    await session.run("x")
    await session.aclose()
    assert probe.handed == [] and not (session.workspace / "probe.txt").exists()
