"""Unified diffs turned into rich renderables: a side-by-side split view with line numbers, or a numbered
unified view for narrow terminals."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from seepient.approval.visible import shown

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")

SPLIT_MIN_WIDTH = 100
"""Below this many columns the split view would wrap every line, so the unified view is shown instead."""

_STYLE = {"del": "red on #3b1a1a", "add": "green on #16331c", "same": "", "hunk": "cyan"}


@dataclass(frozen=True)
class DiffLine:
    kind: Literal["same", "add", "del", "hunk"]
    text: str
    old_no: int | None = None
    new_no: int | None = None


def parse_unified(diff: str) -> list[DiffLine]:
    """The lines of a unified diff with old and new line numbers; the ``---``/``+++`` headers are dropped."""
    lines: list[DiffLine] = []
    old_no = new_no = 0
    for raw in diff.splitlines():
        if raw.startswith(("--- ", "+++ ")) and not lines:
            continue
        match = _HUNK.match(raw)
        if match:
            old_no, new_no = int(match.group(1)), int(match.group(2))
            lines.append(DiffLine("hunk", raw))
        elif raw.startswith("+"):
            lines.append(DiffLine("add", raw[1:], new_no=new_no))
            new_no += 1
        elif raw.startswith("-"):
            lines.append(DiffLine("del", raw[1:], old_no=old_no))
            old_no += 1
        elif raw.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            lines.append(DiffLine("same", raw[1:] if raw.startswith(" ") else raw, old_no, new_no))
            old_no += 1
            new_no += 1
    return lines


def _split_rows(lines: list[DiffLine]) -> list[tuple[DiffLine | None, DiffLine | None]]:
    """Pair each run of deletions with the additions that follow it, so a changed line sits beside its old self."""
    rows: list[tuple[DiffLine | None, DiffLine | None]] = []
    dels: list[DiffLine] = []
    adds: list[DiffLine] = []

    def flush() -> None:
        for index in range(max(len(dels), len(adds))):
            rows.append(
                (dels[index] if index < len(dels) else None, adds[index] if index < len(adds) else None)
            )
        dels.clear()
        adds.clear()

    for line in lines:
        if line.kind == "del":
            if adds:
                flush()
            dels.append(line)
        elif line.kind == "add":
            adds.append(line)
        else:
            flush()
            rows.append((line, line))
    flush()
    return rows


def _number(value: int | None) -> Text:
    return Text("" if value is None else str(value), style="dim")


def render_split(diff: str) -> RenderableType:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    table.add_column(justify="right", no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for old, new in _split_rows(parse_unified(diff)):
        if old is not None and old.kind == "hunk":
            table.add_row("", Text(old.text, style=_STYLE["hunk"]), "", "")
            continue
        left = Text(old.text, style=_STYLE[old.kind]) if old is not None else Text("")
        right = Text(new.text, style=_STYLE[new.kind]) if new is not None else Text("")
        table.add_row(_number(old.old_no if old else None), left, _number(new.new_no if new else None), right)
    return table


def render_unified(diff: str) -> RenderableType:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    # Long lines wrap inside their own column, so the line numbers stay readable beside them.
    table.add_column(ratio=1, overflow="fold")
    for line in parse_unified(diff):
        if line.kind == "hunk":
            table.add_row("", "", Text(line.text, style=_STYLE["hunk"]))
            continue
        sign = {"add": "+", "del": "-", "same": " "}[line.kind]
        table.add_row(
            _number(line.old_no), _number(line.new_no), Text(sign + line.text, style=_STYLE[line.kind])
        )
    return table


def render_diff(diff: str, *, width: int) -> RenderableType:
    # A diff shows the model's content: no escape sequence or bidi override in it reaches the terminal.
    diff = shown(diff)
    if not diff.strip():
        return Text("(no textual diff)", style="dim")
    return render_split(diff) if width >= SPLIT_MIN_WIDTH else render_unified(diff)
