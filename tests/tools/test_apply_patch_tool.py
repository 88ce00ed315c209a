"""``apply_patch`` through the real tool, path guard, policy engine and local executor (exact commit helper):
the upstream scenarios, all-or-nothing commits, and attacks on every path a patch names."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from seepient.config.settings import PermissionSettings
from seepient.policy.engine import PolicyEngine
from seepient.protocol import Decision, FileChangeSet, PathDenied
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.apply_patch import ApplyPatchTool
from tests.approved import approve
from tests.conftest import SHARED
from tests.tools.test_tool_path_attacks import WRITE_ATTACKS
from tests.tools.test_tool_path_attacks import _tree as _full_tree

SCENARIOS = SHARED / "corpora" / "edit_blocks" / "codex_apply_patch_scenarios"
# Upstream, a failure after an earlier file was written leaves that file written; ours changes nothing.
ALL_OR_NOTHING = {"015_failure_after_partial_success_leaves_changes"}


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _scenario_names() -> list[str]:
    return sorted(entry.name for entry in SCENARIOS.iterdir() if entry.is_dir())


def test_the_corpus_is_there() -> None:
    assert len(_scenario_names()) >= 23


@pytest.mark.parametrize("name", _scenario_names())
async def test_upstream_scenario(name: str, workspace: Path, ctx: ToolContext, recorder: Any) -> None:
    scenario = SCENARIOS / name
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", workspace, dirs_exist_ok=True)
    before = _tree(workspace)
    tool = ApplyPatchTool()
    patch = (scenario / "patch.txt").read_text()
    try:
        draft = await tool.prepare(tool.input_model.model_validate({"patch": patch}), ctx)
    except ToolInputError as refused:
        failed, message = True, str(refused)
    else:
        output = await tool.execute(approve(draft), ctx)
        failed, message = output.is_error, output.text
    if name in ALL_OR_NOTHING:
        assert failed and "missing.txt" in message
        assert _tree(workspace) == before  # created.txt was not written either
        assert not any(call[0].startswith("commit") for call in recorder.calls)
        return
    assert _tree(workspace) == _tree(scenario / "expected"), message
    if _tree(scenario / "expected") == before:
        assert failed, f"a patch that changes nothing should fail: {message}"


async def _prepare(ctx: ToolContext, patch: str):  # noqa: ANN202
    tool = ApplyPatchTool()
    return tool, await tool.prepare(tool.input_model.model_validate({"patch": patch}), ctx)


async def test_stale_pre_image_of_one_file_changes_nothing(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("two\n")
    tool, draft = await _prepare(
        ctx,
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Add File: c.txt\n+new\n"
        "*** Update File: b.txt\n@@\n-two\n+TWO\n*** End Patch\n",
    )
    (workspace / "b.txt").write_text("two, edited by a person\n")
    output = await tool.execute(approve(draft), ctx)
    assert output.is_error and output.data["code"] == "FILE_CHANGED" and output.data["path"] == "b.txt"
    assert "No file was changed" in output.text
    assert (workspace / "a.txt").read_text() == "one\n"
    assert not (workspace / "c.txt").exists()
    assert (workspace / "b.txt").read_text() == "two, edited by a person\n"
    assert [p.name for p in workspace.iterdir() if p.name.startswith(".seepient-commit")] == []


async def test_a_file_created_meanwhile_at_an_added_path_changes_nothing(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "a.txt").write_text("one\n")
    tool, draft = await _prepare(
        ctx,
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Add File: new/c.txt\n+new\n*** End Patch\n",
    )
    (workspace / "new").mkdir()
    (workspace / "new" / "c.txt").write_text("someone else's\n")
    output = await tool.execute(approve(draft), ctx)
    assert output.is_error and output.data["code"] == "FILE_CHANGED"
    assert (workspace / "a.txt").read_text() == "one\n"
    assert (workspace / "new" / "c.txt").read_text() == "someone else's\n"


async def test_move_diff_and_summary_name_both_paths(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "old.py").write_text("def f():\n    return 1\n")
    tool, draft = await _prepare(
        ctx,
        "*** Begin Patch\n*** Update File: old.py\n*** Move to: pkg/new.py\n@@ def f():\n-    return 1\n"
        "+    return 2\n*** End Patch\n",
    )
    assert isinstance(draft.payload, FileChangeSet)
    deleted, added = draft.payload.changes
    assert deleted.delete and deleted.path == "old.py" and added.path == "pkg/new.py"
    assert (
        added.pre_image_sha256 is None and "--- a/old.py" in added.diff and "+++ b/pkg/new.py" in added.diff
    )
    assert "old.py → pkg/new.py" in draft.summary
    output = await tool.execute(approve(draft), ctx)
    assert not output.is_error, output.text
    assert not (workspace / "old.py").exists()
    assert (workspace / "pkg" / "new.py").read_text() == "def f():\n    return 2\n"


async def test_the_same_file_twice_is_refused(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("x\n")
    with pytest.raises(ToolInputError, match="changed twice"):
        await _prepare(
            ctx, "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: ./a.txt\n+y\n*** End Patch\n"
        )


# -- attacks: every path of the set is checked, and a refused patch writes nothing ----------------------


def _engine(
    workspace: Path, seepient_home: Path, home: Path, mode: str = "autonomous-trusted"
) -> PolicyEngine:
    return PolicyEngine(
        workspace, seepient_home=seepient_home, mode=mode, permissions=PermissionSettings(), home=home
    )


ATTACKS = {
    "parent traversal": "*** Add File: ../outside/planted.txt\n+x\n",
    "absolute path": "*** Add File: {outside}/planted.txt\n+x\n",
    "through a symlink": "*** Add File: link/planted.txt\n+x\n",
    "seepient settings": "*** Add File: .seepient/settings.json\n+{{}}\n",
    "git hook": "*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n",
    "move onto a git hook": "*** Update File: ok.txt\n*** Move to: .git/hooks/post-checkout\n@@\n-fine\n+#!/bin/sh\n",
    "delete the seepient settings": "*** Delete File: .seepient/settings.json\n",
    "ssh key by home path": "*** Add File: {home}/.ssh/authorized_keys\n+ssh-ed25519 AAAA\n",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_attack_is_denied_and_nothing_is_written(
    attack: str,
    workspace: Path,
    outside: Path,
    home: Path,
    seepient_home: Path,
    ctx: ToolContext,
    recorder: Any,
) -> None:
    (workspace / "ok.txt").write_text("fine\n")
    (workspace / ".seepient").mkdir()
    (workspace / ".seepient" / "settings.json").write_text('{"permissions": {}}\n')
    (workspace / ".git" / "hooks").mkdir(parents=True)
    os.symlink(outside, workspace / "link")
    before_ws, before_out, before_home = _tree(workspace), _tree(outside), _tree(home)
    # A harmless first file makes sure a refusal of a later path also stops the earlier one.
    body = ATTACKS[attack].format(outside=outside, home=home)
    patch = f"*** Begin Patch\n*** Add File: harmless.txt\n+hi\n{body}*** End Patch\n"
    tool = ApplyPatchTool()
    try:
        draft = await tool.prepare(tool.input_model.model_validate({"patch": patch}), ctx)
    except PathDenied:
        pass  # the path guard refused it while preparing
    else:
        verdict = _engine(workspace, seepient_home, home).evaluate(draft)
        assert verdict.decision is Decision.DENY, verdict
    assert not any(call[0].startswith("commit") for call in recorder.calls)
    assert _tree(workspace) == before_ws and _tree(outside) == before_out and _tree(home) == before_home


async def test_policy_judges_every_path_of_a_prepared_set(
    workspace: Path, seepient_home: Path, home: Path, ctx: ToolContext
) -> None:
    """A set smuggled past preparation (a forged or replayed draft) is still denied by policy, and the commit
    helper refuses it too."""
    tool, draft = await _prepare(
        ctx, "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: b.txt\n+b\n*** End Patch\n"
    )
    assert isinstance(draft.payload, FileChangeSet)
    first, second = draft.payload.changes
    forged = draft.model_copy(
        update={
            "payload": FileChangeSet(
                changes=(first, second.model_copy(update={"path": ".git/hooks/pre-push"}))
            )
        }
    )
    verdict = _engine(workspace, seepient_home, home).evaluate(forged)
    assert verdict.decision is Decision.DENY and "hooks" in " ".join(verdict.reasons)
    escaping = draft.model_copy(
        update={
            "payload": FileChangeSet(changes=(first, second.model_copy(update={"path": "../escape.txt"})))
        }
    )
    assert _engine(workspace, seepient_home, home).evaluate(escaping).decision is Decision.DENY
    output = await tool.execute(approve(escaping), ctx)
    assert output.is_error and output.data["code"] == "OUTSIDE_WORKSPACE"
    assert not (workspace / "a.txt").exists() and not (workspace.parent / "escape.txt").exists()


async def test_policy_asks_about_a_set_in_ask_modes_and_names_deletions(
    workspace: Path, seepient_home: Path, home: Path, ctx: ToolContext
) -> None:
    (workspace / "gone.txt").write_text("bye\n")
    _, draft = await _prepare(
        ctx, "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Delete File: gone.txt\n*** End Patch\n"
    )
    verdict = _engine(workspace, seepient_home, home, mode="always-ask").evaluate(draft)
    assert verdict.decision is Decision.ASK
    assert any("deletes gone.txt" in reason for reason in verdict.reasons)
    assert any("creates a.txt" in reason for reason in verdict.reasons)


_SHAPES = {
    "add": "*** Add File: {path}\n+pwned\n",
    "delete": "*** Delete File: {path}\n",
    "move": "*** Update File: ok.txt\n*** Move to: {path}\n@@\n-fine\n+pwned\n",
    "update": "*** Update File: {path}\n@@\n+pwned\n",
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
@pytest.mark.parametrize("raw", WRITE_ATTACKS)
async def test_every_write_attack_in_every_position_is_denied(
    raw: str,
    shape: str,
    traps: dict[str, str],
    tmp_path: Path,
    workspace: Path,
    ctx: ToolContext,
    recorder: Any,
) -> None:
    (workspace / "ok.txt").write_text("fine\n")
    path = raw.format(**traps)
    before = _full_tree(tmp_path)
    patch = (
        "*** Begin Patch\n*** Add File: first.txt\n+x\n"
        + _SHAPES[shape].format(path=path)
        + "*** End Patch\n"
    )
    tool = ApplyPatchTool()
    with pytest.raises((PathDenied, ToolInputError)) as refused:
        await tool.prepare(tool.input_model.model_validate({"patch": patch}), ctx)
    if refused.type is ToolInputError:
        # Only a path the patch grammar cannot carry (a NUL byte) may fail as malformed instead.
        assert "\x00" in path, refused.value
    if refused.type is PathDenied:
        assert recorder.calls == []  # refused before any file of the patch was read
    assert not any(call[0].startswith("commit") for call in recorder.calls)
    assert _full_tree(tmp_path) == before
