"""The MCP client: tools of configured MCP servers offered as ``mcp__SERVER__TOOL``. Transports come from an
``McpConnector`` the runtime hands in (``execution/mcp_transport.py`` on this machine).

The names built on the MCP SDK (the connection, the servers, the tool) load on first use: the SDK takes about
a second to import and most sessions configure no server."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _ON_SDK.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
