"""The plan-approval modal: the plan a ``/plan`` turn ended with, carried out only when the person says so."""

from __future__ import annotations

from textual.widgets import Markdown

from seepient.surfaces.tui.yes_no import ReviewScreen

_KEYS = "[b]y[/] carry out this plan   [b]n[/] / [b]Esc[/] not now (nothing is changed; say what to change)"


class PlanApprovalScreen(ReviewScreen):
    """Dismisses with True to carry the plan out, False to leave everything as it is."""

    DEFAULT_CSS = """
    PlanApprovalScreen > Vertical { border: thick $accent; }
    """

    def __init__(self, plan: str) -> None:
        super().__init__(
            "[b]The plan (nothing has been changed yet)[/]",
            Markdown(plan or "_(the model gave no plan)_"),
            _KEYS,
        )
        self.plan = plan
