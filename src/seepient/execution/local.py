"""The local backend: the ``ActionExecutor`` that reaches this machine, running shell commands in the
bubblewrap sandbox and file changes through the exact commit helper."""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from seepient.execution.background import BackgroundProcesses
from seepient.execution.commit import commit_change
from seepient.execution.commit_set import commit_changes
from seepient.execution.jail import Jail
from seepient.execution.jailed_commands import JailedCommands
from seepient.execution.lsp_config import LanguageServerConfig
from seepient.execution.reads import LocalReads
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.net.address_policy import AddressPolicy
from seepient.net.egress_proxy import DomainCheck
from seepient.net.fetch import FetchError, Resolver, SafeFetcher
from seepient.protocol.actions import FetchRequest, FileChange, ShellCommand, WorktreeCommand
from seepient.protocol.lsp import LspAnswer, LspQuery
from seepient.protocol.outcomes import (
    BackgroundOutput,
    BackgroundStarted,
    CommitOutcome,
    FetchOutcome,
    FetchRefused,
    GrepOutcome,
    ShellOutcome,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from seepient.protocol.actions import KnowledgeQuery, MemoryAction, WebSearchRequest
    from seepient.protocol.retrieval import KnowledgeOutcome, WebSearchOutcome


class LocalExecutor:
    """Host access for tools on this machine. Paths it is handed are absolute and resolved by the path guard.

    ``sandbox="off"`` runs shell commands directly (with the scrubbed environment) and must come from an
    explicit user choice. ``home`` is the home whose credential stores are hidden (default: ``$HOME``).
    ``ripgrep`` names the rg binary, ``None`` for the pure-Python search; ``bwrap`` overrides the sandbox.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        sandbox: Literal["auto", "off"] = "auto",
        seepient_home: Path,
        home: Path | None = None,
        max_output_bytes: int = 1_000_000,
        environ: Mapping[str, str] | None = None,
        ripgrep: str | None | Literal["auto"] = "auto",
        bwrap: BwrapSandbox | None = None,
        net_policy: AddressPolicy | None = None,
        net_resolver: Resolver | None = None,
        network_egress: Literal["host", "filtered"] = "host",
        egress_domain_check: DomainCheck | None = None,
        background: BackgroundProcesses | None = None,
        language_servers: Sequence[LanguageServerConfig] = (),
        lsp_request_timeout_s: float = 30.0,
        lsp_diagnostics_wait_s: float = 3.0,
        jail_readable: Sequence[Path] = (),
        jail_hidden: Sequence[Path] = (),
        foreign_config_allowed: Callable[[str], bool] | None = None,
    ) -> None:
        self.jail = Jail.build(
            workspace,
            seepient_home=seepient_home,
            sandbox_mode=sandbox,
            home=home,
            environ=environ,
            bwrap=bwrap,
            readable=jail_readable,
            hidden=jail_hidden,
            max_output_bytes=max_output_bytes,
        )
        self.workspace = self.jail.workspace
        self.seepient_home = seepient_home
        # Every fetch goes through the SSRF-safe client; the policy comes from the `net` settings section.
        self.net_policy = net_policy or AddressPolicy()
        self._net_resolver = net_resolver
        self.reads = LocalReads(
            self.jail,
            given_workspace=Path(os.path.abspath(workspace)),
            ripgrep=ripgrep,
            language_servers=language_servers,
            lsp_request_timeout_s=lsp_request_timeout_s,
            lsp_diagnostics_wait_s=lsp_diagnostics_wait_s,
        )
        self._commands = JailedCommands(
            self.jail,
            background=background,
            net_policy=self.net_policy,
            net_resolver=net_resolver,
            network_egress=network_egress,
            egress_domain_check=egress_domain_check,
            foreign_config_allowed=foreign_config_allowed,
        )

    @property
    def ripgrep(self) -> str | None:
        return self.reads.ripgrep

    def read_only_jail(self, argv: list[str], root: Path) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` jailed with ``root`` read-only (``Jail.read_only``): how context assembly runs git status."""
        return self.jail.read_only(argv, root)

    async def read_file(self, path: str) -> bytes:
        return await self.reads.read_file(path)

    async def glob(
        self, root: str, pattern: str, *, respect_ignore: bool = True, limit: int = 1000
    ) -> list[str]:
        return await self.reads.glob(root, pattern, respect_ignore=respect_ignore, limit=limit)

    async def grep(self, root: str, pattern: str, **options: object) -> GrepOutcome:
        return await self.reads.grep(root, pattern, **options)  # type: ignore[arg-type]

    async def run_shell(self, command: ShellCommand) -> ShellOutcome:
        return await self._commands.run_shell(command)

    async def start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        return await self._commands.start_background(command, session_id=session_id)

    async def background_output(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        return await self._commands.background_output(process_id, session_id=session_id)

    async def kill_background(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        return await self._commands.kill_background(process_id, session_id=session_id)

    async def lsp_query(self, query: LspQuery) -> LspAnswer:
        return await self.reads.lsp_query(query)

    async def lsp_diagnostics(self, paths: tuple[str, ...]) -> LspAnswer | None:
        return await self.reads.lsp_diagnostics(paths)

    async def aclose(self) -> None:
        """End what outlives single calls: background processes and language servers (the session ends)."""
        await self._commands.aclose()
        await self.reads.aclose()

    async def run_worktree(self, command: WorktreeCommand) -> ShellOutcome:
        return await self._commands.run_worktree(command)

    async def commit_file(self, change: FileChange) -> CommitOutcome:
        # In-process in a worker thread: the helper is synchronous and a thread spares a process start.
        # A cancelled caller does not stop the thread, so a commit that started always finishes whole.
        return await asyncio.to_thread(commit_change, self.workspace, change)

    async def commit_files(self, changes: tuple[FileChange, ...]) -> CommitOutcome:
        # All or nothing, in a worker thread like commit_file: a cancelled caller never splits the set.
        return await asyncio.to_thread(commit_changes, self.workspace, changes)

    async def fetch(self, request: FetchRequest) -> FetchOutcome:
        async with SafeFetcher(self.net_policy, resolver=self._net_resolver) as fetcher:
            try:
                result = await fetcher.fetch(request.url, request.method, on_too_large="truncate")
            except FetchError as exc:
                raise FetchRefused(str(exc)) from None
        return FetchOutcome(
            url=result.url,
            status=result.status,
            content_type=result.content_type,
            text=result.content.decode(_codec(result.charset), errors="replace"),
            truncated=result.truncated,
            redirects=result.redirects,
            address=result.address,
        )

    async def read_memory(self, scope: Literal["user", "project"], path: str) -> bytes:
        return await self.reads.read_memory(scope, path)

    async def list_memory(self, scope: Literal["user", "project"], path: str) -> list[str]:
        return await self.reads.list_memory(scope, path)

    async def commit_memory(self, action: MemoryAction) -> CommitOutcome:
        from seepient.execution.memory import commit_memory

        # The folder comes from this executor's own Seepient home and workspace, never from the action.
        return await asyncio.to_thread(commit_memory, self.seepient_home, self.workspace, action)

    async def knowledge_search(self, query: KnowledgeQuery) -> KnowledgeOutcome:
        from seepient.execution.retrieval import knowledge_search

        return await knowledge_search(self.seepient_home, self.workspace, query)

    async def web_search(self, request: WebSearchRequest) -> WebSearchOutcome:
        from seepient.execution.retrieval import web_search

        return await web_search(
            request, policy=self.net_policy, resolver=self._net_resolver, environ=self.jail.environ
        )


def _codec(charset: str | None) -> str:
    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"
