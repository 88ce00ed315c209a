"""The TUI's widgets: transcript entries (prompt, streamed markdown, compact tool calls), the prompt with
history, and the status bar."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Collapsible, Static, TextArea

from seepient.approval.visible import shown as visible
from seepient.surfaces.tui.attachments import pasted_image_paths
from seepient.surfaces.tui.diff import render_unified

if TYPE_CHECKING:
    from collections.abc import Sequence

    from seepient.protocol import TodoItem, ToolCall
    from seepient.surfaces.tui.palette import CompletionMenu

_STATUS_MARK = {
    "ok": ("✓", "green"),
    "error": ("✗", "red"),
    "denied": ("⊘", "red"),
    "rejected": ("✗", "yellow"),
}
_TODO_MARK = {"pending": ("☐", ""), "in_progress": ("▶", "bold yellow"), "completed": ("☑", "dim")}
_OUTPUT_SHOWN = 4_000
"""Characters of a tool's output kept in the transcript; the model saw all of it, the screen needs less."""


class TranscriptView(VerticalScroll):
    """The conversation, following new output while anchored.

    After each layout in which its content moved (its scroll offset or its scrollable size changed), it is
    drawn again whole. Textual 8.2 can rebuild its layout map lazily between two layouts (a widget not yet
    placed is refreshed, then looked up), taking the anchored scroll's new offset with it; the next layout then
    finds no row moved, and the rows that moved stayed stale on the terminal: an approved call and its answer
    line went undrawn while the answer after them showed."""

    _placed: tuple[float, object] | None = None
    """The scroll offset and scrollable size of the last layout, to tell when content moved."""

    def on_mount(self) -> None:
        self.screen.screen_layout_refresh_signal.subscribe(self, self._after_layout)

    def _after_layout(self, _screen: object) -> None:
        placed = (self.scroll_y, self.virtual_size)
        if placed != self._placed:
            self._placed = placed
            self.refresh()


class UserPrompt(Static):
    DEFAULT_CSS = "UserPrompt { margin: 1 0 0 0; color: $accent; text-style: bold; }"

    def __init__(self, prompt: str, *, images: int = 0, plan: bool = False) -> None:
        shown = Text("› " + ("/plan " if plan else "") + prompt)
        if images:
            shown.append(f"  [{images} image{'s' if images > 1 else ''}]", style="dim")
        super().__init__(shown)
        self.prompt = prompt
        self.images = images


class Notice(Static):
    DEFAULT_CSS = "Notice { color: $text-muted; margin: 0 0 0 2; }"

    def __init__(self, text: str, style: str = "") -> None:
        super().__init__(Text(visible(text), style=style))
        self.plain = text


def _call_summary(call: ToolCall) -> str:
    args = call.arguments
    for key in ("command", "path", "pattern", "url", "name"):
        value = args.get(key)
        if isinstance(value, str):
            return value.splitlines()[0] if value else ""
    return json.dumps(args, ensure_ascii=False)[:200]


class ToolCallView(Collapsible):
    """One tool call on one line (tool, argument, outcome); its output opens on click or Enter."""

    DEFAULT_CSS = """
    ToolCallView { margin: 0 0 0 2; padding: 0; border: none; background: transparent; }
    ToolCallView > Contents { padding: 0 0 0 2; }
    """

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.status: str | None = None
        self.output = ""
        self.diffs: list[tuple[str, str]] = []
        self._output = Static("", markup=False)
        super().__init__(self._output, title=self._heading(), collapsed=True)

    def _heading(self) -> str:
        mark = "…" if self.status is None else _STATUS_MARK[self.status][0]
        return visible(f"{mark} {self.call.name}  {_call_summary(self.call)}")

    def finish(self, status: str, output: str, data: Mapping[str, Any] | None = None) -> None:
        """Show the outcome; a file change shows its diff when expanded (the output says only what landed)."""
        self.status = status
        self.title = self._heading()
        self.output = output
        cut = output if len(output) <= _OUTPUT_SHOWN else output[:_OUTPUT_SHOWN] + "\n… (output cut)"
        result = Text(visible(cut) or "(no output)", style="" if status == "ok" else "red")
        self.diffs = _diffs(data or {})
        if self.diffs and status == "ok":
            parts: list[RenderableType] = [result]
            for path, diff in self.diffs:
                parts += [Text(visible(path), style="bold"), render_unified(visible(diff))]
            self._output.update(Group(*parts))
        else:
            self._output.update(result)
        if status in ("denied", "rejected"):
            self.add_class(f"-{status}")


