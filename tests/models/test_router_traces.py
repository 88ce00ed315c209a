"""The routed call as one GenAI span (in process, exported to a local OTLP collector): the route's primary as
the requested model, the target that answered as the response model, and every retry and fallback as an event
that names the target, never the provider's error text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seepient import telemetry
from seepient.config.sections import TelemetrySettings
from tests.models.helpers import collect, streamed_text
from tests.models.test_router import make_router, model_settings
from tests.support.clock import FakeClock
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.sse_server import Reply


@pytest.fixture
def traced(otlp_receiver: OtlpReceiver) -> Iterator[OtlpReceiver]:
    assert telemetry.configure(TelemetrySettings(traces=True, endpoint=otlp_receiver.endpoint), environ={})
    try:
        yield otlp_receiver
    finally:
        telemetry.shutdown()


async def test_retries_and_a_fallback_are_events_of_one_chat_span(sse_server, traced: OtlpReceiver) -> None:
    routes = {
        "text.standard": {
            "model": "anthropic:claude-sonnet-4-5",
            "fallbackProviders": ["gemini:gemini-2.5-pro"],
        }
    }
    sse_server.queue(
        *(Reply.anthropic_error(529, "overloaded_error", "Overloaded: secret-ish detail") for _ in range(3)),
        Reply.gemini_synthesized("Gemini here."),
    )
    with telemetry.span("seepient.turn"):
        events = await collect(make_router(model_settings(sse_server, routes), FakeClock()).route())
    assert streamed_text(events) == "Gemini here."
    telemetry.flush()
    spans = traced.spans()
    turn = next(s for s in spans if s.name == "seepient.turn")
    chat = next(s for s in spans if s.name == "chat claude-sonnet-4-5")
    assert chat.parent_id == turn.span_id
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert chat.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert chat.attributes["gen_ai.response.model"] == "gemini-2.5-pro"
    names = [(name, attributes["seepient.model.outcome"]) for name, attributes in chat.events]
    assert names == [
        ("seepient.model.retry", "retry"),
        ("seepient.model.retry", "retry"),
        ("seepient.model.fallback", "next"),
    ]
    assert b"secret-ish" not in traced.raw()
