"""The local backend: the ``ActionExecutor`` that reaches this machine, running shell commands in the
bubblewrap sandbox and file changes through the exact commit helper; plus ``run_sandboxed`` for the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from seepient.execution.commit import commit_change
from seepient.execution.environment import scrubbed_environment
from seepient.execution.nofollow import is_symlink_at
from seepient.execution.process import ProcessResult, run_process
from seepient.execution.sandbox.bwrap import BwrapSandbox, default_hidden_paths, protected_workspace_paths
from seepient.execution.search import OutputMode, find_ripgrep, glob_paths, python_grep, ripgrep_grep
from seepient.net.address_policy import AddressPolicy
from seepient.net.egress_proxy import DomainCheck, EgressProxy
from seepient.net.fetch import FetchError, Resolver, SafeFetcher
from seepient.protocol.actions import Capability, FetchRequest, FileChange, ShellCommand
from seepient.protocol.executor import (
    CommitOutcome,
    FetchOutcome,
    FetchRefused,
    GrepOutcome,
    SandboxUnavailable,
    ShellOutcome,
)


def shell_argv(command_line: str) -> list[str]:
    """How a command line is run: ``bash -c``, or ``sh -c`` where bash is absent."""
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    return [shell, "-c", command_line]


def _outcome(result: ProcessResult, sandbox: str) -> ShellOutcome:
    return ShellOutcome(
        exit_code=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        timed_out=result.timed_out,
        stdout_truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated,
        duration_ms=result.duration_ms,
        sandbox=sandbox,
    )


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
    sandbox = sandbox or BwrapSandbox()
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
        hidden=default_hidden_paths(home, seepient_home, environ),
        read_only_inside=protected_workspace_paths(root),
        env=env,
        extra_binds=binds,
    )
    result = await run_process(
        full_argv, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes, stdio=stdio
    )
    return _outcome(result, "bwrap")


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
    ) -> None:
        self.workspace = workspace.resolve()
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
        self._bwrap = bwrap or BwrapSandbox()
        self._env = scrubbed_environment(self._environ, home=str(self.home))

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

    async def run_shell(self, command: ShellCommand) -> ShellOutcome:
        cwd = Path(command.cwd) if os.path.isabs(command.cwd) else self.workspace / command.cwd
        timeout_s = command.timeout_ms / 1000
        if self.sandbox_mode == "off":
            if not cwd.is_dir():
                raise FileNotFoundError(errno.ENOENT, "the working directory does not exist", str(cwd))
            result = await run_process(
                shell_argv(command.command),
                env=self._env,
                cwd=cwd,
                timeout_s=timeout_s,
                max_output_bytes=self.max_output_bytes,
            )
            return _outcome(result, "none")
        network = Capability.NETWORK in command.capabilities
        async with contextlib.AsyncExitStack() as stack:
            egress = None
            if network and self.network_egress == "filtered":
                egress = EgressProxy(
                    policy=self.net_policy,
                    resolver=self._net_resolver,
                    domain_check=self._egress_domain_check,
                )
                await stack.enter_async_context(egress)
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
            )

    async def commit_file(self, change: FileChange) -> CommitOutcome:
        # In-process in a worker thread: the helper is synchronous and a thread spares a process start.
        # A cancelled caller does not stop the thread, so a commit that started always finishes whole.
        return await asyncio.to_thread(commit_change, self.workspace, change)

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


def _codec(charset: str | None) -> str:
    import codecs

    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"
