"""Pilot tests of the prompt's completion and what surrounds it: ``@`` completes workspace files (ignore files
respected, never outside the workspace) and attaches them through the read policy; ``/`` opens the command
palette; Esc brings the focus back; the transcript follows output unless scrolled up; an expanded edit shows
its diff; the bell rings when an approval waits; the status line shows unknown cost as unknown."""

from __future__ import annotations

import io
import json

from rich.console import Console
from textual import events

from seepient.config.project import ABSENT
from seepient.config.trust import TrustStore
from seepient.surfaces.tui.widgets import PromptInput, ToolCallView
from tests.surfaces.tui.conftest import edit, write
from tests.surfaces.tui.test_tui_pilot import _notices, _settle, _type, _wait_modal


async def _typed(pilot, text: str) -> PromptInput:  # type: ignore[no-untyped-def]
    prompt = pilot.app.query_one(PromptInput)
    prompt.focus()
    prompt.insert(text)
    loading = pilot.app._completer.loading
    if loading is not None:
        await loading
    await pilot.pause()
    return prompt


def _offered(app) -> list[str]:  # type: ignore[no-untyped-def]
    return list(app._menu.values) if app._menu.open else []


def _user_message(app) -> str:  # type: ignore[no-untyped-def]
    return next(m.content for m in app.session.history if m.role == "user")


async def test_at_completes_workspace_files_and_tab_attaches_one(make_app):
    app = make_app([{"text": "It adds."}])
    ws = app.session.workspace
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "src").mkdir()
    (ws / "src" / "cache.py").write_text("CACHE = {}\n")
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "calc_out.py").write_text("generated\n")
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = await _typed(pilot, "explain @ca")
        assert _offered(app) == ["@calc.py", "@src/cache.py"]  # build/ is ignored
        await pilot.press("down", "up", "tab")
        assert prompt.text == "explain @calc.py " and not app._menu.open
        assert prompt.has_focus
        await pilot.press("enter")
        await _settle(pilot)
        assert "attached @calc.py" in _notices(app)
        message = _user_message(app)
        assert message.startswith("explain @calc.py") and "return a + b" in message
        (view,) = app.query(ToolCallView)
        assert view.call.name == "read_file" and view.status == "ok"  # an ordinary, audited read


