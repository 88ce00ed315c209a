"""memory: the six commands through the real executor and policy, memory folders under $SEEPIENT_HOME (never in
the repository), the pre-image check, and traversal / symlink / encoding attacks refused at every layer."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

import pytest

from seepient.config import SeepientPaths
from seepient.config.memory_paths import MemoryPathError, memory_parts, split_memory_path
from seepient.config.paths import workspace_id
from seepient.config.settings import PermissionSettings
from seepient.execution.local import LocalExecutor
from seepient.policy.engine import PolicyEngine
from seepient.policy.paths import PathGuard
from seepient.protocol import Decision, FileChange, PathDenied, PreparedActionDraft
from seepient.protocol.actions import MemoryAction
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.edit import EditFileTool, WriteFileTool
from seepient.tools.builtin.memory import MemoryTool
from seepient.tools.builtin.shell import ShellTool
from tests.approved import approve, commit


@pytest.fixture
def env(tmp_path: Path, workspace: Path, home: Path, seepient_home: Path, ctx: ToolContext) -> dict[str, Any]:
    engine = PolicyEngine(
        workspace,
        seepient_home=seepient_home,
        home=home,
        mode="ask-untrusted",
        permissions=PermissionSettings(),
    )
    project = SeepientPaths(home=seepient_home).memory_dir("project", workspace)
    user = SeepientPaths(home=seepient_home).memory_dir("user", workspace)
    return {
        "workspace": workspace,
        "home": home,
        "seepient_home": seepient_home,
        "ctx": ctx,
        "engine": engine,
        "project": project,
        "user": user,
        "tmp": tmp_path,
    }


async def _run(env: dict[str, Any], **arguments: Any) -> tuple[PreparedActionDraft, Any]:
    tool = MemoryTool()
    args = tool.input_model.model_validate(arguments)
    draft = await tool.prepare(args, env["ctx"])
    verdict = env["engine"].evaluate(draft)
    assert verdict.decision is not Decision.DENY, verdict
    return draft, await tool.execute(approve(draft), env["ctx"])


def _forged_create(
    scope: Literal["user", "project"], path: str, content: str, *, change_path: str | None = None
) -> tuple[MemoryAction, PreparedActionDraft]:
    """A memory ``create`` that never went through the tool, and its draft, as a forged or buggy one would be."""
    action = MemoryAction(
        command="create",
        scope=scope,
        path=path,
        change=FileChange(path=change_path or path, pre_image_sha256=None, new_content=content),
    )
    draft = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="memory",
        kind="file_change",
        payload=action,
        read_only=False,
        summary="x",
    )
    return action, draft


def _snapshot(root: Path) -> dict[str, bytes]:
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                found[str(path)] = path.read_bytes()
    return found


async def test_create_view_edit_insert_rename_delete(env: dict[str, Any]) -> None:
    draft, out = await _run(env, command="create", path="/memories/project/notes.md", file_text="a\nb\n")
    assert not out.is_error, out.text
    target = env["project"] / "notes.md"
    assert target.read_text() == "a\nb\n"
    # The project folder is keyed by the workspace, under the Seepient home, never inside the repository.
    assert target.parent.name == workspace_id(env["workspace"])
    assert not (env["workspace"] / ".seepient").exists()
    assert draft.kind == "file_change" and "+a" in draft.payload.change.diff

    _, out = await _run(env, command="view", path="/memories/project/notes.md")
    assert "     1\ta" in out.text and "     2\tb" in out.text

    _, out = await _run(
        env, command="str_replace", path="/memories/project/notes.md", old_str="b", new_str="B"
    )
    assert not out.is_error and target.read_text() == "a\nB\n"

    _, out = await _run(
        env, command="insert", path="/memories/project/notes.md", insert_line=1, insert_text="between"
    )
    assert not out.is_error and target.read_text() == "a\nbetween\nB\n"

    _, out = await _run(env, command="view", path="/memories/project/notes.md", view_range=[2, 2])
    assert "between" in out.text and "\ta" not in out.text

    _, out = await _run(
        env, command="rename", old_path="/memories/project/notes.md", new_path="/memories/project/old/n.md"
    )
    assert not out.is_error, out.text
    assert not target.exists() and (env["project"] / "old" / "n.md").read_text() == "a\nbetween\nB\n"

    await _run(env, command="create", path="/memories/user/prefs.md", file_text="tabs\n")
    assert (env["user"] / "prefs.md").read_text() == "tabs\n"
    _, out = await _run(env, command="view", path="/memories")
    assert "/memories/project/" in out.text and "old/n.md" in out.text and "prefs.md" in out.text

    _, out = await _run(env, command="delete", path="/memories/project/old/n.md")
    assert not out.is_error and not (env["project"] / "old" / "n.md").exists()


async def test_bad_requests_get_clear_errors(env: dict[str, Any]) -> None:
    tool = MemoryTool()
    cases = [
        ({"command": "str_replace", "path": "/memories/project/none.md", "old_str": "x"}, "does not exist"),
        ({"command": "create", "path": "/memories/project/a.md"}, "needs file_text"),
        ({"command": "create", "path": "/memories/project", "file_text": "x"}, "not a folder"),
        ({"command": "delete", "path": "/memories/user/none.md"}, "nothing to delete"),
        (
            {"command": "rename", "old_path": "/memories/user/a.md", "new_path": "/memories/project/a.md"},
            "within one folder tree",
        ),
    ]
    for arguments, expected in cases:
        with pytest.raises(ToolInputError, match=expected):
            await tool.prepare(tool.input_model.model_validate(arguments), env["ctx"])
    await _run(env, command="create", path="/memories/project/dup.md", file_text="x x\n")
    with pytest.raises(ToolInputError, match="occurs 2 times"):
        await tool.prepare(
            tool.input_model.model_validate(
                {"command": "str_replace", "path": "/memories/project/dup.md", "old_str": "x", "new_str": "y"}
            ),
            env["ctx"],
        )


async def test_a_file_changed_after_preparation_is_not_overwritten(env: dict[str, Any]) -> None:
    await _run(env, command="create", path="/memories/project/n.md", file_text="one\n")
    tool = MemoryTool()
    args = tool.input_model.model_validate(
        {"command": "str_replace", "path": "/memories/project/n.md", "old_str": "one", "new_str": "two"}
    )
    draft = await tool.prepare(args, env["ctx"])
    (env["project"] / "n.md").write_text("one, changed by someone else\n")
    out = await tool.execute(approve(draft), env["ctx"])
    assert out.is_error and "changed after" in out.text
    assert (env["project"] / "n.md").read_text() == "one, changed by someone else\n"


TRAVERSALS = [
    "/memories/project/../../../settings.json",
    "/memories/project/../user/x.md",
    "/memories/../settings.json",
    "/memories/project/%2e%2e/%2e%2e/settings.json",
    "/memories/project/..%2fsettings.json",
    "/memories/project/./x.md",
    "/memories/project//x.md",
    "/memories/project/.hidden",
    "/memories/project/a\\..\\..\\settings.json",
    "/memories/project/\uff0e\uff0e/settings.json",  # full-width dots
    "/memories/project/x\u2024\u2024",  # one-dot leaders
    "/memories/project/a\x00b",
    "/memories/project/\u202eevil",
    "/etc/passwd",
    "~/.ssh/id_ed25519",
    "memories/../../etc/passwd",
    "/memories/projects/x.md",
    "/memories/project/" + "a/" * 9 + "x.md",
]


@pytest.mark.parametrize("path", TRAVERSALS)
async def test_traversal_and_encoding_tricks_are_refused_by_the_tool(env: dict[str, Any], path: str) -> None:
    before = _snapshot(env["tmp"])
    tool = MemoryTool()
    for arguments in (
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "view", "path": path},
        {"command": "rename", "old_path": "/memories/project/a.md", "new_path": path},
    ):
        with pytest.raises(ToolInputError):
            await tool.prepare(tool.input_model.model_validate(arguments), env["ctx"])
    assert _snapshot(env["tmp"]) == before


@pytest.mark.parametrize(
    "inner", ["../settings.json", "../../../settings.json", "/abs.md", "a/../../b", ".x", "a\\b", ""]
)
async def test_forged_memory_actions_are_denied_by_policy_and_refused_by_execution(
    env: dict[str, Any], inner: str
) -> None:
    """A payload that never went through the tool (a forged or buggy draft) is stopped twice."""
    settings = env["seepient_home"] / "settings.json"
    original = settings.read_bytes()
    action, draft = _forged_create("project", inner, '{"permissions": {"allow": ["Shell"]}}')
    verdict = env["engine"].evaluate(draft)
    assert verdict.decision is Decision.DENY
    assert verdict.rule.startswith("memory:")
    outcome = await commit(env["ctx"].executor, action)
    assert not outcome.ok
    assert settings.read_bytes() == original
    assert not (env["seepient_home"] / "abs.md").exists()


async def test_a_mismatched_change_path_is_refused(env: dict[str, Any]) -> None:
    action, draft = _forged_create("project", "ok.md", "x", change_path="../../settings.json")
    assert env["engine"].evaluate(draft).decision is Decision.DENY
    assert (await commit(env["ctx"].executor, action)).code == "INVALID"


async def test_symlinks_out_of_the_memory_folder_are_never_followed(env: dict[str, Any]) -> None:
    secret = env["home"] / "secret.txt"
    secret.write_text("TOP SECRET\n")
    outside = env["tmp"] / "outside"
    outside.mkdir()
    env["project"].mkdir(parents=True)
    (env["project"] / "leak.md").symlink_to(secret)
    (env["project"] / "out").symlink_to(outside)
    tool = MemoryTool()

    def args(**arguments: Any) -> Any:
        return tool.input_model.model_validate(arguments)

    # Reading through a file symlink: refused at preparation or at execution, never shown.
    draft = await tool.prepare(args(command="view", path="/memories/project/leak.md"), env["ctx"])
    out = await tool.execute(approve(draft), env["ctx"])
    assert out.is_error and "TOP SECRET" not in out.text
    with pytest.raises(ToolInputError, match="symbolic link"):
        await tool.prepare(
            args(command="create", path="/memories/project/leak.md", file_text="x"), env["ctx"]
        )
    assert secret.read_text() == "TOP SECRET\n"

    # Writing through a directory symlink: the tool refuses, and a forged draft is denied by policy and
    # refused by execution as well.
    with pytest.raises(ToolInputError, match="symbolic link"):
        await tool.prepare(
            args(command="create", path="/memories/project/out/x.md", file_text="x"), env["ctx"]
        )
    action, draft = _forged_create("project", "out/x.md", "x")
    verdict = env["engine"].evaluate(draft)
    assert verdict.decision is Decision.DENY and verdict.rule == "memory:symlink"
    outcome = await commit(env["ctx"].executor, draft.payload)
    assert not outcome.ok
    assert list(outside.iterdir()) == []

    # The listing does not descend into or show links.
    draft = await tool.prepare(args(command="view", path="/memories/project"), env["ctx"])
    out = await tool.execute(approve(draft), env["ctx"])
    assert "leak.md" not in out.text and "out/" not in out.text


async def test_a_symlinked_memory_root_is_refused(env: dict[str, Any]) -> None:
    """Swapping the memory folder (or one above it) for a link to elsewhere does not redirect writes."""
    elsewhere = env["tmp"] / "elsewhere"
    elsewhere.mkdir()
    (env["seepient_home"] / "memory").symlink_to(elsewhere)
    tool = MemoryTool()
    args = tool.input_model.model_validate(
        {"command": "create", "path": "/memories/user/x.md", "file_text": "x"}
    )
    with pytest.raises(ToolInputError, match="symbolic link"):
        await tool.prepare(args, env["ctx"])
    action, draft = _forged_create("user", "x.md", "x")
    assert env["engine"].evaluate(draft).rule == "memory:symlink"
    assert not (await commit(env["ctx"].executor, action)).ok
    assert list(elsewhere.iterdir()) == []


async def test_edit_tools_and_shell_still_cannot_touch_memory_or_settings(env: dict[str, Any]) -> None:
    """The carve-out is the memory tool's alone: write_file, edit_file and shell stay refused there."""
    await _run(env, command="create", path="/memories/project/n.md", file_text="note\n")
    memory_file = env["project"] / "n.md"
    settings = env["seepient_home"] / "settings.json"
    ctx, engine = env["ctx"], env["engine"]
    for target in (memory_file, settings, env["user"] / "new.md"):
        for tool, arguments in (
            (WriteFileTool(), {"path": str(target), "content": "x"}),
            (EditFileTool(), {"path": str(target), "old_string": "note", "new_string": "x"}),
        ):
            try:
                draft = await tool.prepare(tool.input_model.model_validate(arguments), ctx)
            except (PathDenied, ToolInputError):
                continue
            assert engine.evaluate(draft).decision is Decision.DENY
    shell = ShellTool()
    for command in (
        f"echo pwned > {memory_file}",
        "echo pwned >> ~/.seepient/memory/user/x.md",
        f"rm -rf {env['seepient_home'] / 'memory'}",
        f"cp /dev/null {settings}",
    ):
        draft = await shell.prepare(shell.input_model.model_validate({"command": command}), ctx)
        assert engine.evaluate(draft).decision is Decision.DENY, command
    assert memory_file.read_text() == "note\n"


