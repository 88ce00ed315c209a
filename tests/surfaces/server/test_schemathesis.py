"""schemathesis generates requests from the server's own OpenAPI document, with a valid token and without:
no request may produce a server error (5xx)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.surfaces.server.conftest import Served, start


@pytest.fixture(scope="module")
def threaded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server in its own thread and loop: schemathesis calls it with blocking requests."""
    tmp_path = tmp_path_factory.mktemp("fuzz")
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        served, context = await start(tmp_path)
        box["served"], box["stop"] = served, asyncio.Event()
        ready.set()
        try:
            await box["stop"].wait()
        finally:
            await context.__aexit__(None, None, None)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the server did not start"
    served: Served = box["served"]
    script = served.script([{"text": "fuzzed"}] * 50)
    created = httpx2.post(
        f"{served.url}/v1/sessions",
        json={"workspace": str(served.workspace), "model": f"replay:{script}"},
        headers={"Authorization": f"Bearer {served.tokens['alice']}"},
        trust_env=False,
    )
    served.session_id = created.json()["id"]  # type: ignore[attr-defined]
    try:
        yield served
    finally:
        loop.call_soon_threadsafe(box["stop"].set)
        thread.join(30)


def _check(case: Any, served: Served) -> None:
    if case.path == "/v1/sessions/{session_id}/events":
        case.query = {**(case.query or {}), "follow": "false"}  # a followed stream never ends by itself
    if case.path_parameters and "session_id" in case.path_parameters and case.method != "DELETE":
        # Half the time aim at a real session, so generation reaches past the 404.
        if hash(str(case.path_parameters)) % 2:
            case.path_parameters["session_id"] = served.session_id  # type: ignore[attr-defined]
    for headers in ({"Authorization": f"Bearer {served.tokens['alice']}"}, {}):
        response = case.call(base_url=served.url, headers=headers, timeout=20)
        assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:500])
        if not headers and case.path != "/v1/health":
            assert response.status_code == 401


def test_no_request_causes_a_server_error(threaded_server: Served) -> None:
    # schemathesis' pytest plugin does not load under this pytest, so its strategies are driven directly.
    schema = schemathesis.openapi.from_url(f"{threaded_server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case: Any) -> None:
            _check(case, threaded_server)

        fuzz()
