"""The two interfaces through which tools reach the host, declared here so ``tools/`` never imports
``execution/``: ``ActionExecutor`` carries out approved actions (one verb, ``execute``) and ``HostReads``
answers the reads a tool makes, while preparing and for an approved read.

Paths handed to either are absolute and already resolved by the path guard; the implementations re-check
containment where a race could move a path between check and use.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, Protocol, TypedDict, Unpack, runtime_checkable

from pydantic import BaseModel

from seepient.protocol.actions import (
    AgentTask,
    McpCall,
    McpServerStart,
    ReadAction,
    SessionStateChange,
)
from seepient.protocol.approved import ApprovedAction
from seepient.protocol.lsp import LspAnswer, LspQuery
from seepient.protocol.outcomes import GrepOutcome, Outcome


class ActionExecutor(Protocol):
    """Carries out approved actions. What each payload answers:

    ============================================  ================================================
    ``ShellCommand``                               ``ShellOutcome``; ``BackgroundStarted`` when ``background``
    ``FileChange``, ``FileChangeSet``              ``CommitOutcome`` (a set lands all or nothing)
    ``MemoryAction`` (create, edit, delete, move)  ``CommitOutcome``, inside the scope's memory folder only
    ``ProcessControl``                             ``BackgroundOutput`` of a process the action's session started
    ``WorktreeCommand``                            ``ShellOutcome`` of the exact git argv
    ``FetchRequest``                               ``FetchOutcome`` through the SSRF-safe client
    ``KnowledgeQuery``                             ``KnowledgeOutcome`` from the index, opened read-only
    ``WebSearchRequest``                           ``WebSearchOutcome`` through the SSRF-safe client
    ============================================  ================================================

    Payloads in ``NOT_EXECUTED``, and any a backend cannot run, raise ``UnsupportedAction``; nothing ran.
    Shell and worktree commands raise ``SandboxUnavailable`` when no sandbox can start, background requests
    ``BackgroundRefused``, fetches and web searches ``FetchRefused`` (and ``WebSearchFailed``).
    """

    async def execute(self, action: ApprovedAction) -> Outcome: ...

    async def aclose(self) -> None:
        """End what outlives single actions (background processes, language servers, connections)."""
        ...


@runtime_checkable
class CommandAnticipating(Protocol):
    """An executor that can make ready, ahead of approval, what a foreground shell command will need."""

    def anticipate_command(self) -> None:
        """The model has started a call that usually becomes a foreground command: set up its jail now if
        none is ready. Runs nothing of the model's and must not fail the call (a setup that fails is dropped)."""
        ...


NOT_EXECUTED: Mapping[type[BaseModel], str] = MappingProxyType(
    {
        ReadAction: "a read is answered through the host reads, not executed",
        AgentTask: "a sub-agent is a child session that the runtime runs",
        McpCall: "an MCP tool is called over the session's link to its server",
        McpServerStart: "an MCP server is started by the session's MCP links",
        SessionStateChange: "a change to the session's own state touches nothing on the host",
    }
)
"""Payloads no executor runs, and what carries them out instead."""


GrepOutputMode = Literal["content", "files_with_matches", "count"]


class GrepOptions(TypedDict, total=False):
    """How a grep is narrowed and shown; left out: every file, case-sensitive, matching file names, 500 at most."""

    glob: str | None
    ignore_case: bool
    output_mode: GrepOutputMode
    limit: int


class HostReads(Protocol):
    """Reads of the host: what a tool looks at while preparing, and what an approved read (``ReadAction``, a
    memory view) shows. Every method touches only what its arguments name and changes nothing."""

    async def read_file(self, path: str) -> bytes:
        """The file's bytes; raises ``FileNotFoundError`` or ``IsADirectoryError``."""
        ...

    async def glob(
        self, root: str, pattern: str, *, respect_ignore: bool = True, limit: int = 1000
    ) -> list[str]:
        """Paths under ``root`` (relative to it) matching ``pattern``, newest first."""
        ...

    async def grep(self, root: str, pattern: str, **options: Unpack[GrepOptions]) -> GrepOutcome:
        """Lines (or files, or counts) under the directory ``root`` matching the regex ``pattern``."""
        ...

    async def read_memory(self, scope: Literal["user", "project"], path: str) -> bytes:
        """A file of the agent's memory folder for ``scope`` (``path`` relative to it, no symlink followed);
        raises ``FileNotFoundError``, ``IsADirectoryError`` or ``PermissionError``."""
        ...

    async def list_memory(self, scope: Literal["user", "project"], path: str) -> list[str]:
        """Entries below a memory folder directory (relative to it, directories ending in '/'); empty when
        the folder does not exist yet; raises ``NotADirectoryError`` for a file."""
        ...

    async def lsp_query(self, query: LspQuery) -> LspAnswer:
        """Ask the language server for ``query.path``'s language (it runs jailed, the workspace read-only);
        raises ``LspUnavailable`` when none can."""
        ...

    async def lsp_diagnostics(self, paths: tuple[str, ...]) -> LspAnswer | None:
        """Fresh diagnostics for changed files (absolute paths) whose language has a server; None when none
        has one. Never raises for a server problem: diagnostics after an edit are an offer, not a step."""
        ...
