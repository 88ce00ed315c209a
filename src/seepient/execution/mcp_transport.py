"""Host side of MCP: starts stdio servers with a scrubbed environment and reaches streamable-HTTP servers only
at addresses the SSRF-safe address policy allows, pinned for the life of the connection. The checks live
here; the SDK's transports (``mcp_links.py``) load only when a server passed them and starts."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.config.sections import McpServerSettings
from seepient.execution.environment import scrubbed_environment
from seepient.execution.host_programs import host_path, inside
from seepient.net.address_policy import AddressPolicy
from seepient.protocol.mcp_link import McpLink, McpStartError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from seepient.net.fetch import Resolver


class HostMcpConnector:
    """``McpConnector`` for this machine. Stdio servers run as the user (not in the sandbox: they are programs
    the user configured, like an editor's language servers) in the user's home unless ``cwd`` says otherwise,
    with Seepient's environment scrubbed of secrets plus the server's own ``env``; their error output is kept
    for reports. HTTP servers are reached only if the address policy (``net`` settings) allows their address
    and no Fetch deny rule covers their host, like every other connection Seepient makes for the model.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        environ: Mapping[str, str] | None = None,
        net_policy: AddressPolicy | None = None,
        resolver: Resolver | None = None,
        domain_check: Callable[[str], str | None] | None = None,
    ) -> None:
        """``domain_check`` says why a host is refused (the Fetch deny rules), or None."""
        self._workspace = workspace
        self._domain_check = domain_check
        self._environ = dict(os.environ if environ is None else environ)
        self._net_policy = net_policy or AddressPolicy()
        self._resolver = resolver

    def environment(self, server: McpServerSettings) -> dict[str, str]:
        """What a stdio server's process gets: the scrubbed environment (its ``PATH`` without the workspace's
        folders, ``host_path``), then the server's own ``env``."""
        home = self._environ.get("HOME") or str(Path.home())
        inherited = scrubbed_environment(self._environ, home=home)
        inherited["PATH"] = host_path(inherited["PATH"], self._workspace)
        return inherited | dict(server.env)

    @asynccontextmanager
    async def connect(self, name: str, server: McpServerSettings) -> AsyncIterator[McpLink]:
        # Checks first, then the SDK: it loads (about a second) only when a server really starts.
        opened = self._stdio(name, server) if server.command is not None else await self._http(name, server)
        async with opened as link:
            yield link

    def _command(self, name: str, server: McpServerSettings, env: Mapping[str, str]) -> str:
        assert server.command is not None
        command = os.path.expanduser(server.command)
        if os.sep in command:
            if not os.access(command, os.X_OK):
                raise McpStartError(f"MCP server {name}: {command} is not an executable file")
            return self._outside_workspace(name, command)
        found = shutil.which(command, path=env.get("PATH"))
        if found is None:
            raise McpStartError(
                f"MCP server {name}: command {command!r} was not found on PATH ({env.get('PATH', '')}); "
                "give its absolute path in mcpServers"
            )
        return self._outside_workspace(name, found)

    def _outside_workspace(self, name: str, program: str) -> str:
        # The server runs on the host; a program the model can write (an activated project venv on PATH, a
        # relative path in the settings) would make a planted file run there the next time the server starts.
        if inside(program, self._workspace):
            raise McpStartError(
                f"MCP server {name}: {program} lies inside the workspace, where the model can change it; "
                "install the server outside the workspace (pipx, uv tool) and name that program"
            )
        return program

    def start_folder(self, name: str, server: McpServerSettings) -> Path:
        """The folder a stdio server starts in: the one the user's settings name (relative to the workspace),
        else the user's home, or ``/`` when the home is missing or lies in the workspace. Never the workspace
        by default: what a program reads from the folder it starts in is the model's to write there (``python
        -m`` imports from it first, npx runs its ``node_modules`` copy and reads its ``.npmrc``, uv its
        ``uv.toml``, dotenv loaders its ``.env``), and the server runs on the host."""
        if server.cwd is None:
            home = Path(self._environ.get("HOME") or "/")
            return home if home.is_dir() and not inside(home, self._workspace) else Path("/")
        cwd = Path(os.path.expanduser(server.cwd))
        cwd = cwd if cwd.is_absolute() else self._workspace / cwd
        if not cwd.is_dir():
            raise McpStartError(f"MCP server {name}: cwd {cwd} is not a directory")
        return cwd

    def _stdio(self, name: str, server: McpServerSettings) -> AbstractAsyncContextManager[McpLink]:
        env = self.environment(server)
        # The program is looked up on the whole PATH, so one found in the workspace is refused as such (and the
        # user told why) rather than reported missing; what it starts sees only ``env``'s PATH.
        home = self._environ.get("HOME") or str(Path.home())
        command = self._command(
            name, server, scrubbed_environment(self._environ, home=home) | dict(server.env)
        )
        cwd = self.start_folder(name, server)
        from seepient.execution.mcp_links import open_stdio

        return open_stdio(name, command, server.args, env, cwd)

    async def _http(self, name: str, server: McpServerSettings) -> AbstractAsyncContextManager[McpLink]:
        assert server.url is not None
        from seepient.net.fetch import check_url

        verdict = await check_url(server.url, policy=self._net_policy, resolver=self._resolver)
        if not verdict.allowed or verdict.parsed is None:
            raise McpStartError(
                f"MCP server {name}: refused to connect to {server.url}: {verdict.reason}. A server on a private "
                "or loopback address must be allowed in the user settings' net block (allowRanges, allowHosts, "
                "allowPorts)"
            )
        parsed = verdict.parsed
        refused = self._domain_check(parsed.host) if self._domain_check is not None else None
        if refused is not None:
            raise McpStartError(f"MCP server {name}: refused to connect to {server.url}: {refused}")
        from seepient.execution.mcp_links import open_http

        return open_http(name, parsed.geturl(), parsed.host, verdict.addresses, server.headers)
