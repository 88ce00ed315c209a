"""The tool-call pipeline: find → validate → pre hooks → prepare → policy → approval → execute → post hooks
→ audit → format. Every call the model makes goes through exactly this path, in this order."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seepient.approval import HEADLESS_REASON, ApprovalBroker, once_only_reason
from seepient.audit.action_records import ActionRecords
from seepient.audit.log import AuditLog, AuditLogError
from seepient.audit.record import (
    AuditOutcome,
    AuditRecord,
    FileImages,
    IntentRecord,
    OutcomeRecord,
    OutcomeStatus,
)
from seepient.execution.commit import expected_images
from seepient.models.base import Model
from seepient.models.router import Purpose
from seepient.policy.classifier import AutoModeClassifier
from seepient.policy.engine import PolicyEngine
from seepient.protocol import (
    ActionExecutor,
    ActionKind,
    ApprovalDecision,
    ApprovalResponse,
    ApprovedAction,
    Decision,
    FileChange,
    FileChangeSet,
    HostReads,
    Message,
    OutcomeUnknown,
    PathDenied,
    PermissionRequest,
    PermissionResolved,
    PreparedActionDraft,
    SandboxUnavailable,
    ToolCall,
    ToolResult,
    Verdict,
)
from seepient.protocol.executor import CommandAnticipating
from seepient.runtime.events import EventStream
from seepient.runtime.first_action import FirstActionWarmup
from seepient.telemetry import content, log_event, metrics, span
from seepient.tools.base import Tool, ToolContext, ToolInputError, ToolOutput
from seepient.tools.format import truncate_middle
from seepient.tools.registry import ToolRegistry

PreHook = Callable[[ToolCall], Awaitable[str | ToolCall | None]]
"""Runs before preparation; a returned string blocks the call and is the reason the model sees; a returned
``ToolCall`` replaces the call's arguments, which are validated again and then prepared, evaluated by policy
and approved like any others (never around them)."""

PostHook = Callable[[PreparedActionDraft, ToolOutput], Awaitable[str | None]]
"""Runs after execution (and its audit record) with the action and its output; a returned string is appended
to what the model reads (hook feedback, diagnostics)."""


@dataclass
class PipelineDeps:
    registry: ToolRegistry
    policy: PolicyEngine
    broker: ApprovalBroker
    executor: ActionExecutor
    reads: HostReads
    audit: AuditLog
    events: EventStream
    workspace: Path
    session_id: str
    model_name: str
    surface: str
    default_timeout_ms: int = 120_000
    pre_hooks: list[PreHook] = field(default_factory=list)
    post_hooks: list[PostHook] = field(default_factory=list)
    classifier: AutoModeClassifier | None = None
    """Set in ``auto`` mode: decides asks of the consent mode before a person is asked."""
    transcript: Sequence[Message] = ()
    """The session's live history, which the classifier reads."""
    model_for: Callable[[Purpose], Model] | None = None
    """The standard-tier model of a purpose's route, for tools that declare a ``model_purpose``."""
    tool_arrival: Callable[[str], Awaitable[None]] | None = None
    """Waits while a tool of that name may still appear (its MCP server is starting in the background)."""
    first_action: FirstActionWarmup | None = None
    """The work the session's first action needs, started when it opened: waited for before any call runs."""


@dataclass(frozen=True)
class CallResult:
    """The tool message for the model plus what the surfaces were told."""

    message: Message
    status: str


