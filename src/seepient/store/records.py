"""What the store hands back: plain frozen records of tokens, sessions, turns, events and pending approvals,
made from the database rows, so nothing above the store holds a SQLAlchemy object."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from seepient.store.tables import SessionRow, TurnRow

_RecordT = TypeVar("_RecordT")


@dataclass(frozen=True)
class IssuedToken:
    """A new bearer token; ``secret`` is the whole token and is shown once, never stored."""

    token_id: str
    principal: str
    secret: str


@dataclass(frozen=True)
class TokenInfo:
    """What is kept of a token (never its secret): for listing and revoking."""

    token_id: str
    principal: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def state(self, now: datetime | None = None) -> str:
        """``active``, ``expired`` or ``revoked``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or datetime.now(UTC)):
            return "expired"
        return "active"


@dataclass(frozen=True)
class SessionRecord:
    id: str
    principal: str
    workspace: str
    model: str
    mode: str
    status: str
    last_seq: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class TurnRecord:
    id: str
    session_id: str
    number: int
    prompt: str
    status: str
    reply: str
    reason: str | None


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended, as the store records it: the turn's status, reason and reply, and the session's whole
    history after it (which replaces the stored one)."""

    session_id: str
    turn_id: str
    status: str
    reason: str
    reply: str
    messages: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class TurnClaim:
    """The answer to ``claim_turn``: whether this replica may run a turn now, who runs one otherwise, and the
    session's last stored event."""

    claimed: bool
    owner: str | None
    last_seq: int


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    type: str
    data: str
    """The event's JSON text."""


@dataclass(frozen=True)
class PendingApproval:
    request_id: str
    session_id: str
    body: dict[str, Any]
    status: str
    expires_at: datetime
    answer: dict[str, Any] | None = None


def session_record(row: SessionRow) -> SessionRecord:
    return _record(SessionRecord, row)


def turn_record(row: TurnRow) -> TurnRecord:
    return _record(TurnRecord, row)


def _record(cls: type[_RecordT], row: object) -> _RecordT:
    # A record's fields are named as the row's columns; only the timestamps need their zone put back.
    values = {f.name: getattr(row, f.name) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{name: aware(v) if isinstance(v, datetime) else v for name, v in values.items()})


def aware(value: datetime) -> datetime:
    # SQLite hands timestamps back without a zone although they were written in UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
