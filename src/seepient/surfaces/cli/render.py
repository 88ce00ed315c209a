"""Turns runtime events into what a person reads in a terminal, or into JSON lines for programs."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from seepient.protocol import (
    ErrorEvent,
    PermissionResolved,
    RuntimeEvent,
    SubagentEvent,
    TextDelta,
    TodoUpdated,
    ToolCallEvent,
    ToolResult,
    TurnCompleted,
)

_STATUS_MARK = {"ok": "✓", "error": "✗", "denied": "⛔", "rejected": "✋"}
_TODO_MARK = {"pending": "☐", "in_progress": "▶", "completed": "☑"}


def _short(value: object, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HumanRenderer:
    """Model text on stdout as it streams; tool activity on stderr so stdout stays the answer."""

    def __init__(
        self, *, out: TextIO | None = None, err: TextIO | None = None, verbose: bool = False
    ) -> None:
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._verbose = verbose
        self._mid_line = False

    def _end_text_line(self) -> None:
        if self._mid_line:
            self._out.write("\n")
            self._out.flush()
            self._mid_line = False

    def _sub_agent(self, event: SubagentEvent) -> None:
        """A sub-agent's tool activity on stderr, tagged with the sub-agent; its text stays out of stdout."""
        inner = event.event
        tag = f"[sub-agent {event.agent_id}]"
        while inner.get("type") == "subagent_event":
            tag, inner = f"{tag}[sub-agent {inner.get('agent_id')}]", inner.get("event", {})
        kind = inner.get("type")
        if kind == "tool_call":
            call = inner.get("call", {})
            args = ", ".join(f"{k}={_short(v, 60)}" for k, v in (call.get("arguments") or {}).items())
            self._err.write(f"  {tag} → {call.get('name')}({args})\n")
        elif kind == "tool_result":
            status = str(inner.get("status"))
            first = (str(inner.get("output", "")).splitlines() or [""])[0]
            self._err.write(f"  {tag} {_STATUS_MARK.get(status, '?')} {status}: {_short(first)}\n")
        elif kind == "turn_completed":
            self._err.write(f"  {tag} finished ({inner.get('reason')})\n")

    def __call__(self, event: RuntimeEvent) -> None:
        if isinstance(event, TextDelta):
            self._out.write(event.text)
            self._out.flush()
            self._mid_line = not event.text.endswith("\n")
            return
        self._end_text_line()
        if isinstance(event, ToolCallEvent):
            args = ", ".join(f"{k}={_short(v, 60)}" for k, v in event.call.arguments.items())
            self._err.write(f"→ {event.call.name}({args})\n")
        elif isinstance(event, PermissionResolved):
            resp = event.response
            who = resp.approved_by
            self._err.write(f"  approval: {resp.decision.value} ({who})\n")
        elif isinstance(event, ToolResult):
            mark = _STATUS_MARK.get(event.status, "?")
            lines = event.output.splitlines() or [""]
            shown = lines if self._verbose else lines[:6]
            self._err.write(f"  {mark} {event.status}: {shown[0]}\n")
            for line in shown[1:]:
                self._err.write(f"    {line}\n")
            if len(shown) < len(lines):
                self._err.write(f"    … {len(lines) - len(shown)} more lines\n")
        elif isinstance(event, TodoUpdated):
            done = sum(1 for item in event.items if item.status == "completed")
            self._err.write(f"  todo ({done}/{len(event.items)} done)\n")
            for item in event.items:
                self._err.write(f"    {_TODO_MARK[item.status]} {_short(item.content)}\n")
        elif isinstance(event, SubagentEvent):
            self._sub_agent(event)
        elif isinstance(event, ErrorEvent):
            self._err.write(f"error ({event.code}): {event.message}\n")
        elif isinstance(event, TurnCompleted) and event.reason != "final":
            self._err.write(f"turn ended: {event.reason} after {event.steps} step(s)\n")
        self._err.flush()


class JsonRenderer:
    """One JSON object per line on stdout, exactly the runtime events."""

    def __init__(self, *, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def __call__(self, event: RuntimeEvent) -> None:
        self._out.write(event.model_dump_json() + "\n")
        self._out.flush()
