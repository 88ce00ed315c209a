"""``worktree_create``, ``worktree_list`` and ``worktree_remove``: git worktrees under
``<workspace>/.seepient/worktrees/<name>`` on branches ``seepient/<name>``, so a sub-agent can work on an
isolated checkout. Each prepares the exact git argv the executor runs in the sandbox; no shell is involved."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from seepient.config.worktrees import (
    BRANCH_PREFIX,
    LIST_ARGV,
    WORKTREES_RELATIVE,
    base_problem,
    create_argv,
    remove_argv,
    worktree_name_problem,
    worktree_path,
)
from seepient.protocol import ApprovedAction, PreparedActionDraft, ShellOutcome, WorktreeCommand
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import execute_as, expect_payload, path_kind

_TIMEOUT_MS = 120_000
_WorktreeName = Annotated[str, Field(min_length=1, max_length=63)]
"""A directory below ``.seepient/worktrees`` and a branch name; ``check_worktree_name`` says what else it may
not be."""


def check_worktree_name(name: str) -> str:
    """``name`` when it can be a directory below ``.seepient/worktrees`` and a branch name; raises
    ``ToolInputError`` saying what is wrong otherwise (no ``/``, ``..``, leading ``-``, control characters)."""
    problem = worktree_name_problem(name)
    if problem is not None:
        raise ToolInputError(problem)
    return name


def _check_base(base: str) -> str:
    problem = base_problem(base)
    if problem is not None:
        raise ToolInputError(problem)
    return base


def _draft(ctx: ToolContext, tool: str, payload: WorktreeCommand, summary: str) -> PreparedActionDraft:
    return ctx.draft(tool, payload, read_only=payload.operation == "list", summary=summary)


async def _require_git_repository(ctx: ToolContext) -> None:
    if await path_kind(ctx, str(ctx.workspace / ".git")) == "missing":
        raise ToolInputError(
            f"the workspace {ctx.workspace} is not the top of a git repository (it has no .git), so it cannot "
            "have worktrees; run `git init` and commit first, or work in the workspace directly"
        )


def _git_text(outcome: ShellOutcome) -> str:
    parts = [
        f"git exit code: {outcome.exit_code}" if not outcome.timed_out else "git timed out and was killed"
    ]
    if outcome.stdout.strip():
        parts.append(outcome.stdout.rstrip("\n"))
    if outcome.stderr.strip():
        parts.append(outcome.stderr.rstrip("\n"))
    return "\n".join(parts)


def _failed(outcome: ShellOutcome) -> bool:
    return outcome.timed_out or outcome.exit_code != 0


async def _run_git(ctx: ToolContext, action: ApprovedAction) -> tuple[WorktreeCommand, ShellOutcome]:
    """Run the approved git command; its payload and what git answered."""
    command = expect_payload(action, WorktreeCommand)
    return command, await execute_as(ctx, action, ShellOutcome)


class WorktreeCreateInput(ToolInput):
    name: _WorktreeName
    """The worktree's name: letters, digits, '.', '_' or '-' (e.g. 'fix-parser'). It lives in
    .seepient/worktrees/<name> on a new branch seepient/<name>."""
    base: str | None = Field(default=None, max_length=200)
    """The branch, tag or commit the new branch starts from; omit for the current HEAD."""


class WorktreeCreateTool(Tool[WorktreeCreateInput]):
    """Create an isolated git worktree of this repository in .seepient/worktrees/<name>, on a new branch
    seepient/<name> starting at `base` (default HEAD). Give its name as `worktree` to the agent tool so a
    sub-agent works there without touching the main checkout."""

    name: ClassVar[str] = "worktree_create"

    async def prepare(self, args: WorktreeCreateInput, ctx: ToolContext) -> PreparedActionDraft:
        name = check_worktree_name(args.name)
        base = _check_base(args.base) if args.base is not None else "HEAD"
        await _require_git_repository(ctx)
        relative = f"{WORKTREES_RELATIVE}/{name}"
        absolute = worktree_path(ctx.workspace, name)
        if await path_kind(ctx, absolute) != "missing":
            raise ToolInputError(
                f"{relative} already exists; choose another name, or remove it first with worktree_remove"
            )
        branch = BRANCH_PREFIX + name
        payload = WorktreeCommand(
            operation="create",
            argv=create_argv(absolute, branch, base),
            cwd=str(ctx.workspace),
            name=name,
            path=absolute,
            branch=branch,
            base=base,
            timeout_ms=min(ctx.default_timeout_ms, _TIMEOUT_MS),
        )
        return _draft(
            ctx, self.name, payload, f"Create worktree {relative} on new branch {branch} from {base}"
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        command, outcome = await _run_git(ctx, action)
        if _failed(outcome):
            return ToolOutput(f"The worktree was not created.\n{_git_text(outcome)}", is_error=True)
        relative = f"{WORKTREES_RELATIVE}/{command.name}"
        return ToolOutput(
            f"Created worktree {command.name!r} at {relative} on branch {command.branch} (from {command.base}). "
            f"Pass worktree={command.name!r} to the agent tool to have a sub-agent work there.",
            data={"path": command.path, "branch": command.branch},
        )


class WorktreeListInput(ToolInput):
    pass  # no arguments: every worktree of the workspace is listed


def parse_porcelain(text: str) -> list[dict[str, Any]]:
    """``git worktree list --porcelain`` as one dict per worktree (``worktree``, ``HEAD``, ``branch``, flags)."""
    entries: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                entries.append(current)
            current = {}
            continue
        key, _, value = line.partition(" ")
        current[key] = value if value else True
    if current:
        entries.append(current)
    return entries


class WorktreeListTool(Tool[WorktreeListInput], read_only=True, concurrency_safe=True):
    """List this repository's worktrees: the main checkout and each one in .seepient/worktrees, with its
    branch and commit."""

    name: ClassVar[str] = "worktree_list"

    async def prepare(self, args: WorktreeListInput, ctx: ToolContext) -> PreparedActionDraft:
        await _require_git_repository(ctx)
        payload = WorktreeCommand(
            operation="list",
            argv=LIST_ARGV,
            cwd=str(ctx.workspace),
            timeout_ms=min(ctx.default_timeout_ms, _TIMEOUT_MS),
        )
        return _draft(ctx, self.name, payload, "List git worktrees")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        _, outcome = await _run_git(ctx, action)
        if _failed(outcome):
            return ToolOutput(f"Could not list worktrees.\n{_git_text(outcome)}", is_error=True)
        root = str(ctx.workspace / WORKTREES_RELATIVE) + "/"
        lines: list[str] = []
        found: list[dict[str, Any]] = []
        for entry in parse_porcelain(outcome.stdout):
            path = str(entry.get("worktree", ""))
            branch = str(entry.get("branch", "(detached)")).removeprefix("refs/heads/")
            head = str(entry.get("HEAD", ""))[:12]
            if path == str(ctx.workspace):
                label = "main checkout"
            elif path.startswith(root):
                label = f"worktree {path[len(root) :]!r} ({WORKTREES_RELATIVE}/{path[len(root) :]})"
            else:
                label = f"other worktree {path}"
            flags = " ".join(k for k in ("locked", "prunable", "bare") if k in entry)
            lines.append(f"- {label}: branch {branch}, commit {head}" + (f" [{flags}]" if flags else ""))
            found.append({"path": path, "branch": branch, "head": entry.get("HEAD")})
        return ToolOutput("\n".join(lines) or "No worktrees.", data={"worktrees": found})


class WorktreeRemoveInput(ToolInput):
    name: _WorktreeName
    """The name given to worktree_create."""
    force: bool = False
    """Remove it even with uncommitted changes, which are then lost. Its branch is always kept."""


class WorktreeRemoveTool(Tool[WorktreeRemoveInput]):
    """Remove a worktree made by worktree_create. Its branch seepient/<name> and every commit on it are kept;
    uncommitted changes stop the removal unless force is true."""

    name: ClassVar[str] = "worktree_remove"

    async def prepare(self, args: WorktreeRemoveInput, ctx: ToolContext) -> PreparedActionDraft:
        name = check_worktree_name(args.name)
        await _require_git_repository(ctx)
        relative = f"{WORKTREES_RELATIVE}/{name}"
        absolute = worktree_path(ctx.workspace, name)
        # A worktree's checkout has a .git *file* pointing into the repository; anything else is not one.
        if await path_kind(ctx, absolute + "/.git") != "file":
            raise ToolInputError(
                f"{relative} is not a worktree made by worktree_create; see worktree_list for the existing ones"
            )
        payload = WorktreeCommand(
            operation="remove",
            argv=remove_argv(absolute, args.force),
            cwd=str(ctx.workspace),
            name=name,
            path=absolute,
            branch=BRANCH_PREFIX + name,
            force=args.force,
            timeout_ms=min(ctx.default_timeout_ms, _TIMEOUT_MS),
        )
        how = " (discarding uncommitted changes)" if args.force else ""
        return _draft(
            ctx, self.name, payload, f"Remove worktree {relative}{how}; branch {payload.branch} is kept"
        )

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        command, outcome = await _run_git(ctx, action)
        if _failed(outcome):
            hint = "" if command.force else " If it has changes you mean to discard, retry with force: true."
            return ToolOutput(f"The worktree was not removed.{hint}\n{_git_text(outcome)}", is_error=True)
        return ToolOutput(
            f"Removed worktree {command.name!r}; branch {command.branch} is kept.",
            data={"path": command.path},
        )
