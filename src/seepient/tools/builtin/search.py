"""``glob`` and ``grep``: find files by name and by content under a directory of the workspace, honouring
``.gitignore`` so results are the project's own files."""

from __future__ import annotations

import posixpath
import re
from typing import Any, ClassVar, Literal

from seepient.protocol import (
    ApprovedAction,
    GrepOutcome,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
)
from seepient.tools.base import NonEmpty, Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import display_path, expect_payload, path_kind, read_draft
from seepient.tools.builtin._text import split_lines

GLOB_LIMIT = 200
GREP_LIMITS = {"content": 300, "files_with_matches": 200, "count": 200}

GrepMode = Literal["content", "files_with_matches", "count"]


def _check_relative_pattern(pattern: str) -> None:
    # The executor only matches paths below the root, so such a pattern would silently match nothing;
    # saying so gets the model to set path instead.
    if pattern.startswith(("/", "~")):
        raise ToolInputError(
            f"pattern {pattern!r} must be relative: put the directory to search in path and a relative "
            "pattern in pattern."
        )
    if ".." in pattern.replace("\\", "/").split("/"):
        raise ToolInputError(
            f"pattern {pattern!r} may not contain '..'; set path to the directory to search instead."
        )


def _under_root(root: str, found: str) -> str:
    """A result line the executor gave relative to the searched root, re-rooted at the workspace.

    Every result line starts with its root-relative path (then ``:line:text`` or ``:count`` for grep), so
    prefixing the root is exact even for names with colons in them, which parsing the line would not be.
    """
    if root == "." or posixpath.isabs(found):
        return found
    return f"{root.rstrip('/')}/{found}"


def _bad_root(root: str, kind: Literal["file", "missing"]) -> ToolOutput:
    if kind == "file":
        return ToolOutput(f"{root} is a file, not a directory; set path to a directory.", is_error=True)
    return ToolOutput(
        f"Directory not found: {root}. Use glob from the workspace root to find it.", is_error=True
    )


class GlobInput(ToolInput):
    pattern: NonEmpty
    """A glob pattern matched against paths relative to path, e.g. '**/*.py', 'src/**/test_*.py' or '*.md'.
    '**' crosses directories; '*' does not."""
    path: str | None = None
    """The directory to search in, relative to the workspace root. Omit to search the whole workspace."""


class GlobTool(Tool[GlobInput], read_only=True, concurrency_safe=True):
    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "Find files by name pattern. Returns paths relative to the workspace root, most recently modified "
        f"first, at most {GLOB_LIMIT}. Files ignored by .gitignore are left out. Use grep to search inside files."
    )

    async def prepare(self, args: GlobInput, ctx: ToolContext) -> PreparedActionDraft:
        _check_relative_pattern(args.pattern)
        resolved = ctx.paths.for_read(args.path or ".")
        root = display_path(resolved)
        params = {"pattern": args.pattern, "root": root}
        return read_draft(ctx, self.name, "glob", resolved, params, f"Glob {args.pattern} (in {root})")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = expect_payload(action, ReadAction)
        pattern: str = payload.params["pattern"]
        root: str = payload.params["root"]
        try:
            found = await ctx.reads.glob(payload.paths[0], pattern, limit=GLOB_LIMIT + 1)
        except NotADirectoryError:
            return _bad_root(root, "file")
        except FileNotFoundError:
            return _bad_root(root, "missing")
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        paths = [_under_root(root, item) for item in found[:GLOB_LIMIT]]
        data: dict[str, Any] = {"count": len(paths), "truncated": len(found) > GLOB_LIMIT}
        if not paths:
            # The executor lists nothing for a root that is missing or a file; tell those apart from
            # "no match" so the model fixes the path instead of trying other patterns.
            kind = await path_kind(ctx, payload.paths[0])
            if kind != "directory":
                return _bad_root(root, kind)
            return ToolOutput(f"No files match {pattern!r} in {root}.", data=data)
        text = "\n".join(paths)
        if len(found) > GLOB_LIMIT:
            text += f"\n\n[Only the first {GLOB_LIMIT} matches are shown; narrow the pattern or path to see the rest.]"
        return ToolOutput(text, data=data)


class GrepInput(ToolInput):
    pattern: NonEmpty
    """A regular expression to search file contents for (ripgrep syntax, close to Python's re). Escape special
    characters to match them literally, e.g. 'def add\\(' or 'a\\.b'."""
    path: str | None = None
    """A file or directory to search, relative to the workspace root. Omit to search the whole workspace."""
    glob: str | None = None
    """Only search files whose path matches this glob, e.g. '*.py' or '**/*.{ts,tsx}'."""
    ignore_case: bool = False
    """Match letters regardless of case."""
    output_mode: GrepMode = "files_with_matches"
    """'files_with_matches' (default) lists the files that match; 'content' shows matching lines as
    path:line:text; 'count' shows path:number of matching lines."""


