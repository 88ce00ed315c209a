"""The agent loop, the tool-call pipeline and the ``Session`` facade every surface talks to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from seepient.runtime.session import Session, SessionOptions, TurnOutcome

__all__ = ["Session", "SessionOptions", "TurnOutcome"]

# Each name loads its own module on first use: a command that needs one name does not pay for the rest.
__getattr__ = lazy_exports(
    __name__,
    {
        "Session": "seepient.runtime.session",
        "SessionOptions": "seepient.runtime.session",
        "TurnOutcome": "seepient.runtime.session",
    },
)
