"""The audit records: what one prepared action asked for, how policy and a person decided, and what happened.

An action that runs is written ahead (DESIGN §4 invariants 5 and 13): an ``intent`` record, durable before
its effect, then at most one ``outcome`` record bound to it by the action's id and digest. An action that
never runs (denied by policy, rejected by a person) is one ``action`` record, as are the records of logs
written before intents existed. The log in ``audit.log`` chains them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, Field, field_validator, model_validator

from seepient.protocol import ApprovalResponse, PreparedActionDraft, Verdict
from seepient.protocol.frozen import deferred_config

Surface = Literal["cli", "tui", "server", "sdk", "acp"]
OutcomeStatus = Literal["ok", "error", "denied", "rejected", "interrupted"]
FileStateName = Literal["new", "old", "neither", "unreadable"]
"""What a file named by an interrupted change holds: the change's new content (or, for a deletion, no file),
its pre-image (or, for a new file, still no file), something else, or nothing that could be read."""

#: ``detail`` is a one-line summary, not the output: the output is bound by ``output_sha256`` instead.
DETAIL_MAX_CHARS = 500

#: Keys the log itself puts on every line; a record may not carry them.
RESERVED_KEYS = frozenset({"seq", "prev", "hash"})

INTENT_TYPE = "intent"
OUTCOME_TYPE = "outcome"
ACTION_TYPE = "action"

_HEX64 = r"^[0-9a-f]{64}$"


def output_digest(output: str | bytes) -> str:
    """SHA-256 of what an action produced (text is hashed as UTF-8)."""
    data = output if isinstance(output, bytes) else output.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


class AuditOutcome(BaseModel):
    """What happened: ``denied`` by policy, ``rejected`` by a person, or run with an ``ok``/``error`` result."""

    model_config = deferred_config(frozen=True, extra="forbid")

    status: OutcomeStatus
    exit_code: int | None = None
    detail: str = ""
    output_sha256: str | None = Field(default=None, pattern=_HEX64)

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


class SessionRecord(BaseModel):
    """What every record of a session's action carries: when, which session, and who drove it."""

    model_config = deferred_config(frozen=True, extra="forbid")

    type: str
    """Each kind of record names itself first on its line (a subclass narrows it to one value)."""
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    session_id: str
    principal: str | None = None
    """Who drove the session on a multi-user surface (the server's token principal); absent elsewhere."""
    parent_session_id: str | None = None
    """For an action of a sub-agent: the session that started it (``session_id`` is the sub-agent's own).
    Left out of the stored record when absent, so records of top-level sessions read as before."""

    @field_validator("timestamp")
    @classmethod
    def _utc_timestamp(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("timestamp needs a time zone (use datetime.now(UTC))")
        return value.astimezone(UTC)

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in the log (an action includes its digest); absent optional parts are left out."""
        data = self.model_dump(mode="json")
        for key in self._omitted_when_empty:
            if data.get(key) in (None, [], ()):
                data.pop(key, None)
        return data

    _omitted_when_empty: ClassVar[tuple[str, ...]] = ("parent_session_id",)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Any:
        """Read a record back from a log line's object, ignoring the chain fields."""
        return cls.model_validate({k: v for k, v in entry.items() if k not in RESERVED_KEYS})


class _DecidedAction(SessionRecord):
    """What the records naming a whole action carry after the session's part: the surface and model that asked,
    the action, and how policy and (when it asked) a person decided on it. The answer must be for this action's
    digest."""

    surface: Surface
    model: str
    action: PreparedActionDraft
    verdict: Verdict
    approval: ApprovalResponse | None = None

    @model_validator(mode="after")
    def _approval_binds_to_action(self) -> Self:
        # An answer given for another digest did not approve this action; recording it as if it had would
        # make the log vouch for something nobody agreed to.
        approval = self.approval
        if approval is not None and approval.digest != self.action.digest:
            raise ValueError(
                f"approval is for digest {approval.digest}, but the action's digest is {self.action.digest}"
            )
        return self


class AuditRecord(_DecidedAction):
    """One record for an action that did not run (denied or rejected), or a whole action of an older log.
    ``approval`` is null when policy allowed or denied without asking."""

    type: Literal["action"] = "action"
    outcome: AuditOutcome


class FileImages(BaseModel):
    """One file an intent may change: the content it was prepared against and the content it will hold.

    ``pre_image_sha256`` null: the file must not exist yet. ``post_image_sha256`` null: not known when the
    intent was written (the file no longer held its pre-image, so the commit will refuse to touch it).
    """

    model_config = deferred_config(frozen=True, extra="forbid")

    path: str
    pre_image_sha256: str | None = Field(default=None, pattern=_HEX64)
    post_image_sha256: str | None = Field(default=None, pattern=_HEX64)
    delete: bool = False


class Writer(BaseModel):
    """The process that wrote an intent, precisely enough to tell later whether it still runs."""

    model_config = deferred_config(frozen=True, extra="forbid")

    host: str
    pid: int
    boot_id: str | None = None
    """The kernel's boot id: a process of an earlier boot is gone, whatever its pid now names."""
    started: int | None = None
    """The process's start time in clock ticks since boot, so a reused pid is not taken for the writer."""


class IntentRecord(_DecidedAction):
    """Written, and fsynced, before an approved action is handed to execution."""

    type: Literal["intent"] = "intent"
    workspace: str
    """The workspace the action's relative paths are in (absolute)."""
    writer: Writer
    files: tuple[FileImages, ...] = ()
    """For a file change or a set of them: every file it may change, with its pre- and post-image."""

    _omitted_when_empty: ClassVar[tuple[str, ...]] = ("parent_session_id", "files")


class FileState(BaseModel):
    """What one file of an interrupted change held when its outcome was recorded."""

    model_config = deferred_config(frozen=True, extra="forbid")

    path: str
    state: FileStateName


class OutcomeRecord(SessionRecord):
    """What happened to an action whose intent is in the log; bound to it by ``action_id`` and ``digest``."""

    type: Literal["outcome"] = "outcome"
    action_id: str
    digest: str = Field(pattern=_HEX64)
    outcome: AuditOutcome
    files: tuple[FileState, ...] = ()
    """For an interrupted file change: what each of its files held when this record was written."""
    recovered_by: str | None = None
    """Set when the process that ran the action died: the session that found its intent open and closed it."""

    _omitted_when_empty: ClassVar[tuple[str, ...]] = ("parent_session_id", "files", "recovered_by")

    @classmethod
    def for_intent(
        cls,
        intent: IntentRecord,
        outcome: AuditOutcome,
        *,
        files: tuple[FileState, ...] = (),
        recovered_by: str | None = None,
    ) -> OutcomeRecord:
        return cls(
            session_id=intent.session_id,
            principal=intent.principal,
            parent_session_id=intent.parent_session_id,
            action_id=intent.action.id,
            digest=intent.action.digest,
            outcome=outcome,
            files=files,
            recovered_by=recovered_by,
        )


RECORD_TYPES: dict[str, type[SessionRecord]] = {
    ACTION_TYPE: AuditRecord,
    INTENT_TYPE: IntentRecord,
    OUTCOME_TYPE: OutcomeRecord,
}
"""The record types whose shape the log checks before writing them; other types pass through as given."""
