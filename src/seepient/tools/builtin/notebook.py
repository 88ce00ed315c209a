"""``notebook_read`` and ``notebook_edit``: Jupyter notebooks as cells (with outputs cut to size, images only
described), and cell edits prepared as the notebook's full new JSON, checked by nbformat and committed against
the bytes it was read as."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal

from seepient.protocol import (
    ApprovedAction,
    FileChange,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
)
from seepient.tools.base import (
    NonEmpty,
    NonNegative,
    Positive,
    Tool,
    ToolContext,
    ToolInput,
    ToolInputError,
    ToolOutput,
)
from seepient.tools.builtin._common import (
    commit_or_explain,
    content_change,
    display_path,
    expect_payload,
    read_draft,
    workspace_relative,
)
from seepient.tools.builtin._text import (
    BinaryContent,
    decode_text,
    diff_stats,
    unified_diff,
)

OUTPUT_CHARS = 2000
"""Each output is cut to this many characters: one long traceback or print loop must not fill the result."""
SOURCE_CHARS = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/latex")
CellType = Literal["code", "markdown", "raw"]


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit:,} more characters not shown]"


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


async def _notebook_text(ctx: ToolContext, absolute: str, shown: str) -> tuple[bytes, str]:
    try:
        data = await ctx.reads.read_file(absolute)
        return data, decode_text(data)
    except FileNotFoundError:
        problem = f"Notebook not found: {shown}. Use glob with pattern '**/*.ipynb' to find one."
    except IsADirectoryError:
        problem = f"{shown} is a directory, not a notebook."
    except PermissionError as exc:
        problem = f"Cannot read {shown}: {exc.strerror or exc}."
    except BinaryContent as exc:
        problem = f"{shown} is not a valid notebook: {exc}."
    raise ToolInputError(problem)


# -- reading ------------------------------------------------------------------------------------------


def _describe_output(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"[{output.get('name', 'stream')}]\n{_cut(_joined(output.get('text')), OUTPUT_CHARS)}"
    if kind == "error":
        trace = _ANSI.sub("", "\n".join(output.get("traceback") or []))
        head = f"[error] {output.get('ename', '')}: {output.get('evalue', '')}"
        return f"{head}\n{_cut(trace, OUTPUT_CHARS)}" if trace else head
    data = output.get("data") or {}
    parts: list[str] = []
    text_shown = False
    for mime, value in data.items():
        if mime in _TEXT_TYPES and not text_shown:
            body = value if isinstance(value, str | list) else json.dumps(value)
            parts.append(f"[{kind} {mime}]\n{_cut(_joined(body), OUTPUT_CHARS)}")
            text_shown = True
        elif mime.startswith("image/"):
            size = len(_joined(value))
            parts.append(f"[{mime} image, about {size * 3 // 4:,} bytes: not shown]")
        elif mime not in _TEXT_TYPES:
            parts.append(f"[{mime} output: not shown]")
    return "\n".join(parts) or f"[{kind} with no data]"


def render_notebook(notebook: Any, shown: str, *, first: int, limit: int | None, outputs: bool) -> str:
    cells = notebook.cells
    kernel = (notebook.metadata.get("kernelspec") or {}).get("name", "unknown")
    language = (notebook.metadata.get("language_info") or {}).get("name", "unknown")
    head = (
        f"{shown}: {len(cells)} cells (nbformat {notebook.nbformat}.{notebook.nbformat_minor}, kernel {kernel}, "
        f"language {language}). Cell indices start at 0."
    )
    out = [head]
    last = len(cells) if limit is None else min(len(cells), first + limit)
    for index in range(first, last):
        cell = cells[index]
        label = f"--- cell {index} · {cell.cell_type}"
        if "id" in cell:
            label += f" · id={cell.id}"
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            label += f" · execution_count={cell.execution_count}"
        out.append(label)
        out.append(_cut(_joined(cell.source), SOURCE_CHARS))
        if outputs and cell.cell_type == "code":
            for output in cell.get("outputs") or []:
                out.append(">>> " + _describe_output(output))
    if last < len(cells):
        out.append(f"[Showing cells {first}–{last - 1} of {len(cells)}. Use offset={last} to read more.]")
    return "\n".join(out)


class NotebookReadInput(ToolInput):
    path: NonEmpty
    """The .ipynb file, relative to the workspace root."""
    offset: NonNegative = 0
    """The index of the first cell to show (0-based)."""
    limit: Positive | None = None
    """How many cells to show at most (default all)."""
    include_outputs: bool = True
    """Show code cells' outputs (text cut to size)."""


