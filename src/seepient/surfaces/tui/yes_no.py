"""Modals that ask one yes-or-no question: ``y`` answers yes (True), ``n`` or Esc no (False, changing nothing);
and the frame every modal that shows something to review before answering is drawn in."""

from __future__ import annotations

from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

_AnswerT = TypeVar("_AnswerT")


class ReviewFrame(ModalScreen[_AnswerT]):
    """A wide box with a warning border: what to review scrolls in ``#review``, the keys stay below in ``#keys``."""

    DEFAULT_CSS = """
    ReviewFrame { align: center middle; }
    ReviewFrame > Vertical {
        width: 96%; height: auto; max-height: 96%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    ReviewFrame #review { height: auto; max-height: 1fr; }
    ReviewFrame #keys { height: auto; margin-top: 1; }
    """


class YesNoScreen(ModalScreen[bool]):
    """The keys and the answer; a subclass composes the question, its key help saying what each answer does."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes", show=False),
        Binding("n", "answer(False)", "no", show=False),
        Binding("escape", "answer(False)", "no", show=False),
    ]

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ReviewScreen(YesNoScreen, ReviewFrame[bool]):
    """A question about something long (a plan, what a project's settings change): a title, the text to review
    scrolling below it, and the keys."""

    def __init__(self, title: str, review: Widget, keys: str) -> None:
        super().__init__()
        self._title = title
        self._review = review
        self._keys = keys

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title)
            with VerticalScroll(id="review"):
                yield self._review
            yield Static(self._keys, id="keys")
