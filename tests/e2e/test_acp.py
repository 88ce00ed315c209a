"""``seepient acp`` as an editor starts it: a subprocess driven through the official SDK's client side, and
through raw JSON-RPC lines, with the ``replay:`` model. Every answer and update is read off the real stdout."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    audio_block,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

from tests.conftest import BIN
from tests.e2e.conftest import Sandboxed

Chooser = Callable[[Any], str | None]


class Editor:
    """The editor's side: records every update and answers each permission request with an option id from
    ``choose`` (None cancels the request)."""

    def __init__(self, choose: Chooser | None = None, buffers: dict[str, str] | None = None) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.read: list[str] = []
        self.buffers = buffers
        self._choose = choose or (lambda request: None)

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> Any:
        self.read.append(path)
        if self.buffers is None or path not in self.buffers:
            return ReadTextFileResponse(content=Path(path).read_text())
        return ReadTextFileResponse(content=self.buffers[path])

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.asked.append((tool_call, options))
        option = self._choose((tool_call, options))
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def on_connect(self, conn: Any) -> None:
        return None


def embedded_text_resource_block(uri: str, text: str) -> Any:
    return resource_block(embedded_text_resource(uri, text))


def _agent_args(world: Sandboxed, script: Path, *extra: str) -> tuple[str, ...]:
    return (str(BIN / "seepient"), "acp", "--model", f"replay:{script}", *extra)


async def _start(world: Sandboxed, editor: Editor, script: Path, *extra: str) -> Any:
    command, *args = _agent_args(world, script, *extra)
    context = spawn_agent_process(lambda _agent: editor, command, *args, env=world.env, cwd=world.workspace)
    conn, process = await context.__aenter__()
    offered = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=editor.buffers is not None))
    init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=offered)
    return context, conn, process, init


@contextlib.asynccontextmanager
async def _editor_session(
    world: Sandboxed, editor: Editor, script: Path, *extra: str, mcp_servers: list[Any] | None = None
) -> AsyncIterator[tuple[Any, Any, Any, Any]]:
    """The agent started, initialized and with one new session in the workspace; stopped on the way out."""
    context, conn, process, init = await _start(world, editor, script, *extra)
    try:
        session = await conn.new_session(cwd=str(world.workspace), mcp_servers=mcp_servers or [])
        yield conn, session, process, init
    finally:
        await context.__aexit__(None, None, None)


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


async def _stored_messages(world: Sandboxed, session_id: str) -> list[dict[str, Any]]:
    from seepient.surfaces.stored_sessions import SessionLog

    log = await SessionLog.open(world.seepient_home, world.workspace)
    try:
        messages, _ = await log.load(session_id)
    finally:
        await log.aclose()
    return messages


def _audit_surfaces(world: Sandboxed) -> set[str]:
    return {line.get("surface") for line in world.audit_lines() if "surface" in line}


def _verify(world: Sandboxed) -> None:
    done = subprocess.run(
        [str(BIN / "seepient"), "audit", "verify"], env=world.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def test_an_asked_edit_shows_its_diff_and_lands_once_allowed(world: Sandboxed) -> None:
    (world.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = world.script(
        [
            {
                "thinking": "The sign is wrong.",
                "text": "Fixing it.",
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                    }
                ],
            },
            {"text": "Fixed."},
        ]
    )
    editor = Editor(lambda request: "allow_once")
    async with _editor_session(world, editor, script) as (conn, session, process, init):
        assert init.protocol_version == 1 and init.agent_capabilities.load_session
        assert init.agent_capabilities.prompt_capabilities.image
        assert init.agent_capabilities.prompt_capabilities.embedded_context
        assert init.agent_capabilities.mcp_capabilities.http
        assert session.modes.current_mode_id == "ask-untrusted"
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix calc.py")])
        assert answer.stop_reason == "end_turn"
    assert (world.workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    tool_call, options = editor.asked[0]
    assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    diffs = [c for c in tool_call.content if c.type == "diff"]
    assert diffs and diffs[0].path == str(world.workspace / "calc.py")
    assert "a - b" in diffs[0].old_text and "a + b" in diffs[0].new_text
    assert tool_call.kind == "edit" and tool_call.locations[0].path == str(world.workspace / "calc.py")
    assert editor.text("agent_thought_chunk") == "The sign is wrong."
    assert editor.text().startswith("Fixing it.") and editor.text().endswith("Fixed.")
    starts = editor.of("tool_call")
    assert starts and starts[0].kind == "edit" and starts[0].status == "pending"
    statuses = [u.status for u in editor.of("tool_call_update") if u.status]
    assert statuses[-2:] == ["in_progress", "completed"]
    assert [u.session_update for u in editor.updates][0] == "available_commands_update"
    assert _audit_surfaces(world) == {"acp"}
    _verify(world)


async def test_an_edit_against_a_file_with_unsaved_editor_changes_is_reported_before_approval(
    world: Sandboxed,
) -> None:
    calc = world.workspace / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    script = world.script([{"tool_calls": [{"name": "edit_file", "arguments": edit}]}, {"text": "ok"}])
    unsaved = {str(calc): "def add(a, b):\n    return a - b  # my unsaved note\n"}
    editor = Editor(lambda request: "reject_once", buffers=unsaved)
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
    tool_call, _ = editor.asked[0]
    texts = [c.content.text for c in tool_call.content if c.type == "content"]
    assert editor.read == [str(calc)]
    assert any("open in the editor with content that differs" in text for text in texts)
    assert calc.read_text() == "def add(a, b):\n    return a - b\n"


async def test_the_model_reads_an_editor_buffer_only_after_the_read_policy(world: Sandboxed) -> None:
    calc = world.workspace / "calc.py"
    calc.write_text("on disk\n")
    key = world.home / ".ssh" / "id_rsa"
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "read_editor_buffer", "arguments": {"path": "calc.py"}},
                    {"name": "read_editor_buffer", "arguments": {"path": str(key)}},
                ]
            },
            {"text": "read"},
        ]
    )
    editor = Editor(buffers={str(calc): "unsaved in the editor\n", str(key): "leaked"})
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("look")])
    # The sensitive path was refused before the editor was asked for it; the workspace file came from the buffer.
    assert editor.read == [str(calc)]
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    texts = sorted((u.status, u.content[0].content.text) for u in ended.values())
    assert texts[0][0] == "completed" and "unsaved in the editor" in texts[0][1]
    assert texts[1][0] == "failed" and "Denied" in texts[1][1] and "leaked" not in json.dumps(texts)
    without = Editor()  # an editor without fs/read_text_file is not offered the tool
    plain = [
        {"tool_calls": [{"name": "read_editor_buffer", "arguments": {"path": "calc.py"}}]},
        {"text": "no such tool"},
    ]
    async with _editor_session(world, without, world.script(plain, name="plain.yaml")) as (
        conn,
        session,
        process,
        _,
    ):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("look")])
    assert without.read == []
    (failed,) = [u for u in without.of("tool_call_update") if u.status == "failed"]
    assert "Unknown tool" in failed.content[0].content.text


async def test_a_rejected_write_lands_nothing_and_reject_always_refuses_the_next_without_asking(
    world: Sandboxed,
) -> None:
    (world.workspace / "notes").mkdir()
    script = world.script(
        [_write("notes/a.txt", "a"), {"text": "refused"}, _write("notes/b.txt", "b"), {"text": "again"}]
    )
    editor = Editor(lambda request: "reject_always")
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        first = await conn.prompt(session_id=session.session_id, prompt=[text_block("write a")])
        second = await conn.prompt(session_id=session.session_id, prompt=[text_block("write b")])
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert not (world.workspace / "notes" / "a.txt").exists()
    assert not (world.workspace / "notes" / "b.txt").exists()
    assert len(editor.asked) == 1  # the refusal for the session answered the second write
    failed = [u for u in editor.of("tool_call_update") if u.status == "failed"]
    assert len(failed) == 2 and "for the rest of this session" in failed[1].content[0].content.text


async def test_a_denied_read_never_asks_and_fails_with_the_reason(world: Sandboxed) -> None:
    script = world.script(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "~/.ssh/id_rsa"}}]}, {"text": "no"}]
    )
    editor = Editor(lambda request: "allow_once")
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("read the key")])
    assert editor.asked == []
    failed = [u for u in editor.of("tool_call_update") if u.status == "failed"]
    assert len(failed) == 1 and "Denied" in failed[0].content[0].content.text
    assert editor.of("tool_call")[0].kind == "read"


async def test_cancel_ends_a_long_command_as_cancelled_and_kills_it(world: Sandboxed) -> None:
    marker = world.workspace / "finished"
    script = world.script(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": f"sleep 60; touch {marker}"}}]},
            {"text": "next turn"},
        ]
    )
    editor = Editor(lambda request: "allow_once")
    async with _editor_session(world, editor, script, "--mode", "autonomous-trusted") as (
        conn,
        session,
        process,
        _,
    ):
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("wait")]))
        for _ in range(600):
            if any(u.status == "in_progress" for u in editor.of("tool_call_update")) or any(
                _sleeping(process.pid)
            ):
                break
            await asyncio.sleep(0.05)
        assert list(_sleeping(process.pid)), "the command never started"
        with pytest.raises(RequestError) as busy:  # out of order: a second prompt while one runs
            await conn.prompt(session_id=session.session_id, prompt=[text_block("and another")])
        assert busy.value.code == -32600
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 60)
        assert answer.stop_reason == "cancelled"
        for _ in range(200):
            if not list(_sleeping(process.pid)):
                break
            await asyncio.sleep(0.05)
        assert not list(_sleeping(process.pid)), "the command outlived the cancel"
        after = await conn.prompt(session_id=session.session_id, prompt=[text_block("go on")])
        assert after.stop_reason == "end_turn"
    assert not marker.exists()
    outcomes = [line for line in world.audit_lines() if line.get("type") == "outcome"]
    assert any(line["outcome"]["status"] == "interrupted" for line in outcomes)
    _verify(world)


def _descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.append(child)
            frontier.append(child)
    return found


def _sleeping(pid: int) -> list[int]:
    out = []
    for child in _descendants(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"sleep"):
            out.append(child)
    return out


async def test_modes_switch_and_a_mode_the_managed_settings_disable_is_refused(world: Sandboxed) -> None:
    managed = world.home / "managed.json"
    managed.write_text(json.dumps({"permissions": {"disabledModes": ["autonomous-trusted"]}}))
    world.env["SEEPIENT_MANAGED_SETTINGS"] = str(managed)
    script = world.script([_write("a.txt", "a"), {"text": "done"}])
    editor = Editor(lambda request: "allow_once")
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        assert "autonomous-trusted" not in [m.id for m in session.modes.available_modes]
        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous-trusted")
        assert refused.value.code == -32602 and "switch" in json.dumps(refused.value.data)
        await conn.set_session_mode(session_id=session.session_id, mode_id="always-ask")
        await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
    assert len(editor.asked) == 1 and (world.workspace / "a.txt").read_text() == "a"


async def test_a_stored_session_loads_with_its_history_replayed(world: Sandboxed) -> None:
    todos = [
        {"id": "1", "content": "read the code", "status": "completed"},
        {"id": "2", "content": "answer", "status": "in_progress"},
    ]
    script = world.script(
        [
            {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]},
            {"text": "first answer"},
            {"text": "second answer"},
        ]
    )
    editor = Editor()
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("first question")])
    (plan,) = editor.of("plan")
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read the code", "completed"),
        ("answer", "in_progress"),
    ]
    again = Editor()
    context, conn, process, _ = await _start(world, again, script)
    try:
        await conn.load_session(cwd=str(world.workspace), session_id=session.session_id, mcp_servers=[])
        assert again.text("user_message_chunk") == "first question"
        assert again.text() == "first answer"
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("second question")])
        assert answer.stop_reason == "end_turn"
        assert again.text().endswith("second answer")  # the replay script went on after the stored step
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(world.workspace), session_id="ses_nope", mcp_servers=[])
    finally:
        await context.__aexit__(None, None, None)


async def test_a_prompt_of_text_a_link_an_embedded_file_and_an_image_reaches_the_model(
    world: Sandboxed,
) -> None:
    png = base64.b64encode(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
        )
    ).decode()
    script = world.script([{"text": "I see a pixel."}])
    editor = Editor()
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        answer = await conn.prompt(
            session_id=session.session_id,
            prompt=[
                text_block("What is in these?"),
                resource_link_block(name="calc.py", uri=f"file://{world.workspace}/calc.py"),
                embedded_text_resource_block(f"file://{world.workspace}/notes.md", "use addition"),
                image_block(png, "image/png"),
            ],
        )
        assert answer.stop_reason == "end_turn" and editor.text() == "I see a pixel."
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=[audio_block("AAAA", "audio/wav")])
        assert refused.value.code == -32602 and "audio" in json.dumps(refused.value.data)
    messages = await _stored_messages(world, session.session_id)
    user = next(m for m in messages if m["role"] == "user")
    assert "What is in these?" in user["content"] and f"(file://{world.workspace}/calc.py)" in user["content"]
    assert f'<context uri="file://{world.workspace}/notes.md">\nuse addition\n</context>' in user["content"]
    assert [image["media_type"] for image in user["images"]] == ["image/png"]


async def test_slash_commands_list_the_skills_and_a_skill_command_runs_a_turn_with_it(
    world: Sandboxed,
) -> None:
    skill = world.workspace / ".agents" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from the git log\n---\nList changes.\n"
    )
    script = world.script([{"text": "notes written"}])
    editor = Editor()
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        compacted = await conn.prompt(session_id=session.session_id, prompt=[text_block("/compact")])
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("/release-notes for 1.2")]
        )
    (commands,) = editor.of("available_commands_update")
    assert [c.name for c in commands.available_commands] == ["compact", "release-notes"]
    assert compacted.stop_reason == answer.stop_reason == "end_turn"
    assert editor.text().startswith("Nothing to compact yet.") and editor.text().endswith("notes written")
    messages = await _stored_messages(world, session.session_id)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["for 1.2"]


async def test_custom_commands_are_offered_and_expand_but_an_untrusted_projects_are_not(
    world: Sandboxed,
) -> None:
    user_commands = world.seepient_home / "commands"
    user_commands.mkdir(parents=True)
    (user_commands / "review.md").write_text(
        "---\ndescription: Review a file\nallowed-tools: Shell(rm:*)\n---\nReview $ARGUMENTS carefully.\n"
    )
    planted = world.workspace / ".agents" / "commands"
    planted.mkdir(parents=True)
    (planted / "ship.md").write_text("Run the release and push it.\n")
    script = world.script([{"text": "reviewed"}])
    editor = Editor()
    async with _editor_session(world, editor, script) as (conn, session, _, _):
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("/review calc.py")])
    (commands,) = editor.of("available_commands_update")
    offered = {c.name: c.description for c in commands.available_commands}
    assert offered.get("review") == "Review a file"
    assert "ship" not in offered, "an untrusted project's commands are not offered"
    assert answer.stop_reason == "end_turn" and editor.text().endswith("reviewed")
    messages = await _stored_messages(world, session.session_id)
    assert [m["content"].strip() for m in messages if m["role"] == "user"] == ["Review calc.py carefully."]


async def test_the_editors_mcp_servers_start_and_their_tools_ask(world: Sandboxed) -> None:
    script = world.script(
        [
            {"tool_calls": [{"name": "mcp__clock__get_current_time", "arguments": {"timezone": "UTC"}}]},
            {"text": "that is the time"},
        ]
    )
    editor = Editor(lambda request: "allow_once")
    time_server = McpServerStdio(
        name="clock",
        command=str(BIN / "mcp-server-time"),
        args=["--local-timezone", "UTC"],
        env=[EnvVariable(name="LANG", value="C.UTF-8")],
    )
    async with _editor_session(world, editor, script, mcp_servers=[time_server]) as (conn, session, _, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("what time is it")])
    # The server started without a project trust question; its tool asked like any MCP tool.
    assert [call.title for call, _ in editor.asked] and all("clock" in call.title for call, _ in editor.asked)
    done = [u for u in editor.of("tool_call_update") if u.status == "completed"]
    assert done and "UTC" in done[-1].content[0].content.text


def _project_allowing_writes(world: Sandboxed) -> None:
    (world.workspace / ".seepient").mkdir()
    (world.workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Write(/**)", "Edit(/**)"]}})
    )


async def test_an_untrusted_projects_settings_are_ignored(world: Sandboxed) -> None:
    _project_allowing_writes(world)
    script = world.script([_write("a.txt", "a"), {"text": "asked"}])
    answers = iter(["distrust", "reject_once"])
    editor = Editor(lambda request: next(answers))
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
    titles = [call.title for call, _ in editor.asked]
    assert titles[0].startswith("Trust the project settings")
    # Not trusted: the project's allow rule did not apply, so the write asked and, rejected, did not land.
    assert len(titles) == 2 and not (world.workspace / "a.txt").exists()


async def test_trusting_the_project_through_the_editor_applies_its_settings(world: Sandboxed) -> None:
    _project_allowing_writes(world)
    script = world.script([_write("a.txt", "a"), {"text": "wrote"}])
    editor = Editor(lambda request: "trust")
    async with _editor_session(world, editor, script) as (conn, session, process, _):
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
        assert answer.stop_reason == "end_turn" and editor.text() == "wrote"
    # Only the trust question was asked: the trusted project's allow rule let the write through.
    assert [call.title for call, _ in editor.asked] == [f"Trust the project settings of {world.workspace}?"]
    assert (world.workspace / "a.txt").read_text() == "a"
    trusted = subprocess.run(
        [str(BIN / "seepient"), "trust", "--list"], env=world.env, capture_output=True, text=True, timeout=120
    )
    assert str(world.workspace) in trusted.stdout
    _verify(world)


class RawAgent:
    """``seepient acp`` on pipes, spoken to in raw JSON-RPC lines; every line it writes must be JSON."""

    def __init__(self, world: Sandboxed, script: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            _agent_args(world, script, *extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=world.env,
            cwd=world.workspace,
        )
        self.received: list[dict[str, Any]] = []

    def send(self, *lines: str) -> None:
        assert self.process.stdin is not None
        for line in lines:
            self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def until_answered(self, *ids: Any) -> dict[Any, dict[str, Any]]:
        """Read lines until each of ``ids`` has an answer (a null id answers once per null-id error)."""
        assert self.process.stdout is not None
        waiting = list(ids)
        answers: dict[Any, dict[str, Any]] = {}
        while waiting:
            raw = self.process.stdout.readline()
            assert raw, "stdout closed before every answer came"
            message = json.loads(raw)
            assert message.get("jsonrpc") == "2.0", raw
            self.received.append(message)
            if "method" not in message and message.get("id") in waiting:
                waiting.remove(message["id"])
                answers.setdefault(message["id"], message)
                if message["id"] is None:
                    answers.setdefault("nulls", {"all": []})["all"].append(message)  # type: ignore[index]
        return answers

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        for raw in self.process.stdout.read().splitlines():
            message = json.loads(raw)
            assert message.get("jsonrpc") == "2.0"
            self.received.append(message)
        self.process.wait(timeout=60)
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()


def _request(request_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def test_malformed_and_out_of_order_lines_get_json_rpc_errors_and_the_agent_keeps_going(
    world: Sandboxed,
) -> None:
    agent = RawAgent(world, world.script([{"text": "still here"}]))
    new = {"cwd": str(world.workspace), "mcpServers": []}
    try:
        agent.send(_request(1, "session/new", new))
        assert agent.until_answered(1)[1]["error"]["code"] == -32600  # before initialize
        agent.send("this is not json")
        assert agent.until_answered(None)[None]["error"]["code"] == -32700
        agent.send("[1, 2, 3]")
        assert agent.until_answered(None)[None]["error"]["code"] == -32600
        agent.send('{"jsonrpc":"2.0","id":2}')
        assert agent.until_answered(2)[2]["error"]["code"] == -32600
        agent.send(_request(3, "initialize", {"protocolVersion": 1}))
        assert agent.until_answered(3)[3]["result"]["protocolVersion"] == 1
        agent.send(_request(4, "session/prompt", {"sessionId": "nope", "prompt": []}))
        assert agent.until_answered(4)[4]["error"]["code"] == -32602
        agent.send(_request(5, "no/such/method", {}))
        assert agent.until_answered(5)[5]["error"]["code"] == -32601
        agent.send(_request(6, "session/new", {"cwd": "relative/path", "mcpServers": []}))
        assert agent.until_answered(6)[6]["error"]["code"] == -32602
        agent.send(_request(7, "session/new", new))
        session_id = agent.until_answered(7)[7]["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        agent.send(_request(8, "session/prompt", prompt))
        assert agent.until_answered(8)[8]["result"]["stopReason"] == "end_turn"
    finally:
        agent.close()


def test_nothing_but_json_rpc_reaches_stdout_even_from_a_noisy_command(world: Sandboxed) -> None:
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "shell", "arguments": {"command": "echo NOISE-OUT; echo NOISE-ERR >&2"}}
                ]
            },
            {"text": "ran"},
        ]
    )
    agent = RawAgent(world, script, "--mode", "autonomous-trusted")
    try:
        agent.send(_request(1, "initialize", {"protocolVersion": 1}))
        agent.send(_request(2, "session/new", {"cwd": str(world.workspace), "mcpServers": []}))
        session_id = agent.until_answered(1, 2)[2]["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "run it"}]}
        agent.send(_request(3, "session/prompt", prompt))
        assert agent.until_answered(3)[3]["result"]["stopReason"] == "end_turn"
    finally:
        agent.close()
    results = [
        m["params"]["update"]
        for m in agent.received
        if m.get("method") == "session/update" and m["params"]["update"].get("status") == "completed"
    ]
    assert results and "NOISE-OUT" in json.dumps(results)  # the output reached the editor inside JSON-RPC


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--mode", "wild"), "unknown consent mode 'wild'"),
        (("--config", "/nonexistent/settings.json"), "no such settings file"),
        (("--sandbox", "maybe"), "--sandbox must be auto or off"),
    ],
)
def test_bad_options_stop_before_serving_with_the_reason_on_stderr(world: Sandboxed, extra, message) -> None:
    done = subprocess.run(
        _agent_args(world, world.script([{"text": "x"}]), *extra),
        input="",
        capture_output=True,
        text=True,
        env=world.env,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "" and message in done.stderr
