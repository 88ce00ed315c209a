"""Prepared actions: the checked, approvable and auditable form of every effect a model asks for.

Approvals and execution bind to ``digest``, the SHA-256 of the RFC 8785 canonical JSON of the payload,
so an action that changes after approval no longer matches what a person agreed to.
"""

from __future__ import annotations

import hashlib
import uuid
from enum import StrEnum
from typing import Annotated, Any, Literal

import rfc8785
from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ActionKind(StrEnum):
    READ = "read"
    FILE_CHANGE = "file_change"
    SHELL = "shell"
    FETCH = "fetch"
    MCP = "mcp"
    AGENT = "agent"


class Capability(StrEnum):
    NETWORK = "network"
    WRITE_WORKSPACE = "write_workspace"
    WRITE_OUTSIDE = "write_outside"
    PROCESS_CONTROL = "process_control"
    PRIVILEGE = "privilege"
    DESTRUCTIVE = "destructive"


class ReadAction(_Frozen):
    """A read-only look at the host: reading a file, listing by glob, searching by regex.

    ``paths`` are the resolved absolute paths the read touches (the root for glob and grep), so
    policy can check each of them; ``params`` carries the operation's own arguments.
    """

    type: Literal["read"] = "read"
    operation: Literal["read_file", "glob", "grep"]
    paths: tuple[str, ...]
    params: dict[str, Any] = Field(default_factory=dict)


class EditBlock(_Frozen):
    """Replace the exact text ``search`` (which must occur exactly once unless ``replace_all``)."""

    search: str
    replace: str
    replace_all: bool = False


class FileChange(_Frozen):
    """A change to one file, bound to the content it was prepared against.

    ``path`` is workspace-relative; ``pre_image_sha256`` is the SHA-256 of the file's bytes when the
    action was prepared, or null when the file must not exist. Exactly one of ``edits`` and
    ``new_content`` is set. ``diff`` is for display only and is not trusted by the committer.
    """

    type: Literal["file_change"] = "file_change"
    path: str
    pre_image_sha256: str | None
    edits: tuple[EditBlock, ...] | None = None
    new_content: str | None = None
    diff: str = ""

    def model_post_init(self, __context: Any) -> None:
        if (self.edits is None) == (self.new_content is None):
            raise ValueError("a FileChange carries either edits or new_content, not both and not neither")


class Redirection(_Frozen):
    """A shell redirection such as ``> out.txt`` or ``2>&1``; ``target`` is the word after the operator."""

    operator: str
    target: str
    fd: int | None = None


class SimpleCommand(_Frozen):
    """One simple command out of a command line: its argv, its binary and its redirections."""

    argv: tuple[str, ...]
    binary: str
    redirections: tuple[Redirection, ...] = ()


class ShellCommand(_Frozen):
    """A shell command line with what analysis found in it.

    ``parsed`` is false when the analyser could not account for every part of the line; policy never
    allows such a line without asking.
    """

    type: Literal["shell"] = "shell"
    command: str
    commands: tuple[SimpleCommand, ...] = ()
    capabilities: tuple[Capability, ...] = ()
    parsed: bool = True
    cwd: str
    timeout_ms: int = 120_000


class FetchRequest(_Frozen):
    type: Literal["fetch"] = "fetch"
    url: str
    method: Literal["GET", "HEAD"] = "GET"


ActionPayload = Annotated[ReadAction | FileChange | ShellCommand | FetchRequest, Field(discriminator="type")]


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON-compatible value."""
    return rfc8785.dumps(value)


def payload_digest(payload: BaseModel) -> str:
    return hashlib.sha256(canonical_json(payload.model_dump(mode="json"))).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


class PreparedActionDraft(_Frozen):
    """What a tool call would do, fully described before anything happens."""

    id: str = Field(default_factory=lambda: new_id("act"))
    session_id: str
    call_id: str
    tool: str
    kind: ActionKind
    payload: ActionPayload
    read_only: bool
    summary: str

    @model_validator(mode="wrap")
    @classmethod
    def _check_stated_digest(cls, data: Any, handler: Any) -> PreparedActionDraft:
        # A serialised draft carries its digest; accept it only if it still matches the payload,
        # so a draft edited in transit cannot keep the digest a person approved.
        stated = None
        if isinstance(data, dict) and "digest" in data:
            data = dict(data)
            stated = data.pop("digest")
        draft = handler(data)
        if stated is not None and stated != draft.digest:
            raise ValueError("digest does not match the payload")
        return draft

    @computed_field  # type: ignore[prop-decorator]
    @property
    def digest(self) -> str:
        return payload_digest(self.payload)
