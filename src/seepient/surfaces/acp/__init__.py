"""``seepient acp``: Seepient as an Agent Client Protocol agent on stdio, for editors (Zed, JetBrains,
Neovim). Every edit and command still goes through policy, approval (asked through the editor), the jail, the
exact commit helper and the audit log; the wire and its schema are the official ``agent-client-protocol`` SDK's."""

from __future__ import annotations

import asyncio
import logging

from seepient.surfaces.acp.agent import AcpConfig, SeepientAgent

__all__ = ["AcpConfig", "SeepientAgent", "serve_stdio"]


async def _serve(agent: SeepientAgent, protocol_fd: int) -> None:
    from acp.core import AgentSideConnection

    from seepient.surfaces.acp.wire import stdio_transport

    transport = await stdio_transport(protocol_fd)
    connection = AgentSideConnection(agent, transport, listening=False)
    try:
        await connection.listen()
    finally:
        await agent.aclose()
        await connection.close()


def serve_stdio(config: AcpConfig) -> int:
    """Serve one editor on stdin/stdout until it closes stdin; logs go to stderr. Returns the exit status."""
    from seepient.surfaces.acp.wire import claim_stdout

    protocol_fd = claim_stdout()
    logging.basicConfig(level=logging.WARNING, format="seepient acp: %(levelname)s %(message)s")
    asyncio.run(_serve(SeepientAgent(config), protocol_fd))
    return 0