class GrepTool(Tool[GrepInput], read_only=True, concurrency_safe=True):
    """Search file contents with a regular expression (ripgrep). Lists matching files by default; set
    output_mode to 'content' for the matching lines with line numbers or 'count' for counts per file. Narrow
    with path and glob. Files ignored by .gitignore and binary files are skipped. Paths in results are
    relative to the workspace root."""

    name: ClassVar[str] = "grep"

    async def prepare(self, args: GrepInput, ctx: ToolContext) -> PreparedActionDraft:
        # ``glob`` only filters the files found under the root (a leading '/' anchors it there, as in
        # .gitignore), so unlike glob's pattern it cannot widen the search and needs no check.
        resolved = ctx.paths.for_read(args.path or ".")
        root = display_path(resolved)
        params = {
            "pattern": args.pattern,
            "root": root,
            "glob": args.glob,
            "ignore_case": args.ignore_case,
            "output_mode": args.output_mode,
        }
        where = f"in {root}, {args.glob}" if args.glob else f"in {root}"
        flags = ", ignoring case" if args.ignore_case else ""
        return read_draft(ctx, self.name, "grep", resolved, params, f"Grep {args.pattern!r} ({where}{flags})")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = expect_payload(action, ReadAction)
        params = payload.params
        root: str = params["root"]
        mode: GrepMode = params["output_mode"]
        limit = GREP_LIMITS[mode]
        try:
            outcome = await ctx.reads.grep(
                payload.paths[0],
                params["pattern"],
                glob=params["glob"],
                ignore_case=params["ignore_case"],
                output_mode=mode,
                limit=limit,
            )
            lines = [_under_root(root, line) for line in outcome.lines]
        except (FileNotFoundError, NotADirectoryError):
            searched = await self._search_one_file(payload.paths[0], root, params, ctx)
            if isinstance(searched, ToolOutput):
                return searched
            outcome = searched
            lines = list(outcome.lines)
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        except ValueError as exc:
            return ToolOutput(f"grep could not run this pattern: {exc}", is_error=True)
        data: dict[str, Any] = {"count": len(lines), "truncated": outcome.truncated, "engine": outcome.engine}
        if not lines:
            return ToolOutput(f"No matches for {params['pattern']!r} in {root}.", data=data)
        text = "\n".join(lines)
        if outcome.truncated:
            text += f"\n\n[Results stop at {limit} lines; narrow the pattern, path or glob to see the rest.]"
        return ToolOutput(text, data=data)

    @staticmethod
    async def _search_one_file(
        absolute: str, shown: str, params: dict[str, Any], ctx: ToolContext
    ) -> GrepOutcome | ToolOutput:
        """The executor searches directories; a single file named by path is searched here, from the bytes
        of exactly the file the approved action names."""
        try:
            data = await ctx.reads.read_file(absolute)
        except (FileNotFoundError, IsADirectoryError):
            return _bad_root(shown, "missing")
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        except PermissionError as exc:
            return ToolOutput(f"Cannot read {shown}: {exc.strerror or exc}.", is_error=True)
        mode: GrepMode = params["output_mode"]
        try:
            return _grep_one_file(
                shown, data, params["pattern"], params["ignore_case"], mode, GREP_LIMITS[mode]
            )
        except re.error as exc:
            return ToolOutput(
                f"grep could not run this pattern: invalid regular expression: {exc}", is_error=True
            )


def _grep_one_file(
    shown: str, data: bytes, pattern: str, ignore_case: bool, mode: GrepMode, limit: int
) -> GrepOutcome:
    """One file searched with Python's ``re`` (ripgrep's syntax agrees for everyday patterns); a binary
    file has no matches, as with ripgrep."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    if b"\0" in data:
        return GrepOutcome(lines=(), engine="python")
    matched = [
        f"{shown}:{number}:{line}"
        for number, line in enumerate(split_lines(data.decode("utf-8", errors="replace")), start=1)
        if regex.search(line)
    ]
    if not matched:
        lines: list[str] = []
    elif mode == "files_with_matches":
        lines = [shown]
    elif mode == "count":
        lines = [f"{shown}:{len(matched)}"]
    else:
        lines = matched
    return GrepOutcome(lines=tuple(lines[:limit]), truncated=len(lines) > limit, engine="python")
