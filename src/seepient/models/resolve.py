"""Turns a model spec (``provider:model``, ``replay:PATH``) plus settings into a ready ``Model``.

Built-in providers need no configuration; ``models.providers`` in settings adds providers or overrides the
built-in ones field by field.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.config.sections import ModelSettings, ProviderSettings
from seepient.models.base import Model, ModelError

if TYPE_CHECKING:
    from seepient.models.anthropic import AnthropicModel
    from seepient.models.gemini import GeminiModel
    from seepient.models.openai_chat import OpenAIChatModel
    from seepient.models.openai_responses import OpenAIResponsesModel

# Each wire format's adapter, by provider type; a process loads only the one it talks to.
_ADAPTERS = {
    "openai-chat": ("seepient.models.openai_chat", "OpenAIChatModel"),
    "openai-responses": ("seepient.models.openai_responses", "OpenAIResponsesModel"),
    "anthropic": ("seepient.models.anthropic", "AnthropicModel"),
    "gemini": ("seepient.models.gemini", "GeminiModel"),
}
IMPLEMENTED_PROVIDER_TYPES = tuple(_ADAPTERS)


def _adapter(
    provider_type: str,
) -> type[OpenAIChatModel | OpenAIResponsesModel | AnthropicModel | GeminiModel]:
    module, name = _ADAPTERS[provider_type]
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _replay(path: str) -> Model:
    from seepient.models.scripted import ReplayModel

    return ReplayModel(Path(path).expanduser())


@dataclass(frozen=True)
class ProviderInfo:
    """A provider Seepient knows: built in, from settings, or a built-in one adjusted by settings.
    ``api_key_env`` is read first, then each of ``alternate_key_envs``."""

    name: str
    type: str
    base_url: str | None
    api_key_env: str | None
    source: str
    alternate_key_envs: tuple[str, ...] = ()

    @property
    def implemented(self) -> bool:
        return self.type in IMPLEMENTED_PROVIDER_TYPES

    @property
    def key_envs(self) -> tuple[str, ...]:
        """Every variable the key may come from, in the order they are read."""
        return (self.api_key_env, *self.alternate_key_envs) if self.api_key_env else ()

    def api_key(self, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        """The key and the variable it came from, or ``(None, None)``."""
        for variable in self.key_envs:
            if environ.get(variable):
                return environ[variable], variable
        return None, None


_BUILTIN_PROVIDERS = (
    ProviderInfo("openai", "openai-chat", "https://api.openai.com/v1", "OPENAI_API_KEY", "built-in"),
    ProviderInfo("ollama", "openai-chat", "http://127.0.0.1:11434/v1", None, "built-in"),
    ProviderInfo("anthropic", "anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", "built-in"),
    ProviderInfo(
        "gemini",
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        "GEMINI_API_KEY",
        "built-in",
        alternate_key_envs=("GOOGLE_API_KEY",),
    ),
)

# The vendors' own OpenAI-compatible endpoints, for settings that switch a native vendor to openai-chat.
_COMPATIBLE_ENDPOINTS = {
    "anthropic": "https://api.anthropic.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
}

_SPEC_EXAMPLES = "openai:gpt-4o-mini, ollama:llama3.2 or replay:script.yaml"

SCRIPT_SCHEMES: Mapping[str, Callable[[str], Model]] = {
    "replay": _replay,
}
"""Spec prefixes that name a script played on this machine rather than a provider, each with the factory
that makes its model from the rest of the spec. A script is the whole conversation: nothing stands in for it
and nothing else may consume its turns."""


def is_script_spec(spec: str) -> bool:
    """Whether ``spec`` names a script (``replay:PATH``) rather than a provider's model."""
    return spec.partition(":")[0].strip() in SCRIPT_SCHEMES


def known_providers(settings: ModelSettings) -> list[ProviderInfo]:
    """Built-in providers, then those from settings; a settings entry named like a built-in one replaces only
    the fields it sets."""
    merged = {provider.name: provider for provider in _BUILTIN_PROVIDERS}
    for name, configured in settings.providers.items():
        merged[name] = _apply_settings(name, configured, merged.get(name))
    return list(merged.values())


def resolve_model(
    spec: str,
    *,
    settings: ModelSettings,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Model:
    """The model ``spec`` names. ``base_url`` (``--base-url``) replaces the provider's endpoint; with it, a
    missing API key is left for the endpoint to judge (a local server rarely wants one)."""
    env = os.environ if environ is None else environ
    provider_name, colon, model_id = spec.partition(":")
    provider_name, model_id = provider_name.strip(), model_id.strip()
    providers = {provider.name: provider for provider in known_providers(settings)}
    if not colon or not provider_name or not model_id:
        raise ModelError(
            f"model spec {spec!r} must be provider:model, e.g. {_SPEC_EXAMPLES}; "
            f"known providers: {_names(providers)}"
        )
    play_script = SCRIPT_SCHEMES.get(provider_name)
    if play_script is not None:
        if base_url is not None:
            raise ModelError(
                f"--base-url does not apply to {spec!r}: a {provider_name} model plays a local script"
            )
        return play_script(model_id)
    provider = providers.get(provider_name)
    if provider is None:
        raise ModelError(
            f"unknown model provider {provider_name!r} in {spec!r}; known providers: {_names(providers)}. "
            "Add others under models.providers in settings (type openai-chat, openai-responses, anthropic or "
            "gemini; baseUrl; apiKeyEnv)"
        )
    endpoint = base_url or provider.base_url
    if not endpoint:
        raise ModelError(
            f"provider {provider.name!r} has no base URL: set models.providers.{provider.name}.baseUrl in "
            "settings or pass --base-url"
        )
    api_key, key_env = provider.api_key(env)
    if api_key is None and provider.key_envs and base_url is None:
        raise ModelError(
            f"model {spec!r} needs an API key: set the environment variable {_either(provider.key_envs)} "
            f"(provider {provider.name!r}, {provider.source})"
        )
    return _adapter(provider.type)(
        model_id, base_url=endpoint, api_key=api_key, name=spec, api_key_env=key_env or provider.api_key_env
    )


def _either(variables: tuple[str, ...]) -> str:
    return variables[0] + "".join(f" (or {variable})" for variable in variables[1:])


def _apply_settings(name: str, configured: ProviderSettings, builtin: ProviderInfo | None) -> ProviderInfo:
    if builtin is None:
        return ProviderInfo(name, configured.type, configured.base_url, configured.api_key_env, "settings")
    given = configured.model_fields_set
    kind = configured.type if "type" in given else builtin.type
    base_url = configured.base_url if "base_url" in given else builtin.base_url
    if kind == "openai-chat" and builtin.type != "openai-chat" and "base_url" not in given:
        # Switching a native vendor to openai-chat means its OpenAI-compatible endpoint, not its native root.
        base_url = _COMPATIBLE_ENDPOINTS.get(builtin.type, base_url)
    if "api_key_env" in given:
        api_key_env, alternates = configured.api_key_env, ()
    else:
        api_key_env, alternates = builtin.api_key_env, builtin.alternate_key_envs
    return ProviderInfo(name, kind, base_url, api_key_env, "built-in, adjusted by settings", alternates)


def _names(providers: Mapping[str, ProviderInfo]) -> str:
    return ", ".join([*providers, *SCRIPT_SCHEMES])
