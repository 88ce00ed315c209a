"""Turns runtime events into what a person reads in a terminal, or into JSON lines for programs."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from seepient.approval.visible import shown
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


_NAMING_ARGUMENTS = ("path", "command", "url", "pattern", "file_path", "query")


def short_text(value: object, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_label(name: str, arguments: dict[str, object]) -> str:
    """A tool call in a few words (``read_file a.py``), so results that finish out of order can be told apart."""
    key = next((k for k in _NAMING_ARGUMENTS if k in arguments), next(iter(arguments), None))
    return name if key is None else f"{name} {short_text(arguments[key], 40)}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Visible:
    """A text stream that writes control and format characters as ``shown`` does; tool output, labels and
    arguments come from the model, the workspace or a tool. What is written is held until ``flush`` and then
    written in one piece: each line a line-buffered stream writes is a system call (and a wake-up of the
    terminal or the pipe's reader), and one event is several lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._held: list[str] = []

    def write(self, text: str) -> int:
        self._held.append(text)
        return len(text)

    def flush(self) -> None:
        if self._held:
            text = "".join(self._held)
            self._held.clear()
            self._stream.write(shown(text))
        self._stream.flush()


class HumanRenderer:
    """Model text on stdout as it streams; tool activity on stderr so stdout stays the answer."""

    def __init__(
        self, *, out: TextIO | None = None, err: TextIO | None = None, verbose: bool = False
    ) -> None:
        self._out: TextIO | _Visible = out or sys.stdout
        self._err = _Visible(err or sys.stderr)
        self._verbose = verbose
        # On a terminal, model text cannot carry escape sequences either: one that conceals text, switches the
        # character set or moves the cursor would garble the approval prompt printed after it.
        if _is_terminal(out or sys.stdout):
            self._out = _Visible(out or sys.stdout)
        self._mid_line = False
        self._labels: dict[str, str] = {}

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
            arguments = call.get("arguments") or {}
            args = ", ".join(f"{k}={short_text(v, 60)}" for k, v in arguments.items())
            self._labels[str(call.get("id"))] = call_label(str(call.get("name")), arguments)
            self._err.write(f"  {tag} → {call.get('name')}({args})\n")
        elif kind == "tool_result":
            status = str(inner.get("status"))
            label = self._labels.pop(str(inner.get("call_id")), str(inner.get("tool")))
            first = (str(inner.get("output", "")).splitlines() or [""])[0]
            self._err.write(
                f"  {tag} {_STATUS_MARK.get(status, '?')} [{label}] {status}: {short_text(first)}\n"
            )
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
            args = ", ".join(f"{k}={short_text(v, 60)}" for k, v in event.call.arguments.items())
            self._labels[event.call.id] = call_label(event.call.name, event.call.arguments)
            self._err.write(f"→ {event.call.name}({args})\n")
        elif isinstance(event, PermissionResolved):
            resp = event.response
            self._err.write(f"  approval: {resp.decision.value} ({resp.approved_by})\n")
        elif isinstance(event, ToolResult):
            mark = _STATUS_MARK.get(event.status, "?")
            label = self._labels.pop(event.call_id, event.tool)
            lines = event.output.splitlines() or [""]
            shown = lines if self._verbose else lines[:6]
            self._err.write(f"  {mark} [{label}] {event.status}: {shown[0]}\n")
            for line in shown[1:]:
                self._err.write(f"    {line}\n")
            if len(shown) < len(lines):
                self._err.write(f"    … {len(lines) - len(shown)} more lines\n")
        elif isinstance(event, TodoUpdated):
            done = sum(1 for item in event.items if item.status == "completed")
            self._err.write(f"  todo ({done}/{len(event.items)} done)\n")
            for item in event.items:
                self._err.write(f"    {_TODO_MARK[item.status]} {short_text(item.content)}\n")
        elif isinstance(event, SubagentEvent):
            self._sub_agent(event)
        elif isinstance(event, ErrorEvent):
            self._err.write(f"error ({event.code}): {event.message}\n")
        elif isinstance(event, TurnCompleted):
            if event.reason != "final":
                self._err.write(f"turn ended: {event.reason} after {event.steps} step(s)\n")
            self._err.write(f"tokens {event.usage.tokens_summary()}\n")
        self._err.flush()


class JsonRenderer:
    """One JSON object per line on stdout, exactly the runtime events."""

    def __init__(self, *, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def __call__(self, event: RuntimeEvent) -> None:
        self._out.write(event.model_dump_json() + "\n")
        self._out.flush()
