"""The local backend: the ``ActionExecutor`` that reaches this machine, running shell commands in the
bubblewrap sandbox and file changes through the exact commit helper; plus ``run_sandboxed`` for the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeVar

from seepient.execution.background import BackgroundProcesses
from seepient.execution.commit import commit_change
from seepient.execution.commit_set import commit_changes
from seepient.execution.control_guard import ControlGuard, ControlWatch, Repair, repairs_note
from seepient.execution.environment import scrubbed_environment
from seepient.execution.host_programs import inside
from seepient.execution.lsp_config import LanguageServerConfig, server_for
from seepient.execution.nofollow import is_symlink_at
from seepient.execution.process import run_process
from seepient.execution.sandbox.bwrap import BwrapSandbox, protected_workspace_paths
from seepient.execution.sandbox.host_view import host_view
from seepient.execution.search import OutputMode, find_ripgrep, glob_paths, python_grep, ripgrep_grep
from seepient.execution.worktree import run_worktree_command
from seepient.net.address_policy import AddressPolicy
from seepient.net.egress_proxy import DomainCheck, EgressProxy
from seepient.net.fetch import FetchError, Resolver, SafeFetcher
from seepient.protocol.actions import Capability, FetchRequest, FileChange, ShellCommand, WorktreeCommand
from seepient.protocol.executor import (
    BackgroundOutput,
    BackgroundStarted,
    CommitOutcome,
    FetchOutcome,
    FetchRefused,
    GrepOutcome,
    LspAnswer,
    LspQuery,
    LspUnavailable,
    SandboxUnavailable,
    ShellOutcome,
)

_Outcome = TypeVar("_Outcome", ShellOutcome, BackgroundOutput)

if TYPE_CHECKING:
    from seepient.execution.lsp_server import LanguageServers
    from seepient.protocol.actions import KnowledgeQuery, MemoryAction, WebSearchRequest
    from seepient.protocol.retrieval import KnowledgeOutcome, WebSearchOutcome


def shell_argv(command_line: str) -> list[str]:
    """How a command line is run: ``bash -c``, or ``sh -c`` where bash is absent."""
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    return [shell, "-c", command_line]


def _require_directory(cwd: Path) -> None:
    # Without the sandbox nothing else would say that a missing working directory is what failed.
    if not cwd.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the working directory does not exist", str(cwd))


def _home_of(environ: Mapping[str, str]) -> Path:
    raw = environ.get("HOME")
    return Path(raw) if raw else Path.home()


async def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: Path,
    cwd: Path | None = None,
    network: bool = False,
    timeout_s: float | None = None,
    seepient_home: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    max_output_bytes: int = 1_000_000,
    stdio: Literal["capture", "inherit"] = "capture",
    sandbox: BwrapSandbox | None = None,
    egress: EgressProxy | None = None,
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    undo_planted: bool = True,
) -> ShellOutcome:
    """Run ``argv`` as it is (no shell) in the sandbox: the body of ``seepient sandbox run -- CMD``.

    With ``stdio="inherit"`` the command reads and writes this process's own standard streams and the
    outcome's stdout/stderr are empty; its exit code is passed back either way. Raises
    ``SandboxUnavailable`` with the reason and the fix when bubblewrap cannot start.

    With a started ``egress`` proxy (and ``network``), the command gets its own empty network namespace
    whose only way out is that proxy, instead of the host's network.
    """
    if not argv:
        raise ValueError("no command to run")
    environ = os.environ if environ is None else environ
    home = home if home is not None else _home_of(environ)
    if seepient_home is None:
        raw = environ.get("SEEPIENT_HOME")
        seepient_home = Path(raw).expanduser() if raw else home / ".seepient"
    full_argv, env = await sandboxed_argv(
        argv,
        workspace=workspace,
        cwd=cwd,
        network=network,
        seepient_home=seepient_home,
        home=home,
        environ=environ,
        sandbox=sandbox or BwrapSandbox(),
        egress=egress,
        readable=readable,
        hidden=hidden,
    )
    if not undo_planted:
        # The caller brackets the command with its own control guard (the executor's, with the user's rules).
        result = await run_process(
            full_argv, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes, stdio=stdio
        )
        return result.shell_outcome("bwrap")
    # Whoever runs it, what a jailed command leaves for programs outside the jail is undone afterwards.
    watch = ControlWatch(
        ControlGuard(workspace, quarantine_root=seepient_home / "quarantine"),
        journal_dir=seepient_home / "control",
    )
    await asyncio.to_thread(watch.before_command)
    try:
        result = await run_process(
            full_argv, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes, stdio=stdio
        )
    finally:
        repairs = await asyncio.to_thread(watch.after_command)
    return _with_repairs(result.shell_outcome("bwrap"), repairs)


async def sandboxed_argv(
    argv: Sequence[str],
    *,
    workspace: Path,
    cwd: Path | None,
    network: bool,
    seepient_home: Path,
    home: Path,
    environ: Mapping[str, str],
    sandbox: BwrapSandbox,
    egress: EgressProxy | None = None,
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> tuple[list[str], dict[str, str]]:
    """The bubblewrap command line and environment that run ``argv`` jailed: one profile for foreground and
    background commands. Raises ``SandboxUnavailable`` when bubblewrap cannot start."""
    status = await asyncio.to_thread(sandbox.probe)
    if not status.available:
        raise SandboxUnavailable(status.message)
    root = workspace.resolve()
    env = scrubbed_environment(environ, home=str(home))
    binds: list[tuple[Path, Path]] = []
    if network and egress is not None:
        argv, network = egress.sandbox_argv(argv), False
        env = {**env, **egress.sandbox_env()}
        binds = egress.sandbox_binds()
    full_argv = sandbox.command_argv(
        argv,
        workspace=root,
        cwd=(cwd or root).resolve(),
        network=network,
        view=host_view(
            home=home,
            seepient_home=seepient_home,
            environ=environ,
            workspace=root,
            readable=readable,
            hidden=hidden,
        ),
        read_only_inside=protected_workspace_paths(root),
        env=env,
        extra_binds=binds,
    )
    return full_argv, env


class _JailPaths(NamedTuple):
    readable: tuple[Path, ...]
    hidden: tuple[Path, ...]


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
        self.workspace = workspace.resolve()
        # From the user's own settings only (never a project's): folders of the home shown back in the jail,
        # and more locations hidden there.
        self._jail_paths = _JailPaths(tuple(jail_readable), tuple(jail_hidden))
        # Every fetch goes through the SSRF-safe client; the policy comes from the `net` settings section.
        self.net_policy = net_policy or AddressPolicy()
        self._net_resolver = net_resolver
        # "filtered": a command granted the network reaches it only through the egress proxy, which applies
        # the address policy and `egress_domain_check` (the Fetch domain rules) to every connection.
        self.network_egress = network_egress
        self._egress_domain_check = egress_domain_check
        self._given_workspace = Path(os.path.abspath(workspace))
        self.sandbox_mode = sandbox
        self.seepient_home = seepient_home
        self._environ = dict(os.environ if environ is None else environ)
        self.home = home if home is not None else _home_of(self._environ)
        self.max_output_bytes = max_output_bytes
        self.ripgrep = find_ripgrep() if ripgrep == "auto" else ripgrep
        if self.ripgrep is not None and inside(self.ripgrep, self.workspace):
            # A ripgrep the model could replace would run on the host; the Python search does the same job.
            self.ripgrep = None
        self._bwrap = bwrap or BwrapSandbox()
        self._env = scrubbed_environment(self._environ, home=str(self.home))
        self._background = background or BackgroundProcesses()
        self._language_server_configs = tuple(language_servers)
        self._lsp_timeouts = (lsp_request_timeout_s, lsp_diagnostics_wait_s)
        self._language_servers: LanguageServers | None = None
        self._lsp_closed = False
        # Whatever a command leaves for programs outside the jail (git's control files anywhere in the
        # workspace, other programs' configuration) is undone after it; foreign_config_allowed names the
        # workspace-relative paths a user-level rule lets commands write.
        self._control = ControlWatch(
            ControlGuard(
                self.workspace,
                quarantine_root=seepient_home / "quarantine",
                foreign_allowed=foreign_config_allowed,
            ),
            journal_dir=seepient_home / "control",
            background_running=lambda: self._background.running_count() > 0,
        )
        self._control_recovered = False
        self._control_watch: asyncio.Task[None] | None = None

    def read_only_jail(self, argv: list[str], root: Path) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` wrapped to run jailed with ``root`` read-only, no network and the scrubbed environment: how
        Seepient's own reads of a repository (git status for the prompt) run. None when the sandbox is off or
        cannot start here, for the caller to do without (nothing that reads the workspace runs unjailed)."""
        if self.sandbox_mode == "off" or not self._bwrap.probe().available:
            return None
        root = root.resolve()
        full_argv = self._bwrap.command_argv(
            argv,
            workspace=root,
            cwd=root,
            network=False,
            read_only_binds=_linked_git_dirs(root),
            view=host_view(
                home=self.home,
                seepient_home=self.seepient_home,
                environ=self._environ,
                workspace=root,
                readable=self._jail_paths.readable,
                hidden=self._jail_paths.hidden,
            ),
            read_only_inside=(),
            env=self._env,
            workspace_read_only=True,
        )
        return full_argv, self._env

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self._read_no_follow, Path(path))

    def _read_no_follow(self, path: Path) -> bytes:
        if not path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{path}: the executor takes absolute, resolved paths (no '..')")
        # The workspace root (and anything above it) is trusted as configured; below it, and everywhere for
        # paths outside it, no component may be a symlink: the path guard resolved them all, so a symlink
        # now means one was swapped in after the check, maybe pointing at ~/.ssh.
        base, rest = Path("/"), path.relative_to("/").parts
        for trusted in (self._given_workspace, self.workspace):
            if path.is_relative_to(trusted):
                base, rest = trusted, path.relative_to(trusted).parts
                break
        if not rest:
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        directory = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in rest[:-1]:
                child = self._open_at(directory, name, os.O_DIRECTORY, path)
                os.close(directory)
                directory = child
            # O_NONBLOCK keeps a FIFO planted at the path from hanging the read; it is refused below.
            fd = self._open_at(directory, rest[-1], os.O_NONBLOCK, path)
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
            if not stat.S_ISREG(mode):
                raise PermissionError(errno.EACCES, "not a regular file; refusing to read it", str(path))
            return handle.read()

    def _open_at(self, directory: int, name: str, flags: int, path: Path) -> int:
        try:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=directory)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_symlink_at(directory, name):
                raise PermissionError(
                    errno.EACCES, "a component became a symbolic link after the path was checked", str(path)
                ) from None
            if exc.errno == errno.ENOTDIR:
                raise FileNotFoundError(errno.ENOENT, "a parent is not a directory", str(path)) from None
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None

    async def glob(
        self, root: str, pattern: str, *, respect_ignore: bool = True, limit: int = 1000
    ) -> list[str]:
        if not Path(root).is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "glob needs a directory to list", root)
        return await asyncio.to_thread(
            glob_paths, Path(root), pattern, respect_ignore=respect_ignore, limit=limit
        )

    async def grep(
        self,
        root: str,
        pattern: str,
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        output_mode: OutputMode = "files_with_matches",
        limit: int = 500,
    ) -> GrepOutcome:
        if not Path(root).is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "grep needs a directory to search", root)
        if self.ripgrep is not None:
            return await ripgrep_grep(
                self.ripgrep,
                Path(root),
                pattern,
                glob=glob,
                ignore_case=ignore_case,
                output_mode=output_mode,
                limit=limit,
                env=self._env,
                max_output_bytes=self.max_output_bytes,
            )
        return await asyncio.to_thread(
            python_grep,
            Path(root),
            pattern,
            glob=glob,
            ignore_case=ignore_case,
            output_mode=output_mode,
            limit=limit,
        )

    def _command_cwd(self, command: ShellCommand) -> Path:
        return Path(command.cwd) if os.path.isabs(command.cwd) else self.workspace / command.cwd

    async def _egress(self, network: bool, stack: contextlib.AsyncExitStack) -> EgressProxy | None:
        """The filtering proxy a networked command reaches out through, started on ``stack`` so it lives as
        long as whoever closes the stack; None without network or with unfiltered egress."""
        if not network or self.network_egress != "filtered":
            return None
        egress = EgressProxy(
            policy=self.net_policy, resolver=self._net_resolver, domain_check=self._egress_domain_check
        )
        await stack.enter_async_context(egress)
        return egress

    async def run_shell(self, command: ShellCommand) -> ShellOutcome:
        recovered = await self._begin_command()
        try:
            outcome = await self._run_shell(command)
        finally:
            repairs = recovered + await asyncio.to_thread(self._control.after_command)
        return _with_repairs(outcome, repairs)

    async def _begin_command(self) -> list[Repair]:
        """Snapshot the control files before a command; the first time, repair what a killed session left."""
        recovered: list[Repair] = []
        if not self._control_recovered:
            self._control_recovered = True
            recovered = await asyncio.to_thread(self._control.recover)
        await asyncio.to_thread(self._control.before_command)
        return recovered

    async def _watch_background(self) -> None:
        """While background commands run, look for planted files every second (they write between steps)."""
        while self._background.running_count() > 0:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(self._control.sweep)
        await asyncio.to_thread(self._control.sweep)
        self._control_watch = None

    async def _run_shell(self, command: ShellCommand) -> ShellOutcome:
        cwd = self._command_cwd(command)
        timeout_s = command.timeout_ms / 1000
        if self.sandbox_mode == "off":
            _require_directory(cwd)
            result = await run_process(
                shell_argv(command.command),
                env=self._env,
                cwd=cwd,
                timeout_s=timeout_s,
                max_output_bytes=self.max_output_bytes,
            )
            return result.shell_outcome("none")
        network = Capability.NETWORK in command.capabilities
        async with contextlib.AsyncExitStack() as stack:
            egress = await self._egress(network, stack)
            return await run_sandboxed(
                shell_argv(command.command),
                workspace=self.workspace,
                cwd=cwd,
                network=network,
                timeout_s=timeout_s,
                seepient_home=self.seepient_home,
                home=self.home,
                environ=self._environ,
                max_output_bytes=self.max_output_bytes,
                sandbox=self._bwrap,
                egress=egress,
                **self._jail_paths._asdict(),
                undo_planted=False,
            )

    async def start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        recovered = await self._begin_command()
        try:
            started = await self._start_background(command, session_id=session_id)
        finally:
            self._control.report(recovered)
            await asyncio.to_thread(self._control.after_command)
        if self._control_watch is None:
            self._control_watch = asyncio.create_task(self._watch_background())
        return started

    async def _start_background(self, command: ShellCommand, *, session_id: str) -> BackgroundStarted:
        cwd = self._command_cwd(command)
        lifetime_s = command.timeout_ms / 1000 if command.timeout_ms > 0 else None
        if self.sandbox_mode == "off":
            _require_directory(cwd)
            process_id = await self._background.start(
                shell_argv(command.command),
                env=self._env,
                cwd=cwd,
                session_id=session_id,
                command=command.command,
                lifetime_s=lifetime_s,
            )
            return BackgroundStarted(process_id=process_id, sandbox="none")
        network = Capability.NETWORK in command.capabilities
        # The egress proxy lives as long as the process: the background manager closes this stack at its end.
        stack = contextlib.AsyncExitStack()
        try:
            egress = await self._egress(network, stack)
            argv, env = await sandboxed_argv(
                shell_argv(command.command),
                workspace=self.workspace,
                cwd=cwd,
                network=network,
                seepient_home=self.seepient_home,
                home=self.home,
                environ=self._environ,
                sandbox=self._bwrap,
                egress=egress,
                **self._jail_paths._asdict(),
            )
        except BaseException:
            await stack.aclose()
            raise
        process_id = await self._background.start(
            argv,
            env=env,
            session_id=session_id,
            command=command.command,
            lifetime_s=lifetime_s,
            cleanup=stack,
        )
        return BackgroundStarted(process_id=process_id, sandbox="bwrap")

    async def background_output(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        output = self._background.output(process_id, session_id=session_id)
        await asyncio.to_thread(self._control.sweep)
        return _with_repairs(output, self._control.take_pending())

    async def kill_background(self, process_id: str, *, session_id: str) -> BackgroundOutput:
        output = await self._background.kill(process_id, session_id=session_id)
        await asyncio.to_thread(self._control.sweep)
        return _with_repairs(output, self._control.take_pending())

    def _lsp(self) -> LanguageServers | None:
        """The session's language servers, made on the first LSP request (None when none is configured)."""
        if self._lsp_closed and self._language_servers is None:
            return None
        if self._language_servers is None and self._language_server_configs:
            # pygls and lsprotocol take long to import, and most sessions never ask a language server.
            from seepient.execution.lsp_server import LanguageServers

            request_timeout_s, diagnostics_wait_s = self._lsp_timeouts
            # Language servers run jailed like commands, with the workspace read-only (execution/lsp_server.py).
            self._language_servers = LanguageServers(
                self.workspace,
                self._language_server_configs,
                read_file=self.read_file,
                sandbox_mode=self.sandbox_mode,
                bwrap=self._bwrap,
                seepient_home=self.seepient_home,
                home=self.home,
                environ=self._environ,
                request_timeout_s=request_timeout_s,
                diagnostics_wait_s=diagnostics_wait_s,
            )
        return self._language_servers

    async def lsp_query(self, query: LspQuery) -> LspAnswer:
        servers = self._lsp()
        if servers is None and self._lsp_closed and self._language_server_configs:
            raise LspUnavailable("the session is closing; language servers are shut down")
        if servers is None:
            raise LspUnavailable(
                "no language servers are configured for this session (settings: lsp.servers)"
            )
        return await servers.query(query)

    async def lsp_diagnostics(self, paths: tuple[str, ...]) -> LspAnswer | None:
        if not any(server_for(self._language_server_configs, path) for path in paths):
            return None  # an edit no server looks at starts none (nor loads pygls)
        servers = self._lsp()
        if servers is None:
            return None
        return await servers.diagnostics_after_change(paths)

    async def aclose(self) -> None:
        """End what outlives single calls: background processes and language servers (the session ends)."""
        await self._background.aclose()
        if self._control_watch is not None:
            self._control_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._control_watch
        # The last background process may have written just before it was killed.
        await asyncio.to_thread(self._control.sweep)
        self._lsp_closed = True
        if self._language_servers is not None:
            await self._language_servers.aclose()

    async def run_worktree(self, command: WorktreeCommand) -> ShellOutcome:
        recovered = await self._begin_command()
        try:
            outcome = await self._run_worktree(command)
        finally:
            repairs = recovered + await asyncio.to_thread(self._control.after_command)
        return _with_repairs(outcome, repairs)

    async def _run_worktree(self, command: WorktreeCommand) -> ShellOutcome:
        return await run_worktree_command(
            command,
            workspace=self.workspace,
            seepient_home=self.seepient_home,
            home=self.home,
            environ=self._environ,
            sandbox_mode=self.sandbox_mode,
            bwrap=self._bwrap,
            max_output_bytes=self.max_output_bytes,
        )

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

    # -- the agent's memory folders and the read-only look-ups (execution/memory.py, execution/retrieval.py)

    async def read_memory(self, scope: Literal["user", "project"], path: str) -> bytes:
        from seepient.execution.memory import read_memory

        return await asyncio.to_thread(read_memory, self.seepient_home, self.workspace, scope, path)

    async def list_memory(self, scope: Literal["user", "project"], path: str) -> list[str]:
        from seepient.execution.memory import list_memory

        return await asyncio.to_thread(list_memory, self.seepient_home, self.workspace, scope, path)

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
            request, policy=self.net_policy, resolver=self._net_resolver, environ=self._environ
        )


def _linked_git_dirs(root: Path) -> list[Path]:
    """The git directory a checkout's ``.git`` file names (a linked worktree, a submodule) and its common
    directory: git reads them, so a read-only jail of the checkout must show them too."""
    dot_git = root / ".git"
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace") if dot_git.is_file() else ""
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = (root / text.removeprefix("gitdir:").strip()).resolve()
    found = [git_dir] if git_dir.is_dir() and not git_dir.is_relative_to(root) else []
    with contextlib.suppress(OSError):
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        if common.is_dir() and not common.is_relative_to(root) and common not in found:
            found.insert(0, common)
    return found


def _with_repairs(outcome: _Outcome, repairs: list[Repair]) -> _Outcome:
    if not repairs:
        return outcome
    note = repairs_note(repairs)
    return outcome.model_copy(update={"stderr": f"{outcome.stderr.rstrip()}\n[{note}]\n".lstrip()})


def _codec(charset: str | None) -> str:
    import codecs

    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"
