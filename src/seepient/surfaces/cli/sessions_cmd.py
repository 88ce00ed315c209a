"""``seepient sessions list|show|delete``: the sessions ``seepient run`` and the TUI stored in the home database."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from seepient.protocol.fields import same_named
from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.render import call_label, short_text

sessions_app = typer.Typer(help="Stored sessions of `seepient run` and the TUI.", no_args_is_help=True)

_T = TypeVar("_T")
_STATUS_MARK = {"ok": "✓", "error": "✗"}


def register(app: typer.Typer) -> None:
    app.add_typer(sessions_app, name="sessions")


def _with_log(workspace: Path | None, use: Callable[[Any], Awaitable[_T]]) -> _T:
    """Open the home database's session log, hand it to ``use``, close it; a store that cannot open exits 2."""
    from seepient.config import SeepientPaths
    from seepient.store import StoreError
    from seepient.surfaces.stored_sessions import SessionLog

    async def _run() -> _T:
        async with contextlib.aclosing(
            await SessionLog.open(SeepientPaths.from_env().home, workspace)
        ) as log:
            return await use(log)

    try:
        return asyncio.run(_run())
    except StoreError as exc:
        raise fail(f"cannot read the stored sessions: {exc}") from None


def _load(session_id: str) -> Any:
    async def get(log: Any) -> Any:
        try:
            return await log.get(session_id)
        except KeyError:
            return None

    stored = _with_log(None, get)
    if stored is None:
        raise fail(f"no stored session {session_id!r} (`seepient sessions list` shows the stored ones)")
    return stored


_SUMMARY_FIELDS = ("id", "workspace", "model", "mode", "created_at", "updated_at", "turns", "first_prompt")


def _summary_json(summary: Any) -> dict[str, Any]:
    body = same_named(summary, _SUMMARY_FIELDS)
    return body | {"created_at": body["created_at"].isoformat(), "updated_at": body["updated_at"].isoformat()}


@sessions_app.command("list")
def list_command(
    workspace: Annotated[
        Path | None, typer.Option(help="Only this project folder's sessions (default: every folder's).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """List stored sessions, most recently used first."""
    ws = None
    if workspace is not None:
        ws = workspace_dir(workspace)
    summaries = _with_log(ws, lambda log: log.recent(limit=None))
    if json_output:
        typer.echo(json.dumps([_summary_json(s) for s in summaries], ensure_ascii=False))
        return
    if not summaries:
        typer.echo("no stored sessions", err=True)
        return
    for s in summaries:
        when = s.updated_at.astimezone().strftime("%Y-%m-%d %H:%M")
        first = short_text(s.first_prompt, 50)
        turns = f"{s.turns} turn{'s' if s.turns != 1 else ''}"
        typer.echo(f"{s.id}  {when}  {turns:>8}  {s.model}  {s.workspace}  {first}")


@sessions_app.command("show")
def show_command(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="The session (`seepient sessions list`).")],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: the session, its turns and messages.")
    ] = False,
) -> None:
    """Show a stored session: each prompt, the model's text, its tool calls and their outcomes."""
    stored = _load(session_id)
    if json_output:
        document = {
            "session": _summary_json(stored.summary),
            "turns": [
                {"prompt": t.prompt, "reply": t.reply, "status": t.status, "reason": t.reason}
                for t in stored.turns
            ],
            "messages": stored.messages,
            "grants": [{"kind": kind, "value": value} for kind, value in stored.grants],
        }
        typer.echo(json.dumps(document, ensure_ascii=False))
        return
    s = stored.summary
    typer.echo(f"session {s.id} · {s.model} · {s.mode} · {s.workspace}")
    typer.echo(f"started {s.created_at.astimezone():%Y-%m-%d %H:%M}, {s.turns} turn(s)")
    for line in transcript_lines(stored.messages):
        typer.echo(line)
    unfinished = [t for t in stored.turns if t.status != "completed"]
    for turn in unfinished:
        typer.echo(f"(turn {short_text(turn.prompt, 40)!r} ended {turn.reason or turn.status})")


def transcript_lines(messages: list[dict[str, Any]]) -> list[str]:
    """A stored history as a person reads it: prompts, answers, tool calls and each call's outcome."""
    labels: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        role, content = message.get("role"), str(message.get("content") or "")
        if role == "user":
            lines.append("")
            lines.append(f"› {content}")
        elif role == "assistant":
            if content.strip():
                lines.append(content.rstrip())
            for call in message.get("tool_calls") or ():
                arguments = call.get("arguments") or {}
                labels[str(call.get("id"))] = call_label(str(call.get("name")), arguments)
                shown = ", ".join(f"{k}={short_text(v, 60)}" for k, v in arguments.items())
                lines.append(f"→ {call.get('name')}({shown})")
        elif role == "tool":
            label = labels.get(str(message.get("tool_call_id")), str(message.get("name") or "tool"))
            mark = _STATUS_MARK["error" if message.get("is_error") else "ok"]
            lines.append(f"  {mark} [{label}] {short_text(content, 100)}")
    return lines


@sessions_app.command("delete")
def delete_command(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="The session (`seepient sessions list`).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a stored session with its turns and grants (the audit log keeps its records)."""
    stored = _load(session_id)
    if not yes:
        if not sys.stdin.isatty():
            raise fail("give --yes to delete without a terminal to ask on")
        prompt = f"Delete session {session_id} ({stored.summary.turns} turn(s), {stored.summary.workspace})?"
        if not typer.confirm(prompt, default=False, err=True):
            typer.echo("seepient: nothing deleted", err=True)
            raise typer.Exit(exit_codes.OK)
    if not _with_log(None, lambda log: log.delete(session_id)):
        raise fail(f"no stored session {session_id!r}")
    typer.echo(f"deleted session {session_id}", err=True)
