"""``read_file``: show a text file with numbered lines, a window at a time."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from seepient.protocol import ApprovedAction, PathDenied, PreparedActionDraft, ReadAction
from seepient.tools.base import NonEmpty, Positive, Tool, ToolContext, ToolInput, ToolOutput
from seepient.tools.builtin._common import display_path, expect_payload, read_draft
from seepient.tools.builtin._text import (
    BinaryContent,
    cut_line,
    decode_text,
    number_line,
    split_lines,
)

DEFAULT_READ_LIMIT = 2000


class ReadFileInput(ToolInput):
    path: NonEmpty
    """The file to read, relative to the workspace root (an absolute path also works)."""
    offset: Positive | None = None
    """The 1-based line number to start at. Omit to start at the first line."""
    limit: Positive | None = Field(
        default=None,
        description=f"How many lines to show at most (default {DEFAULT_READ_LIMIT}). Use with offset to page "
        "through long files.",
    )


class ReadFileTool(Tool[ReadFileInput], read_only=True, concurrency_safe=True):
    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file from the workspace. Lines come back numbered like `cat -n` (number, tab, text); "
        "the number and tab are not part of the file, so leave them out when you quote text to edit_file. "
        f"At most {DEFAULT_READ_LIMIT} lines are shown per call and very long lines are cut; pass offset "
        "(a line number) and limit to read a specific part. Binary files and directories are refused: use "
        "glob to list a directory."
    )
    max_result_chars: ClassVar[int] = 50_000

    async def prepare(self, args: ReadFileInput, ctx: ToolContext) -> PreparedActionDraft:
        resolved = ctx.paths.for_read(args.path)
        shown = display_path(resolved)
        params: dict[str, Any] = {"path": shown, "offset": args.offset, "limit": args.limit}
        if args.offset and args.limit:
            where = f" (lines {args.offset}\u2013{args.offset + args.limit - 1})"
        elif args.offset:
            where = f" (from line {args.offset})"
        elif args.limit:
            where = f" (first {args.limit} lines)"
        else:
            where = ""
        return read_draft(ctx, self.name, "read_file", resolved, params, f"Read {shown}{where}")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = expect_payload(action, ReadAction)
        absolute = payload.paths[0]
        shown = payload.params.get("path") or absolute
        offset = payload.params.get("offset") or 1
        limit = payload.params.get("limit") or DEFAULT_READ_LIMIT
        try:
            data = await ctx.reads.read_file(absolute)
        except FileNotFoundError:
            return ToolOutput(
                f"File not found: {shown}. Check the spelling, or use glob (for example pattern "
                f"'**/{shown.rsplit('/', 1)[-1]}') to find where it is.",
                is_error=True,
            )
        except IsADirectoryError:
            return ToolOutput(
                f"{shown} is a directory, not a file. Use glob (for example pattern '*' with path "
                f"'{shown}') to list what it contains.",
                is_error=True,
            )
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        except PermissionError as exc:
            return ToolOutput(f"Cannot read {shown}: {exc.strerror or exc}.", is_error=True)
        try:
            text = decode_text(data)
        except BinaryContent as exc:
            return ToolOutput(
                f"Cannot show {shown}: {exc} ({len(data):,} bytes). read_file only shows text files.",
                is_error=True,
                data={"path": shown, "binary": True, "size": len(data)},
            )
        return self._numbered_view(shown, text.removeprefix("\ufeff"), offset, limit)

    def _numbered_view(self, shown: str, text: str, offset: int, limit: int) -> ToolOutput:
        lines = split_lines(text)
        total = len(lines)
        data: dict[str, Any] = {"path": shown, "total_lines": total}
        if total == 0:
            return ToolOutput(f"{shown} is empty (0 lines).", data={**data, "lines_shown": 0})
        if offset > total:
            return ToolOutput(
                f"{shown} has {total} lines; offset {offset} is past the end. Use an offset from 1 to {total}.",
                is_error=True,
                data=data,
            )
        # Stop early rather than let the pipeline cut the middle out of a file view: a view that ends
        # with "continue at offset N" lets the model page on without losing lines.
        budget = self.max_result_chars - 500
        out: list[str] = []
        used = 0
        last = offset - 1
        for number in range(offset, min(total, offset + limit - 1) + 1):
            entry = number_line(number, cut_line(lines[number - 1]))
            if out and used + len(entry) + 1 > budget:
                break
            out.append(entry)
            used += len(entry) + 1
            last = number
        if last < total:
            out.append(
                f"\n[Showing lines {offset}\u2013{last} of {total}. Use offset={last + 1} to read more.]"
            )
        return ToolOutput("\n".join(out), data={**data, "first_line": offset, "last_line": last})