def _validation_message(tool: Tool[Any], exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        problems.append(f"- {where}: {err['msg']}")
    fields = ", ".join(tool.input_model.model_fields)
    return f"Invalid arguments for {tool.name}:\n" + "\n".join(problems) + f"\nExpected fields: {fields}."


_log = logging.getLogger("seepient.runtime")


class ToolCallPipeline:
    def __init__(self, deps: PipelineDeps) -> None:
        self._d = deps
        self._verdicts: dict[str, str] = {}
        """Each running call's policy decision, by call id, for the metrics (calls run concurrently)."""

    def anticipate(self, tool_name: str) -> None:
        """The model has started a call of ``tool_name``: let the executor make ready what such a call's
        command will need (its jail), so that approval, not set-up, is what the command waits for."""
        tool = self._d.registry.get(tool_name)
        executor = self._d.executor
        if tool is not None and tool.runs_foreground_commands and isinstance(executor, CommandAnticipating):
            try:
                executor.anticipate_command()
            except Exception:  # a jail set up early is only a head start: the command sets its own up
                _log.debug("setting up a jail ahead of %s failed", tool_name, exc_info=True)

    async def run(self, call: ToolCall, turn_id: str) -> CallResult:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
        with span(f"execute_tool {call.name}", {**attributes, "gen_ai.tool.call.id": call.id}) as traced:
            try:
                result = await self._run(call, turn_id)
            finally:
                verdict = self._verdicts.pop(call.id, "none")
            traced.set("seepient.tool.status", result.status)
            metrics.tool_call(call.name, verdict, result.status)
            fields = {"tool": call.name, "call_id": call.id, "verdict": verdict, "status": result.status}
            log_event(_log, "tool_call", fields)
            return result

    async def _run(self, call: ToolCall, turn_id: str) -> CallResult:
        d = self._d
        if d.first_action is not None:
            # Until it is done, the warm-up builds the validators this call would use: never two at once.
            await d.first_action.wait()
        tool = d.registry.get(call.name)
        if tool is None and d.tool_arrival is not None:
            await d.tool_arrival(call.name)
            tool = d.registry.get(call.name)
        if tool is None:
            gone = d.registry.gone_reason(call.name)
            if gone is not None:
                return self._finish(
                    call, turn_id, "error", f"Tool {call.name} is no longer available: {gone}"
                )
            known = ", ".join(d.registry.names())
            return self._finish(
                call, turn_id, "error", f"Unknown tool {call.name!r}. Available tools: {known}."
            )
        if call.arguments_error:
            return self._finish(
                call,
                turn_id,
                "error",
                f"Arguments for {call.name} are not a JSON object: {call.arguments_error}",
            )
        surrogate = _lone_surrogate(call.arguments)
        if surrogate is not None:
            # JSON's "\ud800" escape decodes to a lone surrogate, which no file, command or canonical digest
            # (RFC 8785) can hold; say so rather than fail deep inside preparation.
            return self._finish(
                call,
                turn_id,
                "error",
                f"Arguments for {call.name} hold an unpaired UTF-16 surrogate (U+{ord(surrogate):04X}) in "
                "a string; write the character itself, not a surrogate escape",
            )
        try:
            args = tool.input_model.model_validate(call.arguments)
        except ValidationError as exc:
            return self._finish(call, turn_id, "error", _validation_message(tool, exc))

        original = call
        for hook in d.pre_hooks:
            answer = await hook(call)
            if isinstance(answer, ToolCall):
                call = original.model_copy(update={"arguments": answer.arguments, "raw_arguments": None})
                try:
                    args = tool.input_model.model_validate(call.arguments)
                except ValidationError as exc:
                    return self._finish(
                        original,
                        turn_id,
                        "error",
                        "A preToolUse hook changed the arguments into invalid ones.\n"
                        + _validation_message(tool, exc),
                    )
            elif answer:
                self._record_refused_call(call, Verdict.deny("hook:preToolUse", answer), answer)
                return self._finish(original, turn_id, "denied", f"Blocked by a hook: {answer}")
        modified_note = ""
        if call is not original:
            shown = json.dumps(call.arguments, default=str, ensure_ascii=False)
            shown = truncate_middle(shown, 2000)
            modified_note = f"[A preToolUse hook changed the arguments of this call to: {shown}]\n"

        if d.tool_arrival is not None:
            for needed in tool.tools_named(args):
                if d.registry.get(needed) is None:
                    await d.tool_arrival(needed)
        ctx = ToolContext(
            workspace=d.workspace,
            session_id=d.session_id,
            call_id=call.id,
            paths=d.policy.guard,
            executor=d.executor,
            reads=d.reads,
            default_timeout_ms=d.default_timeout_ms,
            model=d.model_for(tool.model_purpose) if tool.model_purpose and d.model_for else None,
        )
        try:
            with span("seepient.prepare") as traced:
                draft = await tool.prepare(args, ctx)
                traced.set("seepient.action.kind", draft.kind.value)
                traced.set("seepient.action.id", draft.id)
                traced.set("seepient.action.digest", draft.digest)
                traced.set("seepient.action.summary", content(draft.summary))
        except PathDenied as exc:
            verdict = Verdict.deny(exc.rule, exc.reason)
            self._record_refused_call(call, verdict, str(exc))
            return self._finish(call, turn_id, "denied", f"Denied: {exc.path}: {exc.reason}")
        except ToolInputError as exc:
            return self._finish(call, turn_id, "error", str(exc))

        with span("seepient.policy") as traced:
            verdict = d.policy.evaluate(draft)
            self._verdicts[call.id] = verdict.decision.value
            traced.set("seepient.policy.decision", verdict.decision.value)
            traced.set("seepient.policy.rule", verdict.rule)
            traced.set("seepient.policy.reasons", content("; ".join(verdict.reasons)))
        approval: ApprovalResponse | None = None
        if verdict.decision is Decision.DENY:
            self._record(draft, verdict, None, "denied", detail="; ".join(verdict.reasons))
            reasons = "; ".join(verdict.reasons) or "refused by policy"
            return self._finish(
                call, turn_id, "denied", f"Denied by policy ({verdict.rule}): {reasons}", draft
            )
        if verdict.decision is Decision.ASK:
            with span("seepient.approval") as traced:
                asked = time.monotonic()
                approval = await self._ask(draft, verdict, turn_id)
                waited = time.monotonic() - asked
                metrics.approval_wait(approval.decision.value, waited)
                traced.set("seepient.approval.wait_s", round(waited, 6))
                traced.set("seepient.approval.decision", approval.decision.value)
                traced.set("seepient.approval.by", approval.approved_by)
            if not approval.approved:
                feedback = approval.feedback or "no reason given"
                self._record(draft, verdict, approval, "rejected", detail=feedback)
                return self._finish(call, turn_id, "rejected", _refusal_text(approval, feedback), draft)

        output = await self._execute(tool, draft, ctx, verdict, approval)
        notes = []
        for post in d.post_hooks:
            note = await post(draft, output)
            if note:
                notes.append(note)
        text = modified_note + truncate_middle(output.text, tool.max_result_chars)
        if notes:
            text += "\n\n" + "\n".join(notes)
        data = output.data
        if modified_note:
            data = {**data, "hook_arguments": call.arguments}
        return self._finish(original, turn_id, "error" if output.is_error else "ok", text, draft, data)

    async def _ask(self, draft: PreparedActionDraft, verdict: Verdict, turn_id: str) -> ApprovalResponse:
        """ask → session grant → (auto mode) classifier → -y, a person, or a headless refusal."""
        d = self._d
        request = d.broker.request_for(draft, verdict)
        d.events.emit(PermissionRequest, turn_id=turn_id, request=request)
        response = d.broker.grant_answer(request)
        headless_reason: str | None = None
        classifier = d.classifier
        # The classifier answers only what the consent mode asked; asks that no mode may skip (and ask
        # rules a person wrote) go to a person, as in every other mode.
        if response is None and classifier is not None and once_only_reason(verdict) is None:
            if not classifier.stopped:
                response = await self._classify(classifier, draft, verdict)
            else:
                headless_reason = (
                    f"{classifier.stop_reason}, so a person must approve this action; {HEADLESS_REASON}"
                )
        if response is None:
            response = await d.broker.resolve(request, headless_reason=headless_reason)
        d.events.emit(PermissionResolved, turn_id=turn_id, request_id=request.request_id, response=response)
        return response

    async def _classify(
        self, classifier: AutoModeClassifier, draft: PreparedActionDraft, verdict: Verdict
    ) -> ApprovalResponse:
        decision = await classifier.classify(draft, verdict, list(self._d.transcript))
        reason = decision.reason
        if not decision.allowed and classifier.stopped:
            reason += (
                f" ({classifier.stop_reason}: from now on a person is asked, and a run with no one to ask "
                "refuses)"
            )
        return ApprovalResponse(
            decision=ApprovalDecision.APPROVE_ONCE if decision.allowed else ApprovalDecision.REJECT,
            digest=draft.digest,
            feedback=reason,
            approved_by="classifier",
        )

    async def _execute(
        self,
        tool: Tool[Any],
        draft: PreparedActionDraft,
        ctx: ToolContext,
        verdict: Verdict,
        approval: ApprovalResponse | None,
    ) -> ToolOutput:
        """The one place an approved action is handed to execution: the ``ApprovedAction`` is made here and
        nowhere else; its intent is durable first (write-ahead audit, DESIGN §4 invariant 13), its outcome
        follows, at most once."""
        try:
            approved = ApprovedAction(draft=draft, verdict=verdict, approval=approval)
        except ValidationError as exc:
            # Policy and the broker never let such an action this far; if one came, it does not run.
            why = "; ".join(str(error["msg"]) for error in exc.errors())
            self._record(draft, verdict, approval, "denied", detail=why)
            return ToolOutput(text=f"Not run: {why}.", is_error=True)
        try:
            intent = self._record_intent(draft, verdict, approval)
        except (AuditLogError, OSError, ValueError) as exc:
            # Nothing runs that the log could not cover: the model is told, and the action never starts.
            return ToolOutput(
                text=f"Not run: the audit log could not record this action's intent ({exc}); nothing was done.",
                is_error=True,
                data={"audit_unavailable": True},
            )
        backend = _backend(self._d.executor)
        with span("seepient.execution", {"seepient.execution.backend": backend}) as traced:
            started = time.monotonic()
            output = await self._run_approved(tool, approved, ctx, intent)
            metrics.execution(backend, time.monotonic() - started)
            traced.set("seepient.execution.exit_code", output.data.get("exit_code"))
            traced.set("seepient.execution.is_error", output.is_error)
            if output.data.get("dispatch_id"):
                traced.set("seepient.worker.dispatch_id", str(output.data["dispatch_id"]))
        # An executor that lost the action mid-way (a worker host died) cannot say whether it ran.
        status: OutcomeStatus = (
            "interrupted" if output.data.get("interrupted") else "error" if output.is_error else "ok"
        )
        self._record_outcome(intent, status, output=output, settling=True)
        return output

    async def _run_approved(
        self, tool: Tool[Any], approved: ApprovedAction, ctx: ToolContext, intent: IntentRecord
    ) -> ToolOutput:
        """The effect itself; an interrupt records the outcome here (the caller re-raises past its own)."""
        draft = approved.draft
        task = asyncio.ensure_future(tool.execute(approved, ctx))
        try:
            output = await asyncio.shield(task)
        except asyncio.CancelledError:
            # A commit is atomic and short: let it land (or not) and record what happened, so an
            # interrupt never leaves an executed action without its outcome. Anything else
            # (a shell command) is cancelled, which kills its whole process group.
            if draft.kind is ActionKind.FILE_CHANGE:
                output = await task
                self._record_outcome(intent, "error" if output.is_error else "ok", output=output)
            else:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
                self._record_outcome(intent, "interrupted", detail="interrupted by the user")
            raise
        except SandboxUnavailable as exc:
            output = ToolOutput(text=f"Not run: {exc}", is_error=True, data={"sandbox_unavailable": True})
        except OutcomeUnknown as exc:
            output = ToolOutput(text=f"Interrupted: {exc}", is_error=True, data={"interrupted": True})
        except Exception as exc:  # a tool bug must reach the model and the audit log, never crash the turn
            output = ToolOutput(text=f"{tool.name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return output

    def _record_intent(
        self, draft: PreparedActionDraft, verdict: Verdict, approval: ApprovalResponse | None
    ) -> IntentRecord:
        """Append (fsynced) the intent of an action about to run, naming every file it may change."""
        d = self._d
        files = _file_images(d.workspace, draft)
        intent = self._records().intent(draft, verdict, approval, workspace=str(d.workspace), files=files)
        self._append(intent, "intent")
        return intent

    def _record_outcome(
        self,
        intent: IntentRecord,
        status: OutcomeStatus,
        *,
        detail: str = "",
        output: ToolOutput | None = None,
        settling: bool = False,
    ) -> None:
        """Append the outcome bound to ``intent`` before it is reported anywhere: fsynced, or with ``settling``
        written in order and made durable on the log's worker thread while the result goes back (nothing
        depends on its fsync; the next record, an intent, waits for it)."""
        record = OutcomeRecord.for_intent(intent, _outcome(status, detail, output))
        self._append(record, "outcome", settling=settling)

    def _record_refused_call(self, call: ToolCall, verdict: Verdict, detail: str) -> None:
        """Refused before a draft existed (the path guard stopped preparation): there is no action to bind,
        so the record keeps the call itself, under its own type."""
        d = self._d
        self._append(
            {
                "type": "call_refused",
                "timestamp": datetime.now(UTC).isoformat(),
                "surface": d.surface,
                "session_id": d.session_id,
                "model": d.model_name,
                "call": {
                    "id": call.id,
                    "tool": call.name,
                    "arguments": json.loads(json.dumps(call.arguments, default=str)),
                },
                "verdict": verdict.model_dump(mode="json"),
                "outcome": {"status": "denied", "detail": detail[:500]},
            },
            "call_refused",
        )

    def _record(
        self,
        draft: PreparedActionDraft,
        verdict: Verdict,
        approval: ApprovalResponse | None,
        status: OutcomeStatus,
        *,
        detail: str = "",
    ) -> None:
        """Append the one record of an action that does not run (denied, rejected), fsynced."""
        self._append(
            self._records().not_run(draft, verdict, approval, _outcome(status, detail, None)), status
        )

    def _records(self) -> ActionRecords:
        d = self._d
        return ActionRecords(d.surface, d.session_id, d.model_name)

    def _append(
        self,
        record: AuditRecord | IntentRecord | OutcomeRecord | dict[str, Any],
        kind: str,
        *,
        settling: bool = False,
    ) -> None:
        """One audit append (fsynced, or settling: see ``AuditLog.append_settling``), traced with its seq."""
        with span("seepient.audit.append", {"seepient.audit.record": kind}) as traced:
            audit = self._d.audit
            entry = audit.append_settling(record) if settling else audit.append(record)
            traced.set("seepient.audit.seq", entry.seq)
        metrics.audit_append(kind)

    def _finish(
        self,
        call: ToolCall,
        turn_id: str,
        status: str,
        text: str,
        draft: PreparedActionDraft | None = None,
        data: dict[str, Any] | None = None,
    ) -> CallResult:
        self._d.events.emit(
            ToolResult,
            turn_id=turn_id,
            call_id=call.id,
            tool=call.name,
            status=status,
            output=text,
            action_id=draft.id if draft else None,
            digest=draft.digest if draft else None,
            data=data or {},
            summary=draft.summary if draft else None,
        )
        return CallResult(message=Message.tool_result(call, text, is_error=status != "ok"), status=status)


def _backend(executor: ActionExecutor) -> str:
    """``worker`` for a Docker worker behind the scheduler, ``local`` for this machine (in its jail)."""
    return str(getattr(executor, "execution_backend", "local"))


def _outcome(status: OutcomeStatus, detail: str, output: ToolOutput | None) -> AuditOutcome:
    if output is None:
        return AuditOutcome(status=status, detail=detail)
    return AuditOutcome.with_output(
        status, output.text, exit_code=output.data.get("exit_code"), detail=detail or output.text[:200]
    )


def _file_images(workspace: Path, draft: PreparedActionDraft) -> tuple[FileImages, ...]:
    """Every file a file change (or a set of them) may change, with the content it holds and will hold."""
    payload = draft.payload
    if isinstance(payload, FileChange):
        changes: tuple[FileChange, ...] = (payload,)
    elif isinstance(payload, FileChangeSet):
        changes = payload.changes
    else:
        return ()
    return tuple(
        FileImages(
            path=image.path,
            pre_image_sha256=image.pre_image_sha256.lower() if image.pre_image_sha256 else None,
            post_image_sha256=image.post_image_sha256,
            delete=image.delete,
        )
        for image in expected_images(workspace, changes)
    )


def _lone_surrogate(value: Any) -> str | None:
    """The first unpaired surrogate in any string of a JSON value (keys included), or None."""
    if isinstance(value, str):
        return next((ch for ch in value if "\ud800" <= ch <= "\udfff"), None)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key) or _lone_surrogate(item)
            if found is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _lone_surrogate(item)
            if found is not None:
                return found
    return None


def _refusal_text(approval: ApprovalResponse, feedback: str) -> str:
    """What the model reads when an ask was not approved: who said no, and why."""
    if approval.approved_by == "user":
        return f"The user rejected this action: {feedback}"
    if approval.approved_by == "classifier":
        return (
            f"Blocked by auto mode's safety classifier: {feedback}. Propose something else, or ask the user."
        )
    return f"Not run: {feedback}"
