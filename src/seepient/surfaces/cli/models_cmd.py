"""``seepient models``: the routes and their targets, each target's circuit breaker, and the known providers
with whether their key variable is set (never the key)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.options import ConfigFile, JsonObject, Model, Workspace

if TYPE_CHECKING:
    from seepient.models.resolve import ProviderInfo
    from seepient.models.router import ModelRouter

PER_PROCESS_NOTE = (
    "Breaker state belongs to the process that makes the calls: each `seepient run`, TUI session and "
    "`seepient serve` keeps its own, and a new process starts with every breaker closed. This command shows "
    "its own process, so it lists routes and configuration; a running session shows live state."
)
_ROLES = {"primary": "primary", "fallback_model": "fallback model", "fallback_provider": "fallback provider"}


def models_report(router: ModelRouter, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Routes, targets with breaker state, retry and breaker settings, and providers, as plain data.
    Surfaces with a live session (TUI, server) pass that session's router to show its breakers."""
    from seepient.models.base import ModelError
    from seepient.models.resolve import known_providers

    env = os.environ if environ is None else environ
    routes = []
    problem = None
    try:
        found = router.routes()
    except ModelError as exc:
        found, problem = [], str(exc)
    for route in found:
        targets = []
        for target in route.targets:
            breaker = router.breaker(target.spec)
            targets.append(
                {
                    "target": target.spec,
                    "role": target.role,
                    "breaker": breaker.state,
                    "failures": breaker.failures,
                    "last_error": breaker.last_error,
                    "opened_at": breaker.opened_at,
                    "probe_after": breaker.probe_after,
                }
            )
        routes.append({"route": route.key, "source": route.source, "targets": targets})
    if not found and problem is None:
        problem = "no route and no default model are configured"
    return {
        "routes": routes,
        "problem": problem,
        "retry": {
            "maxAttempts": router.retry.max_attempts,
            "baseDelayMs": round(router.retry.base_delay_s * 1000),
            "maxDelayMs": round(router.retry.max_delay_s * 1000),
        },
        "circuitBreaker": {
            "failureThreshold": router.settings.circuit_breaker.failure_threshold,
            "cooldownMs": router.settings.circuit_breaker.cooldown_ms,
        },
        "providers": [_provider(provider, env) for provider in known_providers(router.settings)],
        "note": PER_PROCESS_NOTE,
    }


def _provider(provider: ProviderInfo, env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": provider.name,
        "type": provider.type,
        "base_url": provider.base_url,
        "source": provider.source,
        # Only whether each variable is set: the key itself never leaves the environment.
        "key_variables": {variable: bool(env.get(variable)) for variable in provider.key_envs},
    }


def format_models_report(report: dict[str, Any]) -> str:
    """The report for a person: one block per route, then the providers."""
    lines = ["Routes (purpose.tier → targets in the order they are tried):"]
    if report["problem"]:
        lines.append(f"  {report['problem']}")
    for route in report["routes"]:
        lines.append(f"  {route['route']}  ({route['source']})")
        for number, target in enumerate(route["targets"], start=1):
            state = target["breaker"].replace("_", "-")
            detail = f"breaker {state}"
            if target["failures"]:
                detail += f", {target['failures']} failure(s)"
            if target["opened_at"] is not None:
                detail += (
                    f", opened {_clock(target['opened_at'])}, probe after {_clock(target['probe_after'])}"
                )
            lines.append(f"    {number}. {target['target']:<40} {_ROLES[target['role']]:<18} {detail}")
            if target["last_error"]:
                lines.append(f"       last error: {target['last_error']}")
    retry, breaker = report["retry"], report["circuitBreaker"]
    lines += [
        "",
        f"Retry: up to {retry['maxAttempts']} attempt(s) per target on 429, 5xx, 529, timeouts and network errors; "
        f"backoff from {retry['baseDelayMs']} ms doubling up to {retry['maxDelayMs']} ms with full jitter; "
        f"Retry-After honoured up to {retry['maxDelayMs']} ms. 400, 401, 403, 404 and 422 move on at once.",
        f"Circuit breaker: opens after {breaker['failureThreshold']} consecutive failure(s) of a target, "
        f"lets one probe through after {breaker['cooldownMs']} ms.",
        report["note"],
        "",
        "Providers:",
    ]
    for provider in report["providers"]:
        keys = provider["key_variables"]
        if keys:
            key_text = ", ".join(f"{name} {'set' if is_set else 'not set'}" for name, is_set in keys.items())
        else:
            key_text = "no key needed"
        lines.append(
            f"  {provider['name']:<12} {provider['type']:<17} {provider['base_url'] or '(no base URL)':<52} {key_text}"
        )
    return "\n".join(lines)


def _clock(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%H:%M:%S") if timestamp is not None else "-"


def register(app: typer.Typer) -> None:
    @app.command("models")
    def models(
        workspace: Workspace = Path("."),
        config: ConfigFile = None,
        model: Model = None,
        json_output: JsonObject = False,
    ) -> None:
        """List model routes and their targets (as --model would change them), circuit breaker state, and the
        known providers with whether their API key variable is set."""
        from seepient.config import SeepientPaths
        from seepient.config.settings import SettingsError, load_settings
        from seepient.models.base import ModelError
        from seepient.models.router import ModelRouter

        ws = workspace_dir(workspace)
        try:
            settings = load_settings(ws, paths=SeepientPaths.from_env(), config_file=config)
            router = ModelRouter(settings.models, model_override=model)
        except (SettingsError, ModelError) as exc:
            raise fail(str(exc)) from None
        report = models_report(router)
        typer.echo(json.dumps(report) if json_output else format_models_report(report))
