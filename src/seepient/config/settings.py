"""The settings schema and its loading: user file < project file < command-line flags, merged key by key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seepient.config.paths import SeepientPaths

ConsentMode = Literal["always-ask", "ask-untrusted", "autonomous-trusted"]
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


class ProviderSettings(_Section):
    type: Literal["openai-chat", "openai-responses", "anthropic", "gemini"] = "openai-chat"
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")


class ModelSettings(_Section):
    default: str | None = None
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)


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


class Settings(_Section):
    """Every key is optional; unknown top-level keys are kept for the issues that add them."""

    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    mcp_servers: dict[str, Any] = Field(default_factory=dict, alias="mcpServers")


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
) -> Settings:
    """Read user, project, ``--config`` file and flag overrides, later ones winning; each file is validated alone
    first so an error names the file it came from."""
    paths = paths or SeepientPaths.from_env()
    merged: dict[str, Any] = {}
    sources = [paths.user_settings, SeepientPaths.project_settings(workspace)]
    if config_file is not None:
        if not config_file.is_file():
            raise SettingsError(f"{config_file}: no such settings file")
        sources.append(config_file)
    for source in sources:
        data = _read_json(source)
        _validate(data, str(source))
        merged = _merge(merged, data)
    if overrides:
        merged = _merge(merged, overrides)
    return _validate(merged, "settings")


def normalise_mode(mode: str) -> str:
    mode = MODE_ALIASES.get(mode, mode)
    if mode not in ("always-ask", "ask-untrusted", "autonomous-trusted"):
        raise SettingsError(
            f"unknown consent mode {mode!r}: use always-ask, ask-untrusted (on-request) or autonomous-trusted (bypass)"
        )
    return mode
