"""Request and response bodies of the REST API (they make the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seepient.protocol import ApprovalRequest

_MAX_PROMPT_CHARS = 200_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSession(_Body):
    workspace: str = Field(..., max_length=4096, description="absolute path under a root granted to you")
    model: str = Field(
        ..., max_length=4096, description="a model spec the server offers, e.g. replay:/abs/script.yaml"
    )
    mode: str | None = Field(None, max_length=40, description="consent mode, at most your cap")


class SessionView(BaseModel):
    id: str
    workspace: str
    model: str
    mode: str
    status: str
    last_seq: int
    created_at: datetime
    updated_at: datetime


class TurnView(BaseModel):
    id: str
    number: int
    prompt: str
    status: str
    reply: str
    reason: str | None


class SessionDetail(SessionView):
    turns: list[TurnView]
    messages: list[dict[str, Any]]
    pending_approvals: list[ApprovalRequest]


class PostMessage(_Body):
    prompt: str = Field(..., min_length=1, max_length=_MAX_PROMPT_CHARS)


class TurnAccepted(BaseModel):
    turn_id: str


class TurnReply(BaseModel):
    turn_id: str
    reason: str
    text: str
    steps: int
    error: str | None = None


class ApprovalAnswer(_Body):
    decision: Literal["approve_once", "approve_session", "reject"]
    scope: str | None = Field(None, max_length=40, description="for approve_session: the offered scope kind")
    feedback: str | None = Field(None, max_length=20_000, description="told to the model with a rejection")


class ApprovalAnswered(BaseModel):
    request_id: str
    decision: str


class Interrupted(BaseModel):
    interrupted: bool


class ToolView(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
