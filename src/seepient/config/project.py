"""A project's own settings file (``<workspace>/.seepient/settings.json``): read without following links, hashed
exactly as read, and validated through the project schema — the short list of keys a project file may hold.

What each of those keys may change, before and after the user trusts the project, is ``project_effect``'s job;
this module only says what the file says. Every key is accepted in each spelling the user's schema accepts
(``baseUrl`` and ``base_url``), a file giving both spellings of one key is refused, and so is any key not
listed here, with the file and the key named: a typo in a deny rule must not pass silently.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from seepient.config.paths import SeepientPaths
from seepient.config.sections import (
    MCP_SERVER_NAME,
    CircuitBreakerSettings,
    LspServerSettings,
    McpServerSettings,
    PriceSettings,
    RetrySettings,
    RouteSettings,
    WorkerLimitSettings,
    check_route_keys,
)
from seepient.config.settings import SettingsError, normalise_mode
from seepient.config.unknown_keys import closest_key
from seepient.protocol.errors import ConfigurationError
from seepient.protocol.frozen import deferred_config

MAX_PROJECT_SETTINGS_BYTES = 1 << 20
"""A settings file is a few kilobytes; anything near this is not one."""
ABSENT = "absent"
"""The hash a missing project settings file has: trusting a workspace without one trusts exactly that."""


@dataclass(frozen=True)
class ProjectFile:
    """The project settings file as read once: its bytes (``None`` when there is none), their SHA-256 (or
    ``ABSENT``) and the JSON object they hold. Trust is decided on ``sha256``, so what was hashed is what
    applies: a file that changes after it was shown to the user no longer matches."""

    path: Path
    content: bytes | None
    sha256: str
    data: dict[str, Any]

    @property
    def exists(self) -> bool:
        return self.content is not None


def read_project_file(workspace: Path) -> ProjectFile:
    """Read ``workspace``'s project settings without following a symbolic link at ``.seepient`` or at the file.

    A linked ``.seepient/`` or ``settings.json`` is refused (``SettingsError``): its content would come from
    wherever the link points, outside what the user looked at. So is anything that is not a regular file of
    at most ``MAX_PROJECT_SETTINGS_BYTES`` (a FIFO would hang the read), invalid UTF-8 or JSON, a JSON value
    that is not an object, or an object giving one key twice (a reader sees the first, JSON keeps the last).
    """
    path = SeepientPaths.project_settings(workspace)
    content = _read_bytes(workspace, path)
    if content is None:
        return ProjectFile(path=path, content=None, sha256=ABSENT, data={})
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise SettingsError(f"{path}: the key {exc.key!r} is given twice in one object; keep one") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: settings must be a JSON object, not {type(data).__name__}")
    return ProjectFile(path=path, content=content, sha256=hashlib.sha256(content).hexdigest(), data=data)


class _DuplicateKey(ConfigurationError, ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _read_bytes(workspace: Path, path: Path) -> bytes | None:
    """The file's bytes, opened step by step from the workspace with no link followed; ``None`` if absent."""
    folder = path.parent
    try:
        workspace_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # no workspace, no project settings: whoever needs the folder says it is missing
    except OSError as exc:
        raise SettingsError(f"{workspace}: cannot open the workspace ({exc.strerror})") from None
    try:
        try:
            folder_fd = os.open(folder.name, _OPEN_DIR, dir_fd=workspace_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refusal(folder, exc, "folder") from None
        try:
            try:
                fd = os.open(path.name, _OPEN_FILE, dir_fd=folder_fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise _refusal(path, exc, "file") from None
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise SettingsError(
                        f"{path} is not a regular file; Seepient reads project settings only from one"
                    )
                if info.st_size > MAX_PROJECT_SETTINGS_BYTES:
                    raise SettingsError(
                        f"{path} is {info.st_size} bytes; project settings are limited to "
                        f"{MAX_PROJECT_SETTINGS_BYTES} bytes"
                    )
                chunks: list[bytes] = []
                size = 0
                while chunk := os.read(fd, 65536):
                    size += len(chunk)
                    if size > MAX_PROJECT_SETTINGS_BYTES:
                        raise SettingsError(f"{path} grew past {MAX_PROJECT_SETTINGS_BYTES} bytes while read")
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                os.close(fd)
        finally:
            os.close(folder_fd)
    finally:
        os.close(workspace_fd)


def _refusal(path: Path, exc: OSError, what: Literal["folder", "file"]) -> SettingsError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and path.is_symlink():
        target = os.readlink(path)
        return SettingsError(
            f"{path} is a symbolic link (to {target}); Seepient reads project settings only from a real "
            f"{'folder' if what == 'folder' else 'file'} inside the workspace, never through a link: replace "
            "the link with what it points to"
        )
    if exc.errno == errno.ENOTDIR:
        return SettingsError(
            f"{path} is not a folder; Seepient keeps the project's settings in a folder there"
        )
    return SettingsError(f"{path}: cannot read the project settings ({exc.strerror})")


# -- the project schema --------------------------------------------------------------------------------------


class _Strict(BaseModel):
    """Unknown keys are refused, and a key may be spelled either way but not both ways at once."""

    model_config = deferred_config(extra="forbid", populate_by_name=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                if field.alias and field.alias != name and field.alias in data and name in data:
                    raise ValueError(
                        f"both {field.alias!r} and {name!r} are given; they are one key, keep one"
                    )
        return data


_STRICT = deferred_config(extra="forbid", populate_by_name=True, frozen=True)


class ProjectRoute(_Strict, RouteSettings):
    model_config = _STRICT


class ProjectRetry(_Strict, RetrySettings):
    model_config = _STRICT


class ProjectCircuitBreaker(_Strict, CircuitBreakerSettings):
    model_config = _STRICT


class ProjectPrice(_Strict, PriceSettings):
    model_config = _STRICT


class ProjectWorkerLimits(_Strict, WorkerLimitSettings):
    model_config = _STRICT


class ProjectMcpServer(_Strict, McpServerSettings):
    model_config = _STRICT


class ProjectLspServer(_Strict, LspServerSettings):
    model_config = _STRICT


class ProjectPermissions(_Strict):
    allow: list[str] | None = None
    ask: list[str] | None = None
    deny: list[str] | None = None
    mode: str | None = None

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, mode: str | None) -> str | None:
        if mode is None:
            return None
        try:
            return normalise_mode(mode)
        except SettingsError as exc:
            raise ValueError(str(exc)) from None


class ProjectModels(_Strict):
    default: str | None = None
    routes: dict[str, ProjectRoute] | None = None
    retry: ProjectRetry | None = None
    circuit_breaker: ProjectCircuitBreaker | None = Field(default=None, alias="circuitBreaker")
    prices: dict[str, ProjectPrice] | None = None
    max_output_tokens: int | dict[str, int] | None = Field(default=None, alias="maxOutputTokens")
    providers: Any = None

    @field_validator("routes")
    @classmethod
    def _route_keys(cls, routes: dict[str, ProjectRoute] | None) -> dict[str, ProjectRoute] | None:
        return routes if routes is None else check_route_keys(routes)


class ProjectExecution(_Strict):
    sandbox: Literal["auto", "off"] | None = None
    default_timeout_ms: int | None = Field(default=None, alias="defaultTimeoutMs", gt=0)
    max_output_bytes: int | None = Field(default=None, alias="maxOutputBytes", gt=0)
    max_background_processes: int | None = Field(default=None, alias="maxBackgroundProcesses", ge=1, le=64)
    background_buffer_bytes: int | None = Field(default=None, alias="backgroundBufferBytes", ge=1024)
    worker_limits: ProjectWorkerLimits | None = Field(default=None, alias="workerLimits")
    backend: Any = None
    sandbox_readable: Any = Field(default=None, alias="sandboxReadable")
    sandbox_hidden: Any = Field(default=None, alias="sandboxHidden")
    scheduler_endpoint: Any = Field(default=None, alias="schedulerEndpoint")
    scheduler_endpoints: Any = Field(default=None, alias="schedulerEndpoints")
    scheduler_breaker: Any = Field(default=None, alias="schedulerBreaker")
    worker_image: Any = Field(default=None, alias="workerImage")
    mtls: Any = None
    dispatch_signing_key_path: Any = Field(default=None, alias="dispatchSigningKeyPath")
    result_verify_key_path: Any = Field(default=None, alias="resultVerifyKeyPath")
    tenant: Any = None


class ProjectRuntime(_Strict):
    max_steps: int | None = Field(default=None, alias="maxSteps", gt=0)
    max_parallel_tools: int | None = Field(default=None, alias="maxParallelTools", ge=1, le=64)
    turn_token_budget: int | None = Field(default=None, alias="turnTokenBudget", ge=1_000)
    turn_timeout_ms: int | None = Field(default=None, alias="turnTimeoutMs", ge=1_000)
    warm_start: Any = Field(default=None, alias="warmStart")


class ProjectContext(_Strict):
    window_tokens: int | None = Field(default=None, alias="windowTokens", ge=1_000)
    compact_at: float | None = Field(default=None, alias="compactAt", gt=0.1, le=1.0)
    keep_recent_turns: int | None = Field(default=None, alias="keepRecentTurns", ge=1)
    rule_file_max_chars: int | None = Field(default=None, alias="ruleFileMaxChars", gt=0)
    rules_max_chars: int | None = Field(default=None, alias="rulesMaxChars", gt=0)
    skill_match_threshold: float | None = Field(default=None, alias="skillMatchThreshold", ge=0.0, le=1.0)
    memory_max_chars: int | None = Field(default=None, alias="memoryMaxChars", ge=0)


class ProjectLsp(_Strict):
    servers: dict[str, ProjectLspServer | None] | None = None
    diagnostics_after_edit: bool | None = Field(default=None, alias="diagnosticsAfterEdit")
    diagnostics_wait_ms: int | None = Field(default=None, alias="diagnosticsWaitMs", ge=0, le=60_000)
    request_timeout_ms: int | None = Field(default=None, alias="requestTimeoutMs", gt=0, le=600_000)


class ProjectSubagents(_Strict):
    max_depth: int | None = Field(default=None, alias="maxDepth", ge=0, le=5)
    max_concurrent: int | None = Field(default=None, alias="maxConcurrent", ge=1, le=16)


class ProjectSettings(_Strict):
    """Every key a project file may hold. Keys typed ``Any`` are known only to be refused (``project_effect``
    never applies them, whatever they say), so their content is not validated."""

    permissions: ProjectPermissions | None = None
    models: ProjectModels | None = None
    execution: ProjectExecution | None = None
    runtime: ProjectRuntime | None = None
    context: ProjectContext | None = None
    lsp: ProjectLsp | None = None
    subagents: ProjectSubagents | None = None
    mcp_servers: dict[str, ProjectMcpServer] | None = Field(default=None, alias="mcpServers")
    instructions: str | list[str] | None = None
    hooks: Any = None
    net: Any = None
    web_search: Any = Field(default=None, alias="webSearch")
    enabled_project_mcp_servers: Any = Field(default=None, alias="enabledProjectMcpServers")
    knowledge: Any = None
    audit: Any = None
    telemetry: Any = None

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_server_names(
        cls, servers: dict[str, ProjectMcpServer] | None
    ) -> dict[str, ProjectMcpServer] | None:
        for name in servers or {}:
            if not MCP_SERVER_NAME.match(name) or "__" in name:
                raise ValueError(
                    f"MCP server name {name!r} must be letters, digits, '_' or '-' without '__' "
                    "(its tools are named mcp__SERVER__TOOL)"
                )
        return servers


def parse_project_settings(file: ProjectFile) -> ProjectSettings:
    """``file``'s object through the project schema; an error names the file and the key."""
    try:
        return ProjectSettings.model_validate(file.data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "extra_forbidden":
            allowed = _keys_here(first["loc"])
            meant = closest_key(str(first["loc"][-1]), allowed)
            hint = f"did you mean {meant!r}? " if meant else ""
            raise SettingsError(
                f"{file.path}: {where}: not a key a project's settings may hold; {hint}the keys here are "
                f"{', '.join(allowed)} (docs/security.md, Untrusted projects, lists what each does)"
            ) from None
        message = first["msg"].removeprefix("Value error, ")
        raise SettingsError(f"{file.path}: {where or '(top level)'}: {message}") from None


def _keys_here(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the schema has where ``loc`` points, for the error message."""
    model: type[BaseModel] = ProjectSettings
    for part in loc[:-1]:
        field = next(
            (f for n, f in model.model_fields.items() if part in (n, f.alias)),
            None,
        )
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            # A name inside a dict of entries (a route, a server): the entry's model is one level further.
            continue
        model = inner
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The project model an annotation holds (``X | None``, ``dict[str, X]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
