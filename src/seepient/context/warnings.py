"""Problems found while assembling context that do not stop a session: surfaces show each one once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ContextWarning:
    """``source`` names the file (or setting) at fault; ``message`` says what happened and what was done."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def unique_warnings(warnings: Iterable[ContextWarning]) -> tuple[ContextWarning, ...]:
    """Each warning once, in the order first seen."""
    return tuple(dict.fromkeys(warnings))