async def test_attachments_follow_the_read_policy_and_stay_in_the_workspace(make_app, tmp_path):
    home = tmp_path / "seepient-home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(secret.txt)"]}}))
    app = make_app([{"text": "ok"}])
    ws = app.session.workspace
    (ws / "secret.txt").write_text("TOP-SECRET-VALUE\n")
    (tmp_path / "outside.txt").write_text("OUTSIDE-VALUE\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    async with app.run_test(size=(100, 30)) as pilot:
        await _typed(pilot, "@li")
        assert _offered(app) == []  # a link is never offered
        app.query_one(PromptInput).load_text("")
        await _type(pilot, "read @secret.txt @../outside.txt @link.txt @/etc/passwd and @decorator")
        await _settle(pilot)
        notices = _notices(app)
        assert "@secret.txt not attached" in notices
        assert "@../outside.txt not attached: it is outside the workspace" in notices
        assert "@link.txt not attached: it is outside the workspace" in notices
        assert "@/etc/passwd not attached: it is outside the workspace" in notices
        assert "@decorator" not in notices  # a word that names no file is left alone
        message = _user_message(app)
        assert "TOP-SECRET-VALUE" not in message and "OUTSIDE-VALUE" not in message
        (view,) = app.query(ToolCallView)
        assert view.status == "denied"


async def test_slash_opens_the_palette_with_custom_commands(make_app, tmp_path):
    commands = tmp_path / "seepient-home" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: review a file\n---\nReview $ARGUMENTS.\n")
    app = make_app([{"text": "ok"}])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        prompt = await _typed(pilot, "/c")
        assert _offered(app) == ["/clear", "/cost", "/compact"]
        await pilot.press("down", "tab")
        assert prompt.text == "/cost "
        prompt.load_text("")
        await _typed(pilot, "/re")
        assert _offered(app) == ["/review"]
        await pilot.press("escape")
        assert not app._menu.open and prompt.text == "/re"  # Esc closes the menu, the text stays
        await pilot.press("tab")
        assert prompt.text == "/re"  # closed, Tab completes nothing
        prompt.load_text("")
        await _typed(pilot, "/cos")
        await pilot.press("enter")  # Enter on a partly typed command runs the highlighted one
        await pilot.pause()
        assert "context window: ~" in _notices(app) and prompt.text == ""


async def test_escape_brings_the_focus_back_to_the_prompt(make_app):
    app = make_app([write("a.txt", "x"), {"text": "ok"}], mode="autonomous-trusted")
    async with app.run_test(size=(100, 30)) as pilot:
        await _type(pilot, "go")
        await _settle(pilot)
        (view,) = app.query(ToolCallView)
        view.query_one("CollapsibleTitle").focus()
        await pilot.pause()
        assert not app.query_one(PromptInput).has_focus
        await pilot.press("escape")
        assert app.query_one(PromptInput).has_focus
        shown = {key.description: key.key for key in app.screen.query("FooterKey")}
        assert shown["back to the prompt"] == "escape"  # the footer shows the key


async def test_expanded_edit_shows_its_diff(make_app):
    app = make_app([edit("calc.py", "a - b", "a + b"), {"text": "fixed"}], mode="autonomous-trusted")
    (app.session.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    async with app.run_test(size=(100, 30)) as pilot:
        await _type(pilot, "fix")
        await _settle(pilot)
        (view,) = app.query(ToolCallView)
        assert view.status == "ok" and view.diffs and view.diffs[0][0] == "calc.py"
        view.collapsed = False
        await pilot.pause()
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(view._output.content)
        shown = console.export_text()
        assert "-    return a - b" in shown and "+    return a + b" in shown


async def test_the_transcript_follows_new_output_unless_scrolled_up(make_app):
    app = make_app([{"text": "answer " * 20}])
    async with app.run_test(size=(60, 16)) as pilot:
        transcript = app._transcript_view
        for number in range(40):
            app._notice(f"line {number}")
        await pilot.pause()
        assert transcript.max_scroll_y > 0 and transcript.scroll_y == transcript.max_scroll_y
        for _ in range(6):
            transcript.post_message(events.MouseScrollUp(transcript, 1, 1, 0, -1, 0, False, False, False))
        await pilot.pause()
        held = transcript.scroll_y
        assert held < transcript.max_scroll_y
        for number in range(10):
            app._notice(f"more {number}")
        await pilot.pause()
        assert transcript.scroll_y == held  # reading above: not pulled down
        await _type(pilot, "and now?")  # sending follows again
        await _settle(pilot)
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_an_approval_rings_the_bell_and_the_status_shows_unknown_cost(make_app, monkeypatch):
    app = make_app([write("a.txt", "x"), {"text": "ok"}])
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(140, 30)) as pilot:
        await _type(pilot, "go")
        await _wait_modal(pilot)
        assert rings == [1]
        await pilot.press("y")
        await _settle(pilot)
        assert app.query_one(PromptInput).has_focus  # back in the prompt once the question is answered
        status = str(app._status_bar.render())
        assert "mode ask-untrusted" in status and app.session.model_spec in status
        # The replay model reports no usage: unknown, never shown as 0.
        assert "tokens unknown in / unknown out" in status and "cost unknown" in status


async def test_a_projects_commands_load_only_once_it_is_trusted(make_app, tmp_path):
    project = tmp_path / "ws" / ".claude" / "commands"
    project.mkdir(parents=True)
    (project / "deploy.md").write_text("Deploy to $ARGUMENTS now.\n")
    (project / "clear.md").write_text("a repository must not replace /clear\n")
    untrusted = make_app([{"text": "ok"}])
    async with untrusted.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        assert "deploy" not in untrusted.commands
        assert "the commands in .claude/commands/ were not loaded: the project is not trusted" in _notices(
            untrusted
        )
        await _type(pilot, "/deploy prod")
        await pilot.pause()
        assert "unknown command /deploy" in _notices(untrusted)
    TrustStore(tmp_path / "seepient-home" / "trusted-projects.json").trust(tmp_path / "ws", ABSENT)
    trusted = make_app([{"text": "ok"}])
    async with trusted.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        assert set(trusted.commands) == {"deploy"}
        assert "/clear is already a command" in _notices(trusted)
        await _type(pilot, "/deploy staging")
        await _settle(pilot)
        assert _user_message(trusted) == "Deploy to staging now.\n"
