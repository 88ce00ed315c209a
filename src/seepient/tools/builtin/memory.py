"""``memory``: the agent's own notes, kept across sessions in a folder per project and one per user.

Paths are ``/memories/project/...`` (this workspace) and ``/memories/user/...`` (every workspace). Every write
is prepared as an exact file change bound to the file's current content and committed by the executor inside
the memory folder only; what the folders hold is shown to the model at the start of later sessions.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from seepient.config.memory_paths import MemoryPathError, display, split_memory_path
from seepient.config.paths import MemoryScope
from seepient.protocol import (
    ApprovedAction,
    EditBlock,
    FileChange,
    PreparedActionDraft,
)
from seepient.protocol.actions import MemoryAction
from seepient.tools.base import NonNegative, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import commit_or_explain, expect_payload
from seepient.tools.builtin._text import (
    BinaryContent,
    count_lines,
    cut_line,
    decode_text,
    number_line,
    occurrences,
    sha256_hex,
    split_lines,
    unified_diff,
)

MAX_MEMORY_CHARS = 100_000
Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


class MemoryInput(ToolInput):
    command: Command
    """view (a file with line numbers, or a folder's contents), create (write a whole file), str_replace
    (replace text occurring exactly once), insert (add text after a line), delete (a file), rename (move a
    file within its folder tree)."""
    path: str | None = None
    """The memory path, e.g. '/memories/project/decisions.md' or '/memories/user/preferences.md'; '/memories'
    lists both folders. Not used by rename."""
    view_range: list[int] | None = None
    """view only: [first_line, last_line], 1-based; -1 as last_line means the end."""
    file_text: str | None = None
    """create only: the whole content of the file."""
    old_str: str | None = None
    """str_replace only: the exact text to replace."""
    new_str: str | None = None
    """str_replace only: the replacement text."""
    insert_line: NonNegative | None = None
    """insert only: the line after which to insert (0 = at the top)."""
    insert_text: str | None = None
    """insert only: the text to insert."""
    old_path: str | None = None
    """rename only: the file's current memory path."""
    new_path: str | None = None
    """rename only: its new memory path (same folder tree)."""


def _need(value: Any, name: str, command: str) -> Any:
    if value is None:
        raise ToolInputError(f"memory {command} needs {name}")
    return value


def _split(path: str | None, command: str, name: str = "path") -> tuple[MemoryScope | None, str]:
    try:
        return split_memory_path(_need(path, name, command))
    except MemoryPathError as exc:
        raise ToolInputError(f"memory {command}: {exc}") from None


def _file(path: str | None, command: str, name: str = "path") -> tuple[MemoryScope, str]:
    scope, inner = _split(path, command, name)
    if scope is None or not inner:
        raise ToolInputError(
            f"memory {command} needs a file path such as /memories/project/notes.md, not a folder"
        )
    return scope, inner


class MemoryTool(Tool[MemoryInput]):
    """Your persistent memory: notes you keep across sessions. /memories/project/ holds notes about this
    workspace, /memories/user/ notes that apply everywhere (the user's preferences, recurring lessons). Their
    contents are shown to you at the start of each session. Record decisions, progress and facts worth
    keeping; keep notes short and up to date, and never store secrets. Commands: view, create, str_replace,
    insert, delete, rename. Changes may need the user's approval."""

    name: ClassVar[str] = "memory"
    max_result_chars: ClassVar[int] = 40_000

    async def prepare(self, args: MemoryInput, ctx: ToolContext) -> PreparedActionDraft:
        command = args.command
        if command == "view":
            scope, inner = _split(args.path or "/memories", command)
            view_range = _view_range(args.view_range)
            action = MemoryAction(command="view", scope=scope or "all", path=inner, view_range=view_range)
            return self._draft(ctx, action)
        if command == "rename":
            scope, inner = _file(args.old_path, command, "old_path")
            new_scope, new_inner = _file(args.new_path, command, "new_path")
            if new_scope != scope:
                raise ToolInputError(
                    "memory rename moves a file within one folder tree (/memories/project or /memories/user); "
                    "to move it across, create it there and delete it here"
                )
            current = await self._current(ctx, scope, inner, command)
            if current is None:
                raise ToolInputError(
                    f"{display(scope, inner)} does not exist; view /memories to see what does"
                )
            action = MemoryAction(
                command="rename",
                scope=scope,
                path=inner,
                new_path=new_inner,
                pre_image_sha256=sha256_hex(current),
            )
            return self._draft(ctx, action)
        scope, inner = _file(args.path, command)
        current = await self._current(ctx, scope, inner, command)
        if command == "delete":
            if current is None:
                raise ToolInputError(f"{display(scope, inner)} does not exist; nothing to delete")
            action = MemoryAction(
                command="delete", scope=scope, path=inner, pre_image_sha256=sha256_hex(current)
            )
            return self._draft(ctx, action)
        change = self._change(args, scope, inner, current)
        action = MemoryAction(command=command, scope=scope, path=inner, change=change)
        return self._draft(ctx, action)

    async def _current(self, ctx: ToolContext, scope: MemoryScope, inner: str, command: str) -> bytes | None:
        try:
            return await ctx.reads.read_memory(scope, inner)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise ToolInputError(
                f"memory {command}: {display(scope, inner)} is a folder; name a file inside it"
            ) from None
        except NotADirectoryError:
            raise ToolInputError(f"memory {command}: a parent of {display(scope, inner)} is a file") from None
        except PermissionError as exc:
            raise ToolInputError(f"memory {command}: {display(scope, inner)}: {exc.strerror}") from None

    def _change(self, args: MemoryInput, scope: MemoryScope, inner: str, current: bytes | None) -> FileChange:
        shown = display(scope, inner)
        old_text: str | None = None
        if current is not None:
            try:
                old_text = decode_text(current)
            except BinaryContent as exc:
                raise ToolInputError(f"{shown}: {exc}; delete it and create it again") from None
        pre = sha256_hex(current) if current is not None else None
        if args.command == "create":
            text = _need(args.file_text, "file_text", "create")
            new_text = text
            change = FileChange(path=inner, pre_image_sha256=pre, new_content=text, diff="")
        elif args.command == "str_replace":
            old = _need(args.old_str, "old_str", "str_replace")
            new = args.new_str or ""
            if old_text is None:
                raise ToolInputError(f"{shown} does not exist; create it first")
            if old == "":
                raise ToolInputError("memory str_replace: old_str must not be empty")
            found = len(occurrences(old_text, old))
            if found != 1:
                where = "does not occur" if found == 0 else f"occurs {found} times"
                raise ToolInputError(
                    f"memory str_replace: old_str {where} in {shown}; view the file and copy text that occurs "
                    "exactly once"
                )
            new_text = old_text.replace(old, new, 1)
            change = FileChange(
                path=inner, pre_image_sha256=pre, edits=(EditBlock(search=old, replace=new),), diff=""
            )
        else:
            line = _need(args.insert_line, "insert_line", "insert")
            text = _need(args.insert_text, "insert_text", "insert")
            if old_text is None:
                raise ToolInputError(f"{shown} does not exist; create it first")
            lines = split_lines(old_text)
            if line > len(lines):
                raise ToolInputError(
                    f"memory insert: insert_line {line} is past the end of {shown} ({len(lines)} lines)"
                )
            added = split_lines(text) or [""]
            kept = lines[:line] + added + lines[line:]
            new_text = "\n".join(kept) + ("\n" if old_text.endswith("\n") or not old_text else "")
            change = FileChange(path=inner, pre_image_sha256=pre, new_content=new_text, diff="")
        if len(new_text) > MAX_MEMORY_CHARS:
            raise ToolInputError(
                f"{shown} would hold {len(new_text)} characters; memory files hold at most {MAX_MEMORY_CHARS}. "
                "Keep notes short: summarise, or split them over several files"
            )
        return change.model_copy(update={"diff": unified_diff(old_text, new_text, shown.lstrip("/"))})

    def _draft(self, ctx: ToolContext, action: MemoryAction) -> PreparedActionDraft:
        shown = "/memories" if action.scope == "all" else display(action.scope, action.path)
        if action.command == "rename":
            summary = f"Memory: rename {shown} to {display(action.scope, action.new_path or '')}"  # type: ignore[arg-type]
        elif action.change is not None and action.change.new_content is not None:
            summary = f"Memory: {action.command} {shown} ({count_lines(action.change.new_content)} lines)"
        else:
            summary = f"Memory: {action.command} {shown}"
        return ctx.draft(
            self.name,
            action,
            summary=summary,
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        memory = expect_payload(action, MemoryAction)
        if memory.command == "view":
            return await self._view(memory, ctx)
        shown = display(memory.scope, memory.path)  # type: ignore[arg-type]
        failed = await commit_or_explain(ctx, action, f"memory {memory.command}", shown=shown)
        if failed is not None:
            return failed
        messages = {
            "create": f"Saved {shown}.",
            "str_replace": f"Edited {shown}.",
            "insert": f"Inserted text into {shown}.",
            "delete": f"Deleted {shown}.",
            "rename": f"Renamed {shown} to {display(memory.scope, memory.new_path or '')}.",  # type: ignore[arg-type]
        }
        data: dict[str, Any] = {"path": shown, "command": memory.command}
        if memory.change is not None:
            data["diff"] = memory.change.diff
        return ToolOutput(messages[memory.command], data=data)

    async def _view(self, memory: MemoryAction, ctx: ToolContext) -> ToolOutput:
        if memory.scope == "all":
            blocks = []
            for scope in ("project", "user"):
                entries = await ctx.reads.list_memory(scope, "")
                blocks.append(_listing(display(scope, ""), entries))
            return ToolOutput("\n\n".join(blocks))
        scope: MemoryScope = memory.scope
        shown = display(scope, memory.path)
        try:
            data = await ctx.reads.read_memory(scope, memory.path) if memory.path else None
        except FileNotFoundError:
            return ToolOutput(f"{shown} does not exist. View /memories to see what is there.", is_error=True)
        except IsADirectoryError:
            data = None
        except (PermissionError, NotADirectoryError) as exc:
            return ToolOutput(f"{shown}: {exc.strerror}", is_error=True)
        if data is None:
            try:
                entries = await ctx.reads.list_memory(scope, memory.path)
            except FileNotFoundError:
                return ToolOutput(
                    f"{shown} does not exist. View /memories to see what is there.", is_error=True
                )
            return ToolOutput(_listing(shown, entries))
        try:
            text = decode_text(data)
        except BinaryContent as exc:
            return ToolOutput(f"{shown}: {exc}", is_error=True)
        lines = split_lines(text)
        first, last = memory.view_range or (1, len(lines))
        if last == -1:
            last = len(lines)
        numbered = [
            number_line(n, cut_line(line)) for n, line in enumerate(lines, start=1) if first <= n <= last
        ]
        body = "\n".join(numbered) if numbered else "(empty file)"
        return ToolOutput(f"{shown} ({len(lines)} lines):\n{body}")


def _view_range(given: list[int] | None) -> tuple[int, int] | None:
    if given is None:
        return None
    if len(given) != 2 or given[0] < 1 or (given[1] != -1 and given[1] < given[0]):
        raise ToolInputError(
            "memory view: view_range is [first_line, last_line], 1-based, last -1 for the end"
        )
    return given[0], given[1]


def _listing(shown: str, entries: list[str]) -> str:
    if not entries:
        return f"{shown}/ (empty)"
    return f"{shown}/\n" + "\n".join(f"  {entry}" for entry in entries)
