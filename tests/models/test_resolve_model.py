"""Model specs to models: built-in providers, providers from settings, --base-url, keys and clear refusals."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from seepient.config.sections import ModelSettings
from seepient.config.settings import Settings
from seepient.models.anthropic import AnthropicModel
from seepient.models.base import ModelError
from seepient.models.gemini import GeminiModel
from seepient.models.openai_chat import OpenAIChatModel
from seepient.models.openai_responses import OpenAIResponsesModel
from seepient.models.resolve import known_providers, resolve_model
from seepient.models.scripted import ReplayModel
from seepient.protocol import Completion, Message, ModelRequest
from tests.support.sse_server import Reply

TEXT = "openai_chat_completions__test_parse_nothing.sse"
NO_SETTINGS = ModelSettings()


def model_settings(providers: dict[str, Any]) -> ModelSettings:
    # Through the full settings schema, as a settings.json file would arrive.
    return Settings.model_validate({"models": {"providers": providers}}).models


async def finish(model) -> Completion:
    async with asyncio.timeout(20):
        events = [
            event async for event in model.stream(ModelRequest(model="m", messages=(Message.user("hi"),)))
        ]
    await model.aclose()
    assert isinstance(events[-1], Completion)
    return events[-1]


def test_replay_spec_gives_a_replay_model(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    model = resolve_model(f"replay:{script}", settings=NO_SETTINGS, environ={})
    assert isinstance(model, ReplayModel)
    assert model.path == script


def test_replay_problems_surface_at_resolve(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model(f"replay:{tmp_path / 'missing.yaml'}", settings=NO_SETTINGS, environ={})
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    with pytest.raises(ModelError, match="--base-url does not apply"):
        resolve_model(f"replay:{script}", settings=NO_SETTINGS, base_url="http://127.0.0.1:1/v1", environ={})


def test_openai_is_known_without_configuration():
    model = resolve_model("openai:gpt-4o-mini", settings=NO_SETTINGS, environ={"OPENAI_API_KEY": "sk-live"})
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.name, model.base_url) == (
        "gpt-4o-mini",
        "openai:gpt-4o-mini",
        "https://api.openai.com/v1",
    )


@pytest.mark.parametrize("environ", [{}, {"OPENAI_API_KEY": ""}])
def test_a_missing_key_is_refused_before_any_request(environ):
    with pytest.raises(ModelError) as caught:
        resolve_model("openai:gpt-4o-mini", settings=NO_SETTINGS, environ=environ)
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "openai:gpt-4o-mini" in str(caught.value)
    assert not caught.value.retryable


async def test_the_key_comes_from_the_named_variable(sse_server):
    sse_server.queue(Reply.transcript(TEXT))
    settings = model_settings({"openai": {"baseUrl": sse_server.base_url}})
    model = resolve_model("openai:gpt-4o", settings=settings, environ={"OPENAI_API_KEY": "sk-from-env"})
    await finish(model)
    assert sse_server.last_request.headers["authorization"] == "Bearer sk-from-env"
    assert sse_server.last_request.json()["model"] == "gpt-4o"


async def test_base_url_override_reaches_a_local_server_without_a_key(sse_server):
    sse_server.queue(Reply.transcript(TEXT), Reply.transcript(TEXT))
    model = resolve_model("openai:gpt-4o", settings=NO_SETTINGS, base_url=sse_server.base_url, environ={})
    await finish(model)
    assert "authorization" not in sse_server.last_request.headers
    keyed = resolve_model(
        "openai:gpt-4o",
        settings=NO_SETTINGS,
        base_url=sse_server.base_url,
        environ={"OPENAI_API_KEY": "sk-1"},
    )
    await finish(keyed)
    assert sse_server.last_request.headers["authorization"] == "Bearer sk-1"


async def test_ollama_needs_no_key_and_keeps_colons_in_the_model_name(sse_server):
    model = resolve_model("ollama:llama3.2:3b", settings=NO_SETTINGS, environ={})
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.base_url) == ("llama3.2:3b", "http://127.0.0.1:11434/v1")
    sse_server.queue(Reply.transcript(TEXT))
    local = resolve_model(
        "ollama:llama3.2:3b", settings=NO_SETTINGS, base_url=sse_server.base_url, environ={}
    )
    await finish(local)
    assert sse_server.last_request.json()["model"] == "llama3.2:3b"
    assert "authorization" not in sse_server.last_request.headers


async def test_a_provider_from_settings_works_with_its_key(sse_server):
    settings = model_settings(
        {"local": {"type": "openai-chat", "baseUrl": sse_server.base_url, "apiKeyEnv": "LOCAL_API_KEY"}}
    )
    sse_server.queue(Reply.transcript(TEXT))
    model = resolve_model("local:big", settings=settings, environ={"LOCAL_API_KEY": "local-secret"})
    assert (model.name, model.model) == ("local:big", "big")
    await finish(model)
    assert sse_server.last_request.headers["authorization"] == "Bearer local-secret"
    with pytest.raises(ModelError, match="LOCAL_API_KEY"):
        resolve_model("local:big", settings=settings, environ={})


def test_a_provider_without_a_base_url_needs_one():
    settings = model_settings({"vllm": {"type": "openai-chat"}})
    with pytest.raises(ModelError, match=r"models\.providers\.vllm\.baseUrl.*--base-url"):
        resolve_model("vllm:qwen", settings=settings, environ={})
    model = resolve_model("vllm:qwen", settings=settings, base_url="http://10.0.0.2:8000/v1", environ={})
    assert model.base_url == "http://10.0.0.2:8000/v1"


def test_settings_adjust_a_built_in_provider_field_by_field():
    settings = model_settings(
        {"openai": {"apiKeyEnv": "WORK_OPENAI_KEY"}, "ollama": {"baseUrl": "http://gpu:11434/v1"}}
    )
    model = resolve_model("openai:gpt-4o", settings=settings, environ={"WORK_OPENAI_KEY": "k"})
    assert model.base_url == "https://api.openai.com/v1"
    with pytest.raises(ModelError, match="WORK_OPENAI_KEY"):
        resolve_model("openai:gpt-4o", settings=settings, environ={"OPENAI_API_KEY": "k"})
    assert resolve_model("ollama:qwen3", settings=settings, environ={}).base_url == "http://gpu:11434/v1"


@pytest.mark.parametrize(
    ("spec", "adapter", "base_url", "key_env"),
    [
        ("anthropic:claude-sonnet-4-5", AnthropicModel, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
        (
            "gemini:gemini-2.5-pro",
            GeminiModel,
            "https://generativelanguage.googleapis.com/v1beta",
            "GEMINI_API_KEY",
        ),
    ],
)
def test_anthropic_and_gemini_get_their_native_adapters(spec, adapter, base_url, key_env):
    model = resolve_model(spec, settings=NO_SETTINGS, environ={key_env: "k"})
    assert isinstance(model, adapter)
    assert (model.name, model.model, model.base_url) == (spec, spec.split(":", 1)[1], base_url)


def test_gemini_takes_its_key_from_google_api_key_too():
    model = resolve_model("gemini:gemini-2.5-flash", settings=NO_SETTINGS, environ={"GOOGLE_API_KEY": "g"})
    assert isinstance(model, GeminiModel)
    assert model._api_key == "g" and model._api_key_env == "GOOGLE_API_KEY"
    preferred = resolve_model(
        "gemini:gemini-2.5-flash",
        settings=NO_SETTINGS,
        environ={"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "m"},
    )
    assert preferred._api_key == "m" and preferred._api_key_env == "GEMINI_API_KEY"
    with pytest.raises(ModelError) as caught:
        resolve_model("gemini:gemini-2.5-flash", settings=NO_SETTINGS, environ={})
    assert "GEMINI_API_KEY (or GOOGLE_API_KEY)" in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "compatible_url"),
    [
        ("anthropic", "https://api.anthropic.com/v1"),
        ("gemini", "https://generativelanguage.googleapis.com/v1beta/openai"),
    ],
)
def test_the_suggested_setting_switches_to_the_compatible_endpoint(provider, compatible_url):
    settings = model_settings({provider: {"type": "openai-chat"}})
    environ = {"ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g"}
    model = resolve_model(f"{provider}:some-model", settings=settings, environ=environ)
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == compatible_url
    with pytest.raises(ModelError, match=f"{provider.upper()}_API_KEY"):
        resolve_model(f"{provider}:some-model", settings=settings, environ={})


@pytest.mark.parametrize(
    ("kind", "adapter"),
    [
        ("openai-chat", OpenAIChatModel),
        ("openai-responses", OpenAIResponsesModel),
        ("anthropic", AnthropicModel),
        ("gemini", GeminiModel),
    ],
)
def test_every_provider_type_from_settings_gets_its_adapter(kind, adapter):
    settings = model_settings(
        {"corp": {"type": kind, "baseUrl": "https://llm.corp/v1", "apiKeyEnv": "CORP_KEY"}}
    )
    model = resolve_model("corp:m", settings=settings, environ={"CORP_KEY": "k"})
    assert type(model) is adapter
    assert (model.name, model.model, model.base_url) == ("corp:m", "m", "https://llm.corp/v1")
    with pytest.raises(ModelError, match="CORP_KEY"):
        resolve_model("corp:m", settings=settings, environ={})


def test_openai_can_be_switched_to_the_responses_api():
    settings = model_settings({"openai": {"type": "openai-responses"}})
    model = resolve_model("openai:gpt-5", settings=settings, environ={"OPENAI_API_KEY": "k"})
    assert isinstance(model, OpenAIResponsesModel)
    assert model.base_url == "https://api.openai.com/v1"


async def test_anthropic_through_its_compatible_endpoint_works_once_configured(sse_server):
    # What the refusal message suggests, with the local server standing in for the vendor.
    settings = model_settings(
        {
            "anthropic": {
                "type": "openai-chat",
                "baseUrl": sse_server.base_url,
                "apiKeyEnv": "ANTHROPIC_API_KEY",
            }
        }
    )
    sse_server.queue(Reply.transcript(TEXT))
    model = resolve_model(
        "anthropic:claude-sonnet-4-5", settings=settings, environ={"ANTHROPIC_API_KEY": "a"}
    )
    await finish(model)
    assert sse_server.last_request.json()["model"] == "claude-sonnet-4-5"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", ":gpt-4o", ""])
def test_a_spec_without_provider_and_model_lists_what_is_known(spec):
    settings = model_settings({"local": {"baseUrl": "http://127.0.0.1:8000/v1"}})
    with pytest.raises(ModelError) as caught:
        resolve_model(spec, settings=settings, environ={})
    message = str(caught.value)
    assert "provider:model" in message
    for name in ("openai", "ollama", "anthropic", "gemini", "local", "replay"):
        assert name in message


def test_an_unknown_provider_lists_what_is_known():
    with pytest.raises(ModelError) as caught:
        resolve_model("mistral:large", settings=NO_SETTINGS, environ={})
    message = str(caught.value)
    assert "unknown model provider 'mistral'" in message
    assert "openai, ollama" in message and "models.providers" in message


def test_known_providers_merges_built_ins_and_settings():
    settings = model_settings(
        {"local": {"baseUrl": "http://127.0.0.1:8000/v1"}, "gemini": {"type": "openai-chat"}}
    )
    providers = {provider.name: provider for provider in known_providers(settings)}
    assert list(providers) == ["openai", "ollama", "anthropic", "gemini", "local"]
    assert providers["local"].implemented and providers["local"].source == "settings"
    assert providers["gemini"].implemented and providers["gemini"].api_key_env == "GEMINI_API_KEY"
    assert providers["gemini"].key_envs == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert all(provider.implemented for provider in providers.values())
