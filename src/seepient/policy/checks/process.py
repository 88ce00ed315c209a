"""The check of background processes (``shell_output``, ``shell_kill``). The executor serves only processes
this session started, so this touches nothing the session's own approved command did not create: reading
its output is a read inside the workspace, killing it is treated like a known-safe command. Rules that name
the tool still decide first."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.policy.modes import ModeSubject
from seepient.protocol import PreparedActionDraft, Verdict
from seepient.protocol.actions import ProcessControl


def check_process(decider: Decider, action: PreparedActionDraft, control: ProcessControl) -> Verdict:
    decided = decider.tool_verdict(action, ("deny", "ask", "allow"), action.tool)
    if decided is not None:
        return decided
    if control.operation == "output":
        return decider.decide(
            ModeSubject("read", True, description=f"reading background process {control.process_id}")
        )
    return decider.decide(
        ModeSubject(
            "shell",
            True,
            known_safe=True,
            concerns=[f"it kills background process {control.process_id} and its children"],
        )
    )
