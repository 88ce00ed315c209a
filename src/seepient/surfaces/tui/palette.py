"""The prompt's completion menu: ``/`` opens the command palette (built-in and custom commands), ``@`` offers
workspace files; Up/Down choose, Tab accepts, Esc closes it. What the menu offers is worked out by the app;
this module knows where the word being completed is and how to put the choice in its place."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from textual.widgets import TextArea

BUILTIN_COMMANDS = {
    "/help": "this help",
    "/clear": "start a new conversation (the transcript and the model's history are cleared)",
    "/cost": "tokens, cost and how much of the context window is used",
    "/model": "show the model, or switch to PROVIDER:MODEL (the conversation carries over)",
    "/mode": "show or set the consent mode (autonomous-trusted asks first)",
    "/init": "have the model study the project and write AGENTS.md (the write asks)",
    "/mcp": "the MCP servers and their tools (starts them if not yet started)",
    "/doctor": "check the sandbox, Docker, keys, settings, trust, MCP and the audit log",
    "/skill": "give the model a skill's full instructions from now on",
    "/plan": "plan first with read-only tools; carried out only once you approve",
    "/image": "attach an image to the next prompt; /image clear drops them",
    "/compact": "shorten the history now (older turns summarised)",
    "/sessions": "pick one of this workspace's stored sessions and resume it",
    "/quit": "leave",
}
KEYS_HELP = (
    "Enter sends · Ctrl+J new line · / commands · @ attaches a workspace file (Tab completes) · "
    "Esc back to the prompt · Up/Down history · Shift+Tab cycles always-ask, ask-untrusted, auto · "
    "Ctrl+C interrupts the running turn; a second Ctrl+C quits"
)


def help_text(custom: dict[str, str]) -> str:
    width = max(len(name) for name in [*BUILTIN_COMMANDS, *custom])
    lines = [f"{name.ljust(width)}  {about}" for name, about in BUILTIN_COMMANDS.items()]
    if custom:
        lines.append("custom commands:")
        lines += [f"{name.ljust(width)}  {about}" for name, about in custom.items()]
    return "\n".join([*lines, KEYS_HELP])


@dataclass(frozen=True)
class Fragment:
    """The word being completed: a command (the whole prompt so far) or an ``@`` path, and where it is."""

    kind: Literal["command", "path"]
    typed: str
    """What follows the ``/`` or ``@``."""
    start: tuple[int, int]
    end: tuple[int, int]


def fragment_at(prompt: TextArea) -> Fragment | None:
    """The fragment under the cursor, or None when there is nothing to complete."""
    text = prompt.text
    row, column = prompt.cursor_location
    if text.startswith("/") and not any(char.isspace() for char in text):
        return Fragment("command", text[1:], (0, 0), prompt.document.end)
    line = prompt.document.get_line(row)[:column]
    start = max(line.rfind(" "), line.rfind("\t")) + 1
    word = line[start:]
    if word.startswith("@"):
        return Fragment("path", word[1:], (row, start), (row, column))
    return None


class CompletionMenu(OptionList):
    """Shown above the prompt while there is something to offer; it never takes the focus from the prompt."""

    DEFAULT_CSS = """
    CompletionMenu {
        display: none; height: auto; max-height: 10; margin: 0 1; padding: 0;
        border: none; background: $panel;
    }
    CompletionMenu.-open { display: block; }
    /* The menu never has the focus, so its highlight must stand out without it. */
    CompletionMenu > .option-list--option-highlighted { background: $accent 60%; text-style: bold; }
    """
    can_focus = False

    def __init__(self) -> None:
        super().__init__(id="completion")
        self.fragment: Fragment | None = None
        self.values: list[str] = []

    @property
    def open(self) -> bool:
        return self.has_class("-open")

    def offer(self, fragment: Fragment, items: list[tuple[str, str]]) -> None:
        """Show ``items`` (what is inserted, a note shown beside it) for ``fragment``; none closes the menu."""
        if not items:
            self.close()
            return
        self.fragment = fragment
        self.values = [value for value, _ in items]
        options = []
        width = max(len(value) for value, _ in items)
        for value, note in items:
            label = Text(value.ljust(width), style="bold")
            if note:
                label.append(f"  {note}", style="dim")
            options.append(Option(label))
        self.set_options(options)
        self.highlighted = 0
        self.add_class("-open")

    def close(self) -> None:
        self.fragment = None
        self.remove_class("-open")

    def move(self, step: int) -> None:
        if self.values:
            self.highlighted = ((self.highlighted or 0) + step) % len(self.values)

    def completes_command(self, text: str) -> bool:
        """Whether the menu offers commands and ``text`` is not already one of them."""
        fragment = self.fragment
        return fragment is not None and fragment.kind == "command" and text.strip() not in self.values

    def accept(self, prompt: TextArea) -> bool:
        """Put the highlighted choice in place of the fragment; False when the menu offered nothing."""
        fragment = self.fragment
        if fragment is None or not self.values:
            return False
        value = self.values[self.highlighted or 0]
        if fragment.kind == "command":
            prompt.load_text(value + " ")
            prompt.move_cursor(prompt.document.end)
        else:
            prompt.replace(value + " ", fragment.start, fragment.end)
        self.close()
        return True


class PromptCompleter:
    """Works out what the menu offers as the prompt changes: commands (built-in, then ``custom``, a name to
    its description) and workspace files, listed once in a thread and kept until ``forget_files``."""

    def __init__(self, menu: CompletionMenu, prompt: TextArea) -> None:
        self.menu = menu
        self.prompt = prompt
        self.custom: dict[str, str] = {}
        self.files: list[str] | None = None
        self.loading: asyncio.Task[None] | None = None
        self.workspace: Path | None = None
        self.seepient_home: Path | None = None

    def forget_files(self) -> None:
        """A turn may have added or removed files: list them again when next needed."""
        self.files = None

    def update(self) -> None:
        fragment = fragment_at(self.prompt)
        if fragment is None or "\n" in self.prompt.text:
            self.menu.close()
        elif fragment.kind == "command":
            typed = "/" + fragment.typed
            choices = [*BUILTIN_COMMANDS.items(), *self.custom.items()]
            self.menu.offer(
                fragment, [(name, about) for name, about in choices if name.startswith(typed)][:10]
            )
        elif self.files is None:
            self.menu.close()
            self._list_files()
        else:
            from seepient.runtime.mentions import complete

            self.menu.offer(fragment, [("@" + path, "") for path in complete(self.files, fragment.typed)])

    def _list_files(self) -> None:
        from seepient.runtime.mentions import workspace_files

        if self.workspace is None or self.seepient_home is None:
            return
        if self.loading is not None and not self.loading.done():
            return
        workspace, home = self.workspace, self.seepient_home

        async def load() -> None:
            try:
                self.files = await asyncio.to_thread(workspace_files, workspace, seepient_home=home)
            except (OSError, ValueError):
                self.files = []  # a workspace that went away completes nothing, and the prompt carries on
            self.update()

        self.loading = asyncio.ensure_future(load())
