"""Runtime events as ACP ``session/update`` payloads: message and thought chunks, tool calls and their
progress (title, kind, locations, diff content), and the plan from ``todo_write``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import ToolCallLocation, ToolKind

from seepient.protocol import (
    ErrorEvent,
    FileChange,
    FileChangeSet,
    PermissionRequest,
    PermissionResolved,
    PreparedActionDraft,
    ReasoningDelta,
    RuntimeEvent,
    ShellCommand,
    TextDelta,
    TodoUpdated,
    ToolCall,
    ToolCallEvent,
    ToolResult,
)

_TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "apply_patch": "edit",
    "notebook_edit": "edit",
    "shell": "execute",
    "shell_background": "execute",
    "web_fetch": "fetch",
    "web_search": "fetch",
    "todo_write": "think",
}
_ACTION_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "file_change": "edit",
    "shell": "execute",
    "fetch": "fetch",
}
_RESULT_CHARS = 20_000


def tool_kind(name: str) -> ToolKind:
    return _TOOL_KINDS.get(name, "other")


def action_kind(action: PreparedActionDraft) -> ToolKind:
    payload = action.payload
    if isinstance(payload, FileChange) and payload.delete:
        return "delete"
    return _ACTION_KINDS.get(str(action.kind), tool_kind(action.tool))


def _call_title(call: ToolCall) -> str:
    args = call.arguments if isinstance(call.arguments, dict) else {}
    for key in ("command", "path", "pattern", "url", "query"):
        value = args.get(key)
        if isinstance(value, str) and value:
            shown = value if len(value) <= 120 else value[:119] + "…"
            return f"{call.name}: {shown}"
    return call.name


def _locations(workspace: Path, paths: list[str]) -> list[ToolCallLocation] | None:
    found = [
        ToolCallLocation(path=str(workspace / p) if not Path(p).is_absolute() else p) for p in paths if p
    ]
    return found or None


def _hunks(diff: str) -> list[tuple[str, str]]:
    """(old, new) text of each hunk of a unified diff, context lines in both."""
    hunks: list[tuple[list[str], list[str]]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("@@"):
            hunks.append(([], []))
        elif not hunks or line.startswith(("---", "+++", "\\")):
            continue
        elif line.startswith("-"):
            hunks[-1][0].append(line[1:])
        elif line.startswith("+"):
            hunks[-1][1].append(line[1:])
        else:
            hunks[-1][0].append(line[1:])
            hunks[-1][1].append(line[1:])
    return [("".join(old), "".join(new)) for old, new in hunks]


def _change_content(workspace: Path, change: FileChange) -> list[Any]:
    path = str(workspace / change.path)
    if change.delete:
        return [tool_content(text_block(f"delete {change.path}"))]
    if change.pre_image_sha256 is None and change.new_content is not None:
        return [tool_diff_content(path, change.new_content, None)]
    hunks = _hunks(change.diff)
    if not hunks:
        return [tool_content(text_block(f"change {change.path} (no textual diff)"))]
    return [tool_diff_content(path, new, old) for old, new in hunks]


def action_content(workspace: Path, action: PreparedActionDraft, reasons: tuple[str, ...] = ()) -> list[Any]:
    """What a person approves: a diff per changed hunk (path, old and new text) for file changes, the command
    and its folder for shell, the summary otherwise; then why policy asked."""
    payload = action.payload
    content: list[Any] = []
    if isinstance(payload, FileChange):
        content += _change_content(workspace, payload)
    elif isinstance(payload, FileChangeSet):
        for change in payload.changes:
            content += _change_content(workspace, change)
    elif isinstance(payload, ShellCommand):
        needs = ", ".join(c.value for c in payload.capabilities)
        text = f"$ {payload.command}\nin {payload.cwd or workspace}" + (f"\nneeds: {needs}" if needs else "")
        content.append(tool_content(text_block(text)))
    else:
        content.append(tool_content(text_block(action.summary)))
    if reasons:
        content.append(tool_content(text_block("why asked: " + "; ".join(reasons))))
    return content


def action_locations(workspace: Path, action: PreparedActionDraft) -> list[ToolCallLocation] | None:
    payload = action.payload
    if isinstance(payload, FileChange):
        return _locations(workspace, [payload.path])
    if isinstance(payload, FileChangeSet):
        return _locations(workspace, [change.path for change in payload.changes])
    return None


class UpdateTranslator:
    """Turns one session's runtime events into ACP session updates, remembering which tool call an
    approval request belongs to."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._asked: dict[str, str] = {}

    def updates(self, event: RuntimeEvent) -> list[Any]:
        if isinstance(event, TextDelta):
            return [update_agent_message_text(event.text)]
        if isinstance(event, ReasoningDelta):
            return [update_agent_thought_text(event.text)]
        if isinstance(event, ToolCallEvent):
            call = event.call
            args = call.arguments if isinstance(call.arguments, dict) else {}
            path = args.get("path") if isinstance(args.get("path"), str) else None
            return [
                start_tool_call(
                    call.id,
                    _call_title(call),
                    kind=tool_kind(call.name),
                    status="pending",
                    locations=_locations(self._workspace, [path]) if path else None,
                    raw_input=args,
                )
            ]
        if isinstance(event, PermissionRequest):
            action = event.request.action
            self._asked[event.request.request_id] = action.call_id
            return [
                update_tool_call(
                    action.call_id,
                    title=action.summary,
                    kind=action_kind(action),
                    content=action_content(self._workspace, action),
                    locations=action_locations(self._workspace, action),
                )
            ]
        if isinstance(event, PermissionResolved):
            call_id = self._asked.pop(event.request_id, None)
            if call_id is not None and event.response.approved:
                return [update_tool_call(call_id, status="in_progress")]
            return []
        if isinstance(event, ToolResult):
            output = (
                event.output if len(event.output) <= _RESULT_CHARS else event.output[:_RESULT_CHARS] + "…"
            )
            return [
                update_tool_call(
                    event.call_id,
                    title=event.summary,
                    status="completed" if event.status == "ok" else "failed",
                    content=[tool_content(text_block(output))] if output else None,
                    raw_output={"status": event.status},
                )
            ]
        if isinstance(event, TodoUpdated):
            return [update_plan(plan_entry(item.content, status=item.status) for item in event.items)]
        if isinstance(event, ErrorEvent):
            return [update_agent_message_text(f"\n\n[seepient: {event.message}]\n\n")]
        return []