async def test_memory_writes_ask_in_the_default_mode_and_follow_rules(env: dict[str, Any]) -> None:
    tool = MemoryTool()
    draft = await tool.prepare(
        tool.input_model.model_validate(
            {"command": "create", "path": "/memories/user/a.md", "file_text": "x"}
        ),
        env["ctx"],
    )
    verdict = env["engine"].evaluate(draft)
    assert verdict.decision is Decision.ASK and "memory" in " ".join(verdict.reasons)
    view = await tool.prepare(tool.input_model.model_validate({"command": "view"}), env["ctx"])
    assert env["engine"].evaluate(view).decision is Decision.ALLOW
    denying = PolicyEngine(
        env["workspace"],
        seepient_home=env["seepient_home"],
        home=env["home"],
        mode="autonomous-trusted",
        permissions=PermissionSettings(deny=["memory"]),
    )
    assert denying.evaluate(draft).decision is Decision.DENY


def test_path_grammar() -> None:
    assert split_memory_path("/memories") == (None, "")
    assert split_memory_path("/memories/project/a/b.md") == ("project", "a/b.md")
    assert split_memory_path("memories/user/x.md") == ("user", "x.md")
    assert memory_parts("notes/2024 plan (v2).md") == ["notes", "2024 plan (v2).md"]
    for bad in ("..", "a/..", "/a", "a//b", ".a", "a\\b", "%2e%2e", "a\x00"):
        with pytest.raises(MemoryPathError):
            memory_parts(bad)


