"""Request and response bodies of the REST API (they make the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from seepient.protocol import ApprovalRequest, ImagePart

_MAX_PROMPT_CHARS = 200_000
_MAX_IMAGES = 8


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


class ImageInput(_Body):
    """An image for the turn, inline. Its type is judged from its bytes; a declared type must agree."""

    data: str = Field(..., description="the image's bytes, base64-encoded (PNG, JPEG, GIF or WebP)")
    media_type: str | None = Field(None, max_length=40, description="optional; must match the bytes")

    def to_part(self) -> ImagePart:
        try:
            raw = ImagePart(media_type=self.media_type or "image/png", data=self.data).decoded()
            part = ImagePart.from_bytes(raw)
        except ValueError as exc:
            raise ValueError(f"image: {exc}") from None
        if self.media_type is not None and self.media_type != part.media_type:
            raise ValueError(f"image: declared {self.media_type} but the bytes are {part.media_type}")
        return part


class PostMessage(_Body):
    _parts: tuple[ImagePart, ...] = PrivateAttr(default=())
    prompt: str = Field(..., min_length=1, max_length=_MAX_PROMPT_CHARS)
    images: list[ImageInput] = Field(
        default_factory=list,
        max_length=_MAX_IMAGES,
        description="images for this turn; the turn then goes to the vision route",
    )
    plan: bool = Field(
        False,
        description="a planning turn on the plan route: only read-only tools run and the reply is the plan; "
        "a following ordinary message carries it out",
    )

    @model_validator(mode="after")
    def _images_are_images(self) -> PostMessage:
        self._parts = tuple(image.to_part() for image in self.images)
        return self

    def image_parts(self) -> tuple[ImagePart, ...]:
        return self._parts


class TurnAccepted(BaseModel):
    turn_id: str


class TurnReply(BaseModel):
    turn_id: str
    reason: str
    text: str
    steps: int
    error: str | None = None


class ApprovalAnswer(_Body):
    decision: Literal["approve_once", "approve_session", "approve_project", "reject", "reject_session"]
    scope: str | None = Field(
        None, max_length=40, description="for approve_session and reject_session: the offered scope kind"
    )
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
    sessions_loaded: int = Field(0, description="sessions held in memory now (idle ones are unloaded)")
