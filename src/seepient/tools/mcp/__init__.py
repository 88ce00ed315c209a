"""The MCP client: tools of configured MCP servers offered as ``mcp__SERVER__TOOL``. Transports come from an
``McpConnector`` the runtime hands in (``execution/mcp_transport.py`` on this machine).

The names built on the MCP SDK (the connection, the servers, the tool) load on first use: the SDK takes about
a second to import and most sessions configure no server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports
from seepient.tools.mcp.connector import McpConnector, McpLink, McpStartError
from seepient.tools.mcp.report import McpReport

if TYPE_CHECKING:
    from seepient.tools.mcp.client import McpCallFailed, McpServerConnection
    from seepient.tools.mcp.servers import McpServers
    from seepient.tools.mcp.tool import McpTool, exposed_name, result_text

_ON_SDK = {
    "McpCallFailed": "client",
    "McpServerConnection": "client",
    "McpServers": "servers",
    "McpTool": "tool",
    "exposed_name": "tool",
    "result_text": "tool",
}

__all__ = [
    "McpCallFailed",
    "McpConnector",
    "McpLink",
    "McpReport",
    "McpServerConnection",
    "McpServers",
    "McpStartError",
    "McpTool",
    "exposed_name",
    "result_text",
]


__getattr__ = lazy_exports(__name__, {name: f"{__name__}.{module}" for name, module in _ON_SDK.items()})