class NotebookReadTool(Tool[NotebookReadInput], read_only=True, concurrency_safe=True):
    name: ClassVar[str] = "notebook_read"
    description: ClassVar[str] = (
        "Read a Jupyter notebook (.ipynb) as cells: index (0-based), id, type, source and outputs. Text outputs "
        f"are cut to {OUTPUT_CHARS} characters each; images and other rich outputs are only described. Use the "
        "cell ids or indices with notebook_edit."
    )
    max_result_chars: ClassVar[int] = 50_000

    async def prepare(self, args: NotebookReadInput, ctx: ToolContext) -> PreparedActionDraft:
        resolved = ctx.paths.for_read(args.path)
        shown = display_path(resolved)
        params: dict[str, Any] = {
            "path": shown,
            "offset": args.offset,
            "limit": args.limit,
            "include_outputs": args.include_outputs,
        }
        return read_draft(ctx, self.name, "notebook_read", resolved, params, f"Read notebook {shown}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = expect_payload(action, ReadAction)
        params = payload.params
        shown = params.get("path") or payload.paths[0]
        from seepient.tools.builtin.notebook_document import parse_notebook

        try:
            _, text = await _notebook_text(ctx, payload.paths[0], shown)
            notebook = parse_notebook(text, shown, as_version=4)
        except ToolInputError as exc:
            return ToolOutput(str(exc), is_error=True)
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        first = params.get("offset") or 0
        if first and first >= len(notebook.cells):
            return ToolOutput(
                f"{shown} has {len(notebook.cells)} cells; offset {first} is past the end.", is_error=True
            )
        rendered = render_notebook(
            notebook,
            shown,
            first=first,
            limit=params.get("limit"),
            outputs=params.get("include_outputs", True),
        )
        return ToolOutput(rendered, data={"path": shown, "cells": len(notebook.cells)})


# -- editing ------------------------------------------------------------------------------------------


class NotebookEditInput(ToolInput):
    path: NonEmpty
    """The .ipynb file, relative to the workspace root."""
    cell_id: str | None = None
    """The id of the cell to replace or delete (as notebook_read shows it); for insert, the new cell goes
    right after this cell."""
    index: NonNegative | None = None
    """Instead of cell_id: the 0-based index of the cell to replace or delete; for insert, the position the
    new cell takes (0 = first; the cell count appends)."""
    new_source: str = ""
    """The cell's complete new source (ignored for delete)."""
    cell_type: CellType | None = None
    """code, markdown or raw: the type of an inserted cell (default code), or a new type for a replaced cell
    (default: unchanged)."""
    edit_mode: Literal["replace", "insert", "delete"] = "replace"
    """replace a cell's source, insert a new cell, or delete a cell."""


class NotebookEditTool(Tool[NotebookEditInput]):
    """Change one cell of a Jupyter notebook (.ipynb): replace its source (and optionally its type), insert a
    new cell, or delete one. Name the cell by cell_id or by 0-based index, as notebook_read shows them. A
    replaced code cell loses its now stale outputs. Other cells and the notebook's metadata are kept as they
    are. The edit is refused if the notebook changed since this call was prepared."""

    name: ClassVar[str] = "notebook_edit"

    async def prepare(self, args: NotebookEditInput, ctx: ToolContext) -> PreparedActionDraft:
        from seepient.tools.builtin import notebook_document as document

        resolved = ctx.paths.for_write(args.path)
        relative = workspace_relative(resolved)
        current, text = await _notebook_text(ctx, resolved.absolute, relative)
        notebook = document.parse_notebook(text, relative)
        if notebook.nbformat != 4:
            raise ToolInputError(
                f"{relative} is in notebook format {notebook.nbformat}; notebook_edit changes format 4 notebooks. "
                "Open and save it in Jupyter to upgrade it."
            )
        options = document.serialiser(text, notebook)
        what = document.edit_cells(args, notebook, relative)
        document.check_valid(notebook)
        new_text = document.serialise(notebook, options, text.endswith("\n"))
        if new_text == text:
            raise ToolInputError(f"The cell already has exactly this content; {relative} would not change.")
        change = content_change(relative, current, new_text, unified_diff(text, new_text, relative))
        return ctx.draft(self.name, change, summary=f"Edit notebook {relative}: {what}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        change = expect_payload(action, FileChange)
        failed = await commit_or_explain(ctx, action, "notebook edit", shown=change.path)
        if failed is not None:
            return failed
        stats = diff_stats(change.diff)
        return ToolOutput(
            f"{action.summary.removeprefix('Edit notebook ')} — done.",
            data={"path": change.path, "added": stats.added, "removed": stats.removed, "diff": change.diff},
        )
