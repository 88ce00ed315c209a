"""The policy engine's answer about one prepared action."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from seepient.protocol.frozen import deferred_config


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Verdict(BaseModel):
    """``rule`` names the rule or check that decided (``deny:Read(~/.ssh/**)``, ``path_guard``, ``mode:ask-untrusted``)."""

    model_config = deferred_config(frozen=True, extra="forbid")

    decision: Decision
    rule: str | None = None
    reasons: tuple[str, ...] = ()

    @classmethod
    def allow(cls, rule: str, *reasons: str) -> Verdict:
        return cls(decision=Decision.ALLOW, rule=rule, reasons=reasons)

    @classmethod
    def ask(cls, rule: str, *reasons: str) -> Verdict:
        return cls(decision=Decision.ASK, rule=rule, reasons=reasons)

    @classmethod
    def deny(cls, rule: str, *reasons: str) -> Verdict:
        return cls(decision=Decision.DENY, rule=rule, reasons=reasons)
