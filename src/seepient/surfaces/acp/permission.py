"""Approval through the editor: each ask becomes ``session/request_permission`` with the action's diff or
command and options that map onto Seepient's answers; the answer is bound to the action's digest."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import RequestError, text_block, tool_content
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalResponse,
    FileChange,
    FileChangeSet,
    PreparedActionDraft,
)
from seepient.surfaces.acp.updates import action_content, action_kind, action_locations

_log = logging.getLogger("seepient.acp")

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
REJECT_ALWAYS = "reject_always"


def permission_options(request: ApprovalRequest) -> list[PermissionOption]:
    """``allow_always`` grants the widest offered scope for the session and is offered only when the ask
    may be granted at all; ``reject_always`` refuses that same scope for the rest of the session."""
    scope = request.widest_scope
    options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    if request.scopes:
        options.append(
            PermissionOption(
                option_id=ALLOW_ALWAYS, name=f"Allow for this session: {scope.label}", kind="allow_always"
            )
        )
    options.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    options.append(
        PermissionOption(
            option_id=REJECT_ALWAYS, name=f"Reject for this session: {scope.label}", kind="reject_always"
        )
    )
    return options


def answer_for(request: ApprovalRequest, option_id: str | None) -> ApprovalResponse:
    """The answer an option stands for; a cancelled request or an option never offered rejects."""
    digest = request.digest
    scope = request.widest_scope
    if option_id == ALLOW_ONCE:
        return ApprovalResponse(decision=ApprovalDecision.APPROVE_ONCE, digest=digest)
    if option_id == ALLOW_ALWAYS and request.scopes:
        return ApprovalResponse(decision=ApprovalDecision.APPROVE_SESSION, digest=digest, scope=scope.kind)
    if option_id == REJECT_ALWAYS:
        return ApprovalResponse(
            decision=ApprovalDecision.REJECT_SESSION,
            digest=digest,
            scope=scope.kind,
            feedback=f"the user rejected this in the editor, and {scope.label} for the rest of the session",
        )
    if option_id == REJECT_ONCE:
        return ApprovalResponse(
            decision=ApprovalDecision.REJECT, digest=digest, feedback="the user rejected this in the editor"
        )
    why = "the permission request was cancelled" if option_id is None else f"unknown option {option_id!r}"
    return ApprovalResponse(decision=ApprovalDecision.REJECT, digest=digest, feedback=why)


Ask = Callable[..., Any]
"""The connection's ``request_permission(session_id=, tool_call=, options=)``."""

ReadBuffer = Callable[..., Any]
"""The connection's ``read_text_file(session_id=, path=)``, when the editor offers it."""


def _changed_files(action: PreparedActionDraft) -> tuple[FileChange, ...]:
    payload = action.payload
    if isinstance(payload, FileChange):
        return (payload,)
    if isinstance(payload, FileChangeSet):
        return payload.changes
    return ()


async def buffer_warnings(
    read: ReadBuffer, session_id: str, workspace: Path, action: PreparedActionDraft
) -> list[str]:
    """Files the change was prepared against whose editor buffer holds something else (unsaved edits): the
    commit checks the file on disk, so the person is told before approving rather than losing the buffer."""
    warnings = []
    for change in _changed_files(action):
        if change.pre_image_sha256 is None:
            continue
        try:
            answer = await read(session_id=session_id, path=str(workspace / change.path))
        except (RequestError, ConnectionError) as exc:
            _log.info("no editor buffer for %s: %s", change.path, exc)
            continue
        digest = hashlib.sha256(answer.content.encode("utf-8")).hexdigest()
        if digest != change.pre_image_sha256.lower():
            warnings.append(
                f"{change.path} is open in the editor with content that differs from the file on disk "
                "(unsaved changes?): this change was prepared against the file on disk and would replace it"
            )
    return warnings


class EditorApprover:
    """The ``Approver`` of an ACP session: asks the editor and waits for its answer."""

    def __init__(
        self,
        ask: Callable[[], Ask | None],
        workspace: Path,
        read: Callable[[], ReadBuffer | None] = lambda: None,
    ) -> None:
        self._ask = ask
        self._workspace = workspace
        self._read = read

    async def decide(self, request: ApprovalRequest) -> ApprovalResponse:
        action = request.action
        content = action_content(self._workspace, action, request.verdict.reasons)
        read = self._read()
        if read is not None:
            for warning in await buffer_warnings(read, request.session_id, self._workspace, action):
                content.insert(0, tool_content(text_block(f"warning: {warning}")))
        tool_call = ToolCallUpdate(
            tool_call_id=action.call_id,
            title=action.summary,
            kind=action_kind(action),
            status="pending",
            content=content,
            locations=action_locations(self._workspace, action),
        )
        ask = self._ask()
        if ask is None:
            return answer_for(request, None)
        try:
            answer = await ask(
                session_id=request.session_id, tool_call=tool_call, options=permission_options(request)
            )
        except (RequestError, ConnectionError) as exc:
            _log.warning("the permission request failed: %s", exc)
            return ApprovalResponse(
                decision=ApprovalDecision.REJECT,
                digest=request.digest,
                feedback=f"the editor did not answer the permission request ({exc})",
            )
        outcome = answer.outcome
        return answer_for(request, outcome.option_id if isinstance(outcome, AllowedOutcome) else None)
