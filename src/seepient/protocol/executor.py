"""The interface through which tools reach the host. Declared here so ``tools/`` never imports ``execution/``.

Paths handed to an executor are absolute and already resolved by the path guard; the executor
re-checks containment where a race could move a path between check and use.
"""

from __future__ import annotations

from typing import Literal, Protocol

from seepient.protocol.actions import (
    FetchRequest,
    FileChange,
    KnowledgeQuery,
    MemoryAction,
    ShellCommand,
    WebSearchRequest,
    WorktreeCommand,
)
from seepient.protocol.lsp import LspAnswer, LspLocation, LspQuery, LspUnavailable
from seepient.protocol.outcomes import (
    BackgroundOutput,
    BackgroundRefused,
    BackgroundStarted,
    CommitCode,
    CommitOutcome,
    FetchOutcome,
    FetchRefused,
    GrepOutcome,
    SandboxUnavailable,
    ShellOutcome,
)
from seepient.protocol.retrieval import KnowledgeOutcome, WebSearchOutcome

__all__ = [
    "ActionExecutor",
    "BackgroundOutput",
    "BackgroundRefused",
    "BackgroundStarted",
    "CommitCode",
    "CommitOutcome",
    "FetchOutcome",
    "FetchRefused",
    "GrepOutcome",
    "LspAnswer",
    "LspLocation",
    "LspQuery",
    "LspUnavailable",
    "SandboxUnavailable",
    "ShellOutcome",
]


class ActionExecutor(Protocol):
    """Host access for tools. Every method touches only what its arguments name."""

    async def read_file(self, path: str) -> bytes:
        """The file's bytes; raises ``FileNotFoundError`` or ``IsADirectoryError``."""
        ...

    async def glob(
        self, root: str, pattern: str, *, respect_ignore: bool = True, limit: int = 1000
    ) -> list[str]:
        """Paths under ``root`` (relative to it) matching ``pattern``, newest first."""
        ...

    async def grep(
        self,
        root: str,
        pattern: str,
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        output_mode: Literal["content", "files_with_matches", "count"] = "files_with_matches",
        limit: int = 500,
    ) -> GrepOutcome: ...

    async def run_shell(self, command: ShellCommand) -> ShellOutcome:
        """Run inside the sandbox; raises ``SandboxUnavailable`` when none can start."""
        ...

    async def commit_file(self, change: FileChange) -> CommitOutcome: ...

    async def commit_files(self, changes: tuple[FileChange, ...]) -> CommitOutcome:
        """Commit several changes all or nothing; on failure ``path`` names the change that failed."""
        ...

    async def fetch(self, request: FetchRequest) -> FetchOutcome:
        """Fetch through the SSRF-safe client; raises ``FetchRefused`` when blocked or failed."""
        ...

    async def read_memory(self, scope: Literal["user", "project"], path: str) -> bytes:
        """A file of the agent's memory folder for ``scope`` (``path`` relative to it, no symlink followed);
        raises ``FileNotFoundError``, ``IsADirectoryError`` or ``PermissionError``."""
        ...

    async def list_memory(self, scope: Literal["user", "project"], path: str) -> list[str]:
        """Entries below a memory folder directory (relative to it, directories ending in '/'); empty when
        the folder does not exist yet; raises ``NotADirectoryError`` for a file."""
        ...

    async def commit_memory(self, action: MemoryAction) -> CommitOutcome:
        """Apply a memory write, delete or rename inside the scope's memory folder only, with the pre-image
        check of the exact commit helper."""
        ...

    async def knowledge_search(self, query: KnowledgeQuery) -> KnowledgeOutcome:
        """Ranked passages from the workspace's knowledge index, opened read-only."""
        ...

    async def web_search(self, request: WebSearchRequest) -> WebSearchOutcome:
        """Query the search backend through the SSRF-safe client, adding the key from ``api_key_env``;
        raises ``FetchRefused`` when the address policy blocks it and ``WebSearchFailed`` otherwise."""
        ...

    async def run_worktree(self, command: WorktreeCommand) -> ShellOutcome:
        """Run a git worktree operation's exact argv in the sandbox, with ``.seepient/worktrees`` writable for
        it alone; raises ``SandboxUnavailable`` when no sandbox can start."""
        ...

    async def start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        """Start ``command`` in the sandbox and return at once; raises ``BackgroundRefused`` at the limit."""
        ...

    async def background_output(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """New output of a process ``session_id`` started; raises ``BackgroundRefused`` for any other id."""
        ...

    async def kill_background(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        """Kill the process group of a process ``session_id`` started; ``BackgroundRefused`` otherwise."""
        ...

    async def lsp_query(self, query: LspQuery) -> LspAnswer:
        """Ask the language server for ``query.path``'s language; raises ``LspUnavailable`` when none can."""
        ...

    async def lsp_diagnostics(self, paths: tuple[str, ...]) -> LspAnswer | None:
        """Fresh diagnostics for changed files (absolute paths) whose language has a server; None when none
        has one. Never raises for a server problem: diagnostics after an edit are an offer, not a step."""
        ...
