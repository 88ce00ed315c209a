"""The check of changes to the session's own state (the todo list): they touch nothing on the host, so no
mode asks about them; a rule naming the tool still denies or asks, and the action is audited like any other."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.protocol import ActionKind, PreparedActionDraft, SessionStateChange, Verdict

RULE_STATE_MISMATCH = "state:mismatch"


def check_state(decider: Decider, action: PreparedActionDraft) -> Verdict:
    """A state action must carry a state payload and a state payload must be declared a state action."""
    payload = action.payload
    if action.kind is not ActionKind.STATE or not isinstance(payload, SessionStateChange):
        return Verdict.deny(
            RULE_STATE_MISMATCH,
            f"{action.tool} declared a {action.kind} action with a {payload.type} payload",
        )
    decided = decider.tool_verdict(action, ("deny", "ask"), action.tool)
    if decided is not None:
        return decided
    return Verdict.allow(
        "state:session", f"it changes only the session's own {payload.key}; nothing on the host is touched"
    )
