"""The audit record: what one prepared action asked for, how policy and a person decided, and what happened.

One record is appended per action (DESIGN §4 invariant 5); the log in ``audit.log`` chains them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seepient.protocol import ApprovalResponse, PreparedActionDraft, Verdict

Surface = Literal["cli", "tui", "server", "sdk"]
OutcomeStatus = Literal["ok", "error", "denied", "rejected", "interrupted"]

#: ``detail`` is a one-line summary, not the output: the output is bound by ``output_sha256`` instead.
DETAIL_MAX_CHARS = 500

#: Keys the log itself puts on every line; a record may not carry them.
RESERVED_KEYS = frozenset({"seq", "prev", "hash"})


def output_digest(output: str | bytes) -> str:
    """SHA-256 of what an action produced (text is hashed as UTF-8)."""
    data = output if isinstance(output, bytes) else output.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


class AuditOutcome(BaseModel):
    """What happened: ``denied`` by policy, ``rejected`` by a person, or run with an ``ok``/``error`` result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: OutcomeStatus
    exit_code: int | None = None
    detail: str = ""
    output_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @field_validator("detail")
    @classmethod
    def _clip_detail(cls, value: str) -> str:
        # Details often quote an error or a stderr line; a long or undecodable one must never stop the
        # record from being written (an action without its record breaks invariant 5), so it is clipped
        # and made canonicalisable (RFC 8785 refuses lone surrogates) rather than refused.
        clean = value.encode("utf-8", "replace").decode("utf-8")
        if len(clean) > DETAIL_MAX_CHARS:
            clean = clean[: DETAIL_MAX_CHARS - 1] + "…"
        return clean

    @classmethod
    def with_output(
        cls, status: OutcomeStatus, output: str | bytes, *, exit_code: int | None = None, detail: str = ""
    ) -> AuditOutcome:
        """An outcome bound to the exact output the model was given."""
        return cls(status=status, exit_code=exit_code, detail=detail, output_sha256=output_digest(output))


class AuditRecord(BaseModel):
    """One action's audit record. ``approval`` is null when policy allowed or denied without asking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["action"] = "action"
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    surface: Surface
    session_id: str
    model: str
    principal: str | None = None
    """Who drove the session on a multi-user surface (the server's token principal); absent elsewhere."""
    parent_session_id: str | None = None
    """For an action of a sub-agent: the session that started it (``session_id`` is the sub-agent's own).
    Left out of the stored record when absent, so records of top-level sessions read as before."""
    action: PreparedActionDraft
    verdict: Verdict
    approval: ApprovalResponse | None = None
    outcome: AuditOutcome

    @field_validator("timestamp")
    @classmethod
    def _utc_timestamp(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("timestamp needs a time zone (use datetime.now(UTC))")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _approval_binds_to_action(self) -> AuditRecord:
        # An answer given for another digest did not approve this action; recording it as if it had would
        # make the log vouch for something nobody agreed to.
        if self.approval is not None and self.approval.digest != self.action.digest:
            raise ValueError(
                f"approval is for digest {self.approval.digest}, but the action's digest is {self.action.digest}"
            )
        return self

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in the log (the action includes its digest)."""
        data = self.model_dump(mode="json")
        if data.get("parent_session_id") is None:
            data.pop("parent_session_id", None)
        return data

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> AuditRecord:
        """Read a record back from a log line's object, ignoring the chain fields."""
        return cls.model_validate({k: v for k, v in entry.items() if k not in RESERVED_KEYS})
