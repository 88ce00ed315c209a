"""The first-use trust modal: what a project's settings would change, shown before the session opens; the
project is trusted (as its settings file is now) only when the person says so."""

from __future__ import annotations

from rich.markup import escape
from textual.widgets import Static

from seepient.surfaces.tui.yes_no import ReviewScreen

_KEYS = "[b]y[/] trust this project   [b]n[/] / [b]Esc[/] not now (only what makes Seepient stricter applies)"


class TrustScreen(ReviewScreen):
    """Dismisses with True to trust the project, False to leave it untrusted."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(
            "[b]This project's settings want to change how Seepient works here[/]",
            Static(escape("\n".join(lines))),
            _KEYS,
        )
        self.lines = lines
