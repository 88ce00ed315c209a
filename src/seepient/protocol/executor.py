"""The interface through which tools reach the host. Declared here so ``tools/`` never imports ``execution/``.

Paths handed to an executor are absolute and already resolved by the path guard; the executor
re-checks containment where a race could move a path between check and use.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from seepient.protocol.actions import (
    FetchRequest,
    FileChange,
    KnowledgeQuery,
    MemoryAction,
    ShellCommand,
    WebSearchRequest,
    WorktreeCommand,
)
from seepient.protocol.retrieval import KnowledgeOutcome, WebSearchOutcome


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ShellOutcome(_Frozen):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: int = 0
    sandbox: str = "bwrap"


CommitCode = Literal["OK", "FILE_CHANGED", "NOT_FOUND", "NOT_UNIQUE", "OUTSIDE_WORKSPACE", "INVALID", "ERROR"]


class CommitOutcome(_Frozen):
    """The commit helper's answer. Anything but ``OK`` means nothing was written."""

    code: CommitCode
    message: str = ""
    path: str = ""
    post_image_sha256: str | None = None

    @property
    def ok(self) -> bool:
        return self.code == "OK"


class GrepOutcome(_Frozen):
    lines: tuple[str, ...]
    truncated: bool = False
    engine: Literal["ripgrep", "python"] = "ripgrep"


class FetchOutcome(_Frozen):
    """A fetched response: ``url`` is the final URL after redirects, ``text`` the body decoded (cut at the
    size cap when ``truncated``), ``address`` the validated IP the last hop connected to."""

    url: str
    status: int
    content_type: str = ""
    text: str = ""
    truncated: bool = False
    redirects: tuple[str, ...] = ()
    address: str | None = None


class FetchRefused(RuntimeError):
    """A fetch that was refused by the address policy or failed; the message says which and why."""


class SandboxUnavailable(RuntimeError):
    """No sandbox can run here and the user has not turned it off. The message says why and how to fix it."""


class BackgroundStarted(_Frozen):
    """A background command that started: ``process_id`` (``bg_…``) is what shell_output and shell_kill take."""

    process_id: str
    sandbox: str = "bwrap"


class BackgroundOutput(_Frozen):
    """Output a background process wrote since the last read, and its state.

    ``*_dropped`` counts bytes that were written but can no longer be shown (they fell out of the ring
    buffer, or the read was longer than its cap and the older part was skipped). ``exit_code`` is set once
    the process ended; ``ended_by`` says why it ended when Seepient ended it.
    """

    process_id: str
    command: str
    running: bool
    exit_code: int | None = None
    ended_by: Literal["kill", "timeout", "session_end"] | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    runtime_ms: int = 0


class BackgroundRefused(RuntimeError):
    """A background request that cannot be served (unknown id, another session's process, too many running);
    the message says which and what to do."""


class LspQuery(_Frozen):
    """One language-server question about ``path`` (absolute, resolved by the path guard). ``line`` and
    ``character`` are 0-based as in LSP; the tool converts from the model's 1-based numbers."""

    operation: Literal["diagnostics", "definition", "references", "hover", "document_symbols"]
    path: str
    line: int = 0
    character: int = 0


class LspLocation(_Frozen):
    """A place in a file, 0-based as in LSP; ``path`` is absolute. ``name``/``kind``/``depth`` describe a
    symbol, ``message``/``severity``/``source`` a diagnostic."""

    path: str
    line: int
    character: int
    end_line: int | None = None
    end_character: int | None = None
    name: str = ""
    kind: str = ""
    depth: int = 0
    message: str = ""
    severity: str = ""
    source: str = ""


class LspAnswer(_Frozen):
    """The server's answer: ``locations`` for definition, references, symbols and diagnostics, ``text`` for
    hover. ``server`` names the configured language."""

    operation: str
    server: str
    locations: tuple[LspLocation, ...] = ()
    text: str = ""


class LspUnavailable(RuntimeError):
    """No language server can answer (none configured for the file, it failed to start or died); the message
    says why and how to fix it. The session goes on without it."""


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
