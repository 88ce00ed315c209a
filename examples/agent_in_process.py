"""Run the agent inside your own Python process with a scripted (replay) model, approving each action.

.venv/bin/python examples/agent_in_process.py
"""

# ruff: noqa: T201  (an example script talks to its user on stdout)

from __future__ import annotations

import tempfile
from pathlib import Path

from seepient import Agent
from seepient.protocol import ApprovalRequest


def approve(request: ApprovalRequest) -> bool:
    """Shown every action policy asks about; True approves once, False rejects."""
    print(f"approve? {request.action.summary}")
    return True


def main() -> None:
    workspace = Path(tempfile.mkdtemp(prefix="seepient-example-"))
    script = workspace.parent / f"{workspace.name}-script.yaml"
    script.write_text(
        "- text: Writing a greeting.\n"
        "  tool_calls:\n"
        "    - name: write_file\n"
        '      arguments: {path: hello.txt, content: "hello\\n"}\n'
        "- text: Done, hello.txt is written.\n"
    )
    with Agent(
        workspace=workspace, model=f"replay:{script}", mode="ask-untrusted", approver=approve
    ) as agent:
        print("tools:", ", ".join(agent.tool_names()))
        reply = agent.chat("Write a greeting to hello.txt")
    print(reply.text)
    print((workspace / "hello.txt").read_text(), end="")


if __name__ == "__main__":
    main()
