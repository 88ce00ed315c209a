"""Approved actions for tests that drive an executor or a tool's ``execute`` directly: what the pipeline's
hand-off makes once policy allowed the action."""

from __future__ import annotations

from typing import Any

from seepient.protocol import (
    ActionKind,
    ApprovedAction,
    CommitOutcome,
    FileChange,
    FileChangeSet,
    PreparedActionDraft,
    ShellCommand,
    ShellOutcome,
    Verdict,
)
from seepient.protocol.actions import MemoryAction, ProcessControl
from seepient.protocol.outcomes import BackgroundOutput, BackgroundStarted

_KINDS = {
    "read": ActionKind.READ,
    "file_change": ActionKind.FILE_CHANGE,
    "file_change_set": ActionKind.FILE_CHANGE,
    "memory": ActionKind.FILE_CHANGE,
    "shell": ActionKind.SHELL,
    "process_control": ActionKind.PROCESS,
    "worktree": ActionKind.WORKTREE,
    "fetch": ActionKind.FETCH,
    "web_search": ActionKind.FETCH,
    "knowledge_search": ActionKind.READ,
    "agent": ActionKind.AGENT,
    "mcp": ActionKind.MCP,
    "mcp_server_start": ActionKind.MCP,
    "state": ActionKind.STATE,
}


def approve(draft: PreparedActionDraft) -> ApprovedAction:
    """``draft`` as allowed by policy without asking."""
    return ApprovedAction(draft=draft, verdict=Verdict.allow("test:allowed"))


def approved(payload: Any, *, session_id: str = "ses_test", tool: str = "test") -> ApprovedAction:
    """An allowed action of ``session_id`` carrying ``payload``."""
    return approve(
        PreparedActionDraft(
            session_id=session_id,
            call_id="call_test",
            tool=tool,
            kind=_KINDS[payload.type],
            payload=payload,
            read_only=False,
            summary=f"test {payload.type}",
        )
    )


# The executor's one verb, spelled per operation for tests that exercise one kind of action.


async def run_shell(executor: Any, command: ShellCommand, *, session_id: str = "ses_test") -> ShellOutcome:
    outcome = await executor.execute(approved(command, session_id=session_id))
    assert isinstance(outcome, ShellOutcome), outcome
    return outcome


async def start_background(executor: Any, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
    started = await executor.execute(
        approved(command.model_copy(update={"background": True}), session_id=session_id)
    )
    assert isinstance(started, BackgroundStarted), started
    return started


async def background_output(executor: Any, process_id: str, *, session_id: str) -> BackgroundOutput:
    control = ProcessControl(operation="output", process_id=process_id)
    output = await executor.execute(approved(control, session_id=session_id))
    assert isinstance(output, BackgroundOutput), output
    return output


async def kill_background(executor: Any, process_id: str, *, session_id: str) -> BackgroundOutput:
    control = ProcessControl(operation="kill", process_id=process_id)
    output = await executor.execute(approved(control, session_id=session_id))
    assert isinstance(output, BackgroundOutput), output
    return output


async def commit(executor: Any, change: FileChange | FileChangeSet | MemoryAction) -> CommitOutcome:
    outcome = await executor.execute(approved(change))
    assert isinstance(outcome, CommitOutcome), outcome
    return outcome
