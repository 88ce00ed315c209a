"""The full-screen terminal UI (Textual) over ``seepient.runtime.Session``; ``run_tui`` is the entry point."""

from __future__ import annotations

from seepient.surfaces.tui.entry import run_tui

__all__ = ["run_tui"]
