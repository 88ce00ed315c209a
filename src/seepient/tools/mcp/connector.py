"""How the MCP client reaches a server: a connector (implemented in ``execution/``, handed in by the runtime)
opens the transport, so ``tools/`` never spawns a process or opens a socket itself. The link it opens is
``protocol/mcp_link.py``'s."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from seepient.config.sections import McpServerSettings
from seepient.protocol.mcp_link import McpLink, McpStartError

__all__ = ["McpConnector", "McpLink", "McpStartError"]


class McpConnector(Protocol):
    """Opens transports to MCP servers; the context manager closes the transport (and stops a process)."""

    def connect(self, name: str, server: McpServerSettings) -> AbstractAsyncContextManager[McpLink]:
        """Raises ``McpStartError`` (on entering) when the server cannot be started or reached."""
        ...
