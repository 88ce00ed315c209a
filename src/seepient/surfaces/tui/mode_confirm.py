"""The confirmation modal ``/mode autonomous-trusted`` opens: the one consent mode in which nobody is asked
is entered only when the person says so, never by a key pressed in passing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from seepient.surfaces.tui.yes_no import YesNoScreen

_TEXT = """\
[b]Switch to autonomous-trusted?[/]

Every action that would ask you runs without asking: commands, file changes, fetches.
Deny rules, the path guard, privileged commands and the fetch address policy still refuse what they refuse.
"""
_KEYS = "[b]y[/] switch   [b]n[/] / [b]Esc[/] stay in {current}"


class ConfirmModeScreen(YesNoScreen):
    """Dismisses with True to switch to autonomous-trusted, False to stay."""

    DEFAULT_CSS = """
    ConfirmModeScreen { align: center middle; }
    ConfirmModeScreen > Vertical {
        width: 80%; height: auto; border: thick $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(_TEXT)
            yield Static(_KEYS.format(current=self.current), id="keys")
