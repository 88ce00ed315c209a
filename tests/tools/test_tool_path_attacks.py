"""Path attacks on every tool that takes a path: traversal, absolute paths, symlinks and home shortcuts are
refused by the real path guard at preparation, before the tool reads anything through the executor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import PathDenied
from seepient.tools.builtin import EditFileTool, GlobTool, GrepTool, ReadFileTool, ShellTool, WriteFileTool
from tests.approved import approve


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and directory under ``root``, symlinks not followed."""
    found: dict[str, bytes | None] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(directory, name), root)] = None
        for name in files:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = (
                b"<link>" if os.path.islink(path) else Path(path).read_bytes()
            )
    return found


WRITE_ATTACKS = [
    "../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "{outside}/secret.txt",
    "{outside}/new.txt",
    "escape.txt",
    "out/secret.txt",
    "out/new.txt",
    "innocent.txt",
    "~/.bashrc",
    "~/.ssh/authorized_keys",
    "{seepient_home}/settings.json",
    "cfg/settings.json",
    ".seepient/settings.json",
    ".git/hooks/pre-commit",
    "/etc/cron.d/seepient-test",
    "/proc/self/environ",
    "/dev/sda",
    "sub/\x00.txt",
]

READ_ATTACKS = [
    "../home/.ssh/id_ed25519",
    "sub/../../home/.ssh/id_ed25519",
    "{home}/.ssh/id_ed25519",
    "~/.ssh/id_ed25519",
    "innocent.txt",
    "keys/id_ed25519",
    "cfg/settings.json",
    "{seepient_home}/settings.json",
    "/etc/shadow",
    "/proc/self/environ",
]

DIRECTORY_ATTACKS = ["../home/.ssh", "~/.ssh", "keys", "cfg", "{seepient_home}"]


@pytest.mark.parametrize("raw", WRITE_ATTACKS)
@pytest.mark.parametrize("tool", [WriteFileTool(), EditFileTool()], ids=lambda tool: tool.name)
async def test_writes_out_of_the_workspace_are_denied_before_any_read(
    tool: Any, raw: str, traps: dict[str, str], tmp_path: Path, workspace: Path, prepare: Any, recorder: Any
) -> None:
    path = raw.format(**traps)
    before = _tree(tmp_path)
    arguments = (
        {"content": "pwned\n"} if tool.name == "write_file" else {"old_string": "", "new_string": "pwned\n"}
    )
    with pytest.raises(PathDenied):
        await prepare(tool, path=path, **arguments)
    assert recorder.calls == []
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("raw", READ_ATTACKS)
async def test_reads_of_sensitive_files_are_denied(
    raw: str, traps: dict[str, str], prepare: Any, recorder: Any
) -> None:
    with pytest.raises(PathDenied):
        await prepare(ReadFileTool(), path=raw.format(**traps))
    assert recorder.calls == []


@pytest.mark.parametrize("raw", DIRECTORY_ATTACKS)
async def test_searches_rooted_in_sensitive_directories_are_denied(
    raw: str, traps: dict[str, str], prepare: Any, recorder: Any
) -> None:
    path = raw.format(**traps)
    with pytest.raises(PathDenied):
        await prepare(GlobTool(), pattern="*", path=path)
    with pytest.raises(PathDenied):
        await prepare(GrepTool(), pattern="KEY", path=path)
    assert recorder.calls == []


@pytest.mark.parametrize("raw", ["..", "out", "{outside}", "{home}", "keys", "sub/../.."])
async def test_shell_workdir_must_stay_in_the_workspace(
    raw: str, traps: dict[str, str], prepare: Any, recorder: Any
) -> None:
    with pytest.raises(PathDenied):
        await prepare(ShellTool(), command="cat secret.txt", workdir=raw.format(**traps))
    assert recorder.calls == []


async def test_a_symlink_swapped_in_after_prepare_does_not_redirect_the_write(
    workspace: Path, outside: Path, prepare: Any, ctx: Any
) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    draft = await prepare(WriteFileTool(), path="notes.txt", content="model text\n")
    (workspace / "notes.txt").unlink()
    (workspace / "notes.txt").symlink_to(outside / "secret.txt")
    out = await WriteFileTool().execute(approve(draft), ctx)
    assert out.is_error
    assert (outside / "secret.txt").read_text() == "outside the workspace\n"


async def test_traversal_payloads_from_the_corpus_never_write_outside(
    shared_dir: Path, tmp_path: Path, workspace: Path, outside: Path, prepare: Any, ctx: Any, recorder: Any
) -> None:
    """PayloadsAllTheThings' deep traversal list aimed at a real file beside the workspace: each payload
    is refused before any read, or it names a file inside the workspace (an encoded '..' is just a name),
    and committing those lands inside the workspace only."""
    lines = (shared_dir / "corpora" / "path_traversal" / "patt_deep_traversal.txt").read_text().splitlines()
    payloads = sorted({line.replace("{FILE}", "outside/secret.txt") for line in lines if "{FILE}" in line})
    assert len(payloads) > 500
    outside_before = _tree(outside)
    siblings_before = sorted(p.name for p in tmp_path.iterdir())
    tool = WriteFileTool()
    denied = written = 0
    for number, payload in enumerate(payloads):
        recorder.calls.clear()
        content = f"corpus {number}\n"
        try:
            draft = await prepare(tool, path=payload, content=content)
        except PathDenied:
            assert recorder.calls == [], payload
            denied += 1
            continue
        target = (workspace / draft.payload.path).resolve()
        assert target.is_relative_to(workspace), payload
        out = await tool.execute(approve(draft), ctx)
        assert not out.is_error, (payload, out.text)
        assert target.read_text() == content, payload
        written += 1
    assert denied > 100 and written > 100
    assert _tree(outside) == outside_before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings_before
