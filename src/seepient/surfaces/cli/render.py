"""Turns runtime events into what a person reads in a terminal, or into JSON lines for programs."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from seepient.protocol import (
    ErrorEvent,
    PermissionResolved,
    RuntimeEvent,
    TextDelta,
    ToolCallEvent,
    ToolResult,
    TurnCompleted,
)

_STATUS_MARK = {"ok": "✓", "error": "✗", "denied": "⛔", "rejected": "✋"}


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
