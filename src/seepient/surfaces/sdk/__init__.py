"""The Python SDK: ``Agent`` runs the runtime in this process; ``Client`` drives a ``seepient serve`` server.

Both speak the protocol types of ``seepient.protocol`` (events, approval requests and responses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports
from seepient.surfaces.sdk._common import ApprovalAnswer, ApprovalCallback, Reply

if TYPE_CHECKING:
    from seepient.surfaces.sdk.agent import Agent
    from seepient.surfaces.sdk.client import Client, RemoteSession

__all__ = ["Agent", "ApprovalAnswer", "ApprovalCallback", "Client", "RemoteSession", "Reply"]


# The client pulls in the HTTP and WebSocket stacks, the agent the whole runtime; load only what is used.
__getattr__ = lazy_exports(
    __name__,
    {
        "Agent": "seepient.surfaces.sdk.agent",
        "Client": "seepient.surfaces.sdk.client",
        "RemoteSession": "seepient.surfaces.sdk.client",
    },
)
