"""The MCP servers of one session: started together, their tools put into the registry, and taken out again
(with a report) when a server goes away, so the session carries on without them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from seepient.config.sections import McpServerSettings
from seepient.tools.mcp.client import McpServerConnection, describe_error
from seepient.tools.mcp.connector import McpConnector
from seepient.tools.mcp.report import McpReport, Reporter
from seepient.tools.mcp.tool import McpTool, exposed_name
from seepient.tools.registry import ToolRegistry


class McpServers:
    """Connections to the configured servers, and the tools they add to ``registry``."""

    def __init__(self, registry: ToolRegistry, connector: McpConnector, *, report: Reporter) -> None:
        self._registry = registry
        self._connector = connector
        self._report = report
        self.connections: dict[str, McpServerConnection] = {}

    async def start(self, servers: Mapping[str, McpServerSettings]) -> list[McpReport]:
        """Start ``servers`` at the same time; every problem is reported and returned, none is raised."""
        for name, settings in servers.items():
            if name in self.connections:
                continue
            self.connections[name] = McpServerConnection(
                name, settings, self._connector, on_gone=self._server_gone
            )
        pending = [c for c in self.connections.values() if c.state == "new"]
        outcomes = await asyncio.gather(*(c.start() for c in pending), return_exceptions=True)
        reports: list[McpReport] = []
        for connection, outcome in zip(pending, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                message = describe_error(outcome)
                reports.append(self._emit(McpReport(connection.name, "mcp_server_failed", message)))
                continue
            reports.extend(self._register(connection))
        return reports

    def _register(self, connection: McpServerConnection) -> list[McpReport]:
        reports = []
        for tool in connection.tools:
            name, why = exposed_name(connection.name, tool.name)
            if name is None:
                message = f"MCP server {connection.name}: tool {tool.name!r} is not offered: {why}"
                reports.append(self._emit(McpReport(connection.name, "mcp_tool_skipped", message)))
                continue
            instance = McpTool(connection, tool, name)
            if instance.schema_problem is not None:
                message = f"MCP server {connection.name}: tool {tool.name!r} is not offered: {instance.schema_problem}"
                reports.append(self._emit(McpReport(connection.name, "mcp_tool_skipped", message)))
                continue
            try:
                self._registry.register(instance)
            except ValueError as exc:
                message = f"MCP server {connection.name}: tool {tool.name!r} is not offered: {exc}"
                reports.append(self._emit(McpReport(connection.name, "mcp_tool_skipped", message)))
        return reports

    def _server_gone(self, connection: McpServerConnection, problem: str) -> None:
        for name in self.tool_names(connection.name):
            self._registry.unregister(name, problem)
        self._emit(McpReport(connection.name, "mcp_server_gone", problem + "; its tools were removed"))

    def tool_names(self, server: str) -> list[str]:
        """The registered tool names of ``server``."""
        return [
            name
            for name in self._registry.names()
            if isinstance(tool := self._registry.get(name), McpTool) and tool.connection.name == server
        ]

    def _emit(self, report: McpReport) -> McpReport:
        self._report(report)
        return report

    async def aclose(self) -> None:
        """Stop every server (their processes end); their tools leave the registry."""
        for connection in self.connections.values():
            for name in self.tool_names(connection.name):
                self._registry.unregister(name, f"MCP server {connection.name} was stopped")
        await asyncio.gather(*(c.aclose() for c in self.connections.values()), return_exceptions=True)
