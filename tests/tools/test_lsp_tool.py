"""The ``lsp`` and background-process tools' own preparation: positions, paths and ids checked before anything
reaches a language server or a process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seepient.protocol import PathDenied
from seepient.tools.base import ToolInputError
from seepient.tools.builtin.lsp import LspTool, codepoint_column, utf16_column
from seepient.tools.builtin.shell_background import ShellKillTool, ShellOutputTool

TOOL = LspTool()


def test_columns_convert_between_characters_and_utf16_units() -> None:
    line = 'x = "😀" + name'
    assert utf16_column(line, 11) == 12  # the emoji is two UTF-16 units
    assert codepoint_column(line, 12) == 11
    assert codepoint_column(line, 0) == 0 and utf16_column(line, 0) == 0
    assert codepoint_column("ab", 99) == 2


async def test_a_position_question_needs_a_line_and_a_character(workspace: Path, prepare: Any) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    for operation in ("definition", "references", "hover"):
        with pytest.raises(ToolInputError, match="needs line and character"):
            await prepare(TOOL, operation=operation, path="a.py", line=1)
    draft = await prepare(TOOL, operation="hover", path="a.py", line=1, character=1)
    assert draft.read_only and draft.payload.operation == "lsp"
    assert draft.payload.paths == (str(workspace / "a.py"),)
    assert draft.payload.params == {"operation": "hover", "line": 1, "character": 1}


async def test_only_existing_files_inside_the_workspace_are_asked_about(
    workspace: Path, outside: Path, home: Path, prepare: Any
) -> None:
    (workspace / "pkg").mkdir()
    with pytest.raises(ToolInputError, match="does not exist"):
        await prepare(TOOL, operation="document_symbols", path="missing.py")
    with pytest.raises(ToolInputError, match="is a directory"):
        await prepare(TOOL, operation="document_symbols", path="pkg")
    (workspace / "link.py").symlink_to(outside / "secret.txt")
    for path in (
        str(outside / "secret.txt"),
        "../outside/secret.txt",
        "link.py",
        str(home / ".ssh" / "id_ed25519"),
    ):
        with pytest.raises(PathDenied):
            await prepare(TOOL, operation="diagnostics", path=path)


async def test_a_line_past_the_end_of_the_file_is_reported(workspace: Path, run: Any) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    _, out = await run(TOOL, operation="definition", path="a.py", line=5, character=1)
    assert out.is_error and "has 1 lines; line 5 does not exist" in out.text


async def test_shell_kill_takes_only_background_ids(prepare: Any) -> None:
    for not_an_id in ("12345", "-1", "all", "%1"):
        with pytest.raises(ToolInputError, match="not a background process id"):
            await prepare(ShellKillTool(), id=not_an_id)
    draft = await prepare(ShellKillTool(), id="bg_0123")
    assert not draft.read_only and draft.payload.operation == "kill"
    output_draft = await prepare(ShellOutputTool(), id="bg_0123")
    assert output_draft.read_only and output_draft.payload.operation == "output"