def _diffs(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(path, unified diff)`` of each file a tool result says it changed (edit, write, apply_patch)."""
    changes = data.get("files") if isinstance(data.get("files"), list) else [data]
    return [
        (str(change.get("path", "")), change["diff"])
        for change in changes
        if isinstance(change, Mapping) and isinstance(change.get("diff"), str) and change["diff"]
    ]


class TodoListView(Static):
    """The model's todo list as it was just written: done items dimmed, the one in progress bold."""

    DEFAULT_CSS = "TodoListView { margin: 0 0 0 2; border-left: solid $accent; padding: 0 1; }"

    def __init__(self, items: Sequence[TodoItem]) -> None:
        done = sum(1 for item in items if item.status == "completed")
        text = Text(f"todo · {done}/{len(items)} done", style="bold")
        for item in items:
            mark, style = _TODO_MARK[item.status]
            text.append(f"\n{mark} {item.content}", style=style)
        if not items:
            text.append("\n(cleared)", style="dim")
        super().__init__(text)
        self.items = tuple(items)


class PromptInput(TextArea):
    """A multi-line prompt: Enter sends, Ctrl+J or Alt+Enter starts a new line, Up/Down walk the history
    when the cursor is on the first or last line."""

    DEFAULT_CSS = "PromptInput { height: auto; min-height: 3; max-height: 10; border: round $accent; }"

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class ImagesPasted(Message):
        """A paste that named only image files: they are attached, not typed."""

        def __init__(self, paths: list[Path]) -> None:
            super().__init__()
            self.paths = paths

    def __init__(self) -> None:
        super().__init__("", id="prompt", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.sent: list[str] = []
        self._position: int | None = None
        self._draft = ""
        self.menu: CompletionMenu | None = None
        """The completion menu above the prompt: while it is open, Tab accepts, Up/Down choose, Esc closes."""

    async def _on_key(self, event: events.Key) -> None:
        menu = self.menu
        if menu is not None and menu.open and event.key in ("tab", "up", "down", "escape"):
            event.stop()
            event.prevent_default()
            if event.key == "tab":
                menu.accept(self)
            elif event.key == "escape":
                menu.close()
            else:
                menu.move(-1 if event.key == "up" else 1)
            return
        if menu is not None and menu.open and event.key == "enter" and menu.completes_command(self.text):
            menu.accept(self)  # Enter on a partly typed command runs the one highlighted
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text
            if text.strip():
                self.sent.append(text)
                self._position = None
                self.load_text("")
                self.post_message(self.Submitted(text))
            return
        if event.key in ("ctrl+j", "alt+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._walk(-1)
            return
        if (
            event.key == "down"
            and self.cursor_location[0] == self.document.line_count - 1
            and self._position is not None
        ):
            event.stop()
            event.prevent_default()
            self._walk(1)
            return
        await super()._on_key(event)

    async def _on_paste(self, event: events.Paste) -> None:
        # Textual calls each class's handler in turn: ordinary text falls through to TextArea's, which types
        # it; prevent_default keeps an image paste from being typed as well.
        paths = pasted_image_paths(event.text)
        if paths is None:
            return
        event.stop()
        event.prevent_default()
        self.post_message(self.ImagesPasted(paths))

    def _walk(self, step: int) -> None:
        if self._position is None:
            self._draft = self.text
            position = len(self.sent)
        else:
            position = self._position
        position = max(0, position + step)
        if position >= len(self.sent):
            self._position = None
            self.load_text(self._draft)
        else:
            self._position = position
            self.load_text(self.sent[position])
        self.move_cursor(self.document.end)


class StatusBar(Static):
    DEFAULT_CSS = "StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }"
