"""The TUI approval modal for ``apply_patch``: every file of the set is shown with its own diff."""

from __future__ import annotations

import asyncio

from seepient.surfaces.tui.approval import ApprovalScreen
from seepient.surfaces.tui.widgets import PromptInput

PATCH = (
    "*** Begin Patch\n*** Update File: code.py\n@@\n-x = 1\n+x = 2\n"
    "*** Add File: extra/new.py\n+y = 3\n*** Delete File: old.py\n*** End Patch\n"
)


async def test_the_modal_shows_every_file_and_approving_applies_them_all(make_app):
    app = make_app([{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}, {"text": "ok"}])
    workspace = app.session.workspace
    (workspace / "code.py").write_text("a = 0\nx = 1\n")
    (workspace / "old.py").write_text("gone = True\n")
    async with app.run_test(size=(120, 50)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("patch")
        await pilot.press("enter")
        for _ in range(400):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen):
                break
            await asyncio.sleep(0.01)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        shown = modal.shown_text
        for expected in (
            "change code.py",
            "x = 2",
            "create extra/new.py",
            "y = 3",
            "delete old.py",
            "gone = True",
        ):
            assert expected in shown, expected
        await pilot.press("y")
        for _ in range(400):
            await pilot.pause()
            if not app.working:
                break
            await asyncio.sleep(0.01)
    assert (workspace / "code.py").read_text() == "a = 0\nx = 2\n"
    assert (workspace / "extra" / "new.py").read_text() == "y = 3\n"
    assert not (workspace / "old.py").exists()
