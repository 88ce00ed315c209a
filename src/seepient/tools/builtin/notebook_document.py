"""The nbformat side of the notebook tools: notebooks parsed and validated, cells made, edited and retyped,
and the result written back in the JSON layout the file was read in. Loaded on a notebook tool's first call
(nbformat and its schema validator take a while to import)."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import nbformat
from nbformat.v4.rwbase import split_lines, strip_transient

from seepient.tools.base import ToolInputError

if TYPE_CHECKING:
    from seepient.tools.builtin.notebook import CellType, NotebookEditInput


def check_valid(notebook: Any) -> None:
    """``ToolInputError`` when an edited ``notebook`` breaks the format's schema."""
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        raise ToolInputError(
            f"The edited notebook would not be valid: {exc.message}. Nothing was changed."
        ) from None


def parse_notebook(text: str, shown: str, *, as_version: int | None = None) -> Any:
    """The notebook as nbformat reads it (converted to ``as_version``, or as it is when None), validated;
    ``ToolInputError`` saying what is wrong otherwise."""
    version = nbformat.NO_CONVERT if as_version is None else as_version
    try:
        notebook = nbformat.reads(text, as_version=version)
        nbformat.validate(notebook)
    except nbformat.reader.NotJSONError:
        raise ToolInputError(
            f"{shown} is not a valid notebook: it is not JSON. Use read_file to look at it; nothing was changed."
        ) from None
    except nbformat.ValidationError as exc:
        raise ToolInputError(
            f"{shown} is not a valid notebook: {exc.message}. Fix it with read_file/write_file; nothing was changed."
        ) from None
    except Exception as exc:  # nbformat reports unknown versions and malformed shapes with assorted types
        raise ToolInputError(f"{shown} is not a valid notebook: {exc}. Nothing was changed.") from None
    return notebook


def serialiser(original: str, notebook: Any) -> dict[str, Any]:
    """The ``json.dumps`` options that reproduce ``original`` from its parsed form, so an edit changes only the
    cells it touches; nbformat's own layout (Jupyter's) when none does."""
    prepared = strip_transient(split_lines(copy.deepcopy(notebook)))
    body = original.removesuffix("\n")
    for indent in (1, 2, 4, None):
        spacings = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
        for separators in spacings:
            for sort_keys in (True, False):
                for ensure_ascii in (False, True):
                    options = {
                        "indent": indent,
                        "separators": separators,
                        "sort_keys": sort_keys,
                        "ensure_ascii": ensure_ascii,
                    }
                    if json.dumps(prepared, **options) == body:
                        return options
    return {"indent": 1, "sort_keys": True, "ensure_ascii": False, "separators": (",", ": ")}


def serialise(notebook: Any, options: dict[str, Any], trailing_newline: bool) -> str:
    prepared = strip_transient(split_lines(copy.deepcopy(notebook)))
    return json.dumps(prepared, **options) + ("\n" if trailing_newline else "")


def new_cell(cell_type: CellType, source: str, notebook: Any) -> Any:
    maker = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    cell = maker(source=source)
    if (notebook.nbformat, notebook.nbformat_minor) < (4, 5):
        cell.pop("id", None)  # cell ids exist from format 4.5 on; older notebooks must not carry them
    return cell


def retyped(cell: Any, cell_type: CellType, source: str, notebook: Any) -> Any:
    """``cell`` as ``cell_type`` with ``source``, keeping its id and metadata."""
    fresh = new_cell(cell_type, source, notebook)
    if "id" in cell:
        fresh["id"] = cell["id"]
    fresh["metadata"] = cell.get("metadata", {})
    if cell_type != "code" and "attachments" in cell:
        fresh["attachments"] = cell["attachments"]
    return fresh


def _target(args: NotebookEditInput, notebook: Any, relative: str) -> int:
    cells = notebook.cells
    if args.cell_id is not None:
        for position, cell in enumerate(cells):
            if cell.get("id") == args.cell_id:
                if args.index is not None and args.index != position:
                    raise ToolInputError(
                        f"cell_id {args.cell_id!r} is cell {position}, not {args.index}; give one of them."
                    )
                return position
        known = ", ".join(str(c.get("id")) for c in cells[:30] if "id" in c) or "none (use index)"
        raise ToolInputError(f"{relative} has no cell with id {args.cell_id!r}. Cell ids: {known}.")
    if args.index is None:
        raise ToolInputError(f"Name the cell to {args.edit_mode} with cell_id or index.")
    if args.index >= len(cells):
        raise ToolInputError(
            f"{relative} has {len(cells)} cells (indices 0–{len(cells) - 1}); there is no cell {args.index}."
        )
    return args.index


def edit_cells(args: NotebookEditInput, notebook: Any, relative: str) -> str:
    """Apply ``args`` to ``notebook`` in place; what was done, for the action's summary."""
    cells = notebook.cells
    if args.edit_mode == "insert":
        if args.cell_id is not None:
            position = _target(args, notebook, relative) + 1
        elif args.index is not None:
            if args.index > len(cells):
                raise ToolInputError(
                    f"{relative} has {len(cells)} cells; insert at an index from 0 to {len(cells)}."
                )
            position = args.index
        else:
            position = len(cells)
        cell = new_cell(args.cell_type or "code", args.new_source, notebook)
        cells.insert(position, cell)
        return f"insert a {cell.cell_type} cell at index {position}"
    position = _target(args, notebook, relative)
    cell = cells[position]
    label = f"cell {position}" + (f" (id {cell.id})" if "id" in cell else "")
    if args.edit_mode == "delete":
        del cells[position]
        return f"delete {label}"
    cell_type = args.cell_type or cell.cell_type
    if cell_type != cell.cell_type:
        cells[position] = retyped(cell, cell_type, args.new_source, notebook)
        return f"replace {label}, now a {cell_type} cell"
    cell.source = args.new_source
    if cell.cell_type == "code":
        # The outputs belonged to the old source; keeping them would show results the code never gave.
        cell.outputs = []
        cell.execution_count = None
    return f"replace the source of {label}"
