"""What the MCP client tells a person about a server (it did not start, went away, or offers a tool that
cannot be offered); reports become ``error`` events and the session carries on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class McpReport:
    """Something a person should know about a server: ``code`` is ``mcp_server_failed`` (did not start),
    ``mcp_server_gone`` (went away mid-session) or ``mcp_tool_skipped`` (a tool that cannot be offered)."""

    server: str
    code: str
    message: str


Reporter = Callable[[McpReport], None]
