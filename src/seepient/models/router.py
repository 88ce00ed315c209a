"""Chooses the model that answers: routes keyed by purpose × tier, each an ordered list of targets (primary,
same-provider fallbacks, other providers), tried with retries and circuit breakers. A ``RoutedModel`` is a
``Model``, so the runtime uses it wherever it would use one adapter.

Fallback happens only before the caller has seen any text or tool call: once output has streamed, a
failure ends the call with ``StreamInterrupted`` instead of restarting it somewhere else.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Literal

from seepient.config.sections import ROUTE_PURPOSES, ROUTE_TIERS, ModelSettings, RouteSettings
from seepient.models.base import Model, ModelError, ResumableModel
from seepient.models.pricing import priced
from seepient.models.resilience import (
    BreakerBoard,
    BreakerSnapshot,
    Clock,
    RetryPolicy,
    SystemClock,
)
from seepient.models.resolve import SCRIPT_SCHEMES, is_script_spec, known_providers, resolve_model
from seepient.protocol import (
    Completion,
    ModelRequest,
    ModelStreamEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
)
from seepient.telemetry import NO_SPAN, Span, content, metrics, start_span

Purpose = Literal["text", "commit", "plan", "vision", "media"]
Tier = Literal["standard", "complex", "efficient"]
TargetRole = Literal["primary", "fallback_model", "fallback_provider"]
AttemptOutcome = Literal["ok", "retry", "next", "skipped", "unavailable", "interrupted"]
ModelFactory = Callable[[str], Model]

_NO_MODEL = (
    "no model is configured: pass --model PROVIDER:MODEL (e.g. openai:gpt-4.1, ollama:llama3.1, or replay:PATH), "
    "set models.default, or add a route under models.routes in the settings"
)


class RouteExhausted(ModelError):
    """Every target of a route failed before any output. ``failures`` pairs each target with why."""

    def __init__(
        self, message: str, failures: tuple[tuple[str, str], ...], *, last: ModelError | None
    ) -> None:
        super().__init__(
            message,
            retryable=bool(last and last.retryable),
            status=last.status if last else None,
            retry_after_s=last.retry_after_s if last else None,
        )
        self.failures = failures


class StreamInterrupted(ModelError):
    """The target failed after text or a tool call had already reached the caller. Not retried anywhere:
    a restart would repeat what the caller has shown or run."""


@dataclass(frozen=True)
class Target:
    spec: str
    role: TargetRole


@dataclass(frozen=True)
class Route:
    """The targets tried, in order, for ``key`` (``purpose.tier``). ``source`` says where they came from: the
    settings key used (which may be a more general one), or the default model."""

    key: str
    targets: tuple[Target, ...]
    source: str

    @property
    def primary(self) -> str:
        return self.targets[0].spec


@dataclass(frozen=True)
class Attempt:
    """One step of a routed call: a target tried (or skipped) and how it ended."""

    target: str
    attempt: int
    outcome: AttemptOutcome
    error: str | None = None
    wait_s: float = 0.0


@dataclass
class _Problems:
    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.items.append(text)


class ModelRouter:
    """Routes from ``models`` settings. ``model_override`` (``--model``) replaces the primary of every route
    except a configured ``efficient`` one and ``media`` ones; ``base_url`` (``--base-url``) applies to that
    override (or to the default model when there is none). One router per process: it holds the breakers
    and the model clients, shared by every ``RoutedModel`` it hands out.

    ``model_override`` may also be a ``Model`` made in Python (a ``ScriptedModel`` or ``FunctionModel`` in a
    test): it is used under its ``name`` and, like a replay script, is the whole conversation.
    ``model_factory`` replaces how a target spec becomes a model (by default: ``resolve_model``).
    """

    def __init__(
        self,
        settings: ModelSettings,
        *,
        model_override: str | Model | None = None,
        base_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        model_factory: ModelFactory | None = None,
        on_attempt: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.settings = settings
        # A model handed in is the conversation itself, like a script: it is known by its name from here on.
        self._given: dict[str, Model] = {}
        if model_override is not None and not isinstance(model_override, str):
            self._given[model_override.name] = model_override
            model_override = model_override.name
        self.model_override = model_override
        self.retry = RetryPolicy.from_settings(settings.retry)
        self.clock: Clock = clock or SystemClock()
        self.breakers = BreakerBoard(settings.circuit_breaker, self.clock)
        self.on_attempt = on_attempt
        self._environ = os.environ if environ is None else environ
        self._base_url = base_url
        self._base_url_spec = model_override or settings.default
        self._rng = rng or random.Random()
        self._factory = model_factory or self._resolve
        self._models: dict[str, Model] = {}
        self._providers = {provider.name for provider in known_providers(settings)} | set(SCRIPT_SCHEMES)
        problems = _Problems()
        for key, configured in settings.routes.items():
            self._expand(key, configured, problems)
        if problems.items:
            raise ModelError("models.routes: " + "; ".join(problems.items))

    # --- routes ---------------------------------------------------------------------------------------

    def route_for(self, purpose: Purpose = "text", tier: Tier = "standard") -> Route:
        """The route a call for ``purpose`` at ``tier`` takes. Unconfigured keys fall back to the purpose's
        standard route, then to ``text`` at that tier, then ``text.standard``, then the default model; ``media``
        falls back only to ``media.standard`` (a chat model cannot stand in for a media model)."""
        _check_key(purpose, tier)
        key = f"{purpose}.{tier}"
        candidates = [key, f"{purpose}.standard"]
        if purpose != "media":
            candidates += [f"text.{tier}", "text.standard"]
        route = None
        for candidate in dict.fromkeys(candidates):
            configured = self.settings.routes.get(candidate)
            if configured is not None:
                source = f"settings ({candidate})"
                route = Route(key, self._expand(candidate, configured, None), source)
                break
        efficient_route = tier == "efficient" and route is not None and route.source.endswith(".efficient)")
        if self.model_override and not efficient_route and purpose != "media":
            return self._overridden(key, route)
        if route is not None:
            return route
        if purpose == "media":
            raise ModelError(
                f"no route for {key}: add models.routes.media.standard (or {key}) to the settings, naming a "
                "media-generation model"
            )
        if not self.settings.default:
            raise ModelError(_NO_MODEL)
        return Route(key, (Target(self.settings.default, "primary"),), "models.default")

    def route(self, purpose: Purpose = "text", tier: Tier = "standard") -> RoutedModel:
        """A ``Model`` for ``purpose`` at ``tier`` (a new one per call: give each session its own, its
        ``attempts`` are per call). Raises ``ModelError`` when no target of the route can even be built (a
        missing key, an unknown provider), naming what to fix."""
        route = self.route_for(purpose, tier)
        self._check_buildable(route)
        return RoutedModel(self, route)

    def efficient(self, purpose: Purpose = "text") -> RoutedModel | None:
        """The cheap, fast model for summaries and classifiers (``purpose.efficient``, falling back like any
        route when none is configured), or None when that would be a script (a replay script, a model handed in):
        a script is the conversation, and a summary must not consume its turns. Callers then use a strategy
        without a model."""
        route = self.route_for(purpose, "efficient")
        if any(self._is_script(target.spec) for target in route.targets):
            return None
        return self.route(purpose, "efficient")

    def resume_replays(self, steps: int) -> None:
        """Every script this router plays continues after ``steps`` played steps (a restored session)."""
        for model in self._models.values():
            if isinstance(model, ResumableModel):
                model.resume_after(steps)

    def routes(self) -> list[Route]:
        """Every configured route, plus ``text.standard`` as it resolves when it is not configured."""
        out = [self.route_for(*_split(key)) for key in self.settings.routes]
        if "text.standard" not in self.settings.routes:
            try:
                out.insert(0, self.route_for("text", "standard"))
            except ModelError:
                pass
        return out

    def breaker(self, target: str) -> BreakerSnapshot:
        return self.breakers.snapshot(target)

    def breaker_snapshots(self) -> list[BreakerSnapshot]:
        """The breakers this process has used, with state, consecutive failures, last error, opened-at."""
        return self.breakers.snapshots()

    async def aclose(self) -> None:
        models, self._models = self._models, {}
        for model in models.values():
            await model.aclose()

    # --- internals ------------------------------------------------------------------------------------

    def model_for(self, target: str) -> Model:
        """The (cached) model for one target spec; raises ``ModelError`` when it cannot be built."""
        model = self._models.get(target)
        if model is None:
            given = self._given.get(target)
            model = given if given is not None else self._factory(target)
            self._models[target] = model
        return model

    def _is_script(self, spec: str) -> bool:
        return spec in self._given or is_script_spec(spec)

    def _resolve(self, spec: str) -> Model:
        base_url = self._base_url if spec == self._base_url_spec else None
        return resolve_model(spec, settings=self.settings, base_url=base_url, environ=self._environ)

    def _check_buildable(self, route: Route) -> None:
        failures = []
        for target in route.targets:
            try:
                self.model_for(target.spec)
                return
            except ModelError as exc:
                failures.append((target.spec, str(exc)))
        if len(failures) == 1:
            raise ModelError(failures[0][1])
        raise ModelError(
            f"no model of route {route.key} can be used:\n"
            + "\n".join(f"  - {spec}: {why}" for spec, why in failures)
        )

    def _overridden(self, key: str, route: Route | None) -> Route:
        override = self.model_override or ""
        provider = override.partition(":")[0]
        if self._is_script(override) or route is None:
            # A script is the whole conversation; nothing stands in for it.
            return Route(key, (Target(override, "primary"),), "--model")
        same_provider = route.primary.partition(":")[0] == provider
        kept = [
            target
            for target in route.targets[1:]
            if target.spec != override and (target.role == "fallback_provider" or same_provider)
        ]
        return Route(key, (Target(override, "primary"), *kept), f"--model over {route.source}")

    def _expand(self, key: str, configured: RouteSettings, problems: _Problems | None) -> tuple[Target, ...]:
        def problem(text: str) -> None:
            if problems is not None:
                problems.add(f"{key}: {text}")

        primary = configured.model.strip()
        provider = self._provider_of(primary)
        if provider is None:
            problem(
                f"model {primary!r} must be PROVIDER:MODEL with a known provider ({', '.join(sorted(self._providers))})"
            )
        targets = [Target(primary, "primary")]
        for entry in configured.fallback_models:
            spec = entry.strip()
            entry_provider = self._provider_of(spec)
            if entry_provider is None and provider is not None:
                spec, entry_provider = f"{provider}:{spec}", provider
            if entry_provider != provider:
                problem(
                    f"fallbackModels entry {entry!r} is not on provider {provider!r}; fallbackModels are tried on "
                    "the primary's provider, put other providers under fallbackProviders"
                )
            targets.append(Target(spec, "fallback_model"))
        for entry in configured.fallback_providers:
            spec = entry.strip()
            if self._provider_of(spec) is None:
                problem(f"fallbackProviders entry {entry!r} must be PROVIDER:MODEL with a known provider")
            targets.append(Target(spec, "fallback_provider"))
        unique: dict[str, Target] = {}
        for target in targets:
            unique.setdefault(target.spec, target)
        return tuple(unique.values())

    def _provider_of(self, spec: str) -> str | None:
        provider, colon, model = spec.partition(":")
        if colon and model and provider in self._providers:
            return provider
        return None


class RoutedModel:
    """One route as a ``Model``. ``attempts`` lists what the last ``stream`` call tried, in order."""

    def __init__(self, router: ModelRouter, route: Route) -> None:
        self.router = router
        self.route = route
        self.name = route.primary
        self.attempts: list[Attempt] = []
        self.last_target: str | None = None
        self._traced: Span = NO_SPAN

    def __repr__(self) -> str:
        return f"RoutedModel({self.route.key}: {' -> '.join(t.spec for t in self.route.targets)})"

    async def aclose(self) -> None:
        # The router owns the clients; they are shared between routes.
        return None

    def _note(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        if metrics.counting():
            metrics.breaker("model", attempt.target, self.router.breakers.get(attempt.target).state)
        if attempt.outcome != "ok":
            name = "seepient.model.retry" if attempt.outcome == "retry" else "seepient.model.fallback"
            self._traced.event(
                name,
                {
                    "seepient.model.target": attempt.target,
                    "seepient.model.attempt": attempt.attempt,
                    "seepient.model.outcome": attempt.outcome,
                    "seepient.model.wait_s": attempt.wait_s,
                    "seepient.model.error": content(attempt.error),
                },
            )
        if self.router.on_attempt is not None:
            self.router.on_attempt(attempt)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        """The routed call, traced as one GenAI ``chat`` span; retries and fallbacks are its events."""
        provider, _, model = self.route.primary.partition(":")
        self._traced = traced = start_span(
            f"chat {model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "seepient.model.route": self.route.key,
            },
        )
        try:
            async with aclosing(self._stream(request)) as events:
                async for event in events:
                    if isinstance(event, Completion):
                        traced.set("gen_ai.usage.input_tokens", event.usage.input_tokens)
                        traced.set("gen_ai.usage.output_tokens", event.usage.output_tokens)
                        traced.set("seepient.usage.cost_usd", event.usage.cost_usd)
                    yield event
            if self.last_target is not None:
                traced.set("gen_ai.response.model", self.last_target.partition(":")[2])
        except GeneratorExit:
            raise
        except BaseException as exc:
            traced.fail(type(exc).__name__)
            raise
        finally:
            traced.end()
            self._traced = NO_SPAN

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        router = self.router
        self.attempts = []
        self.last_target = None
        failures: list[tuple[str, str]] = []
        last_error: ModelError | None = None
        for target in self.route.targets:
            spec = target.spec
            breaker = router.breakers.get(spec)
            if not breaker.try_acquire():
                snapshot = breaker.snapshot()
                why = (
                    f"skipped: circuit open after {snapshot.failures} failure(s), last: {snapshot.last_error}"
                )
                if snapshot.probe_after is not None:
                    wait = max(snapshot.probe_after - router.clock.wall(), 0.0)
                    why += f"; next probe in {wait:.0f} s"
                failures.append((spec, why))
                self._note(Attempt(spec, 0, "skipped", snapshot.last_error))
                continue
            try:
                model = router.model_for(spec)
            except ModelError as exc:
                breaker.release()
                failures.append((spec, str(exc)))
                last_error = exc
                self._note(Attempt(spec, 0, "unavailable", str(exc)))
                continue
            target_request = _capped(request, router.settings.output_cap(spec))
            attempt = 0
            while True:
                attempt += 1
                streamed = False
                try:
                    async with aclosing(model.stream(target_request)) as events:
                        async for event in events:
                            if isinstance(event, Completion):
                                event = event.model_copy(
                                    update={"usage": priced(event.usage, spec, router.settings.prices)}
                                )
                            elif isinstance(event, TextChunk | ReasoningChunk | ToolCallChunk):
                                streamed = True
                            yield event
                except ModelError as exc:
                    last_error = exc
                    if exc.retryable:
                        breaker.record_failure(str(exc))
                    else:
                        breaker.note_error(str(exc))
                    if streamed:
                        self._note(Attempt(spec, attempt, "interrupted", str(exc)))
                        raise StreamInterrupted(
                            f"{exc} — the answer had already started, so it was not retried or sent to another "
                            "model (that would repeat text or tool calls already shown)",
                            status=exc.status,
                        ) from exc
                    decision = router.retry.decide(exc, attempt, router._rng)
                    if decision.retry and not breaker.is_open:
                        self._note(Attempt(spec, attempt, "retry", str(exc), decision.delay_s))
                        await router.clock.sleep(decision.delay_s)
                        continue
                    why = str(exc)
                    if exc.retryable:
                        why += f" ({'circuit opened' if breaker.is_open else decision.reason})"
                    failures.append((spec, why))
                    self._note(Attempt(spec, attempt, "next", str(exc)))
                    break
                except BaseException:
                    # Cancelled or closed by the caller: no verdict on the target.
                    breaker.release()
                    raise
                breaker.record_success()
                self.last_target = spec
                self._note(Attempt(spec, attempt, "ok"))
                return
        raise self._exhausted(failures, last_error)

    def _exhausted(self, failures: list[tuple[str, str]], last: ModelError | None) -> RouteExhausted:
        if len(failures) == 1 and last is not None and str(last) in failures[0][1]:
            return RouteExhausted(failures[0][1], tuple(failures), last=last)
        lines = "\n".join(f"  - {spec}: {why}" for spec, why in failures)
        return RouteExhausted(
            f"no model on route {self.route.key} answered; tried in order:\n{lines}",
            tuple(failures),
            last=last,
        )


def _capped(request: ModelRequest, cap: int) -> ModelRequest:
    """``request`` with the target's output cap: every request goes out with one, and a caller's own smaller
    cap (a summary's) stays."""
    wanted = request.max_output_tokens
    if wanted is not None and wanted <= cap:
        return request
    return request.model_copy(update={"max_output_tokens": cap})


def _check_key(purpose: str, tier: str) -> None:
    if purpose not in ROUTE_PURPOSES or tier not in ROUTE_TIERS:
        raise ModelError(
            f"unknown route {purpose}.{tier}: purposes are {', '.join(ROUTE_PURPOSES)}, "
            f"tiers {', '.join(ROUTE_TIERS)}"
        )


def _split(key: str) -> tuple[Purpose, Tier]:
    purpose, _, tier = key.partition(".")
    return purpose, tier  # type: ignore[return-value]
