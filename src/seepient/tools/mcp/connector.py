"""How the MCP client reaches a server: a connector (implemented in ``execution/``, handed in by the runtime)
opens the transport, so ``tools/`` never spawns a process or opens a socket itself."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

from seepient.config.settings import McpServerSettings

if TYPE_CHECKING:
    import anyio
    from mcp.client._transport import TransportStreams


class McpStartError(RuntimeError):
    """A server that could not be reached or started; the message says what happened and what to check."""


class McpLink(Protocol):
    """An open transport to one server. ``lost`` is set when the server goes away (its process exited or
    its connection closed) without Seepient closing it; ``exit_reason()`` then says what is known."""

    streams: TransportStreams
    lost: anyio.Event

    def exit_reason(self) -> str: ...


class McpConnector(Protocol):
    """Opens transports to MCP servers; the context manager closes the transport (and stops a process)."""

    def connect(self, name: str, server: McpServerSettings) -> AbstractAsyncContextManager[McpLink]:
        """Raises ``McpStartError`` (on entering) when the server cannot be started or reached."""
        ...
