"""``/sessions`` and ``--continue``: every TUI turn and standing grant is stored as it happens, and a later TUI on
the same workspace resumes a stored session with its history (the model sees the earlier turns, the screen shows
them with their tool calls) and its grants and refusals (asked nothing it was told for the session)."""

from __future__ import annotations

import asyncio
import json

from seepient.store import Store, database_url
from seepient.surfaces.cli.run_sessions import find_resumable
from seepient.surfaces.tui.approval import ApprovalScreen
from seepient.surfaces.tui.assistant_text import AssistantText
from seepient.surfaces.tui.sessions import SessionPicker, local_principal
from seepient.surfaces.tui.widgets import Notice, ToolCallView, UserPrompt
from tests.surfaces.tui.conftest import shell
from tests.surfaces.tui.test_tui_pilot import _settle, _type, _wait_modal


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


async def _continued(make_app, script, home, workspace):  # type: ignore[no-untyped-def]
    """A TUI opened as ``seepient --continue`` opens it: the workspace's latest stored session."""
    resumed = await find_resumable(home, workspace, resume_id=None)
    return make_app(
        script,
        session_id=resumed.session_id,
        history=resumed.history,
        grants=resumed.grants,
        resumed=True,
    )


async def _answered_once(make_app, script, session_id: str, *keys: str):  # type: ignore[no-untyped-def]
    """A first TUI whose one prompt runs ``touch one`` and whose modal gets ``keys``; its app, once closed."""
    first = make_app(script, session_id=session_id)
    async with first.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "make one")
        await _wait_modal(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await _settle(pilot)
    return first


async def test_a_continued_session_shows_its_earlier_turns_and_keeps_its_session_grant(make_app):
    # Policy asks before `touch`: the first TUI's modal proves it, so the second's silence is the grant.
    script = [shell("touch one"), {"text": "made one"}, shell("touch two"), {"text": "made two"}]
    # a, then c: commands starting with `touch`, for the rest of the session.
    first = await _answered_once(make_app, script, "ses_granted", "a", "c")
    workspace = first.session.workspace
    assert (workspace / "one").exists()
    home = first.options.paths.home

    second = await _continued(make_app, script, home, workspace)
    async with second.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.1)
        assert [p.prompt for p in second.query(UserPrompt)] == ["make one"]
        assert [t.streamed for t in second.query(AssistantText)] == ["made one"]
        (call,) = second.query(ToolCallView)
        assert call.call.name == "shell" and call.call.arguments == {"command": "touch one"}
        assert call.status == "ok" and "✓ shell" in str(call.title)
        assert "earlier in session ses_granted:" in _notices(second)
        await _type(pilot, "make two")
        await _settle(pilot)
        assert not isinstance(second.screen, ApprovalScreen)
        assert "(grant:session)" in _notices(second)  # answered by the restored grant
        assert [p.prompt for p in second.query(UserPrompt)] == ["make one", "make two"]
        assert (workspace / "two").exists()
        # A new conversation starts without the continued one's grants: the same command is asked about.
        await _type(pilot, "/clear")
        await pilot.pause(0.1)
        await _type(pilot, "make one again")
        await _wait_modal(pilot)


async def test_a_refusal_for_the_session_survives_resuming_it_from_the_picker(make_app):
    script = [shell("touch one"), {"text": "refused"}, shell("touch two"), {"text": "refused again"}]
    workspace = (await _answered_once(make_app, script, "ses_refused", "r")).session.workspace

    second = make_app(script, session_id="ses_picker")
    async with second.run_test(size=(120, 40)) as pilot:
        await _store_open(pilot)
        await _type(pilot, "/sessions")
        await _wait_for_picker(pilot)
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause()
            if second.session.id == "ses_refused":
                break
        (call,) = second.query(ToolCallView)
        assert call.status == "error" and call.call.arguments == {"command": "touch one"}
        await _type(pilot, "make two")
        await _settle(pilot)
        assert not isinstance(second.screen, ApprovalScreen)
        assert "rejected (refusal:session)" in _notices(second)  # answered by the restored refusal
    assert not (workspace / "one").exists() and not (workspace / "two").exists()


async def test_a_refusal_given_for_an_attached_file_before_the_first_turn_is_stored(make_app, tmp_path):
    # An ask rule for the read: the `@` read asks before the turn (and so before its record) starts.
    home = tmp_path / "seepient-home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Read(notes.txt)"]}}))
    app = make_app([{"text": "read it"}], session_id="ses_attach")
    (app.options.workspace / "notes.txt").write_text("remember this\n")
    async with app.run_test(size=(120, 40)) as pilot:
        await _store_open(pilot)
        await _type(pilot, "look at @notes.txt")
        modal = await _wait_modal(pilot)
        assert modal.request.action.tool == "read_file"
        await pilot.press("r")
        await _settle(pilot)
        notices = _notices(app)
        assert "@notes.txt not attached" in notices and "could not save" not in notices
    resumed = await find_resumable(app.options.paths.home, app.session.workspace, resume_id="ses_attach")
    assert [kind for kind, _ in resumed.grants] == ["refusal"] and resumed.turns == 1


async def test_switching_the_model_keeps_the_grants_given_in_the_session(make_app):
    script = [shell("touch one"), {"text": "made one"}]
    app = make_app(script, session_id="ses_switch")
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "make one")
        await _wait_modal(pilot)
        for key in ("a", "c"):  # commands starting with `touch`, for the rest of the session
            await pilot.press(key)
            await pilot.pause()
        await _settle(pilot)
        (app.session.workspace / "one").unlink()
        await _type(pilot, f"/model {app.session.model_spec}")  # a new session object, the same script again
        await pilot.pause(0.1)
        await _type(pilot, "make one again")
        await _settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert (app.session.workspace / "one").exists()
