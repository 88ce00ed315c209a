"""Pilot tests of ``/plan`` (a read-only planning turn whose plan is carried out only after the person approves
it in the plan modal) and of images attached by pasting a file's path or with ``/image``."""

from __future__ import annotations

import asyncio
import base64

from textual import events

from seepient.surfaces.tui.approval import ApprovalScreen
from seepient.surfaces.tui.plan import PlanApprovalScreen
from seepient.surfaces.tui.widgets import Notice, PromptInput, UserPrompt
from tests.surfaces.tui.conftest import write
from tests.surfaces.tui.test_tui_pilot import _settle, _type, _wait_modal

_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40


async def _wait_for(pilot, screen_type):  # type: ignore[no-untyped-def]
    for _ in range(400):
        await pilot.pause()
        if isinstance(pilot.app.screen, screen_type):
            return pilot.app.screen
        await asyncio.sleep(0.01)
    raise AssertionError(f"{screen_type.__name__} never appeared")


def _notices(app) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(n.plain for n in app.query(Notice))


def _plan_script() -> list[dict]:
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "1. Write hello.txt\n2. Check it"},
        write("hello.txt", "hi\n"),
        {"text": "done"},
    ]


async def test_plan_is_carried_out_only_after_the_plan_modal_approves_it(make_app):
    app = make_app(_plan_script())
    (app.session.workspace / "notes.txt").write_text("todo: greet\n")
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "/plan greet the world")
        modal = await _wait_for(pilot, PlanApprovalScreen)
        assert "Write hello.txt" in modal.plan
        assert not (app.session.workspace / "hello.txt").exists()
        (prompt,) = app.query(UserPrompt)
        assert prompt.prompt == "greet the world"
        await pilot.press("y")
        approval = await _wait_modal(pilot)  # the write itself still goes through approval
        assert "hello.txt" in approval.shown_text
        await pilot.press("y")
        await _settle(pilot)
        assert (app.session.workspace / "hello.txt").read_text() == "hi\n"
        users = [m.content for m in app.session.history if m.role == "user"]
        assert users[0] == "greet the world" and "plan is approved" in users[-1]


async def test_declined_plan_changes_nothing(make_app):
    app = make_app(_plan_script())
    (app.session.workspace / "notes.txt").write_text("todo: greet\n")
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "/plan greet the world")
        await _wait_for(pilot, PlanApprovalScreen)
        await pilot.press("n")
        await _settle(pilot)
        assert not isinstance(app.screen, (PlanApprovalScreen, ApprovalScreen))
        assert not (app.session.workspace / "hello.txt").exists()
        assert "nothing was changed" in _notices(app)
        assert [m.content for m in app.session.history if m.role == "user"] == ["greet the world"]


async def test_plan_without_a_prompt_explains_usage(make_app):
    app = make_app([{"text": "unused"}])
    async with app.run_test(size=(100, 30)) as pilot:
        await _type(pilot, "/plan")
        await pilot.pause()
        assert "usage: /plan" in _notices(app)
        assert app.session.history == ()


async def test_pasted_image_path_is_attached_and_rides_with_the_next_prompt(make_app, tmp_path):
    image = tmp_path / "my shot.png"
    image.write_bytes(_PNG)
    app = make_app([{"text": "a tiny black picture"}])
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        app.post_message(events.Paste(f"'{image}'"))  # as a terminal pastes a dropped file
        await pilot.pause()
        assert prompt.text == ""  # attached, not typed
        assert "image attached: my shot.png" in _notices(app)
        await _type(pilot, "what is this?")
        await _settle(pilot)
        (shown,) = app.query(UserPrompt)
        assert shown.images == 1
        user = [m for m in app.session.history if m.role == "user"][0]
        assert user.content == "what is this?"
        assert [base64.b64decode(i.data or "") for i in user.images] == [_PNG]


