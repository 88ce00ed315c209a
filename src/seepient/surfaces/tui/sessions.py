"""Stored TUI sessions: each turn is written to the session store (the home database the server also uses,
under a principal of its own), and ``/sessions`` picks one of this workspace's to resume."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from seepient.store import Store, database_url

_LISTED = 30


def local_principal() -> str:
    """Whose sessions these are. The ``local:`` prefix keeps them apart from the server's token principals."""
    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (some containers): still one principal per home
        return "local:user"


@dataclass(frozen=True)
class StoredSessionSummary:
    id: str
    model: str
    mode: str
    updated_at: datetime
    turns: int
    first_prompt: str


@dataclass(frozen=True)
class StoredTurn:
    prompt: str
    reply: str
    status: str


class SessionLog:
    """The TUI's side of the store: record turns as they start and end, list and load this workspace's
    sessions. A turn's start is written before the model answers, so a killed TUI leaves it marked running
    and keeps every earlier turn."""

    def __init__(self, store: Store, workspace: Path, principal: str) -> None:
        self._store = store
        self._workspace = str(workspace)
        self._principal = principal
        self._known: set[str] = set()

    @classmethod
    async def open(cls, home: Path, workspace: Path) -> SessionLog:
        store = await Store.open(database_url(None, home))
        return cls(store, workspace, local_principal())

    async def aclose(self) -> None:
        await self._store.aclose()

    async def turn_started(
        self, *, session_id: str, model: str, mode: str, turn_id: str, prompt: str
    ) -> None:
        if session_id not in self._known:
            existing = await self._store.get_session(session_id, self._principal)
            if existing is None:
                await self._store.create_session(
                    session_id=session_id,
                    principal=self._principal,
                    workspace=self._workspace,
                    model=model,
                    mode=mode,
                )
            self._known.add(session_id)
        await self._store.start_turn(session_id, turn_id, prompt)

    async def turn_ended(
        self, *, session_id: str, turn_id: str, reason: str, reply: str, messages: list[dict[str, Any]]
    ) -> None:
        status = {"final": "completed", "interrupted": "interrupted", "error": "error"}.get(
            reason, "completed"
        )
        await self._store.finish_turn(
            session_id, turn_id, status=status, reason=reason, reply=reply, messages=messages
        )

    async def recent(self, *, exclude: str | None = None) -> list[StoredSessionSummary]:
        """This workspace's sessions with at least one turn, most recently used first."""
        records = [
            r
            for r in await self._store.list_sessions(self._principal)
            if r.workspace == self._workspace and r.id != exclude
        ]
        records.sort(key=lambda r: r.updated_at, reverse=True)
        summaries = []
        for record in records[:_LISTED]:
            turns = await self._store.turns(record.id)
            if not turns:
                continue
            summaries.append(
                StoredSessionSummary(
                    id=record.id,
                    model=record.model,
                    mode=record.mode,
                    updated_at=record.updated_at,
                    turns=len(turns),
                    first_prompt=turns[0].prompt,
                )
            )
        return summaries

    async def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[StoredTurn]]:
        """The session's stored history (messages as JSON) and its turns, for resuming it."""
        if await self._store.get_session(session_id, self._principal) is None:
            raise KeyError(session_id)
        turns = [StoredTurn(t.prompt, t.reply, t.status) for t in await self._store.turns(session_id)]
        self._known.add(session_id)
        return await self._store.messages(session_id), turns


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
