"""Drive a running ``seepient serve`` over HTTP and WebSocket.

seepient tokens create --principal me          # prints a token once
seepient serve                                 # in the directory that holds your workspaces
.venv/bin/python examples/remote_client.py http://127.0.0.1:7337 TOKEN /abs/workspace /abs/script.yaml
"""

# ruff: noqa: T201  (an example script talks to its user on stdout)

from __future__ import annotations

import asyncio
import sys

from seepient import Client
from seepient.protocol import ApprovalDecision, ApprovalRequest, TextDelta


def approve(request: ApprovalRequest) -> ApprovalDecision:
    print(f"\n[approval] {request.action.summary}")
    return ApprovalDecision.APPROVE_ONCE


async def stream(session, prompt: str) -> None:  # type: ignore[no-untyped-def]
    async for event in session.stream(prompt):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        elif event.type == "turn_completed":
            print(f"\n[turn ended: {event.reason}]")


def main() -> None:
    base_url, token, workspace, script = sys.argv[1:5]
    with Client(base_url, token) as client:
        print("server tools:", ", ".join(client.tool_names()))
        session = client.sessions.create(workspace=workspace, model=f"replay:{script}", approver=approve)
        asyncio.run(stream(session, "Go ahead"))


if __name__ == "__main__":
    main()
