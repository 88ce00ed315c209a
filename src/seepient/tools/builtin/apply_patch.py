"""``apply_patch``: a multi-file patch (add, update, delete, move) prepared into one ``FileChange`` per file, each
bound to the bytes it was read as, and committed all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from seepient.protocol import ApprovedAction, FileChange, FileChangeSet, PreparedActionDraft, ResolvedPath
from seepient.tools.base import NonEmpty, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import (
    commit_or_explain,
    content_change,
    expect_payload,
    read_for_change,
    workspace_relative,
)
from seepient.tools.builtin._text import (
    BinaryContent,
    count_lines,
    decode_text,
    diff_stats,
    replacement_diff,
    sha256_hex,
    split_lines,
    text_or_none,
    unified_diff,
)
from seepient.tools.patch_format import (
    AddFile,
    DeleteFile,
    FileOperation,
    PatchError,
    UpdateFile,
    apply_hunks,
    parse_patch,
)

_FORMAT_HINT = (
    "The patch format:\n*** Begin Patch\n*** Update File: path/to/file.py\n@@ def some_function():\n"
    "     unchanged line\n-    old line\n+    new line\n*** Add File: new.txt\n+its content\n"
    "*** Delete File: obsolete.txt\n*** End Patch"
)


class ApplyPatchInput(ToolInput):
    patch: NonEmpty
    """The whole patch, from '*** Begin Patch' to '*** End Patch'."""


@dataclass
class _Target:
    """A path the patch names, checked by the path guard and read as it is now."""

    relative: str
    current: bytes | None


class ApplyPatchTool(Tool[ApplyPatchInput]):
    name: ClassVar[str] = "apply_patch"
    description: ClassVar[str] = (
        "Change several files at once with a patch. Format:\n"
        "*** Begin Patch\n"
        "*** Add File: <path>          (every following line starts with '+')\n"
        "*** Delete File: <path>\n"
        "*** Update File: <path>\n"
        "*** Move to: <new path>       (optional, right after Update File)\n"
        "@@ <a line to find first, e.g. a def or class line; may be empty>\n"
        " <context line>   (starts with a space)\n"
        "-<removed line>\n"
        "+<added line>\n"
        "*** End of File               (optional: the hunk ends at the end of the file)\n"
        "*** End Patch\n"
        "Give about three lines of context around each change, hunks in file order. Paths are relative "
        "to the workspace. The whole patch applies or nothing does: if any file changed since the patch "
        "was prepared, nothing is written."
    )
    max_result_chars: ClassVar[int] = 20_000

    async def prepare(self, args: ApplyPatchInput, ctx: ToolContext) -> PreparedActionDraft:
        try:
            operations = parse_patch(args.patch)
        except PatchError as exc:
            raise ToolInputError(
                f"The patch could not be parsed: {exc}. Nothing was changed.\n{_FORMAT_HINT}"
            ) from None
        # Every path the patch names passes the path guard before any file is read.
        resolved: dict[str, ResolvedPath] = {}
        for operation in operations:
            named = [operation.path]
            if isinstance(operation, UpdateFile) and operation.move_to is not None:
                named.append(operation.move_to)
            for path in named:
                if path not in resolved:
                    resolved[path] = ctx.paths.for_write(path)
                    workspace_relative(resolved[path])
        changes: list[FileChange] = []
        words: list[str] = []
        claimed: dict[str, int] = {}
        for operation in operations:
            for change, word in await self._prepare_one(operation, ctx, resolved):
                if change.path in claimed:
                    raise ToolInputError(
                        f"{change.path} is changed twice (patch lines {claimed[change.path]} and "
                        f"{operation.line}); put all changes to one file in one section. Nothing was changed."
                    )
                claimed[change.path] = operation.line
                changes.append(change)
                if word:
                    words.append(word)
        summary = "Apply patch: " + ", ".join(words)
        return ctx.draft(
            self.name,
            FileChangeSet(changes=tuple(changes)),
            summary=summary if len(summary) <= 300 else summary[:299] + "…",
        )

    async def _target(self, ctx: ToolContext, resolved: ResolvedPath) -> _Target:
        relative, current = await read_for_change(
            ctx, resolved, what="the patch", directory_hint="a patch changes files. Nothing was changed."
        )
        return _Target(relative, current)

    async def _prepare_one(
        self, operation: FileOperation, ctx: ToolContext, resolved: dict[str, ResolvedPath]
    ) -> list[tuple[FileChange, str]]:
        target = await self._target(ctx, resolved[operation.path])
        relative, current = target.relative, target.current
        if isinstance(operation, AddFile):
            content = operation.content
            if current is None:
                change = content_change(relative, None, content, unified_diff(None, content, relative))
                return [(change, f"create {relative} (+{count_lines(content)})")]
            # An Add over an existing file replaces it, as the format's reference implementation does.
            diff = replacement_diff(text_or_none(current), content, relative)
            change = content_change(relative, current, content, diff)
            return [(change, f"overwrite {relative} ({diff_stats(diff).label()})")]
        if isinstance(operation, DeleteFile):
            if current is None:
                raise ToolInputError(
                    f"Cannot delete {relative} (patch line {operation.line}): no such file. Nothing was changed."
                )
            change = FileChange(
                path=relative,
                pre_image_sha256=sha256_hex(current),
                delete=True,
                diff=_deletion_diff(current, relative),
            )
            return [(change, f"delete {relative}")]
        return await self._prepare_update(operation, relative, current, ctx, resolved)

    async def _prepare_update(
        self,
        operation: UpdateFile,
        relative: str,
        current: bytes | None,
        ctx: ToolContext,
        resolved: dict[str, ResolvedPath],
    ) -> list[tuple[FileChange, str]]:
        if current is None:
            raise ToolInputError(
                f"Cannot update {relative} (patch line {operation.line}): no such file. To create it, use "
                "'*** Add File:'. Nothing was changed."
            )
        try:
            text = decode_text(current)
        except BinaryContent as exc:
            raise ToolInputError(f"Cannot update {relative}: {exc}. Nothing was changed.") from None
        try:
            new_text = apply_hunks(text, operation.hunks, relative)
        except PatchError as exc:
            raise ToolInputError(f"The patch does not apply: {exc}\nNothing was changed.") from None
        destination = (
            None if operation.move_to is None else await self._target(ctx, resolved[operation.move_to])
        )
        if destination is None or destination.relative == relative:
            diff = unified_diff(text, new_text, relative)
            change = content_change(relative, current, new_text, diff)
            return [(change, f"update {relative} ({diff_stats(diff).label()})")]
        moved_to = destination.relative
        diff = _move_diff(text, new_text, relative, moved_to)
        if destination.current is not None:
            diff = f"(replaces the existing {moved_to})\n{diff}"
        arrival = content_change(moved_to, destination.current, new_text, diff)
        departure = FileChange(
            path=relative,
            pre_image_sha256=sha256_hex(current),
            delete=True,
            diff=f"{relative} moves to {moved_to}\n",
        )
        over = " (replacing it)" if destination.current is not None else ""
        return [
            (departure, f"move {relative} → {moved_to}{over} ({diff_stats(diff).label()})"),
            (arrival, ""),
        ]

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        change_set = expect_payload(action, FileChangeSet)
        failed = await commit_or_explain(
            ctx, action, "patch", preface="No file was changed: the patch applies whole or not at all.\n"
        )
        if failed is not None:
            return failed
        files = [_file_data(change) for change in change_set.changes]
        lines = [f"Applied the patch to {len(files)} file{'s' if len(files) != 1 else ''}:"]
        for item in files:
            lines.append(
                f"  {item['action']} {item['path']}" + (f" ({item['label']})" if item["label"] else "")
            )
        return ToolOutput("\n".join(lines), data={"files": files})


def _deletion_diff(current: bytes, path: str) -> str:
    old = text_or_none(current)
    if old is None:
        return f"Binary file a/{path} deleted\n"
    lines = split_lines(old)
    body = "".join(f"-{line}\n" for line in lines)
    return (
        f"--- a/{path}\n+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n{body}"
        if lines
        else f"deleted empty file {path}\n"
    )


def _move_diff(old: str, new: str, source: str, destination: str) -> str:
    diff = unified_diff(old, new, destination)
    header = f"--- a/{destination}\n"
    if diff.startswith(header):
        diff = f"--- a/{source}\n" + diff[len(header) :]
    return diff or f"--- a/{source}\n+++ b/{destination}\n"


def _file_data(change: FileChange) -> dict[str, Any]:
    stats = diff_stats(change.diff)
    if change.delete:
        action = "deleted"
    elif change.pre_image_sha256 is None:
        action = "created"
    else:
        action = "updated"
    label = "" if change.delete else stats.label()
    return {
        "path": change.path,
        "action": action,
        "added": stats.added,
        "removed": stats.removed,
        "label": label,
        "diff": change.diff,
    }
