"""The MCP link interface: an open transport to one MCP server, as ``execution/`` opens it and ``tools/mcp``
speaks over it. Defined here so neither of the two imports the other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from seepient.protocol.errors import ExecutionError

if TYPE_CHECKING:
    import anyio
    from mcp.client._transport import TransportStreams


class McpStartError(ExecutionError, RuntimeError):
    """A server that could not be reached or started; the message says what happened and what to check."""


class McpLink(Protocol):
    """An open transport to one server. ``lost`` is set when the server goes away (its process exited or
    its connection closed) without Seepient closing it; ``exit_reason()`` then says what is known."""

    streams: TransportStreams
    lost: anyio.Event

    def exit_reason(self) -> str: ...
