"""``lsp``: ask the workspace's language server about a file (diagnostics, definition, references, hover,
document symbols). Lines and columns are 1-based for the model and converted to LSP's 0-based UTF-16
positions; answers come back as compact text with workspace-relative paths and the source line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from seepient.protocol import (
    ApprovedAction,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
    SandboxUnavailable,
)
from seepient.protocol.lsp import LspAnswer, LspLocation, LspQuery, LspUnavailable
from seepient.tools.base import NonEmpty, Positive, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import display_path, expect_payload, path_kind, read_draft

Operation = Literal["diagnostics", "definition", "references", "hover", "document_symbols"]
_NEEDS_POSITION = ("definition", "references", "hover")
MAX_LOCATIONS = 200
_SNIPPET_CHARS = 160


class LspInput(ToolInput):
    operation: Operation
    """diagnostics (problems the server reports in the file), definition (where the symbol at line:character
    is defined), references (where it is used), hover (its signature and docs), document_symbols (the file's
    classes, functions and so on)."""
    path: NonEmpty
    """The file, relative to the workspace root."""
    line: Positive | None = None
    """1-based line of the symbol (definition, references, hover)."""
    character: Positive | None = None
    """1-based column of the symbol on that line, counted in characters (definition, references, hover); any
    column inside the name works."""


def utf16_column(text: str, column: int) -> int:
    """A 0-based code-point column on ``text`` as LSP's 0-based UTF-16 offset."""
    return len(text[:column].encode("utf-16-le")) // 2


def codepoint_column(text: str, utf16: int) -> int:
    """LSP's 0-based UTF-16 offset on ``text`` as a 0-based code-point column."""
    units = 0
    for index, char in enumerate(text):
        if units >= utf16:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(text)


