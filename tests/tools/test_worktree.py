"""The worktree tools with the real path guard, policy engine and sandboxed executor on a real git repository:
create, list and remove, names that try to leave ``.seepient/worktrees``, and the self-protection carve-out
that makes a worktree's files ordinary code while its own ``.seepient`` and ``.git`` stay protected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seepient.config.settings import PermissionSettings
from seepient.policy.engine import PolicyEngine
from seepient.protocol import Decision, PathDenied, WorktreeCommand
from seepient.tools.base import ToolInputError
from seepient.tools.builtin.edit import EditFileTool, WriteFileTool
from seepient.tools.builtin.worktree import WorktreeCreateTool, WorktreeListTool, WorktreeRemoveTool
from tests.git_helpers import git

from .conftest import Prepare, Run


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(workspace, "add", "calc.py")
    git(workspace, "commit", "-q", "-m", "init")
    return workspace


def _engine(
    workspace: Path, seepient_home: Path, home: Path, mode: str = "ask-untrusted", **rules: Any
) -> PolicyEngine:
    return PolicyEngine(
        workspace, seepient_home=seepient_home, home=home, mode=mode, permissions=PermissionSettings(**rules)
    )


async def test_create_list_remove_round_trip(repo: Path, run: Run) -> None:
    draft, out = await run(WorktreeCreateTool(), name="fix-1")
    assert not out.is_error, out.text
    assert isinstance(draft.payload, WorktreeCommand)
    assert draft.payload.argv[-3:] == ("--", str(repo / ".seepient/worktrees/fix-1"), "HEAD")
    checkout = repo / ".seepient/worktrees/fix-1"
    assert (checkout / "calc.py").read_text() == (repo / "calc.py").read_text()
    assert (checkout / ".git").is_file()
    assert "seepient/fix-1" in git(repo, "branch", "--list", "seepient/*")

    _, listed = await run(WorktreeListTool())
    assert "worktree 'fix-1'" in listed.text and "main checkout" in listed.text

    _, removed = await run(WorktreeRemoveTool(), name="fix-1")
    assert not removed.is_error, removed.text
    assert not checkout.exists()
    assert "seepient/fix-1" in git(repo, "branch", "--list", "seepient/*"), "the branch is kept"


async def test_remove_refuses_dirty_worktree_without_force(repo: Path, run: Run) -> None:
    await run(WorktreeCreateTool(), name="dirty")
    (repo / ".seepient/worktrees/dirty/calc.py").write_text("changed\n")
    _, out = await run(WorktreeRemoveTool(), name="dirty")
    assert out.is_error and "force" in out.text
    assert (repo / ".seepient/worktrees/dirty/calc.py").exists()
    _, forced = await run(WorktreeRemoveTool(), name="dirty", force=True)
    assert not forced.is_error, forced.text
    assert not (repo / ".seepient/worktrees/dirty").exists()


@pytest.mark.parametrize(
    "name", ["../x", "..", "a/b", "-rf", "x\n", "x\x1b[2J", ".hidden", "x.lock", "a..b", "x.", "", "/abs"]
)
async def test_create_refuses_names_that_leave_the_worktrees_folder(
    repo: Path, prepare: Prepare, name: str
) -> None:
    with pytest.raises((ToolInputError, ValueError)):
        await prepare(WorktreeCreateTool(), name=name)
    assert not (repo / ".seepient/worktrees").exists() or not any((repo / ".seepient/worktrees").iterdir())
    assert not (repo.parent / "x").exists()


@pytest.mark.parametrize("base", ["--upload-pack=evil", "-b", "a..b", "HEAD@{1}", "x y", "main\n"])
async def test_create_refuses_bases_that_read_as_options(repo: Path, prepare: Prepare, base: str) -> None:
    with pytest.raises(ToolInputError):
        await prepare(WorktreeCreateTool(), name="ok", base=base)


async def test_remove_refuses_what_is_not_a_worktree(repo: Path, prepare: Prepare) -> None:
    (repo / ".seepient/worktrees/plain").mkdir(parents=True)
    with pytest.raises(ToolInputError, match="not a worktree"):
        await prepare(WorktreeRemoveTool(), name="plain")
    with pytest.raises(ToolInputError, match="not a worktree"):
        await prepare(WorktreeRemoveTool(), name="missing")
    with pytest.raises(ToolInputError):
        await prepare(WorktreeRemoveTool(), name="../../calc.py")
    assert (repo / "calc.py").exists()


async def test_create_outside_a_repository_says_so(workspace: Path, prepare: Prepare) -> None:
    with pytest.raises(ToolInputError, match="not the top of a git repository"):
        await prepare(WorktreeCreateTool(), name="x")


async def test_policy_asks_for_create_and_remove_and_allows_list(
    repo: Path, prepare: Prepare, run: Run, seepient_home: Path, home: Path
) -> None:
    engine = _engine(repo, seepient_home, home)
    assert engine.evaluate(await prepare(WorktreeListTool())).decision is Decision.ALLOW
    create = await prepare(WorktreeCreateTool(), name="w")
    assert engine.evaluate(create).decision is Decision.ASK
    assert _engine(repo, seepient_home, home, mode="auto").evaluate(create).decision is Decision.ALLOW
    await run(WorktreeCreateTool(), name="w")
    forced = await prepare(WorktreeRemoveTool(), name="w", force=True)
    assert _engine(repo, seepient_home, home, mode="auto").evaluate(forced).decision is Decision.ASK


async def test_policy_sees_the_exact_argv(
    repo: Path, prepare: Prepare, seepient_home: Path, home: Path
) -> None:
    create = await prepare(WorktreeCreateTool(), name="w")
    denied = _engine(repo, seepient_home, home, deny=["Shell(git worktree:*)"]).evaluate(create)
    assert denied.decision is Decision.DENY and denied.rule == "deny:Shell(git worktree:*)"
    assert (
        _engine(repo, seepient_home, home, deny=["worktree_create"]).evaluate(create).decision
        is Decision.DENY
    )
    # A payload whose argv says something other than its fields is refused, whatever the mode.
    payload = create.payload
    assert isinstance(payload, WorktreeCommand)
    for argv in (
        (*payload.argv[:-2], str(repo / "src"), "HEAD"),
        ("git", "-c", "core.fsmonitor=touch /tmp/pwned", *payload.argv[3:]),
    ):
        forged = create.model_copy(update={"payload": payload.model_copy(update={"argv": argv})})
        verdict = _engine(repo, seepient_home, home, mode="autonomous-trusted").evaluate(forged)
        assert verdict.decision is Decision.DENY and verdict.rule == "worktree:invalid"
    moved = create.model_copy(update={"payload": payload.model_copy(update={"path": str(repo / "src")})})
    assert (
        _engine(repo, seepient_home, home, mode="autonomous-trusted").evaluate(moved).decision
        is Decision.DENY
    )


async def test_worktree_files_are_workspace_content_but_its_security_state_is_not(
    repo: Path, run: Run, prepare: Prepare, seepient_home: Path, home: Path
) -> None:
    await run(WorktreeCreateTool(), name="w")
    checkout = repo / ".seepient/worktrees/w"
    (checkout / ".seepient").mkdir(exist_ok=True)
    (checkout / ".seepient/settings.json").write_text('{"permissions": {"allow": ["Shell"]}}')
    engine = _engine(repo, seepient_home, home, mode="auto")

    edit = await prepare(
        EditFileTool(), path=".seepient/worktrees/w/calc.py", old_string="a - b", new_string="a + b"
    )
    assert engine.evaluate(edit).decision is Decision.ALLOW
    _, out = await run(
        EditFileTool(), path=".seepient/worktrees/w/calc.py", old_string="a - b", new_string="a + b"
    )
    assert not out.is_error and "a + b" in (checkout / "calc.py").read_text()
    assert "a - b" in (repo / "calc.py").read_text(), "the main checkout is untouched"

    for path in (
        ".seepient/worktrees/w/.seepient/settings.json",
        ".seepient/worktrees/w/.SEEPIENT/settings.json",
        ".seepient/worktrees/w/sub/.seepient/hooks.json",
        ".seepient/worktrees/w/.git",
        ".seepient/worktrees/w/.git/config",
        ".seepient/worktrees/w",
        ".seepient/worktrees/nope/x.py",
        ".seepient/worktrees/../settings.json",
        ".seepient/settings.json",
        ".git/worktrees/w/gitdir",
        ".git/worktrees/w/commondir",
    ):
        with pytest.raises(PathDenied):
            await prepare(WriteFileTool(), path=path, content="x")
    # A link inside the worktree that leads to the project's settings is judged where it leads.
    (checkout / "link.json").symlink_to(repo / ".seepient/settings.json")
    with pytest.raises(PathDenied, match="security state"):
        await prepare(WriteFileTool(), path=".seepient/worktrees/w/link.json", content="{}")
