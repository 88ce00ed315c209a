"""``write_file`` and ``edit_file``: file changes prepared against the file's current bytes and committed
exactly, so a change never lands on a file that moved on since the model (and the person) saw it."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from seepient.protocol import ApprovedAction, EditBlock, FileChange, PreparedActionDraft, ResolvedPath
from seepient.tools.base import NonEmpty, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import (
    commit_or_explain,
    content_change,
    expect_payload,
    read_for_change,
)
from seepient.tools.builtin._text import (
    BinaryContent,
    ClosestRegion,
    closest_region,
    count_lines,
    cut_line,
    decode_text,
    diff_stats,
    line_of_offset,
    looks_line_numbered,
    number_line,
    occurrences,
    replacement_diff,
    sha256_hex,
    text_or_none,
    to_crlf,
    unified_diff,
    uses_crlf,
)

_REGION_MAX_LINES = 40
_REGION_LINE_CHARS = 400
_CLOSE_ENOUGH = 0.4
"""Below this similarity the nearest window is noise, and showing it would mislead more than help."""


async def _target(ctx: ToolContext, resolved: ResolvedPath) -> tuple[str, bytes | None]:
    """The file's workspace-relative path and its bytes as preparation sees them (None: not there yet)."""
    return await read_for_change(
        ctx, resolved, what="the change", directory_hint="give the path of a file inside it."
    )


def _change_data(change: FileChange) -> dict[str, Any]:
    stats = diff_stats(change.diff)
    return {
        "path": change.path,
        "created": change.pre_image_sha256 is None,
        "added": stats.added,
        "removed": stats.removed,
        "diff": change.diff,
    }


class WriteFileInput(ToolInput):
    path: NonEmpty
    """The file to create or overwrite, relative to the workspace root. Missing parent directories are
    created."""
    content: str
    """The complete new content of the file."""


class WriteFileTool(Tool[WriteFileInput]):
    """Create a file, or replace the whole content of an existing one, inside the workspace. Prefer edit_file
    for changing part of an existing file. If the existing file uses Windows (CRLF) line endings and content
    has plain newlines, CRLF is kept. The write is refused if the file changed since this call was prepared;
    read it again and retry."""

    name: ClassVar[str] = "write_file"

    async def prepare(self, args: WriteFileInput, ctx: ToolContext) -> PreparedActionDraft:
        resolved = ctx.paths.for_write(args.path)
        relative, current = await _target(ctx, resolved)
        content = args.content
        if current is None:
            change = content_change(relative, None, content, unified_diff(None, content, relative))
            return ctx.draft(self.name, change, summary=f"Create {relative} (+{count_lines(content)})")

        old_text = text_or_none(current)
        if old_text is not None and uses_crlf(old_text) and "\r" not in content:
            content = to_crlf(content)
        if content.encode("utf-8") == current:
            raise ToolInputError(f"{relative} already has exactly this content; nothing to write.")
        diff = replacement_diff(old_text, content, relative)
        if old_text is None:
            summary = f"Write {relative} (replaces a binary file with {count_lines(content)} lines)"
        else:
            summary = f"Write {relative} ({diff_stats(diff).label()})"
        change = content_change(relative, current, content, diff)
        return ctx.draft(self.name, change, summary=summary)

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        change = expect_payload(action, FileChange)
        failed = await commit_or_explain(ctx, action, "write", shown=change.path)
        if failed is not None:
            return failed
        lines = count_lines(change.new_content or "")
        if change.pre_image_sha256 is None:
            text = f"Created {change.path} ({lines} lines)."
        else:
            text = f"Updated {change.path} ({diff_stats(change.diff).label()}; now {lines} lines)."
        return ToolOutput(text, data=_change_data(change))


class EditFileInput(ToolInput):
    path: NonEmpty
    """The file to edit, relative to the workspace root."""
    old_string: str
    """The exact text to replace, copied from the file with its indentation and line breaks (without
    read_file's line-number prefixes). It must occur exactly once unless replace_all is true; include a few
    surrounding lines to make it unique. An empty old_string creates a file that does not exist yet (or fills
    an empty one) with new_string."""
    new_string: str
    """The text to put in its place; must differ from old_string."""
    replace_all: bool = False
    """Replace every occurrence of old_string instead of requiring exactly one."""


