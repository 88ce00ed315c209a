"""The Python SDK: ``Agent`` runs the runtime in this process; ``Client`` drives a ``seepient serve`` server.

Both speak the protocol types of ``seepient.protocol`` (events, approval requests and responses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seepient.surfaces.sdk._common import ApprovalAnswer, ApprovalCallback, Reply

if TYPE_CHECKING:
    from seepient.surfaces.sdk.agent import Agent
    from seepient.surfaces.sdk.client import Client, RemoteSession

__all__ = ["Agent", "ApprovalAnswer", "ApprovalCallback", "Client", "RemoteSession", "Reply"]


def __getattr__(name: str) -> Any:
    # The client pulls in the HTTP and WebSocket stacks, the agent the whole runtime; load only what is used.
    if name == "Agent":
        from seepient.surfaces.sdk.agent import Agent

        return Agent
    if name in ("Client", "RemoteSession"):
        from seepient.surfaces.sdk import client

        return getattr(client, name)
    raise AttributeError(name)
