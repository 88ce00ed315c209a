"""The interface through which tools reach the host. Declared here so ``tools/`` never imports ``execution/``.

Paths handed to an executor are absolute and already resolved by the path guard; the executor
re-checks containment where a race could move a path between check and use.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from seepient.protocol.actions import FetchRequest, FileChange, ShellCommand


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

    async def fetch(self, request: FetchRequest) -> FetchOutcome:
        """Fetch through the SSRF-safe client; raises ``FetchRefused`` when blocked or failed."""
        ...
