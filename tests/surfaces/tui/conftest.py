"""Fixtures for the TUI: an app over a real session with the ``replay:`` model in a throwaway workspace."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from textual.pilot import Pilot

from seepient.config import SeepientPaths
from seepient.runtime import SessionOptions
from seepient.surfaces.tui.app import SeepientTui
from tests.support.scripts import write_script

AppFactory = Callable[..., SeepientTui]


def _factory(root: Path) -> AppFactory:
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)

    def make(turns: list[dict[str, Any]], **options: Any) -> SeepientTui:
        script = write_script(root / "script.yaml", turns)
        app = SeepientTui(
            SessionOptions(
                workspace=workspace,
                model=f"replay:{script}",
                paths=SeepientPaths(home=root / "seepient-home"),
                **{"session_id": "ses_tui_test", **options},
            )
        )
        return app

    return make


@pytest.fixture
def make_app(tmp_path: Path) -> AppFactory:
    return _factory(tmp_path)


@pytest.fixture
def snapshot_app() -> Iterator[AppFactory]:
    """Screenshots show the workspace and script paths, so these live at one fixed place, emptied first. Other
    test runs on the machine (another checkout's) use the same place: a lock keeps them from sharing it."""
    root = Path("/tmp/seepient-tui-snapshot")
    with FileLock(f"{root}.lock"):
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        factory = _factory(root)

        def make(turns: list[dict[str, Any]], **options: Any) -> SeepientTui:
            app = factory(turns, **options)
            app.clock = lambda: 0.0
            return app

        yield make


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}
        ]
    }


class SvgScreenshot(SingleFileSnapshotExtension):
    """One ``.svg`` file per screenshot under ``__snapshots__``, stored as text so a change shows as a diff."""

    file_extension = "svg"
    _write_mode = WriteMode.TEXT


@pytest.fixture
def screenshot(snapshot: SnapshotAssertion) -> Callable[..., Awaitable[bool]]:
    """Run the app at ``size``, let ``run_before`` drive it, and compare the SVG of the screen with the stored
    one (``--snapshot-update`` rewrites it)."""

    async def take(
        app: SeepientTui, *, size: tuple[int, int], run_before: Callable[[Pilot[Any]], Awaitable[None]]
    ) -> bool:
        async with app.run_test(size=size) as pilot:
            # A blinking cursor is drawn or not by the clock, and a line drawn with it off can still be on the
            # screen when it is taken: on a busy machine the screenshot caught it so. It never blinks here.
            await pilot.pause()
            for widget in app.query("*"):
                if hasattr(widget, "cursor_blink"):
                    widget.cursor_blink = False
            await run_before(pilot)
            await pilot.pause()
            svg = app.export_screenshot(title="seepient")
        return svg == snapshot.use_extension(SvgScreenshot)

    return take
