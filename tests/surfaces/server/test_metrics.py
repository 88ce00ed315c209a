"""``GET /metrics`` on a real server: Prometheus text parsed with ``prometheus-client``'s own parser, counters
that move as a scripted session runs (turns, tokens, tool calls by verdict, approval waits, audit appends,
active sessions), and a page that exists only behind its own token."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.sse_server import Reply, SSEReplayServer
from tests.surfaces.server.conftest import Served, start

TOKEN = "metrics-scrape-token-for-tests"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def _scrape(served: Served) -> dict:
    async with httpx2.AsyncClient(base_url=served.url, trust_env=False, timeout=20) as client:
        response = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return _samples(response.text)


@pytest.fixture
async def provider():
    with SSEReplayServer() as server:
        yield server


@pytest.fixture
async def metered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: SSEReplayServer):
    monkeypatch.setenv("SEEPIENT_METRICS_TOKEN", TOKEN)
    monkeypatch.setenv("LOCAL_API_KEY", "sk-local-test-key-0000")
    home = tmp_path / "seepient-home"
    home.mkdir()
    settings = {
        "permissions": {"deny": ["Shell(rm:*)"]},
        "models": {
            "providers": {
                "local": {"type": "openai-chat", "baseUrl": provider.base_url, "apiKeyEnv": "LOCAL_API_KEY"}
            },
            "prices": {"local:gpt-test": {"input": 1.0, "output": 2.0}},
        },
    }
    (home / "settings.json").write_text(json.dumps(settings))
    grant = {"roots": [str(tmp_path / "root")], "models": ["local:gpt-test"], "maxMode": "always-ask"}
    server, context = await start(tmp_path, config={"server": {"defaultPrincipal": grant}})
    try:
        yield server
    finally:
        await context.__aexit__(None, None, None)


async def _events_until(client: httpx2.AsyncClient, session_id: str, kind: str) -> list[dict]:
    for _ in range(500):
        response = await client.get(f"/v1/sessions/{session_id}/events", params={"follow": "false"})
        events = [
            json.loads(line[len("data: ") :])
            for line in response.text.splitlines()
            if line.startswith("data: ")
        ]
        if any(event["type"] == kind for event in events):
            return events
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {kind} event")


async def test_counters_move_as_a_scripted_session_runs(metered: Served, provider: SSEReplayServer) -> None:
    before = await _scrape(metered)
    calls = [
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "hi\n"}},
        {"name": "shell", "arguments": {"command": "rm -rf build"}},
    ]
    provider.queue(Reply.synthesized("", calls), Reply.synthesized("Done."))
    async with metered.client() as client:
        created = await client.post(
            "/v1/sessions",
            json={"workspace": str(metered.workspace), "model": "local:gpt-test", "mode": "always-ask"},
        )
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
        events = await _events_until(client, session_id, "permission_request")
        request = next(e for e in events if e["type"] == "permission_request")["request"]
        await client.post(
            f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json={"decision": "approve_once"}
        )
        await _events_until(client, session_id, "turn_completed")
    after = await _scrape(metered)

    def moved(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    model = "gpt-test"
    assert moved("seepient_turns_total", model=model, reason="final") == 1
    assert moved("seepient_tool_calls_total", tool="write_file", verdict="ask", status="ok") == 1
    assert moved("seepient_tool_calls_total", tool="shell", verdict="deny", status="denied") == 1
    assert moved("seepient_approval_wait_seconds_count", decision="approve_once") == 1
    assert moved("seepient_execution_seconds_count", backend="local") == 1
    assert moved("seepient_audit_appends_total", record="intent") == 1
    assert moved("seepient_audit_appends_total", record="outcome") == 1
    assert moved("seepient_audit_appends_total", record="denied") == 1
    assert _value(after, "seepient_active_sessions") >= 1
    assert moved("seepient_tokens_total", model=model, kind="input") == 24
    assert moved("seepient_tokens_total", model=model, kind="output") == 14
    assert moved("seepient_cost_usd_total", model=model) == pytest.approx((24 * 1.0 + 14 * 2.0) / 1e6)


async def test_the_page_needs_its_own_token(metered: Served) -> None:
    async with httpx2.AsyncClient(base_url=metered.url, trust_env=False, timeout=20) as client:
        assert (await client.get("/metrics")).status_code == 401
        api_token = {"Authorization": f"Bearer {metered.tokens['alice']}"}
        assert (await client.get("/metrics", headers=api_token)).status_code == 401
        wrong = {"Authorization": f"Bearer {TOKEN}x"}
        assert (await client.get("/metrics", headers=wrong)).status_code == 401
        # The scrape token opens nothing of the API.
        scrape = {"Authorization": f"Bearer {TOKEN}"}
        assert (await client.get("/v1/sessions", headers=scrape)).status_code == 401


async def test_without_a_token_there_is_no_metrics_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEEPIENT_METRICS_TOKEN", raising=False)
    server, context = await start(tmp_path)
    try:
        async with httpx2.AsyncClient(base_url=server.url, trust_env=False, timeout=20) as client:
            assert (
                await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            ).status_code == 404
    finally:
        await context.__aexit__(None, None, None)


async def test_active_streams_count_clients_following_a_session(
    metered: Served, provider: SSEReplayServer
) -> None:
    async with metered.client() as client:
        created = await client.post(
            "/v1/sessions",
            json={"workspace": str(metered.workspace), "model": "local:gpt-test", "mode": "always-ask"},
        )
        session_id = created.json()["id"]
        assert _value(await _scrape(metered), "seepient_active_streams") == 0
        async with client.stream(
            "GET", f"/v1/sessions/{session_id}/events", params={"follow": "true"}
        ) as events:
            assert events.status_code == 200
            for _ in range(500):
                if _value(await _scrape(metered), "seepient_active_streams") == 1:
                    break
                await asyncio.sleep(0.02)
            assert _value(await _scrape(metered), "seepient_active_streams") == 1
            assert _value(await _scrape(metered), "seepient_active_sessions") >= 1