async def test_pasted_text_that_is_not_only_image_paths_is_typed(make_app, tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not an image")
    app = make_app([{"text": "unused"}])
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        for pasted in (str(text_file), f"look at {tmp_path}/missing.png please"):
            prompt.load_text("")
            app.post_message(events.Paste(pasted))
            await pilot.pause()
            assert prompt.text == pasted
        assert "image attached" not in _notices(app)


async def test_image_command_attaches_lists_clears_and_refuses_non_images(make_app, tmp_path):
    good = tmp_path / "a.png"
    good.write_bytes(_PNG)
    fake = tmp_path / "fake.png"
    fake.write_text("<svg/>")
    app = make_app([{"text": "unused"}])
    async with app.run_test(size=(100, 30)) as pilot:
        await _type(pilot, f"/image {fake}")
        await pilot.pause()
        assert "image not attached: fake.png: not a PNG, JPEG, GIF or WebP" in _notices(app)
        await _type(pilot, f"/image {tmp_path}/nope.png")
        await pilot.pause()
        assert "cannot read it" in _notices(app)
        await _type(pilot, f"/image {good}")
        await _type(pilot, "/image")
        await pilot.pause()
        assert "waiting for the next prompt: a.png" in _notices(app)
        await _type(pilot, "/image clear")
        await pilot.pause()
        assert "1 image(s) dropped" in _notices(app)
        assert app.session.history == ()


async def test_streamed_markdown_is_appended_block_by_block_without_duplicates(make_app):
    from textual.widgets._markdown import MarkdownBlock

    from seepient.surfaces.tui.assistant_text import AssistantText

    answer = (
        "# Result\n\nThe first paragraph has **bold** words.\n\n- one\n- two\n- three\n\n"
        "```python\nprint('hi')\n```\n\nThe last paragraph ends here."
    )
    app = make_app([{"text": answer}])
    async with app.run_test(size=(100, 40)) as pilot:
        await _type(pilot, "go")
        await _settle(pilot)
        (text,) = app.query(AssistantText)
        assert text.streamed == answer and text.source == answer
        top_level = [child for child in text.children if isinstance(child, MarkdownBlock)]
        kinds = [type(block).__name__ for block in top_level]
        assert kinds == [
            "MarkdownH1",
            "MarkdownParagraph",
            "MarkdownBulletList",
            "MarkdownFence",
            "MarkdownParagraph",
        ]


async def test_slow_stream_appends_many_times_and_ends_identical_to_the_whole(make_app):
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownBlock

    from seepient.surfaces.tui.assistant_text import AssistantText

    answer = "Intro line\n\n- item one\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone **now**.\n"
    app = make_app([{"text": "unused"}])
    async with app.run_test(size=(100, 40)) as pilot:
        text = AssistantText()
        whole = Markdown(answer)
        await app.query_one("#transcript").mount_all([text, whole])
        for start in range(0, len(answer), 7):  # fragments that cut through words, lines and table rows
            text.add(answer[start : start + 7])
            await pilot.pause(0.02)
        text.finish()
        await pilot.pause(0.2)

        def shape(widget: Markdown) -> list[tuple[str, str]]:
            return [(type(b).__name__, b._content.plain) for b in widget.query(MarkdownBlock)]

        assert text.source == answer
        assert shape(text) == shape(whole)


async def test_a_sub_agents_activity_is_shown_tagged_and_its_spawn_is_approved_in_the_modal(make_app):
    app = make_app(
        [
            {
                "tool_calls": [
                    {"name": "agent", "arguments": {"task": "Read notes.txt", "tools": ["read_file"]}}
                ]
            },
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "notes say hello"},
            {"text": "The sub-agent read the notes."},
        ]
    )
    (app.session.workspace / "notes.txt").write_text("hello\n")
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, "delegate")
        modal = await _wait_modal(pilot)
        assert "Read notes.txt" in modal.shown_text
        await pilot.press("y")
        await _settle(pilot)
        shown = _notices(app)
        assert (
            "[sub-agent " in shown
            and "→ read_file" in shown
            and "ok: " in shown
            and "finished (final)" in shown
        )
