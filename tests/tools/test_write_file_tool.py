"""write_file: prepared against the file's current bytes, committed exactly by the real executor."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import ActionKind, FileChange
from seepient.tools.base import ToolInputError
from seepient.tools.builtin import WriteFileTool
from tests.approved import approve

TOOL = WriteFileTool()


async def test_creating_a_file_in_new_nested_directories(workspace: Path, run: Any) -> None:
    draft, out = await run(TOOL, path="pkg/sub/new_module.py", content="A = 1\nB = 2\n")
    change = draft.payload
    assert draft.kind is ActionKind.FILE_CHANGE and not draft.read_only
    assert isinstance(change, FileChange)
    assert change.path == "pkg/sub/new_module.py" and change.pre_image_sha256 is None
    assert change.new_content == "A = 1\nB = 2\n" and change.edits is None
    assert change.diff.startswith("--- /dev/null\n+++ b/pkg/sub/new_module.py\n")
    assert draft.summary == "Create pkg/sub/new_module.py (+2)"
    assert not out.is_error and out.text == "Created pkg/sub/new_module.py (2 lines)."
    assert (workspace / "pkg/sub/new_module.py").read_text() == "A = 1\nB = 2\n"
    assert out.data["created"] is True


async def test_overwriting_binds_to_the_current_bytes_and_reports_the_change(
    workspace: Path, run: Any
) -> None:
    target = workspace / "calc.py"
    target.write_text("def add(a, b):\n    return a - b\n")
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    draft, out = await run(TOOL, path="calc.py", content="def add(a, b):\n    return a + b\n")
    assert draft.payload.pre_image_sha256 == before
    assert "-    return a - b\n+    return a + b\n" in draft.payload.diff
    assert draft.summary == "Write calc.py (+1 \u22121)"
    assert out.text == "Updated calc.py (+1 \u22121; now 2 lines)."
    assert target.read_text() == "def add(a, b):\n    return a + b\n"


async def test_a_file_changed_after_prepare_is_not_overwritten(
    workspace: Path, prepare: Any, ctx: Any
) -> None:
    target = workspace / "notes.md"
    target.write_text("v1\n")
    draft = await prepare(TOOL, path="notes.md", content="from the model\n")
    target.write_text("v2 from the person\n")
    out = await TOOL.execute(approve(draft), ctx)
    assert out.is_error and out.data["code"] == "FILE_CHANGED"
    assert "read_file" in out.text and "nothing was written" in out.text
    assert target.read_text() == "v2 from the person\n"


async def test_a_file_created_after_prepare_is_not_overwritten(
    workspace: Path, prepare: Any, ctx: Any
) -> None:
    draft = await prepare(TOOL, path="fresh.txt", content="model\n")
    (workspace / "fresh.txt").write_text("someone else\n")
    out = await TOOL.execute(approve(draft), ctx)
    assert out.is_error and out.data["code"] == "FILE_CHANGED"
    assert (workspace / "fresh.txt").read_text() == "someone else\n"


async def test_writing_identical_content_is_refused_as_a_no_op(workspace: Path, prepare: Any) -> None:
    (workspace / "same.txt").write_text("same\n")
    with pytest.raises(ToolInputError, match="already has exactly this content"):
        await prepare(TOOL, path="same.txt", content="same\n")


async def test_crlf_files_keep_their_line_endings(workspace: Path, run: Any) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    draft, out = await run(TOOL, path="win.txt", content="one\ntwo\nthree\n")
    assert not out.is_error
    assert (workspace / "win.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"
    assert draft.summary == "Write win.txt (+1 \u22120)"


async def test_a_directory_cannot_be_written(workspace: Path, prepare: Any) -> None:
    (workspace / "pkg").mkdir()
    with pytest.raises(ToolInputError, match="is a directory"):
        await prepare(TOOL, path="pkg", content="x")


async def test_replacing_a_binary_file_is_described_without_a_text_diff(workspace: Path, run: Any) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    draft, out = await run(TOOL, path="blob.bin", content="text now\n")
    assert "replaces a binary file" in draft.summary
    assert not out.is_error and (workspace / "blob.bin").read_text() == "text now\n"
