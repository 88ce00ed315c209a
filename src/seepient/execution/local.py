"""The local backend: the ``ActionExecutor`` that reaches this machine, with a handler per payload type
(commands in the bubblewrap jail, file changes through the exact commit helper, fetches and searches through
the SSRF-safe client), and the ``HostReads`` of the same machine as ``reads``."""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal

from seepient.execution.background import BackgroundProcesses
from seepient.execution.commit import commit_change
from seepient.execution.commit_set import commit_changes
from seepient.execution.handlers import HandlerTable, run_handler
from seepient.execution.jail import Jail
from seepient.execution.jailed_commands import JailedCommands
from seepient.execution.lsp_config import LanguageServerConfig
from seepient.execution.reads import LocalReads
from seepient.execution.sandbox.bwrap import BwrapSandbox
from seepient.net.address_policy import AddressPolicy
from seepient.net.egress_proxy import DomainCheck
from seepient.protocol.actions import (
    FetchRequest,
    FileChange,
    FileChangeSet,
    KnowledgeQuery,
    MemoryAction,
    ProcessControl,
    ShellCommand,
    WebSearchRequest,
    WorktreeCommand,
)
from seepient.protocol.approved import ApprovedAction
from seepient.protocol.outcomes import FetchOutcome, Outcome
from seepient.protocol.refusals import FetchRefused
from seepient.protocol.retrieval import KnowledgeIndexReader, KnowledgeOutcome

if TYPE_CHECKING:
    from collections.abc import Mapping

    from seepient.net.fetch import Resolver


class LocalExecutor:
    """Carries out approved actions on this machine; ``reads`` are its host reads. Paths in actions are
    absolute and resolved by the path guard.

    ``sandbox="off"`` runs shell commands directly (with the scrubbed environment) and must come from an
    explicit user choice. ``home`` is the home whose credential stores are hidden (default: ``$HOME``).
    ``ripgrep`` names the rg binary for ``reads``, ``None`` for the pure-Python search; ``bwrap`` overrides the
    sandbox. ``knowledge_index`` searches the knowledge index (the runtime hands in ``context.knowledge``'s).
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
        knowledge_index: KnowledgeIndexReader | None = None,
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
        self._knowledge_index = knowledge_index
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

    def read_only_jail(self, argv: list[str], root: Path) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` jailed with ``root`` read-only (``Jail.read_only``): how context assembly runs git status."""
        return self.jail.read_only(argv, root)

    def look_ahead(self) -> None:
        """Work out, now, the costly part of what the first jailed command would (the installations its jail
        shows, which are cached, and how long a scan of the control files takes): a session calls this from a
        thread while its first model request is out."""
        if self.jail.sandbox_mode != "off":
            self.jail.warm_view(self.workspace)
        self._commands.time_guard()

    def anticipate_command(self) -> None:
        """``CommandAnticipating``: set up the next foreground command's jail now, if none is ready."""
        self._commands.anticipate()

    async def execute(self, action: ApprovedAction) -> Outcome:
        return await run_handler(self, self.HANDLERS, action)

    async def aclose(self) -> None:
        """End what outlives single calls: background processes and language servers (the session ends)."""
        await self._commands.aclose()
        await self.reads.aclose()

    # -- handlers, by payload type ----------------------------------------------------------------------

    async def _shell(self, command: ShellCommand, action: ApprovedAction) -> Outcome:
        if command.background:
            return await self._commands.start_background(command, session_id=action.session_id)
        return await self._commands.run_shell(command)

    async def _process_control(self, control: ProcessControl, action: ApprovedAction) -> Outcome:
        # Only processes of the action's own session are served: the id alone is not enough.
        if control.operation == "kill":
            return await self._commands.kill_background(control.process_id, session_id=action.session_id)
        return await self._commands.background_output(control.process_id, session_id=action.session_id)

    async def _worktree(self, command: WorktreeCommand, _action: ApprovedAction) -> Outcome:
        return await self._commands.run_worktree(command)

    async def _commit_file(self, change: FileChange, _action: ApprovedAction) -> Outcome:
        # In-process in a worker thread: the helper is synchronous and a thread spares a process start.
        # A cancelled caller does not stop the thread, so a commit that started always finishes whole.
        return await asyncio.to_thread(commit_change, self.workspace, change)

    async def _commit_set(self, change_set: FileChangeSet, _action: ApprovedAction) -> Outcome:
        # All or nothing, in a worker thread like a single commit: a cancelled caller never splits the set.
        return await asyncio.to_thread(commit_changes, self.workspace, change_set.changes)

    async def _commit_memory(self, memory: MemoryAction, _action: ApprovedAction) -> Outcome:
        from seepient.execution.memory_folders import commit_memory

        # The folder comes from this executor's own Seepient home and workspace, never from the action.
        return await asyncio.to_thread(commit_memory, self.seepient_home, self.workspace, memory)

    async def _fetch(self, request: FetchRequest, _action: ApprovedAction) -> Outcome:
        # The HTTP stack loads with the first fetch, not with every session.
        from seepient.net.fetch import FetchError, SafeFetcher

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

    async def _knowledge_search(self, query: KnowledgeQuery, _action: ApprovedAction) -> Outcome:
        from seepient.execution.retrieval import knowledge_search

        if self._knowledge_index is None:
            return KnowledgeOutcome(
                indexed=False,
                problem="this executor was opened without a knowledge index reader; nothing was searched",
            )
        return await knowledge_search(self.seepient_home, self.workspace, query, self._knowledge_index)

    async def _web_search(self, request: WebSearchRequest, _action: ApprovedAction) -> Outcome:
        from seepient.execution.retrieval import web_search

        return await web_search(
            request, policy=self.net_policy, resolver=self._net_resolver, environ=self.jail.environ
        )

    HANDLERS: ClassVar[HandlerTable] = MappingProxyType(
        {
            ShellCommand: _shell,
            ProcessControl: _process_control,
            WorktreeCommand: _worktree,
            FileChange: _commit_file,
            FileChangeSet: _commit_set,
            MemoryAction: _commit_memory,
            FetchRequest: _fetch,
            KnowledgeQuery: _knowledge_search,
            WebSearchRequest: _web_search,
        }
    )
    """What this backend executes; every other payload is refused (``protocol.executor.NOT_EXECUTED``)."""


def _codec(charset: str | None) -> str:
    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"
