"""Pilot tests of the TUI's commands over a real session: ``/clear``, ``/cost``, ``/init`` (the AGENTS.md write
asks and lands when approved), ``/mcp`` with a real MCP server, ``/doctor``, and custom commands whose front
matter never grants a permission."""

from __future__ import annotations

import asyncio
import json

from seepient.surfaces.tui.approval import ApprovalScreen
from seepient.surfaces.tui.assistant_text import AssistantText
from seepient.surfaces.tui.widgets import UserPrompt
from tests.conftest import BIN
from tests.surfaces.tui.conftest import shell, write
from tests.surfaces.tui.test_tui_pilot import _notices, _settle, _type, _wait_modal

TIME = {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}


async def _until(pilot, condition, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(1000):
        await pilot.pause()
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{what} never happened; notices:\n{_notices(pilot.app)}")


async def test_clear_starts_a_new_conversation(make_app):
    app = make_app([{"text": "first answer"}, {"text": "second answer"}])
    async with app.run_test(size=(100, 30)) as pilot:
        await _type(pilot, "hello")
        await _settle(pilot)
        first = app.session.id
        assert app.usage.turns == 1 and app.session.history
        await _type(pilot, "/clear")
        await _settle(pilot)
        assert app.session.id != first and app.session.history == ()
        assert app.usage.turns == 0 and not app.query(UserPrompt) and not app.query(AssistantText)
        assert "the previous one is in /sessions" in _notices(app)
        await _type(pilot, "again")
        await _settle(pilot)
        assert [m.content for m in app.session.history if m.role == "user"] == ["again"]


async def test_cost_shows_tokens_unknown_cost_and_the_context_window(make_app):
    app = make_app([{"text": "an answer"}])
    async with app.run_test(size=(120, 30)) as pilot:
        await _type(pilot, "hello")
        await _settle(pilot)
        await _type(pilot, "/cost")
        await pilot.pause()
        shown = _notices(app)
        assert "1 turn(s) in this conversation" in shown
        assert "cost: unknown (no prices for" in shown and "models.prices" in shown
        assert "context window: ~" in shown and "of 128,000 tokens" in shown


async def test_init_asks_before_writing_agents_md_and_writes_it_when_approved(make_app):
    agents = "# ws\n\nNothing to build yet.\n"
    app = make_app([write("AGENTS.md", agents), {"text": "Wrote AGENTS.md."}])
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "/init")
        modal = await _wait_modal(pilot)
        assert "AGENTS.md" in modal.shown_text
        assert not (app.session.workspace / "AGENTS.md").exists()
        await pilot.press("y")
        await _settle(pilot)
        assert (app.session.workspace / "AGENTS.md").read_text() == agents
        assert [p.prompt for p in app.query(UserPrompt)] == ["/init"]
        sent = next(m.content for m in app.session.history if m.role == "user")
        assert "Study this project and write AGENTS.md" in sent


async def test_mcp_lists_servers_and_their_tools(make_app, tmp_path):
    home = tmp_path / "seepient-home"
    home.mkdir()
    broken = {"command": "/bin/sh", "args": ["-c", "exit 3"]}
    (home / "settings.json").write_text(json.dumps({"mcpServers": {"time": TIME, "broken": broken}}))
    app = make_app([{"text": "ok"}])
    async with app.run_test(size=(140, 30)) as pilot:
        await _type(pilot, "/mcp")
        await _until(pilot, lambda: "MCP server time:" in _notices(app), "the server list")
        shown = _notices(app)
        assert "mcp__time__get_current_time" in shown and "mcp__time__convert_time" in shown
        assert (
            "MCP server broken did not start" in shown
            and "fix: check the command of mcpServers.broken" in shown
        )


async def test_doctor_reports_inside_the_tui(make_app):
    app = make_app([{"text": "ok"}])
    async with app.run_test(size=(140, 40)) as pilot:
        await _type(pilot, "/doctor")
        await _until(
            pilot, lambda: "problem(s) found" in _notices(app) or "no problems" in _notices(app), "doctor"
        )
        shown = _notices(app)
        assert f"Seepient doctor for {app.session.workspace}" in shown
        assert "bubblewrap starts" in shown and "a command runs in the jail" in shown


async def test_a_custom_commands_front_matter_never_grants_a_permission(make_app, tmp_path):
    commands = tmp_path / "seepient-home" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "touchit.md").write_text(
        "---\ndescription: touch a file\nallowed-tools: Bash(touch:*), Shell(touch:*)\nmodel: openai:gpt-4.1\n---\n"
        "Touch $ARGUMENTS please.\n"
    )
    (commands / "git" / "log.md").write_text("Summarise the git log.\n")
    app = make_app([shell("touch granted.txt"), {"text": "ok"}])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: bool(app.commands), "loading the commands")
        assert set(app.commands) == {"touchit", "git:log"}
        assert "allowed-tools, model in its front matter is ignored" in _notices(app)
        await _type(pilot, "/touchit granted.txt")
        await _wait_modal(pilot)  # the command's front matter did not allow it: policy still asks
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape")
        await _settle(pilot)
        assert not (app.session.workspace / "granted.txt").exists()
        sent = next(m.content for m in app.session.history if m.role == "user")
        assert sent == "Touch granted.txt please.\n"
        assert [p.prompt for p in app.query(UserPrompt)] == ["/touchit granted.txt"]
        await _type(pilot, "/help")
        await pilot.pause()
        assert "/git:log" in _notices(app) and "/touchit" in _notices(app)
