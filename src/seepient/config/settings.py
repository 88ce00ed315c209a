"""The settings schema and its loading: user file < project file < command-line < managed file, merged key by key.

Permission rules are kept per source as well (``PermissionSettings.rule_sources``), so policy can name the
file and position of each rule and apply the precedence managed > command-line > project > user.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from seepient.config.paths import SeepientPaths

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


class ExecutionSettings(_Section):
    backend: Literal["local", "docker-worker"] = "local"
    sandbox: Literal["auto", "off"] = "auto"
    default_timeout_ms: int = Field(default=120_000, alias="defaultTimeoutMs", gt=0)
    max_output_bytes: int = Field(default=1_000_000, alias="maxOutputBytes", gt=0)
    scheduler_endpoint: str | None = Field(default=None, alias="schedulerEndpoint")
    worker_image: str | None = Field(default=None, alias="workerImage")
    mtls: MtlsSettings | None = None


class RuntimeSettings(_Section):
    max_steps: int = Field(default=50, alias="maxSteps", gt=0)


class ContextSettings(_Section):
    """Context assembly: the model's window, when history is compacted, and how rules and skills are capped."""

    window_tokens: int = Field(default=128_000, alias="windowTokens", ge=1_000)
    compact_at: float = Field(default=0.8, alias="compactAt", gt=0.1, le=1.0)
    keep_recent_turns: int = Field(default=2, alias="keepRecentTurns", ge=1)
    rule_file_max_chars: int = Field(default=32_000, alias="ruleFileMaxChars", gt=0)
    rules_max_chars: int = Field(default=96_000, alias="rulesMaxChars", gt=0)
    skill_match_threshold: float = Field(default=0.2, alias="skillMatchThreshold", ge=0.0, le=1.0)


class NetSettings(_Section):
    """Server-side fetches and filtered egress: what may be reached beyond the public internet, explicitly.

    ``allowHosts`` are host names (``*.corp.example`` for subdomains) whose addresses skip the private-range
    check; ``allowRanges`` are CIDR ranges that do; ``allowPorts`` are ports besides 80 and 443.
    """

    allow_hosts: list[str] = Field(default_factory=list, alias="allowHosts")
    allow_ranges: list[str] = Field(default_factory=list, alias="allowRanges")
    allow_ports: list[int] = Field(default_factory=list, alias="allowPorts")


class Settings(_Section):
    """Every key is optional; unknown top-level keys are kept for the issues that add them."""

    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    mcp_servers: dict[str, Any] = Field(default_factory=dict, alias="mcpServers")
    context: ContextSettings = Field(default_factory=ContextSettings)
    instructions: str | list[str] | None = None
    net: NetSettings = Field(default_factory=NetSettings)


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


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; permission lists from every source add up; anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list) and key in ("allow", "ask", "deny"):
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


def load_settings(
    workspace: Path,
    *,
    paths: SeepientPaths | None = None,
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    managed_file: Path | None = None,
) -> Settings:
    """Read user, project, ``--config`` file, flag overrides and the managed file, later ones winning; each is
    validated alone first so an error names the file it came from.

    ``managed_file`` defaults to ``managed_settings_path()``; a missing managed file means no managed settings,
    an unreadable or invalid one stops the run. The returned ``settings.permissions.rule_sources`` keeps
    every source's rules apart, highest precedence first.
    """
    paths = paths or SeepientPaths.from_env()
    managed = managed_file if managed_file is not None else managed_settings_path()
    merged: dict[str, Any] = {}
    files: list[tuple[RuleSourceKind, Path]] = [
        ("user", paths.user_settings),
        ("project", SeepientPaths.project_settings(workspace)),
    ]
    if config_file is not None:
        if not config_file.is_file():
            raise SettingsError(f"{config_file}: no such settings file")
        files.append(("command-line", config_file))
    found: list[RuleSource] = []
    for kind, path in files:
        data = _read_json(path)
        if kind == "project" and data.get("net"):
            # A repository's own settings must not widen what Seepient may reach on the network (an
            # allowRanges of 0.0.0.0/0 in a cloned repo would reopen every SSRF target).
            raise SettingsError(
                f"{path}: net: network allowlists are honoured only in the user settings, the managed "
                "settings or a --config file; move this block there"
            )
        checked = _validate(data, str(path))
        _refuse_managed_only_keys(data, str(path))
        merged = _merge(merged, data)
        found.append(_rule_source(kind, checked.permissions, path=path))
    if overrides:
        checked = _validate(overrides, "command-line flags")
        _refuse_managed_only_keys(overrides, "command-line flags")
        merged = _merge(merged, overrides)
        found.append(_rule_source("command-line", checked.permissions, name="command-line flags"))
    managed_data = _read_json(managed)
    managed_permissions = _validate(managed_data, str(managed)).permissions
    disabled = tuple(
        _managed_mode(mode, f"{managed}: permissions.disabledModes[{index}]")
        for index, mode in enumerate(managed_permissions.disabled_modes)
    )
    merged = _merge(merged, managed_data)
    found.append(_rule_source("managed", managed_permissions, path=managed))
    settings = _validate(merged, "settings")
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