class _Lines:
    """Source lines for snippets, read through the executor and only where the path guard lets a read go."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._cache: dict[str, list[str] | None] = {}

    async def get(self, path: str, line: int) -> str | None:
        if path not in self._cache:
            self._cache[path] = await self._load(path)
        lines = self._cache[path]
        return lines[line] if lines is not None and 0 <= line < len(lines) else None

    async def _load(self, path: str) -> list[str] | None:
        try:
            resolved = self._ctx.paths.for_read(path)
            if resolved.relative is None:
                return None  # outside the workspace: named, not shown
            data = await self._ctx.reads.read_file(resolved.absolute)
        except (PathDenied, OSError, ValueError):
            return None
        return data.decode("utf-8", errors="replace").splitlines()


def shown_path(path: str, workspace: Path) -> str:
    try:
        return Path(path).relative_to(workspace).as_posix()
    except ValueError:
        return path


async def _place(location: LspLocation, ctx: ToolContext, lines: _Lines) -> tuple[str, str | None]:
    """``path:line:col`` (1-based, columns in characters) and the source line when it may be shown."""
    text = await lines.get(location.path, location.line)
    column = codepoint_column(text, location.character) if text is not None else location.character
    where = f"{shown_path(location.path, ctx.workspace)}:{location.line + 1}:{column + 1}"
    if text is None:
        return where, None
    snippet = text.strip()
    if len(snippet) > _SNIPPET_CHARS:
        snippet = snippet[: _SNIPPET_CHARS - 1] + "…"
    return where, snippet


async def format_locations(answer: LspAnswer, ctx: ToolContext, subject: str) -> str:
    if not answer.locations:
        return f"No {answer.operation} found for {subject}."
    lines = _Lines(ctx)
    ordered = sorted(answer.locations, key=lambda loc: (loc.path, loc.line, loc.character))
    shown = ordered[:MAX_LOCATIONS]
    noun = "definition" if answer.operation == "definition" else "reference"
    head = f"{len(answer.locations)} {noun}{'s' if len(answer.locations) != 1 else ''} of {subject}:"
    out = [head]
    for location in shown:
        where, snippet = await _place(location, ctx, lines)
        out.append(f"{where}  {snippet}" if snippet else where)
    if len(answer.locations) > len(shown):
        out.append(f"[{len(answer.locations) - len(shown)} more not shown]")
    return "\n".join(out)


async def format_symbols(answer: LspAnswer, ctx: ToolContext, shown_file: str) -> str:
    if not answer.locations:
        return f"No symbols in {shown_file}."
    lines = _Lines(ctx)
    out = [f"Symbols in {shown_file} (line:column):"]
    for symbol in answer.locations[:MAX_LOCATIONS]:
        text = await lines.get(symbol.path, symbol.line)
        column = codepoint_column(text, symbol.character) if text is not None else symbol.character
        out.append(f"{'  ' * symbol.depth}{symbol.kind} {symbol.name}  {symbol.line + 1}:{column + 1}")
    if len(answer.locations) > MAX_LOCATIONS:
        out.append(f"[{len(answer.locations) - MAX_LOCATIONS} more not shown]")
    return "\n".join(out)


async def format_diagnostics(answer: LspAnswer, ctx: ToolContext, files: list[str]) -> str:
    """One line per problem (``path:line:col severity: message [source]``), or a clear "none"."""
    names = ", ".join(files)
    if not answer.locations:
        return f"No problems reported in {names} ({answer.server} language server)."
    lines = _Lines(ctx)
    out = [f"{len(answer.locations)} problem{'s' if len(answer.locations) != 1 else ''} reported in {names}:"]
    for diagnostic in answer.locations[:MAX_LOCATIONS]:
        where, snippet = await _place(diagnostic, ctx, lines)
        source = f" [{diagnostic.source}]" if diagnostic.source else ""
        out.append(f"{where} {diagnostic.severity or 'error'}: {diagnostic.message.strip()}{source}")
        if snippet:
            out.append(f"    {snippet}")
    if len(answer.locations) > MAX_LOCATIONS:
        out.append(f"[{len(answer.locations) - MAX_LOCATIONS} more not shown]")
    return "\n".join(out)


class LspTool(Tool[LspInput], read_only=True, concurrency_safe=True):
    """Ask the language server about code: diagnostics of a file, the definition of or references to the
    symbol at a 1-based line and character, hover (signature and docs), or the file's symbols. More precise
    than grep for code navigation. Answers list path:line:column with the source line."""

    name: ClassVar[str] = "lsp"

    async def prepare(self, args: LspInput, ctx: ToolContext) -> PreparedActionDraft:
        if args.operation in _NEEDS_POSITION and (args.line is None or args.character is None):
            raise ToolInputError(
                f"{args.operation} needs line and character (1-based) of the symbol; for example "
                "{operation: definition, path: app.py, line: 12, character: 8}"
            )
        resolved = ctx.paths.for_read(args.path)
        if resolved.relative is None:
            # The server is started for the workspace (read-only inside its jail); a file outside it is not
            # part of the project, and a read outside would bypass the consent the read tools ask for.
            raise PathDenied(
                args.path,
                "the language server answers only for files inside the workspace",
                "workspace_containment",
            )
        kind = await path_kind(ctx, resolved.absolute)
        if kind != "file":
            problem = "does not exist" if kind == "missing" else "is a directory"
            raise ToolInputError(f"{args.path} {problem}; give a source file inside the workspace.")
        params: dict[str, Any] = {"operation": args.operation}
        if args.operation in _NEEDS_POSITION:
            params.update(line=args.line, character=args.character)
        where = f" at {args.line}:{args.character}" if args.operation in _NEEDS_POSITION else ""
        summary = f"Language server: {args.operation} of {display_path(resolved)}{where}"
        return read_draft(ctx, self.name, "lsp", resolved, params, summary)

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        read = expect_payload(action, ReadAction)
        path = read.paths[0]
        operation: Operation = read.params["operation"]
        shown_file = shown_path(path, ctx.workspace)
        line, character = 0, 0
        subject = shown_file
        if operation in _NEEDS_POSITION:
            line = int(read.params["line"]) - 1
            text_lines = (await ctx.reads.read_file(path)).decode("utf-8", errors="replace").splitlines()
            if line >= len(text_lines):
                return ToolOutput(
                    f"{shown_file} has {len(text_lines)} lines; line {line + 1} does not exist.",
                    is_error=True,
                )
            text = text_lines[line]
            column = min(int(read.params["character"]) - 1, len(text))
            character = utf16_column(text, column)
            subject = f"{_word_at(text, column) or 'the symbol'} at {shown_file}:{line + 1}:{column + 1}"
        try:
            answer = await ctx.reads.lsp_query(
                LspQuery(operation=operation, path=path, line=line, character=character)
            )
        except (LspUnavailable, SandboxUnavailable) as exc:
            return ToolOutput(
                f"Language server unavailable: {exc}", is_error=True, data={"lsp_unavailable": True}
            )
        data = {"operation": operation, "server": answer.server, "results": len(answer.locations)}
        if operation == "hover":
            text_out = answer.text or f"No hover information for {subject}."
            return ToolOutput(text_out, data=data)
        if operation == "document_symbols":
            return ToolOutput(await format_symbols(answer, ctx, shown_file), data=data)
        if operation == "diagnostics":
            return ToolOutput(await format_diagnostics(answer, ctx, [shown_file]), data=data)
        return ToolOutput(await format_locations(answer, ctx, subject), data=data)


def _word_at(text: str, column: int) -> str:
    start = column
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = column
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end]
