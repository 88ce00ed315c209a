"""Switching the consent mode mid-session (Shift+Tab, ``/mode``) changes what the model is told from the next
request on, not just what policy does."""

from __future__ import annotations

import json

from seepient.config import SeepientPaths
from seepient.runtime import Session, SessionOptions
from tests.support.sse_server import Reply, SSEReplayServer


async def test_the_next_request_states_the_new_consent_mode(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True)
    (tmp_path / "h").mkdir()
    with SSEReplayServer() as server:
        settings = {
            "models": {
                "providers": {"local": {"type": "openai-chat", "baseUrl": server.base_url}},
                "routes": {"text.standard": {"model": "local:m"}},
                "retry": {"maxAttempts": 1},
            }
        }
        # Providers and their base URLs come from the user's settings: a project never chooses them.
        (tmp_path / "h" / "settings.json").write_text(json.dumps(settings))
        server.queue(Reply.synthesized("one"), Reply.synthesized("two"))
        session = Session.open(
            SessionOptions(
                workspace=workspace, mode="ask-untrusted", paths=SeepientPaths(home=tmp_path / "h")
            )
        )
        try:
            await session.run("first")
            assert session.set_mode("always-ask") == "always-ask"
            await session.run("second")
        finally:
            await session.aclose()
        systems = [r.json()["messages"][0]["content"] for r in server.requests]
    assert "Consent mode: ask-untrusted" in systems[0] and "always-ask" not in systems[0]
    assert "Consent mode: always-ask" in systems[1] and "ask-untrusted" not in systems[1]
    # Only the environment section changed: the rest of the prompt (and the provider's cache prefix) stays.
    assert systems[0].split("# Environment")[0] == systems[1].split("# Environment")[0]