async def test_a_pre_image_bound_delete_refuses_a_changed_file(env: dict[str, Any]) -> None:
    await _run(env, command="create", path="/memories/project/d.md", file_text="keep\n")
    tool = MemoryTool()
    draft = await tool.prepare(
        tool.input_model.model_validate({"command": "delete", "path": "/memories/project/d.md"}), env["ctx"]
    )
    assert draft.payload.pre_image_sha256 == hashlib.sha256(b"keep\n").hexdigest()
    (env["project"] / "d.md").write_text("new content\n")
    out = await tool.execute(approve(draft), env["ctx"])
    assert out.is_error and (env["project"] / "d.md").read_text() == "new content\n"


async def test_the_approval_prompt_shows_what_a_memory_write_would_save(env: dict[str, Any]) -> None:
    from seepient.approval.terminal import render_request
    from seepient.protocol import ApprovalRequest

    tool = MemoryTool()
    draft = await tool.prepare(
        tool.input_model.model_validate(
            {"command": "create", "path": "/memories/user/prefs.md", "file_text": "Answer in French.\n"}
        ),
        env["ctx"],
    )
    verdict = env["engine"].evaluate(draft)
    text = render_request(ApprovalRequest(session_id="s", action=draft, verdict=verdict), colour=False)
    assert "Memory: create /memories/user/prefs.md" in text and "+Answer in French." in text


