"""The router through real adapters against the fault-injecting server: which targets are tried, in what order,
after what waits, and what the caller sees. The clock is fake: no test waits for a backoff."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from seepient.config.sections import ModelSettings
from seepient.config.settings import Settings
from seepient.models.base import ModelError
from seepient.models.openai_chat import OpenAIChatModel
from seepient.models.router import Attempt, ModelRouter, RouteExhausted, StreamInterrupted
from seepient.protocol import Completion, Message, ModelRequest, TextChunk, ToolCallChunk
from tests.models.helpers import collect, collect_until_error, only_completion, streamed_text, track
from tests.support.clock import FakeClock
from tests.support.sse_server import Reply, SSEReplayServer, chat_chunk

HELLO = ModelRequest(model="label", messages=(Message.user("hi"),))
KEYS = {"ANTHROPIC_API_KEY": "sk-ant", "GEMINI_API_KEY": "AIza", "LOCAL_KEY": "sk-local"}
SEED = 7


def model_settings(server: SSEReplayServer, routes: dict[str, Any], **models: Any) -> ModelSettings:
    providers = {
        "local": {"type": "openai-chat", "baseUrl": server.base_url, "apiKeyEnv": "LOCAL_KEY"},
        "anthropic": {"baseUrl": server.base_url},
        "gemini": {"baseUrl": server.base_url},
    }
    models.setdefault("retry", {"maxAttempts": 3, "baseDelayMs": 100, "maxDelayMs": 2000})
    return Settings.model_validate({"models": {"providers": providers, "routes": routes, **models}}).models


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_router(settings: ModelSettings, clock: FakeClock, **kwargs: Any) -> ModelRouter:
    kwargs.setdefault("environ", KEYS)
    router = ModelRouter(settings, clock=clock, rng=random.Random(SEED), **kwargs)
    track(router)
    return router


def tried(server: SSEReplayServer) -> list[str]:
    """The targets the server saw, as endpoint:model, in order."""
    return [f"{request.endpoint}:{request.model}" for request in server.requests]


def outcomes(attempts: list[Attempt]) -> list[tuple[str, int, str]]:
    return [(attempt.target, attempt.attempt, attempt.outcome) for attempt in attempts]


ONE_ROUTE = {"text.standard": {"model": "local:big", "fallbackModels": ["local:small"]}}


# --- retries within one target ----------------------------------------------------------------------------


async def test_a_429_waits_as_long_as_retry_after_says_then_retries(sse_server, clock):
    sse_server.queue(
        Reply.error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": "2"}),
        Reply.synthesized("Hello there"),
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events = await collect(routed)
    assert streamed_text(events) == "Hello there" == only_completion(events).message.content
    assert clock.sleeps == [2.0]
    assert tried(sse_server) == ["chat:big", "chat:big"]
    assert outcomes(routed.attempts) == [("local:big", 1, "retry"), ("local:big", 2, "ok")]
    assert routed.last_target == "local:big"


async def test_retry_after_ms_is_finer_than_retry_after(sse_server, clock):
    sse_server.queue(
        Reply.error(
            429,
            "slow down",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": "1250", "Retry-After": "2"},
        ),
        Reply.synthesized("ok"),
    )
    await collect(make_router(model_settings(sse_server, ONE_ROUTE), clock).route())
    assert clock.sleeps == [1.25]


async def test_server_errors_back_off_with_full_jitter_then_fall_back_on_the_same_provider(sse_server, clock):
    sse_server.queue(
        Reply.error(500, "boom", type="server_error"),
        Reply.error(502, "bad gateway", type="server_error"),
        Reply.error(503, "unavailable", type="server_error"),
        Reply.synthesized("from the small model"),
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events = await collect(routed)
    assert streamed_text(events) == "from the small model"
    assert tried(sse_server) == ["chat:big", "chat:big", "chat:big", "chat:small"]
    # Full jitter: uniform in [0, min(cap, base · 2^(n-1))], drawn from the router's random source.
    rng = random.Random(SEED)
    assert clock.sleeps == [rng.uniform(0, 0.1), rng.uniform(0, 0.2)]
    assert outcomes(routed.attempts) == [
        ("local:big", 1, "retry"),
        ("local:big", 2, "retry"),
        ("local:big", 3, "next"),
        ("local:small", 1, "ok"),
    ]


async def test_a_reset_before_the_first_byte_is_retried(sse_server, clock):
    sse_server.queue(Reply.reset_before_first_byte(), Reply.synthesized("second try"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    assert streamed_text(await collect(routed)) == "second try"
    assert tried(sse_server) == ["chat:big", "chat:big"]
    assert "before it answered" in routed.attempts[0].error


async def test_a_slow_first_byte_times_out_and_is_retried(sse_server, clock):
    def short_timeouts(spec: str) -> OpenAIChatModel:
        return OpenAIChatModel(
            spec.split(":", 1)[1], base_url=sse_server.base_url, api_key=None, timeout_s=0.3, name=spec
        )

    sse_server.queue(Reply.synthesized("late").delayed(30), Reply.synthesized("on time"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock, model_factory=short_timeouts).route()
    assert streamed_text(await collect(routed)) == "on time"
    assert outcomes(routed.attempts) == [("local:big", 1, "retry"), ("local:big", 2, "ok")]
    assert "no data" in routed.attempts[0].error


async def test_a_retry_after_longer_than_the_cap_moves_on_without_waiting(sse_server, clock):
    sse_server.queue(
        Reply.error(429, "come back in a minute", code="rate_limit_exceeded", headers={"Retry-After": "60"}),
        Reply.synthesized("small answered"),
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    assert streamed_text(await collect(routed)) == "small answered"
    assert clock.sleeps == []
    assert tried(sse_server) == ["chat:big", "chat:small"]


# --- moving on: other models, other providers ---------------------------------------------------------------


async def test_overload_falls_back_to_another_provider(sse_server, clock):
    routes = {
        "text.standard": {
            "model": "anthropic:claude-sonnet-4-5",
            "fallbackProviders": ["gemini:gemini-2.5-pro"],
        }
    }
    sse_server.queue(
        Reply.anthropic_error(529, "overloaded_error", "Overloaded"),
        Reply.anthropic_error(529, "overloaded_error", "Overloaded"),
        Reply.anthropic_error(529, "overloaded_error", "Overloaded"),
        Reply.gemini_synthesized("Gemini here."),
    )
    routed = make_router(model_settings(sse_server, routes), clock).route()
    events = await collect(routed)
    assert streamed_text(events) == "Gemini here."
    assert tried(sse_server) == [
        "messages:claude-sonnet-4-5",
        "messages:claude-sonnet-4-5",
        "messages:claude-sonnet-4-5",
        "gemini:gemini-2.5-pro",
    ]
    assert len(clock.sleeps) == 2 and routed.last_target == "gemini:gemini-2.5-pro"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_never_retried_and_move_on_at_once(sse_server, clock, status):
    sse_server.queue(
        Reply.error(status, f"refused with {status}", type="invalid_request_error"), Reply.synthesized("ok")
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    assert streamed_text(await collect(routed)) == "ok"
    assert tried(sse_server) == ["chat:big", "chat:small"] and clock.sleeps == []
    assert outcomes(routed.attempts) == [("local:big", 1, "next"), ("local:small", 1, "ok")]


async def test_when_every_key_is_refused_the_error_names_each_variable(sse_server, clock):
    routes = {
        "text.standard": {
            "model": "anthropic:claude-sonnet-4-5",
            "fallbackProviders": ["gemini:gemini-2.5-pro"],
        }
    }
    sse_server.queue(
        Reply.anthropic_error(401, "authentication_error", "invalid x-api-key"),
        Reply.gemini_error(400, "API key not valid.", state="INVALID_ARGUMENT", reason="API_KEY_INVALID"),
    )
    routed = make_router(model_settings(sse_server, routes), clock).route()
    events, error = await collect_until_error(routed)
    assert events == [] and isinstance(error, RouteExhausted)
    message = str(error)
    assert "no model on route text.standard answered" in message
    assert "anthropic:claude-sonnet-4-5" in message and "$ANTHROPIC_API_KEY" in message
    assert "gemini:gemini-2.5-pro" in message and "$GEMINI_API_KEY" in message
    assert [target for target, _ in error.failures] == [
        "anthropic:claude-sonnet-4-5",
        "gemini:gemini-2.5-pro",
    ]
    assert len(sse_server.requests) == 2 and clock.sleeps == []


async def test_malformed_sse_before_any_output_falls_back(sse_server, clock):
    sse_server.queue(Reply.synthesized("never shown").with_line(0), Reply.synthesized("clean"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events = await collect(routed)
    assert streamed_text(events) == "clean"
    assert tried(sse_server) == ["chat:big", "chat:small"]


async def test_a_single_target_that_keeps_failing_reports_its_own_error(sse_server, clock):
    sse_server.cycle(Reply.error(500, "still down", type="server_error"))
    routed = make_router(model_settings(sse_server, {"text.standard": {"model": "local:big"}}), clock).route()
    _, error = await collect_until_error(routed)
    assert "still down" in str(error) and "3 attempt(s) made" in str(error)
    assert error.retryable and error.status == 500
    assert len(sse_server.requests) == 3


# --- once output has started: no fallback, no restart ----------------------------------------------------


async def test_a_reset_after_text_ends_the_call_without_fallback(sse_server, clock):
    sse_server.queue(
        Reply.synthesized("one two three four five").reset_after(3), Reply.synthesized("must not be used")
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events, error = await collect_until_error(routed)
    assert isinstance(error, StreamInterrupted)
    assert [event.text for event in events if isinstance(event, TextChunk)] == ["one ", "two ", "three "]
    assert not any(isinstance(event, Completion) for event in events)
    assert tried(sse_server) == ["chat:big"] and clock.sleeps == []
    assert "already started" in str(error)
    assert outcomes(routed.attempts) == [("local:big", 1, "interrupted")]


async def test_a_cut_during_a_tool_call_never_repeats_the_call(sse_server, clock):
    reply = Reply.synthesized(
        tool_calls=[{"name": "shell", "arguments": {"command": "make test"}, "id": "c1"}]
    )
    sse_server.queue(
        reply.cut(after=2),
        Reply.synthesized(tool_calls=[{"name": "shell", "arguments": {"command": "make test"}}]),
    )
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events, error = await collect_until_error(routed)
    assert isinstance(error, StreamInterrupted)
    headers = [event for event in events if isinstance(event, ToolCallChunk) and event.name]
    assert [(chunk.index, chunk.id, chunk.name) for chunk in headers] == [(0, "c1", "shell")]
    assert len(sse_server.requests) == 1


async def test_malformed_sse_after_text_is_an_interruption(sse_server, clock):
    sse_server.queue(Reply.synthesized("alpha beta gamma").with_line(2), Reply.synthesized("unused"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    events, error = await collect_until_error(routed)
    assert isinstance(error, StreamInterrupted) and "not JSON" in str(error)
    assert streamed_text(events) == "alpha beta "
    assert len(sse_server.requests) == 1


# --- circuit breaker --------------------------------------------------------------------------------------

BREAKER = {"failureThreshold": 2, "cooldownMs": 10_000}


async def test_the_breaker_opens_skips_probes_and_closes(sse_server, clock):
    settings = model_settings(sse_server, ONE_ROUTE, retry={"maxAttempts": 1}, circuitBreaker=BREAKER)
    router = make_router(settings, clock)
    routed = router.route()
    sse_server.queue(
        Reply.error(500, "down 1", type="server_error"),
        Reply.synthesized("small 1"),
        Reply.error(500, "down 2", type="server_error"),
        Reply.synthesized("small 2"),
    )
    await collect(routed)
    assert router.breaker("local:big").state == "closed"
    await collect(routed)
    opened = router.breaker("local:big")
    assert (opened.state, opened.failures, opened.opened_at) == ("open", 2, clock.now)
    assert "down 2" in opened.last_error and opened.probe_after == clock.now + 10

    # While open, the target is skipped without a request.
    sse_server.queue(Reply.synthesized("small 3"))
    assert streamed_text(await collect(routed)) == "small 3"
    assert outcomes(routed.attempts)[0] == ("local:big", 0, "skipped")
    assert tried(sse_server)[-1] == "chat:small" and tried(sse_server).count("chat:big") == 2

    # After the cool-down one probe goes through; its failure opens the breaker again.
    clock.advance(10)
    assert router.breaker("local:big").state == "half_open"
    sse_server.queue(Reply.error(503, "still down", type="server_error"), Reply.synthesized("small 4"))
    await collect(routed)
    assert tried(sse_server)[-2:] == ["chat:big", "chat:small"]
    assert router.breaker("local:big").state == "open" and router.breaker("local:big").opened_at == clock.now

    # The next probe succeeds: closed, counters reset.
    clock.advance(10)
    sse_server.queue(Reply.synthesized("big is back"))
    assert streamed_text(await collect(routed)) == "big is back"
    closed = router.breaker("local:big")
    assert (closed.state, closed.failures, closed.opened_at) == ("closed", 0, None)


async def test_client_errors_do_not_open_the_breaker(sse_server, clock):
    settings = model_settings(sse_server, ONE_ROUTE, circuitBreaker=BREAKER)
    router = make_router(settings, clock)
    for _ in range(3):
        sse_server.queue(
            Reply.error(400, "bad schema", type="invalid_request_error"), Reply.synthesized("ok")
        )
        await collect(router.route())
    snapshot = router.breaker("local:big")
    assert snapshot.state == "closed" and snapshot.failures == 0 and "bad schema" in snapshot.last_error


async def test_the_breaker_stops_retries_once_it_opens(sse_server, clock):
    settings = model_settings(sse_server, ONE_ROUTE, retry={"maxAttempts": 5}, circuitBreaker=BREAKER)
    sse_server.queue(*[Reply.error(500, "down", type="server_error")] * 2, Reply.synthesized("small"))
    routed = make_router(settings, clock).route()
    await collect(routed)
    assert tried(sse_server) == ["chat:big", "chat:big", "chat:small"]
    assert outcomes(routed.attempts) == [
        ("local:big", 1, "retry"),
        ("local:big", 2, "next"),
        ("local:small", 1, "ok"),
    ]
    assert len(clock.sleeps) == 1


async def test_a_probe_abandoned_by_its_caller_frees_the_next_probe(sse_server, clock):
    settings = model_settings(
        sse_server,
        {"text.standard": {"model": "local:big"}},
        retry={"maxAttempts": 1},
        circuitBreaker=BREAKER,
    )
    router = make_router(settings, clock)
    sse_server.cycle(Reply.error(500, "down", type="server_error"))
    for _ in range(2):
        await collect_until_error(router.route())
    clock.advance(10)
    sse_server.cycle(Reply.synthesized("a long answer that the caller stops reading"))
    stream = router.route().stream(HELLO)
    assert isinstance(await anext(stream), TextChunk)
    # A second caller meanwhile finds the probe taken.
    _, error = await collect_until_error(router.route())
    assert "circuit open" in str(error) and "next probe in 0 s" in str(error)
    await stream.aclose()
    assert router.breaker("local:big").state == "half_open"
    assert streamed_text(await collect(router.route())).startswith("a long answer")
    assert router.breaker("local:big").state == "closed"


async def test_the_breaker_is_per_target(sse_server, clock):
    routes = {
        "text.standard": {"model": "local:big"},
        "text.efficient": {"model": "local:small"},
    }
    router = make_router(
        model_settings(sse_server, routes, retry={"maxAttempts": 1}, circuitBreaker=BREAKER), clock
    )
    sse_server.queue(*[Reply.error(500, "big down", type="server_error")] * 2, Reply.synthesized("small ok"))
    for _ in range(2):
        await collect_until_error(router.route())
    assert streamed_text(await collect(router.efficient())) == "small ok"
    assert router.breaker("local:big").state == "open" and router.breaker("local:small").state == "closed"


# --- routes, overrides, configuration ---------------------------------------------------------------------


def routes_settings(routes: dict[str, Any], **models: Any) -> ModelSettings:
    return Settings.model_validate({"models": {"routes": routes, **models}}).models


def specs(route) -> list[str]:
    return [target.spec for target in route.targets]


FULL = {
    "text.standard": {
        "model": "openai:gpt-4.1",
        "fallbackModels": ["gpt-4.1-mini"],
        "fallbackProviders": ["anthropic:claude-sonnet-4-5"],
    },
    "text.efficient": {"model": "openai:gpt-4.1-nano"},
    "vision.standard": {"model": "gemini:gemini-2.5-pro"},
    "media.standard": {"model": "openai:gpt-image-1"},
}


def test_routes_fall_back_from_specific_to_general():
    router = ModelRouter(routes_settings(FULL), environ={})
    assert specs(router.route_for("text", "standard")) == [
        "openai:gpt-4.1",
        "openai:gpt-4.1-mini",
        "anthropic:claude-sonnet-4-5",
    ]
    assert [t.role for t in router.route_for().targets] == ["primary", "fallback_model", "fallback_provider"]
    assert specs(router.route_for("text", "complex")) == specs(router.route_for("text", "standard"))
    assert specs(router.route_for("commit", "standard")) == specs(router.route_for("text", "standard"))
    assert specs(router.route_for("vision", "efficient")) == ["gemini:gemini-2.5-pro"]
    assert specs(router.route_for("plan", "efficient")) == ["openai:gpt-4.1-nano"]
    assert router.route_for("plan", "efficient").source == "settings (text.efficient)"


def test_model_override_replaces_the_primary_of_the_route_used():
    router = ModelRouter(routes_settings(FULL), model_override="openai:o3", environ={})
    assert specs(router.route_for()) == ["openai:o3", "openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"]
    # Another provider's override keeps the other providers, not the replaced provider's models.
    other = ModelRouter(routes_settings(FULL), model_override="ollama:qwen3", environ={})
    assert specs(other.route_for()) == ["ollama:qwen3", "anthropic:claude-sonnet-4-5"]
    assert specs(other.route_for("vision", "standard")) == ["ollama:qwen3"]
    # A configured efficient route and media routes keep their own models.
    assert specs(other.route_for("text", "efficient")) == ["openai:gpt-4.1-nano"]
    assert specs(other.route_for("media", "standard")) == ["openai:gpt-image-1"]
    replay = ModelRouter(routes_settings(FULL), model_override="replay:script.yaml", environ={})
    assert specs(replay.route_for()) == ["replay:script.yaml"]


def test_a_replay_script_is_never_the_efficient_model(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    alone = ModelRouter(routes_settings({}), model_override=f"replay:{script}", environ={})
    assert alone.efficient() is None
    configured = ModelRouter(
        routes_settings({"text.efficient": {"model": "ollama:qwen3"}}),
        model_override=f"replay:{script}",
        environ={},
    )
    assert configured.efficient().name == "ollama:qwen3"


def test_without_routes_the_default_model_or_override_is_the_route():
    assert specs(
        ModelRouter(routes_settings({}, default="ollama:llama3.2"), environ={}).route_for("plan")
    ) == ["ollama:llama3.2"]
    assert specs(ModelRouter(routes_settings({}), model_override="ollama:qwen3", environ={}).route_for()) == [
        "ollama:qwen3"
    ]
    with pytest.raises(ModelError, match="no model is configured"):
        ModelRouter(routes_settings({}), environ={}).route_for()


def test_media_needs_its_own_route():
    router = ModelRouter(routes_settings({"text.standard": {"model": "openai:gpt-4.1"}}), environ={})
    with pytest.raises(ModelError, match=r"models\.routes\.media\.standard"):
        router.route_for("media", "standard")


@pytest.mark.parametrize(
    ("route", "problem"),
    [
        ({"model": "gpt-4.1"}, "must be PROVIDER:MODEL"),
        ({"model": "nosuch:model"}, "must be PROVIDER:MODEL"),
        (
            {"model": "openai:gpt-4.1", "fallbackModels": ["anthropic:claude-haiku-4-5"]},
            "put other providers under fallbackProviders",
        ),
        ({"model": "openai:gpt-4.1", "fallbackProviders": ["claude"]}, "fallbackProviders entry 'claude'"),
    ],
)
def test_route_mistakes_are_refused_when_the_router_is_made(route, problem):
    with pytest.raises(ModelError) as caught:
        ModelRouter(routes_settings({"text.standard": route}), environ={})
    assert "text.standard" in str(caught.value) and problem in str(caught.value)


def test_a_route_key_outside_purpose_tier_is_a_settings_error():
    from seepient.config.settings import SettingsError, _validate

    with pytest.raises(SettingsError, match="PURPOSE.TIER"):
        _validate({"models": {"routes": {"chat.fast": {"model": "openai:x"}}}}, "settings.json")


def test_a_route_whose_only_target_has_no_key_fails_at_once_naming_the_variable():
    router = ModelRouter(
        routes_settings({"text.standard": {"model": "anthropic:claude-sonnet-4-5"}}), environ={}
    )
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        router.route()


async def test_a_target_without_a_key_is_passed_over(sse_server, clock):
    routes = {"text.standard": {"model": "anthropic:claude-sonnet-4-5", "fallbackProviders": ["local:big"]}}
    router = make_router(model_settings(sse_server, routes), clock, environ={"LOCAL_KEY": "k"})
    sse_server.queue(Reply.synthesized("local answered"))
    routed = router.route()
    assert streamed_text(await collect(routed)) == "local answered"
    assert outcomes(routed.attempts) == [
        ("anthropic:claude-sonnet-4-5", 0, "unavailable"),
        ("local:big", 1, "ok"),
    ]
    assert "ANTHROPIC_API_KEY" in routed.attempts[0].error
    assert tried(sse_server) == ["chat:big"]


async def test_cost_is_estimated_from_configured_prices(sse_server, clock):
    prices = {"local:big": {"input": 2.0, "output": 8.0, "cachedInput": 0.5}}
    settings = model_settings(sse_server, ONE_ROUTE, prices=prices)
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 600}}
    sse_server.queue(
        Reply.stream(
            chat_chunk(content="ok", finish_reason="stop"), chat_chunk(usage=usage, choices=False), "[DONE]"
        ),
        Reply.error(500, "down", type="server_error"),
        Reply.error(500, "down", type="server_error"),
        Reply.error(500, "down", type="server_error"),
        Reply.synthesized("unpriced"),
    )
    router = make_router(settings, clock)
    completion = only_completion(await collect(router.route()))
    assert completion.usage.cost_usd == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 8.0) / 1e6)
    assert only_completion(await collect(router.route())).usage.cost_usd is None


async def test_every_attempt_is_reported_as_it_happens(sse_server, clock):
    seen: list[Attempt] = []
    sse_server.queue(Reply.error(503, "busy", type="server_error"), Reply.synthesized("ok"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock, on_attempt=seen.append).route()
    await collect(routed)
    assert seen == routed.attempts and seen[0].wait_s == clock.sleeps[0]


async def test_a_routed_model_serves_many_calls_and_concurrent_sessions(sse_server, clock):
    router = make_router(model_settings(sse_server, ONE_ROUTE), clock)
    sse_server.cycle(Reply.synthesized("same answer"))
    first, second = router.route(), router.route()
    results = await asyncio.gather(
        collect(first), collect(second), collect(first.__class__(router, first.route))
    )
    assert all(streamed_text(events) == "same answer" for events in results)
    assert outcomes(first.attempts) == outcomes(second.attempts) == [("local:big", 1, "ok")]


# --- connections ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply.synthesized("pooled"),
        Reply.responses_synthesized("pooled"),
        Reply.anthropic_synthesized("pooled"),
        Reply.gemini_synthesized("pooled"),
    ],
    ids=["openai-chat", "openai-responses", "anthropic", "gemini"],
)
async def test_each_adapter_returns_its_connection_to_the_pool(sse_server, clock, reply):
    # Leaving the body unread after the final event would drop the connection and cost every next call a
    # new TCP connect before its first token.
    providers = {"type": _type_of(reply), "baseUrl": sse_server.base_url}
    settings = Settings.model_validate({"models": {"providers": {"p": providers}, "default": "p:m"}}).models
    sse_server.cycle(reply)
    routed = make_router(settings, clock, environ={}).route()
    for _ in range(3):
        assert streamed_text(await collect(routed)) == "pooled"
    assert len({request.client_port for request in sse_server.requests}) == 1


def _type_of(reply: Reply) -> str:
    first = reply.events[0]
    if b"response.created" in first:
        return "openai-responses"
    if b"message_start" in first:
        return "anthropic"
    if b"candidates" in first:
        return "gemini"
    return "openai-chat"


async def test_a_server_that_lingers_after_the_final_event_does_not_hold_the_answer(sse_server, clock):
    sse_server.queue(Reply.synthesized("done soon").held_open(30), Reply.synthesized("next"))
    routed = make_router(model_settings(sse_server, ONE_ROUTE), clock).route()
    assert only_completion(await collect(routed)).message.content == "done soon"
    assert streamed_text(await collect(routed)) == "next"


# --- the output cap ---------------------------------------------------------------------------------------


async def test_every_request_carries_the_default_output_cap(sse_server, clock):
    sse_server.queue(Reply.synthesized("ok"))
    await collect(make_router(model_settings(sse_server, ONE_ROUTE), clock).route())
    assert sse_server.last_request.json()["max_tokens"] == 8192


async def test_each_target_gets_its_own_cap_and_a_smaller_cap_asked_for_stays(sse_server, clock):
    caps = {"default": 2000, "local:small": 300}
    settings = model_settings(sse_server, ONE_ROUTE, maxOutputTokens=caps)
    sse_server.queue(Reply.error(404, "no such model: big"), Reply.synthesized("ok"))
    routed = make_router(settings, clock).route()
    await collect(routed, HELLO.model_copy(update={"max_output_tokens": 4000}))
    assert [r.json()["max_tokens"] for r in sse_server.requests] == [2000, 300]
    sse_server.queue(Reply.synthesized("ok"))
    await collect(routed, HELLO.model_copy(update={"max_output_tokens": 100}))
    assert sse_server.last_request.json()["max_tokens"] == 100


def test_a_cap_below_one_is_a_settings_error():
    with pytest.raises(ValueError, match=r"maxOutputTokens\.local:small must be at least 1, not 0"):
        Settings.model_validate({"models": {"maxOutputTokens": {"local:small": 0}}})
