"""Prepared actions: the checked, approvable and auditable form of every effect a model asks for.

Approvals and execution bind to ``digest``, the SHA-256 of the RFC 8785 canonical JSON of the payload,
so an action that changes after approval no longer matches what a person agreed to.
"""

from __future__ import annotations

import hashlib
import uuid
import weakref
from enum import StrEnum
from typing import Annotated, Any, Literal, assert_never

import rfc8785
from pydantic import BaseModel, Field, computed_field, model_serializer, model_validator

from seepient.protocol.frozen import FrozenModel


def _left_out_while_false(flag: str) -> Any:
    """A serializer for a payload that gained the boolean ``flag`` after its first release: while the flag is
    false the payload serialises as before the flag existed, so its digest is unchanged (a change that keeps
    its file, a foreground command)."""

    @model_serializer(mode="wrap")
    def _without_flag(self: BaseModel, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and not getattr(self, flag):
            data.pop(flag, None)
        return data

    return _without_flag


class ActionKind(StrEnum):
    READ = "read"
    FILE_CHANGE = "file_change"
    SHELL = "shell"
    FETCH = "fetch"
    MCP = "mcp"
    AGENT = "agent"
    STATE = "state"
    """A change to the session's own state (its todo list): nothing on the host is read or written."""
    WORKTREE = "worktree"
    PROCESS = "process"


class Capability(StrEnum):
    NETWORK = "network"
    WRITE_WORKSPACE = "write_workspace"
    WRITE_OUTSIDE = "write_outside"
    PROCESS_CONTROL = "process_control"
    PRIVILEGE = "privilege"
    DESTRUCTIVE = "destructive"


ReadOperation = Literal["read_file", "glob", "grep", "lsp", "notebook_read"]


class ReadAction(FrozenModel):
    """A read-only look at the host: reading a file, listing by glob, searching by regex.

    ``paths`` are the resolved absolute paths the read touches (the root for glob and grep), so
    policy can check each of them; ``params`` carries the operation's own arguments.
    """

    type: Literal["read"] = "read"
    operation: ReadOperation
    paths: tuple[str, ...]
    params: dict[str, Any] = Field(default_factory=dict)


class EditBlock(FrozenModel):
    """Replace the exact text ``search`` (which must occur exactly once unless ``replace_all``)."""

    search: str
    replace: str
    replace_all: bool = False


class FileChange(FrozenModel):
    """A change to one file, bound to the content it was prepared against.

    ``path`` is workspace-relative; ``pre_image_sha256`` is the SHA-256 of the file's bytes when the
    action was prepared, or null when the file must not exist. Exactly one of ``edits`` and
    ``new_content`` is set, or neither when ``delete`` removes the file (which then must exist). ``diff``
    is for display only and is not trusted by the committer.
    """

    type: Literal["file_change"] = "file_change"
    path: str
    pre_image_sha256: str | None
    edits: tuple[EditBlock, ...] | None = None
    new_content: str | None = None
    diff: str = ""
    delete: bool = False

    def model_post_init(self, __context: Any) -> None:
        if self.delete:
            if self.edits is not None or self.new_content is not None or self.pre_image_sha256 is None:
                raise ValueError(
                    "a FileChange that deletes carries a pre-image and neither edits nor new_content"
                )
        elif (self.edits is None) == (self.new_content is None):
            raise ValueError("a FileChange carries either edits or new_content, not both and not neither")

    _omit_no_delete = _left_out_while_false("delete")


class FileChangeSet(FrozenModel):
    """Several file changes committed all or nothing (``apply_patch``): one ``FileChange`` per path, a
    move being the deletion of the old path plus the creation (or overwrite) of the new one."""

    type: Literal["file_change_set"] = "file_change_set"
    changes: tuple[FileChange, ...] = Field(min_length=1)

    def model_post_init(self, __context: Any) -> None:
        paths = [change.path for change in self.changes]
        if len(set(paths)) != len(paths):
            raise ValueError("a FileChangeSet names each path at most once")


class Redirection(FrozenModel):
    """A shell redirection such as ``> out.txt`` or ``2>&1``; ``target`` is the word after the operator."""

    operator: str
    target: str
    fd: int | None = None


class SimpleCommand(FrozenModel):
    """One simple command out of a command line: its argv, its binary and its redirections."""

    argv: tuple[str, ...]
    binary: str
    redirections: tuple[Redirection, ...] = ()


class ShellCommand(FrozenModel):
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
    background: bool = False
    """Start the command and return at once with a process id; ``timeout_ms`` is then its lifetime limit,
    0 for none (it lives until killed or the session ends)."""

    _omit_foreground = _left_out_while_false("background")


class ProcessControl(FrozenModel):
    """Reading the output of, or killing, a background process this session started (``bg_…`` id)."""

    type: Literal["process_control"] = "process_control"
    operation: Literal["output", "kill"]
    process_id: str


class FetchRequest(FrozenModel):
    type: Literal["fetch"] = "fetch"
    url: str
    method: Literal["GET", "HEAD"] = "GET"


class WorktreeCommand(FrozenModel):
    """A git worktree operation, run as the exact ``argv`` (no shell) inside the sandbox at ``cwd``.

    ``path`` is the worktree's absolute directory (``<workspace>/.seepient/worktrees/<name>``) for create and
    remove; ``branch`` the branch a new worktree checks out and ``base`` the commit it starts from.
    """

    type: Literal["worktree"] = "worktree"
    operation: Literal["create", "list", "remove"]
    argv: tuple[str, ...]
    cwd: str
    name: str | None = None
    path: str | None = None
    branch: str | None = None
    base: str | None = None
    force: bool = False
    timeout_ms: int = 120_000


class AgentTask(FrozenModel):
    """Start a sub-agent: a child session that works on ``task`` with ``tools`` (a subset of its parent's)
    in consent ``mode`` (never looser than the parent's), in ``workspace`` (the parent's, or a worktree)."""

    type: Literal["agent"] = "agent"
    task: str
    tools: tuple[str, ...]
    mode: str
    workspace: str
    worktree: str | None = None
    depth: int
    parent_session_id: str


class MemoryAction(FrozenModel):
    """One operation of the ``memory`` tool on the agent's own notes, kept under ``$SEEPIENT_HOME/memory``.

    ``path`` (and ``new_path`` for ``rename``) are relative to the folder of ``scope``; '' is the folder
    itself (``view`` only). Executors map ``scope`` to the folder themselves, so a payload never names an
    absolute location. ``change`` carries what a write commits (its ``path`` equals ``path``);
    ``pre_image_sha256`` binds ``delete`` and ``rename`` to the file's content when they were prepared.
    """

    type: Literal["memory"] = "memory"
    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"]
    scope: Literal["user", "project", "all"]
    """``all`` only for viewing ``/memories`` itself, which lists both folders."""
    path: str
    new_path: str | None = None
    change: FileChange | None = None
    pre_image_sha256: str | None = None
    view_range: tuple[int, int] | None = None


class KnowledgeQuery(FrozenModel):
    """A search of the workspace's knowledge index (built by ``seepient knowledge index``); read only."""

    type: Literal["knowledge_search"] = "knowledge_search"
    query: str
    limit: int = 8


class WebSearchRequest(FrozenModel):
    """A web search through the configured backend. ``url`` is the endpoint that will be contacted (Fetch
    rules apply to its host); ``api_key_env`` names the environment variable holding the key, never its value."""

    type: Literal["web_search"] = "web_search"
    backend: Literal["searxng", "brave", "tavily"]
    url: str
    query: str
    limit: int = 5
    api_key_env: str | None = None


class McpCall(FrozenModel):
    """A call of one tool of a configured MCP server, with arguments already checked against its schema.

    ``read_only_hint`` and ``open_world_hint`` are what the server declared about the tool; policy weighs
    them only in the consent mode, never against a rule.
    """

    type: Literal["mcp"] = "mcp"
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    read_only_hint: bool = False
    open_world_hint: bool = True


class McpServerStart(FrozenModel):
    """Starting a configured MCP server: the exact process (``command``, ``args``, ``cwd``, the *names* of
    the variables added to its environment) or the ``url`` it is reached at; ``source`` is the settings
    layer that configured it (``project`` ones need consent)."""

    type: Literal["mcp_server_start"] = "mcp_server_start"
    server: str
    transport: Literal["stdio", "http"]
    source: Literal["user", "project", "command-line", "managed", "settings"]
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env_names: tuple[str, ...] = ()
    url: str | None = None


class SessionStateChange(FrozenModel):
    """Replace one key of the session's own state (``todos``) with ``value``; the host is not touched."""

    type: Literal["state"] = "state"
    key: str
    value: Any = None


ActionPayload = Annotated[
    ReadAction
    | FileChange
    | FileChangeSet
    | ShellCommand
    | FetchRequest
    | ProcessControl
    | MemoryAction
    | KnowledgeQuery
    | WebSearchRequest
    | WorktreeCommand
    | AgentTask
    | McpCall
    | McpServerStart
    | SessionStateChange,
    Field(discriminator="type"),
]


def action_kind(payload: ActionPayload) -> ActionKind:
    """The kind a payload is, so a tool states what it does once (the payload) and cannot mislabel it."""
    match payload:
        case ReadAction() | KnowledgeQuery():
            return ActionKind.READ
        case MemoryAction():
            return ActionKind.READ if payload.command == "view" else ActionKind.FILE_CHANGE
        case FileChange() | FileChangeSet():
            return ActionKind.FILE_CHANGE
        case ShellCommand():
            return ActionKind.SHELL
        case FetchRequest() | WebSearchRequest():
            return ActionKind.FETCH
        case ProcessControl():
            return ActionKind.PROCESS
        case WorktreeCommand():
            return ActionKind.WORKTREE
        case AgentTask():
            return ActionKind.AGENT
        case McpCall() | McpServerStart():
            return ActionKind.MCP
        case SessionStateChange():
            return ActionKind.STATE
        case _:
            assert_never(payload)


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON-compatible value."""
    return rfc8785.dumps(value)


def payload_digest(payload: BaseModel) -> str:
    return hashlib.sha256(canonical_json(payload.model_dump(mode="json"))).hexdigest()


_DIGESTS: dict[int, tuple[weakref.ref[BaseModel], str]] = {}
_DIGESTS_KEPT = 1024


def _remembered_digest(payload: BaseModel) -> str:
    """``payload_digest``, remembered for the payload object while it lives: a step reads its draft's digest
    four times (approval, the ``ApprovedAction`` check, the intent record, the result), and each
    canonicalisation costs about as much as the step's policy decision. Payloads are frozen, but those holding
    a dict (a read's params, an MCP call's arguments) could be changed in place, so theirs is made afresh."""
    if isinstance(payload, ReadAction | McpCall):
        return payload_digest(payload)
    known = _DIGESTS.get(id(payload))
    if known is not None and known[0]() is payload:
        return known[1]
    digest = payload_digest(payload)
    if len(_DIGESTS) >= _DIGESTS_KEPT:
        _DIGESTS.clear()
    _DIGESTS[id(payload)] = (weakref.ref(payload), digest)
    return digest


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


class PreparedActionDraft(FrozenModel):
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
        return _remembered_digest(self.payload)
