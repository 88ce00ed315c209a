"""The models section of the settings file: routes, retry, circuitBreaker and prices in DESIGN §8's shape."""

from __future__ import annotations

import json

import pytest

from seepient.config.paths import SeepientPaths
from seepient.config.settings import SettingsError, load_settings

DESIGN_EXAMPLE = {
    "models": {
        "providers": {
            "local": {
                "type": "openai-chat",
                "baseUrl": "http://127.0.0.1:8000/v1",
                "apiKeyEnv": "LOCAL_API_KEY",
            }
        },
        "routes": {
            "text.standard": {
                "model": "local:big",
                "fallbackModels": ["local:small"],
                "fallbackProviders": ["anthropic:claude-sonnet-4-5"],
            }
        },
        "retry": {"maxAttempts": 4, "baseDelayMs": 250, "maxDelayMs": 8000},
        "circuitBreaker": {"failureThreshold": 5, "cooldownMs": 60000},
    }
}


def load(tmp_path, user: dict, project: dict | None = None, *, trusted: bool | None = None):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(user))
    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir(parents=True, exist_ok=True)
    if project is not None:
        (workspace / ".seepient" / "settings.json").write_text(json.dumps(project))
    return load_settings(
        workspace, paths=SeepientPaths(home), managed_file=tmp_path / "none.json", project_trust=trusted
    )


def test_the_design_example_loads_as_written(tmp_path):
    models = load(tmp_path, DESIGN_EXAMPLE).models
    route = models.routes["text.standard"]
    assert (route.model, route.fallback_models, route.fallback_providers) == (
        "local:big",
        ["local:small"],
        ["anthropic:claude-sonnet-4-5"],
    )
    assert (models.retry.max_attempts, models.retry.base_delay_ms, models.retry.max_delay_ms) == (
        4,
        250,
        8000,
    )
    assert (models.circuit_breaker.failure_threshold, models.circuit_breaker.cooldown_ms) == (5, 60000)


def test_defaults_when_nothing_is_set(tmp_path):
    models = load(tmp_path, {}).models
    assert models.routes == {} and models.prices == {}
    assert models.retry.max_attempts == 4 and models.circuit_breaker.failure_threshold == 5


def test_a_project_adds_routes_and_prices_over_the_user_file(tmp_path):
    project = {
        "models": {
            "routes": {"commit.standard": {"model": "local:small"}},
            "prices": {"local:big": {"input": 0.5, "output": 1.5}},
        }
    }
    models = load(tmp_path, DESIGN_EXAMPLE, project, trusted=True).models
    assert set(models.routes) == {"text.standard", "commit.standard"}
    assert models.prices["local:big"].output == 1.5
    # Routes and prices are team settings: an untrusted project's do not count.
    models = load(tmp_path, DESIGN_EXAMPLE, project).models
    assert set(models.routes) == {"text.standard"} and "local:big" not in models.prices


@pytest.mark.parametrize(
    ("models", "where"),
    [
        ({"routes": {"text.quick": {"model": "a:b"}}}, "models.routes"),
        ({"routes": {"text.standard": {}}}, "models.routes.text.standard.model"),
        ({"retry": {"maxAttempts": 0}}, "models.retry.maxAttempts"),
        ({"circuitBreaker": {"failureThreshold": 0}}, "models.circuitBreaker.failureThreshold"),
        ({"prices": {"a:b": {"input": 1}}}, "models.prices.a:b.output"),
    ],
)
def test_mistakes_name_the_file_and_the_key(tmp_path, models, where):
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, {"models": models})
    assert "settings.json" in str(caught.value) and where in str(caught.value)