class EditFileTool(Tool[EditFileInput]):
    """Change part of a file by exact search and replace: old_string must match the file's text exactly
    (whitespace included) and occur once, unless replace_all is true. On a miss the error shows the closest
    region of the file with line numbers so you can retry. Files with Windows (CRLF) line endings can be
    edited with plain newlines. The edit is refused if the file changed since this call was prepared."""

    name: ClassVar[str] = "edit_file"

    async def prepare(self, args: EditFileInput, ctx: ToolContext) -> PreparedActionDraft:
        if args.old_string == args.new_string:
            raise ToolInputError("old_string and new_string are identical, so the edit would change nothing.")
        resolved = ctx.paths.for_write(args.path)
        relative, current = await _target(ctx, resolved)

        if current is None or current == b"":
            return self._prepare_fill(args, ctx, relative, current)
        try:
            text = decode_text(current)
        except BinaryContent as exc:
            raise ToolInputError(
                f"Cannot edit {relative}: {exc}. edit_file only changes text files."
            ) from None
        if args.old_string == "":
            raise ToolInputError(
                f"old_string is empty but {relative} is not. Give the exact text to replace, or use "
                "write_file to replace the whole file."
            )

        search, replace = args.old_string, args.new_string
        found = occurrences(text, search)
        if uses_crlf(text):
            # A model writes "\n"; the file has "\r\n". Match the file's convention rather than fail
            # every edit of a Windows file, and write new lines the way their neighbours are written.
            if not found and "\n" in search and "\r" not in search:
                found = occurrences(text, to_crlf(search))
                if found:
                    search = to_crlf(search)
            if "\r" not in replace:
                replace = to_crlf(replace)
        if not found:
            # Scoring every window of a large file takes a while; keep the event loop free meanwhile.
            region = await asyncio.to_thread(closest_region, text, args.old_string)
            raise ToolInputError(self._miss_message(relative, args.old_string, region))
        if len(found) > 1 and not args.replace_all:
            lines = ", ".join(str(line_of_offset(text, at)) for at in found[:20])
            more = f" and {len(found) - 20} more" if len(found) > 20 else ""
            raise ToolInputError(
                f"old_string occurs {len(found)} times in {relative} (at lines {lines}{more}); nothing was "
                "changed. Include more surrounding lines so it matches exactly one place, or set replace_all "
                "to true to change every occurrence."
            )

        if args.replace_all:
            count = text.count(search)
            new_text = text.replace(search, replace)
        else:
            count = 1
            new_text = text[: found[0]] + replace + text[found[0] + len(search) :]
        diff = unified_diff(text, new_text, relative)
        label = diff_stats(diff).label()
        summary = (
            f"Edit {relative} ({label}, {count} occurrences)" if count > 1 else f"Edit {relative} ({label})"
        )
        change = FileChange(
            path=relative,
            pre_image_sha256=sha256_hex(current),
            edits=(EditBlock(search=search, replace=replace, replace_all=args.replace_all),),
            diff=diff,
        )
        return ctx.draft(self.name, change, summary=summary)

    def _prepare_fill(
        self, args: EditFileInput, ctx: ToolContext, relative: str, current: bytes | None
    ) -> PreparedActionDraft:
        """A missing or empty file takes ``new_string`` whole, but only when ``old_string`` is empty: any other
        search text cannot be in it, and saying so is more useful than creating a file by accident."""
        if args.old_string != "":
            if current is None:
                raise ToolInputError(
                    f"File not found: {relative}. To create it, use write_file (or edit_file with an empty "
                    "old_string); to find an existing file, use glob."
                )
            raise ToolInputError(
                f"{relative} is empty, so old_string cannot match. Use an empty old_string to fill it."
            )
        pre_image = None if current is None else sha256_hex(current)
        change = FileChange(
            path=relative,
            pre_image_sha256=pre_image,
            new_content=args.new_string,
            diff=unified_diff(None if current is None else "", args.new_string, relative),
        )
        verb = "Create" if current is None else "Edit"
        return ctx.draft(
            self.name, change, summary=f"{verb} {relative} (+{count_lines(args.new_string)} \u22120)"
        )

    @staticmethod
    def _miss_message(relative: str, wanted: str, region: ClosestRegion | None) -> str:
        parts = [f"old_string was not found in {relative}; nothing was changed."]
        if looks_line_numbered(wanted):
            parts.append(
                "old_string seems to include read_file's line-number prefixes (number and tab); they are not "
                "part of the file, so leave them out."
            )
        if region is None or region.similarity < _CLOSE_ENOUGH:
            parts.append(
                f"Nothing in {relative} resembles it closely. Read the file again with read_file to see its "
                "current content."
            )
            return "\n".join(parts)
        span = (
            f"line {region.first_line}"
            if region.first_line == region.last_line
            else f"lines {region.first_line}\u2013{region.last_line}"
        )
        parts.append(f"The closest match ({region.similarity:.0%} similar) is at {span}:")
        shown = region.lines[:_REGION_MAX_LINES]
        for number, line in enumerate(shown, start=region.first_line):
            parts.append(number_line(number, cut_line(line, _REGION_LINE_CHARS)))
        if len(region.lines) > len(shown):
            parts.append(f"   ... ({len(region.lines) - len(shown)} more lines)")
        if region.whitespace_only:
            parts.append(
                "It differs from old_string only in whitespace (indentation, spaces or line breaks)."
            )
        parts.append(
            "Retry with old_string copied exactly from the file, whitespace included, without the line-number "
            "prefixes."
        )
        return "\n".join(parts)

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        change = expect_payload(action, FileChange)
        failed = await commit_or_explain(ctx, action, "edit", shown=change.path)
        if failed is not None:
            return failed
        if change.pre_image_sha256 is None:
            text = f"Created {change.path} ({count_lines(change.new_content or '')} lines)."
        else:
            text = f"Edited {change.path} ({diff_stats(change.diff).label()})."
        return ToolOutput(text, data=_change_data(change))
