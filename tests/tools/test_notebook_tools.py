"""``notebook_read`` and ``notebook_edit`` on real .ipynb files through the real path guard and local executor."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from seepient.protocol import ActionKind, FileChange, PathDenied, ReadAction
from seepient.tools.base import ToolContext, ToolInputError
from seepient.tools.builtin.notebook import OUTPUT_CHARS, NotebookEditTool, NotebookReadTool
from tests.approved import approve


def _notebook(minor: int = 5) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.4"},
        "custom": {"kept": [1, 2, 3]},
    }
    intro = nbformat.v4.new_markdown_cell("# Analysis\nSome *notes*.")
    load = nbformat.v4.new_code_cell("import math\nprint(math.pi)", execution_count=1)
    load.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="3.141592653589793\n"),
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": base64.b64encode(b"\x89PNG" + bytes(3000)).decode(), "text/plain": "<Figure>"},
        ),
    ]
    noisy = nbformat.v4.new_code_cell("for i in range(10**4): print(i)", execution_count=2)
    noisy.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="".join(f"{i}\n" for i in range(10**4)))
    ]
    broken = nbformat.v4.new_code_cell("1/0", execution_count=3)
    broken.outputs = [
        nbformat.v4.new_output(
            "error",
            ename="ZeroDivisionError",
            evalue="division by zero",
            traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
        )
    ]
    nb.cells = [intro, load, noisy, broken]
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    for index, cell in enumerate(nb.cells):
        if "id" in cell:
            cell.id = f"cell-{index}"
    return nb


@pytest.fixture
def notebook_path(workspace: Path) -> Path:
    path = workspace / "analysis.ipynb"
    nbformat.write(_notebook(), str(path))
    return path


async def _run(tool: Any, ctx: ToolContext, **arguments: Any) -> Any:
    draft = await tool.prepare(tool.input_model.model_validate(arguments), ctx)
    return draft, await tool.execute(approve(draft), ctx)


async def test_read_shows_cells_with_truncated_text_and_summarised_images(
    notebook_path: Path, ctx: ToolContext
) -> None:
    draft, output = await _run(NotebookReadTool(), ctx, path="analysis.ipynb")
    assert draft.kind is ActionKind.READ and draft.read_only
    assert isinstance(draft.payload, ReadAction) and draft.payload.operation == "notebook_read"
    text = output.text
    assert not output.is_error and output.data["cells"] == 4
    assert "kernel python3" in text and "language python" in text
    assert "--- cell 1 · code · id=cell-1 · execution_count=1" in text
    assert "import math\nprint(math.pi)" in text and "3.141592653589793" in text
    assert "image/png image" in text and "not shown" in text and "AAAA" not in text
    assert "9999" not in text and "more characters not shown" in text
    assert len(text) < 4 * OUTPUT_CHARS + 2000
    assert "ZeroDivisionError: division by zero" in text and "\x1b[" not in text


async def test_read_pages_and_can_leave_outputs_out(notebook_path: Path, ctx: ToolContext) -> None:
    _, output = await _run(
        NotebookReadTool(), ctx, path="analysis.ipynb", offset=1, limit=1, include_outputs=False
    )
    assert "cell 1" in output.text and "cell 2" not in output.text and "3.14159" not in output.text
    assert "Use offset=2" in output.text


async def test_read_of_an_invalid_notebook_says_what_is_wrong(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "broken.ipynb").write_text("{not json")
    (workspace / "shapeless.ipynb").write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": "no"})
    )
    _, output = await _run(NotebookReadTool(), ctx, path="broken.ipynb")
    assert output.is_error and "not a valid notebook" in output.text and "not JSON" in output.text
    _, output = await _run(NotebookReadTool(), ctx, path="shapeless.ipynb")
    assert output.is_error and "not a valid notebook" in output.text


async def test_replace_keeps_every_other_byte(notebook_path: Path, ctx: ToolContext) -> None:
    before = notebook_path.read_text()
    draft, output = await _run(
        NotebookEditTool(), ctx, path="analysis.ipynb", cell_id="cell-1", new_source="print(2)"
    )
    assert not output.is_error, output.text
    assert isinstance(draft.payload, FileChange) and draft.kind is ActionKind.FILE_CHANGE
    after = notebook_path.read_text()
    edited = nbformat.reads(after, as_version=4)
    nbformat.validate(edited)
    assert edited.cells[1].source == "print(2)" and edited.cells[1].outputs == []
    assert edited.cells[1].execution_count is None and edited.cells[1].id == "cell-1"
    assert edited.metadata["custom"] == {"kept": [1, 2, 3]}
    # Only the edited cell's lines differ: every other line of the file is as Jupyter wrote it.
    changed = [
        line
        for line in draft.payload.diff.splitlines()
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert all("cell" not in line or "cell_type" in line for line in changed)
    original = nbformat.reads(before, as_version=4)
    original.cells[1].source = "print(2)"
    original.cells[1].outputs = []
    original.cells[1].execution_count = None
    assert after == nbformat.writes(original) + "\n"


async def test_a_differently_indented_notebook_keeps_its_layout(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "two.ipynb"
    nb = _notebook()
    path.write_text(json.dumps(json.loads(nbformat.writes(nb)), indent=2) + "\n")
    before = path.read_text().splitlines()
    _, output = await _run(NotebookEditTool(), ctx, path="two.ipynb", index=0, new_source="# Title")
    assert not output.is_error
    after = path.read_text().splitlines()
    assert len(after) == len(before) - 1  # the two-line markdown source became one line
    assert [line for line in after if line not in before] == ['        "# Title"']


async def test_insert_and_delete(notebook_path: Path, ctx: ToolContext) -> None:
    _, output = await _run(
        NotebookEditTool(),
        ctx,
        path="analysis.ipynb",
        edit_mode="insert",
        cell_id="cell-0",
        new_source="## Setup",
        cell_type="markdown",
    )
    assert not output.is_error, output.text
    nb = nbformat.read(str(notebook_path), as_version=4)
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code", "code", "code"]
    assert nb.cells[1].source == "## Setup" and nb.cells[1].id not in {"cell-0", "cell-1"}
    _, output = await _run(NotebookEditTool(), ctx, path="analysis.ipynb", edit_mode="delete", index=4)
    assert not output.is_error
    nb = nbformat.read(str(notebook_path), as_version=4)
    assert len(nb.cells) == 4 and all(c.get("id") != "cell-3" for c in nb.cells)
    _, output = await _run(
        NotebookEditTool(), ctx, path="analysis.ipynb", edit_mode="insert", new_source="x = 1"
    )
    assert nbformat.read(str(notebook_path), as_version=4).cells[-1].source == "x = 1"


async def test_retyping_a_cell_and_old_notebooks_without_ids(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "old.ipynb"
    nbformat.write(_notebook(minor=4), str(path))
    _, output = await _run(
        NotebookEditTool(), ctx, path="old.ipynb", index=1, new_source="Text now", cell_type="markdown"
    )
    assert not output.is_error, output.text
    _, output = await _run(
        NotebookEditTool(), ctx, path="old.ipynb", edit_mode="insert", index=0, new_source="1"
    )
    assert not output.is_error, output.text
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.nbformat_minor == 4 and all("id" not in c for c in nb.cells)
    assert nb.cells[2].cell_type == "markdown" and "outputs" not in nb.cells[2]


async def test_bad_targets_and_invalid_notebooks_are_refused_clearly(
    notebook_path: Path, workspace: Path, ctx: ToolContext
) -> None:
    tool = NotebookEditTool()
    for arguments, message in [
        ({"cell_id": "nope", "new_source": "x"}, "no cell with id 'nope'"),
        ({"index": 9, "new_source": "x"}, "there is no cell 9"),
        ({"new_source": "x"}, "cell_id or index"),
        ({"cell_id": "cell-1", "index": 2, "new_source": "x"}, "is cell 1, not 2"),
    ]:
        with pytest.raises(ToolInputError, match=message):
            await tool.prepare(tool.input_model.model_validate({"path": "analysis.ipynb", **arguments}), ctx)
    (workspace / "broken.ipynb").write_text('{"cells": [], "nbformat": 4}')
    with pytest.raises(ToolInputError, match="not a valid notebook"):
        await tool.prepare(tool.input_model.model_validate({"path": "broken.ipynb", "index": 0}), ctx)
    assert (workspace / "broken.ipynb").read_text() == '{"cells": [], "nbformat": 4}'


async def test_stale_pre_image_is_not_written(notebook_path: Path, ctx: ToolContext) -> None:
    tool = NotebookEditTool()
    draft = await tool.prepare(
        tool.input_model.model_validate({"path": "analysis.ipynb", "index": 0, "new_source": "# Mine"}), ctx
    )
    other = nbformat.read(str(notebook_path), as_version=4)
    other.cells[0].source = "# Someone else's"
    nbformat.write(other, str(notebook_path))
    theirs = notebook_path.read_bytes()
    output = await tool.execute(approve(draft), ctx)
    assert output.is_error and output.data["code"] == "FILE_CHANGED"
    assert notebook_path.read_bytes() == theirs


@pytest.mark.parametrize("path", [".seepient/notes.ipynb", "../outside/x.ipynb", ".git/hooks/x.ipynb"])
async def test_denied_paths(workspace: Path, ctx: ToolContext, recorder: Any, path: str) -> None:
    tool = NotebookEditTool()
    with pytest.raises(PathDenied):
        await tool.prepare(
            tool.input_model.model_validate({"path": path, "index": 0, "new_source": "x"}), ctx
        )
    assert not any(call[0].startswith("commit") for call in recorder.calls)


async def test_reading_a_secret_is_denied(ctx: ToolContext, home: Path) -> None:
    with pytest.raises(PathDenied):
        await NotebookReadTool().prepare(
            NotebookReadTool.input_model.model_validate({"path": str(home / ".ssh" / "id_ed25519")}), ctx
        )
