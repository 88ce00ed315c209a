"""``seepient audit verify``'s report in words: what verified, what did not, and the actions left interrupted."""

from __future__ import annotations

from seepient.audit.verify import InterruptedAction, VerifyReport


def format_report(report: VerifyReport) -> str:
    """A few lines for a terminal: the verdict first, then the signature and witness, interrupted actions,
    then warnings."""
    if not report.exists and report.ok:
        return f"no audit log at {report.path} yet: nothing has been recorded (0 records)"
    if report.ok:
        head = f"; head seq {report.head_seq}, hash {report.head_hash}" if report.head_hash else ""
        lines = [f"audit log {report.path} is intact: {report.records} records verified{head}"]
        if report.signature == "valid":
            lines.append(
                f"head checkpoint (seq {report.checkpoint_seq}) signed by {report.key_id}: signature valid"
            )
        elif report.signature == "unchecked":
            lines.append(
                f"head checkpoint signed by {report.key_id}: signature NOT checked (no public key; pass "
                "--public-key)"
            )
        elif report.signature == "unsigned":
            lines.append(
                "head checkpoint: NOT signed (a log from before signing, or written without a key): a "
                "consistent rewrite of the log and its anchor would not be detected"
            )
        if report.witness is not None:
            seen = f"saw seq {report.witness_seq}" if report.witness_seq is not None else "holds nothing yet"
            lines.append(f"witness {report.witness}: {seen}, consistent with the log")
    else:
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        lines = [
            f"audit log {report.path} FAILED verification{where}: {report.problem}",
            f"{report.records} records before that point verify",
        ]
    for action in report.interrupted:
        lines.append(_interrupted_line(action))
    lines.extend(f"warning: {note}" for note in report.warnings)
    return "\n".join(lines)


def _interrupted_line(action: InterruptedAction) -> str:
    label = {
        "open": "INTERRUPTED (no outcome recorded)",
        "running": "in progress (its process still runs)",
        "closed": f"INTERRUPTED (closed as interrupted by session {action.closed_by})",
    }[action.state]
    files = ""
    if action.files:
        files = "; files: " + ", ".join(
            f"{state.path}: {_STATE_WORDS[state.state]}" for state in action.files
        )
    return f"{label}: seq {action.seq} {action.tool} in session {action.session_id}: {action.summary}{files}"


_STATE_WORDS = {
    "new": "new content",
    "old": "old content",
    "neither": "neither old nor new content",
    "unreadable": "unreadable",
}
