"""``seepient audit show`` (the log's actions, readably) and ``seepient audit export`` (JSON lines for a SIEM)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from seepient.surfaces.cli.failure import fail
from seepient.surfaces.cli.render import short_text

_MARK = {"ok": "✓", "error": "✗", "denied": "⛔", "rejected": "✋", "interrupted": "…"}


def register(audit_app: typer.Typer) -> None:
    audit_app.command("show")(show_command)
    audit_app.command("export")(export_command)


def _entries(log: Path | None, session: str | None) -> list[dict[str, Any]]:
    from seepient.audit.view import read_actions
    from seepient.config import SeepientPaths

    path = log or SeepientPaths.from_env().audit_log
    try:
        entries, unreadable = read_actions(path, session_id=session)
    except FileNotFoundError:
        raise fail(f"no audit log at {path} (nothing has been recorded yet)") from None
    except OSError as exc:
        raise fail(f"cannot read the audit log {path}: {exc.strerror or exc}") from None
    for line in unreadable:
        typer.echo(
            f"seepient: warning: {path} line {line.line} is {line.problem}; skipped "
            "(`seepient audit verify` checks the log)",
            err=True,
        )
    return entries


_LOG_HELP = "The log to read (default: the audit log in SEEPIENT_HOME)."
_SESSION_HELP = "Only this session's records."


def show_command(
    session: Annotated[str | None, typer.Option(help=_SESSION_HELP)] = None,
    log: Annotated[Path | None, typer.Option(help=_LOG_HELP)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON array of the entries.")] = False,
) -> None:
    """List the log's actions: when, which session, the tool and what it touched, how policy and approval
    decided, and the outcome. Reading checks nothing: `seepient audit verify` does."""
    entries = _entries(log, session)
    if json_output:
        typer.echo(json.dumps(entries, ensure_ascii=False))
        return
    if not entries:
        typer.echo("no audit records" + (f" for session {session}" if session else ""), err=True)
        return
    for entry in entries:
        typer.echo(_line(entry))


def _line(entry: dict[str, Any]) -> str:
    when = str(entry.get("timestamp") or "")[:19].replace("T", " ")
    if entry.get("type") != "action":
        return f"{entry.get('seq'):>6}  {when}  {entry.get('session_id') or '-'}  [{entry.get('type')}]"
    status = entry.get("status") or "?"
    decided = f"{entry.get('decision')} by {entry.get('rule')}"
    if entry.get("approved_by"):
        decided += f", {entry.get('approval')} ({entry.get('approved_by')})"
    code = f" exit {entry['exit_code']}" if entry.get("exit_code") is not None else ""
    who = f" {entry['principal']}" if entry.get("principal") else ""
    return (
        f"{entry.get('seq'):>6}  {when}  {entry.get('session_id')}{who}  {_MARK.get(status, '?')} {status}{code}  "
        f"{entry.get('tool')}: {short_text(entry.get('summary') or '', 70)}  [{decided}]"
    )


def export_command(
    session: Annotated[str | None, typer.Option(help=_SESSION_HELP)] = None,
    log: Annotated[Path | None, typer.Option(help=_LOG_HELP)] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Write one JSON object per action (intent and outcome joined, flat fields) as JSON lines, for a SIEM."""
    entries = _entries(log, session)
    lines = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
    if output is None:
        sys.stdout.write(lines)
        return
    try:
        output.write_text(lines, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(f"seepient: {len(entries)} record(s) written to {output}", err=True)
