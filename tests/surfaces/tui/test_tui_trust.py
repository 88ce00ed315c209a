"""The TUI's first-use question: a project whose settings need trust is shown before the session opens, and is
trusted (against its file's hash) only on ``y``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths
from seepient.config.trust import TrustStore
from seepient.surfaces.tui.app import SeepientTui
from seepient.surfaces.tui.trust import TrustScreen


def _app(tmp_path: Path, settings: dict) -> SeepientTui:
    from seepient.runtime import SessionOptions

    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir(parents=True)
    (workspace / ".seepient" / "settings.json").write_text(json.dumps(settings))
    script = tmp_path / "script.yaml"
    script.write_text("- text: hello\n")
    return SeepientTui(
        lambda: SessionOptions(
            workspace=workspace, model=f"replay:{script}", paths=SeepientPaths(home=tmp_path / "h")
        )
    )


async def _until(pilot, check) -> None:  # type: ignore[no-untyped-def]
    for _ in range(400):
        await pilot.pause()
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


@pytest.mark.parametrize("answer", ["y", "n"])
async def test_the_project_is_shown_and_trusted_only_on_yes(tmp_path, answer):
    app = _app(tmp_path, {"permissions": {"allow": ["Shell(make)"], "deny": ["Read(.env)"]}})
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, TrustScreen))
        shown = "\n".join(app.screen.lines)  # type: ignore[attr-defined]
        assert "permissions.allow: Shell(make)" in shown and "applies only once you trust" in shown
        assert app.session is None  # nothing opens before the answer
        await pilot.press(answer)
        await _until(pilot, lambda: app.session is not None)
        assert app.session is not None and app.session.settings.project is not None
        assert app.session.settings.project.trusted is (answer == "y")
    entries = TrustStore(SeepientPaths(home=tmp_path / "h").trust_store).entries()
    assert bool(entries) is (answer == "y")


async def test_settings_that_only_tighten_ask_nothing(tmp_path):
    app = _app(tmp_path, {"permissions": {"deny": ["Read(.env)"]}})
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.session is not None)
        assert not isinstance(app.screen, TrustScreen)
