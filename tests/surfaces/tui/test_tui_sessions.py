"""``/sessions``: every TUI turn is stored as it starts and ends, and a later TUI on the same workspace picks a
stored session and resumes it with its history (the model sees the earlier turns)."""

from __future__ import annotations

import asyncio

from seepient.store import Store, database_url
from seepient.surfaces.tui.sessions import SessionPicker, local_principal
from seepient.surfaces.tui.widgets import AssistantText, Notice, UserPrompt
from tests.surfaces.tui.test_tui_pilot import _settle, _type


def _notices(app) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(n.plain for n in app.query(Notice))


async def _wait_for_picker(pilot) -> SessionPicker:  # type: ignore[no-untyped-def]
    for _ in range(400):
        await pilot.pause()
        if isinstance(pilot.app.screen, SessionPicker):
            return pilot.app.screen
        await asyncio.sleep(0.01)
    raise AssertionError("the session picker never appeared")


async def test_a_stored_session_is_picked_and_resumed_with_its_history(make_app, tmp_path):
    # One script for the conversation: the resumed session plays on at its second turn.
    script = [{"text": "The answer is 42."}, {"text": "You asked about the answer."}]
    first = make_app(script, session_id="ses_first")
    async with first.run_test(size=(100, 30)) as pilot:
        await _type(pilot, "what is the answer?")
        await _settle(pilot)
    home = first.options.paths.home

    second = make_app(script, session_id="ses_second")
    async with second.run_test(size=(100, 30)) as pilot:
        for _ in range(200):  # the store opens in the background after the first frame
            await pilot.pause()
            if second._log is not None:
                break
        await _type(pilot, "/sessions")
        picker = await _wait_for_picker(pilot)
        assert [s.id for s in picker.sessions] == ["ses_first"]
        assert picker.sessions[0].first_prompt == "what is the answer?" and picker.sessions[0].turns == 1
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause()
            if second.session.id == "ses_first":
                break
        await pilot.pause(0.1)
        assert second.session.id == "ses_first"
        assert [p.prompt for p in second.query(UserPrompt)] == ["what is the answer?"]
        assert [t.streamed for t in second.query(AssistantText)] == ["The answer is 42."]
        assert "resumed session ses_first (1 turns)" in _notices(second)
        await _type(pilot, "what did I ask?")
        await _settle(pilot)
        history = [(m.role, m.content) for m in second.session.history]
    assert history == [
        ("user", "what is the answer?"),
        ("assistant", "The answer is 42."),
        ("user", "what did I ask?"),
        ("assistant", "You asked about the answer."),
    ]
    store = await Store.open(database_url(None, home))
    try:
        turns = await store.turns("ses_first")
        stored = await store.list_sessions(local_principal())
    finally:
        await store.aclose()
    assert [(t.prompt, t.status) for t in turns] == [
        ("what is the answer?", "completed"),
        ("what did I ask?", "completed"),
    ]
    # A resumed session is not stored twice, and the second TUI's own session had no turn: not listed.
    assert sorted(r.id for r in stored) == ["ses_first"]


async def _store_open(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(200):
        await pilot.pause()
        if pilot.app._log is not None:
            return
    raise AssertionError("the session store never opened")


async def test_nothing_to_resume_is_said_and_escape_in_the_picker_changes_nothing(make_app):
    app = make_app([{"text": "hi"}], session_id="ses_only")
    async with app.run_test(size=(100, 30)) as pilot:
        await _store_open(pilot)
        await _type(pilot, "/sessions")
        await pilot.pause(0.2)
        assert "no other stored session for this workspace" in _notices(app)
        await _type(pilot, "hello")
        await _settle(pilot)
    other = make_app([{"text": "x"}], session_id="ses_other")
    async with other.run_test(size=(100, 30)) as pilot:
        await _store_open(pilot)
        await _type(pilot, "/sessions")
        picker = await _wait_for_picker(pilot)
        assert [s.id for s in picker.sessions] == ["ses_only"]
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(other.screen, SessionPicker)
        assert other.session.id == "ses_other" and other.session.history == ()
