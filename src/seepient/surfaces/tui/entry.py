"""Starting the TUI from the command line: run the app, and report a session that could not open on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.runtime import SessionOptions


def run_tui(options: SessionOptions | Callable[[], SessionOptions]) -> int:
    """Run the full-screen UI until the person quits; returns the exit code (2 when the session cannot open).

    Pass a function returning the options to have the runtime load behind the first frame (the command line
    does, for a quick start); pass the options themselves to open the session before the screen appears."""
    from seepient.surfaces.tui.app import SeepientTui

    if not callable(options):
        from seepient.config import SettingsError
        from seepient.models.base import ModelError

        try:
            app = SeepientTui(options)
        except (SettingsError, ModelError) as exc:
            sys.stderr.write(f"seepient: {exc}\n")
            return 2
    else:
        app = SeepientTui(options)
    result = app.run()
    if app.open_error is not None:
        sys.stderr.write(f"seepient: {app.open_error}\n")
        return 2
    return result if isinstance(result, int) else 0
