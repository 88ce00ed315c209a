"""The first-use trust modal: what a project's settings would change, shown before the session opens; the
project is trusted (as its settings file is now) only when the person says so."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_KEYS = "[b]y[/] trust this project   [b]n[/] / [b]Esc[/] not now (only what makes Seepient stricter applies)"


class TrustScreen(ModalScreen[bool]):
    """Dismisses with True to trust the project, False to leave it untrusted."""

    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    TrustScreen > Vertical {
        width: 96%; height: auto; max-height: 96%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    TrustScreen #summary { height: auto; max-height: 1fr; }
    TrustScreen #keys { height: auto; margin-top: 1; }
    """
    BINDINGS = [
        Binding("y", "trust", "trust", show=False),
        Binding("n", "decline", "not now", show=False),
        Binding("escape", "decline", "not now", show=False),
    ]

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]This project's settings want to change how Seepient works here[/]")
            with VerticalScroll(id="summary"):
                yield Static(escape("\n".join(self.lines)))
            yield Static(_KEYS, id="keys")

    def action_trust(self) -> None:
        self.dismiss(True)

    def action_decline(self) -> None:
        self.dismiss(False)
