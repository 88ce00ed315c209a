"""The plan-approval modal: the plan a ``/plan`` turn ended with, carried out only when the person says so."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

_KEYS = "[b]y[/] carry out this plan   [b]n[/] / [b]Esc[/] not now (nothing is changed; say what to change)"


class PlanApprovalScreen(ModalScreen[bool]):
    """Dismisses with True to carry the plan out, False to leave everything as it is."""

    DEFAULT_CSS = """
    PlanApprovalScreen { align: center middle; }
    PlanApprovalScreen > Vertical {
        width: 96%; height: auto; max-height: 96%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    PlanApprovalScreen #plan { height: auto; max-height: 1fr; }
    PlanApprovalScreen #keys { height: auto; margin-top: 1; }
    """
    BINDINGS = [
        Binding("y", "approve", "carry out", show=False),
        Binding("n", "decline", "not now", show=False),
        Binding("escape", "decline", "not now", show=False),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]The plan (nothing has been changed yet)[/]")
            with VerticalScroll(id="plan"):
                yield Markdown(self.plan or "_(the model gave no plan)_")
            yield Static(_KEYS, id="keys")

    def action_approve(self) -> None:
        self.dismiss(True)

    def action_decline(self) -> None:
        self.dismiss(False)
