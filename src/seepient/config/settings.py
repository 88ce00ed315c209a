"""The settings schema and its loading: user file < project file < command-line < managed file, merged key by key.

The sections (one model per top-level key) live in ``sections.py``; this module holds the whole and its sources.

Permission rules are kept per source as well (``PermissionSettings.rule_sources``), so policy can name the
file and position of each rule and apply the precedence managed > command-line > project > user.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from seepient._locations import DEFAULT_MANAGED_SETTINGS as _DEFAULT_MANAGED_TEXT
from seepient._locations import MANAGED_SETTINGS_ENV, managed_settings
from seepient.config.paths import SeepientPaths
from seepient.config.sections import (
    HOOK_EVENTS,
    MCP_SERVER_NAME,
    AuditSettings,
    ContextSettings,
    ExecutionSettings,
    HookSettings,
    KnowledgeSettings,
    LspSettings,
    McpServerSettings,
    ModelSettings,
    NetSettings,
    RuntimeSettings,
    Section,
    SubagentSettings,
    TelemetrySettings,
    WebSearchSettings,
)
from seepient.config.unknown_keys import UnknownKey, find_unknown_keys
from seepient.protocol.errors import ConfigurationError
from seepient.protocol.frozen import deferred_config

if TYPE_CHECKING:
    from seepient.config.project_effect import ProjectReport

ConsentMode = Literal["always-ask", "ask-untrusted", "auto", "autonomous-trusted"]
MODE_ALIASES = {"on-request": "ask-untrusted", "bypass": "autonomous-trusted"}


class SettingsError(ConfigurationError):
    """A settings file that cannot be used; the message names the file and the position."""


class PermissionSettings(Section):
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


DEFAULT_MANAGED_SETTINGS = Path(_DEFAULT_MANAGED_TEXT)

RuleSourceKind = Literal["managed", "command-line", "project", "user", "session", "settings"]
SOURCE_PRECEDENCE: tuple[RuleSourceKind, ...] = ("managed", "command-line", "project", "user", "session")
"""Highest first. ``settings`` marks rules handed over without a file (tests, the SDK)."""

_MANAGED_ONLY_KEYS = ("allowManagedRulesOnly", "allow_managed_rules_only", "disabledModes", "disabled_modes")


def managed_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """The system-wide managed settings file: ``$SEEPIENT_MANAGED_SETTINGS`` or /etc/seepient/managed-settings.json."""
    return Path(managed_settings(os.environ if environ is None else environ))


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


class Settings(Section):
    """Every key is optional. A key no field reads is kept but reported (``unknown_keys``): a warning, or an
    error in the managed file and for keys in or meant for ``permissions``."""

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
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    _project: ProjectReport | None = PrivateAttr(default=None)
    _unknown_keys: tuple[UnknownKey, ...] = PrivateAttr(default=())

    @property
    def unknown_keys(self) -> tuple[UnknownKey, ...]:
        """Keys of the user's and the ``--config`` file that no setting reads, each ignored: surfaces warn about
        them (``load_settings`` refuses those elsewhere, and those touching permission rules)."""
        return self._unknown_keys

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
    model_config = deferred_config(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class _WorkspaceRulesFile(BaseModel):
    """The user's own rules for one workspace (``SeepientPaths.workspace_rules``): permission lists only."""

    model_config = deferred_config(extra="forbid")
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
    unknown = _unknown_keys(user_data, str(user_path))
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
        unknown += _unknown_keys(data, str(config_file))
    if overrides:
        _refuse_managed_only_keys(overrides, "command-line flags")
        checked = _validate(overrides, "command-line flags")
        layers.append(("command-line", None, "command-line flags", _canonical(checked)))
    managed_data = _read_json(managed)
    managed_permissions = _validate(managed_data, str(managed)).permissions
    _unknown_keys(managed_data, str(managed), refuse_all=True)
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
    settings._unknown_keys = tuple(unknown)
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


def _unknown_keys(data: dict[str, Any], source: str, *, refuse_all: bool = False) -> list[UnknownKey]:
    """The keys of one file no setting reads. Those in or meant for the permission rules stop the run (a deny
    rule lost to a typo would loosen policy without a word), and so does any in the managed file (``refuse_all``:
    an administrator's lock-down must say exactly what it means); the others are returned to warn about."""
    found = find_unknown_keys(data, Settings, source)
    refused = [key for key in found if refuse_all or key.touches_permissions]
    if refused:
        why = (
            "the managed settings file must hold only keys Seepient reads"
            if refuse_all
            else "a misspelt permission key would drop its rules silently"
        )
        lines = [
            f"{key.file}: {key.path}: unknown key"
            + (f"; did you mean {key.suggestion!r}?" if key.suggestion else "")
            for key in refused
        ]
        raise SettingsError("\n".join(lines) + f" ({why}; fix or remove it)")
    return found


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
