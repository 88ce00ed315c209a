"""The host reads of the local backend: files read without following a swapped-in symlink, glob and grep
honouring ignore files, the agent's memory folders, and questions to the workspace's language servers."""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Unpack

from seepient.execution.host_programs import inside
from seepient.execution.jail import Jail
from seepient.execution.lsp_config import LanguageServerConfig, server_for
from seepient.execution.nofollow import is_symlink_at
from seepient.execution.search import GrepQuery, find_ripgrep, glob_paths, python_grep, ripgrep_grep
from seepient.protocol.executor import GrepOptions
from seepient.protocol.lsp import LspAnswer, LspQuery, LspUnavailable
from seepient.protocol.outcomes import GrepOutcome

if TYPE_CHECKING:
    from seepient.execution.lsp_server import LanguageServers


class LocalReads:
    """``HostReads`` on this machine. Paths it is handed are absolute and resolved by the path guard.

    ``ripgrep`` names the rg binary, ``None`` for the pure-Python search. ``given_workspace`` is the workspace
    as configured (before resolving symlinks), trusted like its resolved form.
    """

    def __init__(
        self,
        jail: Jail,
        *,
        given_workspace: Path,
        ripgrep: str | None | Literal["auto"] = "auto",
        language_servers: Sequence[LanguageServerConfig] = (),
        lsp_request_timeout_s: float = 30.0,
        lsp_diagnostics_wait_s: float = 3.0,
    ) -> None:
        self._jail = jail
        self.workspace = jail.workspace
        self._given_workspace = given_workspace
        self.ripgrep = find_ripgrep() if ripgrep == "auto" else ripgrep
        if self.ripgrep is not None and inside(self.ripgrep, self.workspace):
            # A ripgrep the model could replace would run on the host; the Python search does the same job.
            self.ripgrep = None
        self._language_server_configs = tuple(language_servers)
        self._lsp_timeouts = (lsp_request_timeout_s, lsp_diagnostics_wait_s)
        self._language_servers: LanguageServers | None = None
        self._lsp_closed = False

    # -- files ----------------------------------------------------------------------------------------

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
                child = _open_at(directory, name, os.O_DIRECTORY, path)
                os.close(directory)
                directory = child
            # O_NONBLOCK keeps a FIFO planted at the path from hanging the read; it is refused below.
            fd = _open_at(directory, rest[-1], os.O_NONBLOCK, path)
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
            if not stat.S_ISREG(mode):
                raise PermissionError(errno.EACCES, "not a regular file; refusing to read it", str(path))
            return handle.read()

    async def glob(
        self, root: str, pattern: str, *, respect_ignore: bool = True, limit: int = 1000
    ) -> list[str]:
        if not Path(root).is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "glob needs a directory to list", root)
        return await asyncio.to_thread(
            glob_paths, Path(root), pattern, respect_ignore=respect_ignore, limit=limit
        )

    async def grep(self, root: str, pattern: str, **options: Unpack[GrepOptions]) -> GrepOutcome:
        if not Path(root).is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "grep needs a directory to search", root)
        search: Callable[..., Awaitable[GrepOutcome]] = (
            functools.partial(
                ripgrep_grep,
                self.ripgrep,
                env=dict(self._jail.env),
                max_output_bytes=self._jail.max_output_bytes,
            )
            if self.ripgrep is not None
            else functools.partial(asyncio.to_thread, python_grep)
        )
        return await search(Path(root), GrepQuery(pattern, **options))

    # -- the agent's memory folders (execution/memory_folders.py) ------------------------------------------------

    async def read_memory(self, scope: Literal["user", "project"], path: str) -> bytes:
        from seepient.execution.memory_folders import read_memory

        jail = self._jail
        return await asyncio.to_thread(read_memory, jail.seepient_home, jail.workspace, scope, path)

    async def list_memory(self, scope: Literal["user", "project"], path: str) -> list[str]:
        from seepient.execution.memory_folders import list_memory

        jail = self._jail
        return await asyncio.to_thread(list_memory, jail.seepient_home, jail.workspace, scope, path)

    # -- language servers ------------------------------------------------------------------------------

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
                self._language_server_configs,
                jail=self._jail,
                read_file=self.read_file,
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
        """Shut the language servers down; later questions are answered ``LspUnavailable``."""
        self._lsp_closed = True
        if self._language_servers is not None:
            await self._language_servers.aclose()


def _open_at(directory: int, name: str, flags: int, path: Path) -> int:
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
