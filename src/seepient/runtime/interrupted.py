"""At a session's start: the actions an earlier run left interrupted (an intent whose process died before its
outcome) are finished or undone where they were file commits, recorded as interrupted, and reported once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seepient.audit.log import AuditLog, AuditLogError
from seepient.audit.record import AuditOutcome, FileState, OutcomeRecord
from seepient.audit.recovery import OpenIntent, file_states
from seepient.execution.commit_journal import Expected, recover_commits


@dataclass(frozen=True)
class InterruptedReport:
    """What this start found and recorded: one line per interrupted action, and anything it could not do."""

    lines: tuple[str, ...] = ()
    problem: str | None = None


def close_interrupted(audit: AuditLog, session_id: str, workspace: Path) -> InterruptedReport:
    """Close every intent of a dead process in ``workspace`` (or a worktree inside it) with an ``interrupted``
    outcome, after finishing or undoing its commit and sweeping its temp files, under the log's lock so each
    is closed once. Another project's are left for a session there: finishing them would change files in a
    folder this session was not opened on."""

    def outcome_for(intent: OpenIntent) -> OutcomeRecord | None:
        record = intent.record
        if not Path(record.workspace).is_relative_to(workspace):
            return None
        problems: list[str] = []
        if record.files:
            expected = {
                image.path: Expected(image.pre_image_sha256, image.post_image_sha256, image.delete)
                for image in record.files
            }
            problems = recover_commits(Path(record.workspace), record.writer.pid, expected)
        states = file_states(record)
        detail = "its process ended before recording an outcome (found when a later session started)"
        if problems:
            detail += "; " + "; ".join(problems)
        return OutcomeRecord.for_intent(
            record,
            AuditOutcome(status="interrupted", detail=detail),
            files=states,
            recovered_by=session_id,
        )

    try:
        closed = audit.close_interrupted(outcome_for)
    except (AuditLogError, OSError) as error:
        return InterruptedReport(problem=f"could not check the audit log for interrupted actions: {error}")
    lines = []
    for intent, outcome in closed:
        action = intent.record.action
        files = outcome.files if isinstance(outcome, OutcomeRecord) else ()
        lines.append(
            f"seq {intent.seq} {action.tool} in session {intent.record.session_id} ({action.summary}) was "
            f"interrupted{_describe(files)}"
        )
    return InterruptedReport(lines=tuple(lines))


def _describe(files: tuple[FileState, ...]) -> str:
    if not files:
        return ""
    words = {
        "new": "new content",
        "old": "old content",
        "neither": "other content",
        "unreadable": "unreadable",
    }
    return "; " + ", ".join(f"{state.path}: {words[state.state]}" for state in files)
