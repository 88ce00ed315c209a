"""``seepient models`` through the real console script: routes, targets, breaker state, and key variables shown
as set or not set, never their values."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from seepient.config.settings import Settings
from seepient.models.router import ModelRouter
from seepient.surfaces.cli.models_cmd import format_models_report, models_report
from tests.conftest import BIN
from tests.support.clock import FakeClock

SECRET = "sk-ant-SEEPIENT-MODELS-SECRET-41c9"
ROUTES = {
    "text.standard": {
        "model": "local:big",
        "fallbackModels": ["local:small"],
        "fallbackProviders": ["anthropic:claude-sonnet-4-5"],
    },
    "text.efficient": {"model": "local:small"},
}


def run_models(tmp_path: Path, settings: dict, *args: str, extra_env: dict[str, str] | None = None):
    home = tmp_path / "seepient-home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(settings))
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "SEEPIENT_HOME": str(home),
        "SEEPIENT_MANAGED_SETTINGS": str(tmp_path / "no-managed.json"),
        "ANTHROPIC_API_KEY": SECRET,
        **(extra_env or {}),
    }
    return subprocess.run(
        [str(BIN / "seepient"), "models", "--workspace", str(workspace), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


SETTINGS = {
    "models": {
        "providers": {
            "local": {
                "type": "openai-chat",
                "baseUrl": "http://127.0.0.1:8000/v1",
                "apiKeyEnv": "LOCAL_API_KEY",
            }
        },
        "routes": ROUTES,
        "retry": {"maxAttempts": 3, "baseDelayMs": 100, "maxDelayMs": 4000},
        "circuitBreaker": {"failureThreshold": 2, "cooldownMs": 30000},
    }
}


def test_the_report_lists_routes_targets_and_key_variables_without_values(tmp_path):
    done = run_models(tmp_path, SETTINGS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "text.standard  (settings (text.standard))" in out
    lines = out.splitlines()
    start = lines.index("  text.standard  (settings (text.standard))")
    targets = lines[start + 1 : start + 4]
    assert [line.split()[1] for line in targets] == [
        "local:big",
        "local:small",
        "anthropic:claude-sonnet-4-5",
    ]
    assert all("breaker closed" in line for line in targets)
    assert "fallback provider" in targets[2]
    assert "up to 3 attempt(s)" in out and "opens after 2 consecutive" in out and "30000 ms" in out
    assert "keeps its own" in out
    assert "ANTHROPIC_API_KEY set" in out and "LOCAL_API_KEY not set" in out
    assert "GEMINI_API_KEY not set, GOOGLE_API_KEY not set" in out
    assert SECRET not in out and SECRET not in done.stderr


def test_json_output_and_the_model_override(tmp_path):
    done = run_models(tmp_path, SETTINGS, "--json", "--model", "local:huge")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    standard = next(route for route in report["routes"] if route["route"] == "text.standard")
    assert [t["target"] for t in standard["targets"]] == [
        "local:huge",
        "local:small",
        "anthropic:claude-sonnet-4-5",
    ]
    efficient = next(route for route in report["routes"] if route["route"] == "text.efficient")
    assert [t["target"] for t in efficient["targets"]] == ["local:small"]
    anthropic = next(p for p in report["providers"] if p["name"] == "anthropic")
    assert anthropic["key_variables"] == {"ANTHROPIC_API_KEY": True}
    assert SECRET not in done.stdout


def test_bad_routes_are_a_usage_error(tmp_path):
    bad = {
        "models": {
            "routes": {"text.standard": {"model": "local:big", "fallbackModels": ["anthropic:claude"]}}
        }
    }
    done = run_models(tmp_path, bad)
    assert done.returncode == 2
    assert "fallbackProviders" in done.stderr


def test_nothing_configured_says_so(tmp_path):
    done = run_models(tmp_path, {})
    assert done.returncode == 0, done.stderr
    assert "no route and no default model are configured" in done.stdout


def test_a_live_router_shows_open_breakers_and_their_last_error():
    settings = Settings.model_validate(SETTINGS).models
    clock = FakeClock()
    router = ModelRouter(settings, environ={}, clock=clock)
    for _ in range(2):
        router.breakers.get("local:big").record_failure("model local:big: provider error (HTTP 503): busy")
    report = models_report(router, environ={})
    big = report["routes"][0]["targets"][0]
    assert (big["breaker"], big["failures"], big["opened_at"]) == ("open", 2, clock.now)
    text = format_models_report(report)
    assert "breaker open, 2 failure(s), opened" in text
    assert "last error: model local:big: provider error (HTTP 503): busy" in text
