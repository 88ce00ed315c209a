"""Helpers every built-in tool uses: showing paths, drafting reads and whole-content changes, checking payload
and outcome types, explaining failed commits."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from seepient.protocol import (
    ApprovedAction,
    CommitOutcome,
    FileChange,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
    ResolvedPath,
)
from seepient.protocol.actions import ReadOperation
from seepient.tools.base import ToolContext, ToolInputError, ToolOutput
from seepient.tools.builtin._text import sha256_hex

PayloadT = TypeVar("PayloadT", bound=BaseModel)
OutcomeT = TypeVar("OutcomeT", bound=BaseModel)


def display_path(resolved: ResolvedPath) -> str:
    """Workspace-relative when inside the workspace (``.`` for its root), absolute otherwise."""
    if resolved.relative is None:
        return resolved.absolute
    return resolved.relative or "."


def workspace_relative(resolved: ResolvedPath) -> str:
    """The workspace-relative path a ``FileChange`` needs; a path outside the workspace is refused."""
    if not resolved.relative:
        raise PathDenied(
            resolved.requested, "files can only be written inside the workspace", "workspace_containment"
        )
    return resolved.relative


def content_change(relative: str, current: bytes | None, content: str, diff: str) -> FileChange:
    """The change that leaves ``content`` at ``relative``, bound to the bytes it replaces (None: it creates the
    file), so it lands only on the file as it was read."""
    pre_image = None if current is None else sha256_hex(current)
    return FileChange(path=relative, pre_image_sha256=pre_image, new_content=content, diff=diff)


def read_draft(
    ctx: ToolContext,
    tool: str,
    operation: ReadOperation,
    resolved: ResolvedPath,
    params: dict[str, Any],
    summary: str,
) -> PreparedActionDraft:
    """The prepared read of one guard-checked path (a file, or the root a search starts at) by ``operation``."""
    payload = ReadAction(operation=operation, paths=(resolved.absolute,), params=params)
    return ctx.draft(tool, payload, summary=summary)


async def read_for_change(
    ctx: ToolContext, resolved: ResolvedPath, *, what: str, directory_hint: str
) -> tuple[str, bytes | None]:
    """The workspace-relative path of the file to change (one outside is refused) and its bytes as preparing
    ``what`` (``the change``, ``the patch``) sees them, or None when it does not exist yet; a directory (told
    ``directory_hint``) or an unreadable file is a ``ToolInputError``."""
    relative = workspace_relative(resolved)
    try:
        return relative, await ctx.reads.read_file(resolved.absolute)
    except FileNotFoundError:
        return relative, None
    except IsADirectoryError:
        raise ToolInputError(f"{relative} is a directory; {directory_hint}") from None
    except PermissionError as exc:
        raise ToolInputError(f"Cannot read {relative} to prepare {what}: {exc.strerror or exc}.") from None


async def path_kind(ctx: ToolContext, absolute: str) -> Literal["directory", "file", "missing"]:
    """What is at a guard-checked path, asked through the host reads (the protocol has no stat): reading a
    directory fails with ``IsADirectoryError``, a missing path with ``FileNotFoundError``."""
    try:
        await ctx.reads.read_file(absolute)
    except IsADirectoryError:
        return "directory"
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "file"
    return "file"


def stream_sections(stdout: str, stderr: str, *, new: bool = False) -> list[str]:
    """A command's streams as result sections, each under its name, or a note that there was no output;
    ``new`` says that they hold only what was written since the last read."""
    qualifier = " (new)" if new else ""
    sections = []
    if stdout:
        sections.append(f"stdout{qualifier}:\n{stdout.rstrip(chr(10))}")
    if stderr:
        sections.append(f"stderr{qualifier}:\n{stderr.rstrip(chr(10))}")
    if not stdout and not stderr:
        sections.append("(no new output)" if new else "(no output)")
    return sections


def expect_payload(action: ApprovedAction | PreparedActionDraft, payload_type: type[PayloadT]) -> PayloadT:
    """The action's payload, checked: an action routed to the wrong tool is a bug, not something to guess at."""
    if not isinstance(action.payload, payload_type):
        raise TypeError(f"{action.tool} cannot execute a {type(action.payload).__name__} payload")
    return action.payload


async def execute_as(ctx: ToolContext, action: ApprovedAction, outcome_type: type[OutcomeT]) -> OutcomeT:
    """Carry ``action`` out through ``ctx.executor`` and return its outcome, checked to be an ``outcome_type``."""
    outcome = await ctx.executor.execute(action)
    if not isinstance(outcome, outcome_type):
        raise TypeError(
            f"{action.tool}: the executor answered a {type(outcome).__name__}, not a {outcome_type.__name__}"
        )
    return outcome


async def commit_or_explain(
    ctx: ToolContext, action: ApprovedAction, verb: str, *, shown: str | None = None, preface: str = ""
) -> ToolOutput | None:
    """Carry out an approved change (a file, a set of files, a memory note) through the executor: None when it
    landed, else what the model reads (a path the guard refused, or why nothing was written). ``shown`` names
    the file in that text; by default the path the outcome names."""
    try:
        outcome = await execute_as(ctx, action, CommitOutcome)
    except PathDenied as exc:
        return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
    if outcome.ok:
        return None
    where = shown or outcome.path or f"the {verb}"
    return ToolOutput(
        preface + commit_failure_text(outcome, where, verb),
        is_error=True,
        data={"path": shown or outcome.path, "code": outcome.code},
    )


def commit_failure_text(outcome: CommitOutcome, shown: str, verb: str) -> str:
    """What the model should read when a commit did not land: what happened, then what to do next."""
    detail = f"\nDetail: {outcome.message}" if outcome.message else ""
    advice = {
        "FILE_CHANGED": f"{shown} changed after this {verb} was prepared, so nothing was written. Read the file "
        f"again with read_file and redo the {verb} against its current content.",
        "NOT_FOUND": f"The text to replace is no longer in {shown}, so nothing was written. Read the file again "
        "and retry with text copied from its current content.",
        "NOT_UNIQUE": f"The text to replace occurs more than once in {shown}, so nothing was written. Include "
        "more surrounding lines to make it unique, or set replace_all to true.",
        "OUTSIDE_WORKSPACE": f"{shown} resolves outside the workspace, so nothing was written. Only files inside "
        "the workspace can be changed.",
        "INVALID": f"The {verb} of {shown} was refused as invalid, so nothing was written.",
        "ERROR": f"The {verb} of {shown} failed and nothing was written.",
    }
    return f"{advice.get(outcome.code, advice['ERROR'])}{detail}"
