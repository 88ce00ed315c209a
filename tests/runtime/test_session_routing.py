"""The session takes its model from the router: a route's fallback answers when the primary fails before
any token, and the turn never sees the failure."""

from __future__ import annotations

import json

from seepient.config import SeepientPaths
from seepient.protocol import ErrorEvent
from seepient.runtime import Session, SessionOptions
from tests.support.sse_server import Reply, SSEReplayServer


async def test_route_falls_back_before_the_first_token(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    with SSEReplayServer() as server:
        settings = {
            "models": {
                "providers": {"local": {"type": "openai-chat", "baseUrl": server.base_url}},
                "routes": {"text.standard": {"model": "local:big", "fallbackModels": ["local:small"]}},
                "retry": {"maxAttempts": 1},
            }
        }
        # Providers and their base URLs come from the user's settings: a project never chooses them.
        (tmp_path / "home" / "settings.json").write_text(json.dumps(settings))
        server.queue(Reply.error(404, "no such model: big"), Reply.synthesized("small answered"))
        session = Session.open(
            SessionOptions(workspace=workspace, paths=SeepientPaths(home=tmp_path / "home"))
        )
        events = []
        session.subscribe(events.append)
        try:
            outcome = await session.run("hi")
        finally:
            await session.aclose()
        models_asked = [r.json()["model"] for r in server.requests]
    assert outcome.reason == "final" and outcome.text == "small answered"
    assert models_asked == ["big", "small"]
    assert session.model_spec == "local:big"
    assert not any(isinstance(e, ErrorEvent) for e in events)
