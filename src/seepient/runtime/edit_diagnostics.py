"""After a file change lands, the language server's diagnostics for the changed files are appended to the tool
result, so the model sees a syntax or type error it just introduced without asking for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seepient.protocol import (
    ActionExecutor,
    ActionKind,
    HostReads,
    PathAccess,
    PreparedActionDraft,
    SandboxUnavailable,
)
from seepient.protocol.actions import FileChange, FileChangeSet
from seepient.tools.base import ToolContext, ToolOutput
from seepient.tools.builtin.lsp import format_diagnostics, shown_path


def changed_paths(draft: PreparedActionDraft, workspace: Path) -> list[str]:
    """Absolute paths a file-change action left in place (deleted files have nothing to diagnose)."""
    payload = draft.payload
    changes: tuple[FileChange, ...] = ()
    if isinstance(payload, FileChange):
        changes = (payload,)
    elif isinstance(payload, FileChangeSet):
        changes = payload.changes
    return [str(workspace / change.path) for change in changes if not change.delete]


@dataclass(frozen=True)
class EditDiagnostics:
    """A pipeline post hook: diagnostics for the files a successful change touched, or nothing. They come from
    the host reads (the language servers); ``executor`` only completes the tool context the formatting reads
    source lines through."""

    _executor: ActionExecutor
    _reads: HostReads
    _workspace: Path
    _paths: PathAccess
    _session_id: str

    async def __call__(self, draft: PreparedActionDraft, output: ToolOutput) -> str | None:
        if output.is_error or draft.kind is not ActionKind.FILE_CHANGE:
            return None
        paths = changed_paths(draft, self._workspace)
        if not paths:
            return None
        try:
            answer = await self._reads.lsp_diagnostics(tuple(paths))
        except SandboxUnavailable:
            return None  # no sandbox for a language server here
        except Exception as exc:  # an offer, not a step: the edit itself succeeded and must read as such
            return f"(Language server diagnostics are unavailable: {type(exc).__name__}: {exc})"
        if answer is None:
            return None
        ctx = ToolContext(
            workspace=self._workspace,
            session_id=self._session_id,
            call_id=draft.call_id,
            paths=self._paths,
            executor=self._executor,
            reads=self._reads,
        )
        shown = [shown_path(p, self._workspace) for p in paths]
        text = "Language server after this change: " + await format_diagnostics(answer, ctx, shown)
        if answer.text:
            text += f"\n(Some diagnostics are missing: {answer.text})"
        return text