async def test_viewing_before_any_seepient_home_exists(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    missing_home = tmp_path / "never-created"
    executor = LocalExecutor(workspace, seepient_home=missing_home, home=tmp_path)
    ctx = ToolContext(
        workspace=workspace,
        session_id="s",
        call_id="c",
        paths=PathGuard(workspace, seepient_home=missing_home, home=tmp_path),
        executor=executor,
        reads=executor.reads,
    )
    tool = MemoryTool()
    draft = await tool.prepare(tool.input_model.model_validate({"command": "view"}), ctx)
    out = await tool.execute(approve(draft), ctx)
    assert not out.is_error and "/memories/project/ (empty)" in out.text
    draft = await tool.prepare(
        tool.input_model.model_validate(
            {"command": "create", "path": "/memories/user/a.md", "file_text": "x"}
        ),
        ctx,
    )
    assert (await tool.execute(approve(draft), ctx)).text == "Saved /memories/user/a.md."
    assert (missing_home / "memory" / "user" / "a.md").read_text() == "x"
    assert oct((missing_home / "memory").stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("command", ["create", "delete", "rename"])
async def test_a_folder_swapped_for_a_link_after_approval_is_not_followed(
    env: dict[str, Any], command: str
) -> None:
    """The policy check saw a real folder; by execution it is a link to elsewhere. Nothing lands there."""
    await _run(env, command="create", path="/memories/project/notes/a.md", file_text="a\n")
    await _run(env, command="create", path="/memories/project/keep.md", file_text="k\n")
    tool = MemoryTool()
    arguments = {
        "create": {"command": "create", "path": "/memories/project/notes/b.md", "file_text": "b"},
        "delete": {"command": "delete", "path": "/memories/project/notes/a.md"},
        "rename": {
            "command": "rename",
            "old_path": "/memories/project/keep.md",
            "new_path": "/memories/project/notes/moved.md",
        },
    }[command]
    draft = await tool.prepare(tool.input_model.model_validate(arguments), env["ctx"])
    assert env["engine"].evaluate(draft).decision is not Decision.DENY
    elsewhere = env["tmp"] / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.md").write_text("a\n")
    notes = env["project"] / "notes"
    notes.rename(env["tmp"] / "moved-away")
    notes.symlink_to(elsewhere)
    out = await tool.execute(approve(draft), env["ctx"])
    assert out.is_error
    assert sorted(p.name for p in elsewhere.iterdir()) == ["a.md"]
    assert (env["project"] / "keep.md").read_text() == "k\n"
