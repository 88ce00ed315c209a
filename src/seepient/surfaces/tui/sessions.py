"""``/sessions`` in the TUI: pick one of this workspace's stored sessions (``surfaces/stored_sessions.py``
records them) to resume."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from seepient.surfaces.stored_sessions import (
    SessionLog,
    StoredSessionSummary,
    StoredTurn,
    local_principal,
)

__all__ = ["SessionLog", "SessionPicker", "StoredSessionSummary", "StoredTurn", "local_principal"]


class SessionPicker(ModalScreen[str | None]):
    """Lists stored sessions; Enter resumes the highlighted one, Esc leaves things as they are."""

    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > Vertical {
        width: 96%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    SessionPicker OptionList { height: auto; max-height: 1fr; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, sessions: list[StoredSessionSummary]) -> None:
        super().__init__()
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Resume a session[/]  (Enter resumes · Esc cancels)")
            yield OptionList(*(Option(_label(s), id=s.id) for s in self.sessions), id="sessions")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _label(summary: StoredSessionSummary) -> Text:
    when = summary.updated_at.astimezone().strftime("%Y-%m-%d %H:%M")
    first = summary.first_prompt.splitlines()[0] if summary.first_prompt else ""
    if len(first) > 60:
        first = first[:59] + "…"
    label = Text(f"{when}  ", style="dim")
    label.append(first, style="bold")
    label.append(f"  {summary.turns} turn{'s' if summary.turns != 1 else ''} · {summary.model}", style="dim")
    return label
