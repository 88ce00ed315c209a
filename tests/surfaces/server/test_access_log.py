"""The server's one request log against a real in-process server: an entry per request with no query string and
no header in it, led by its time on the JSON-lines sink, with the ids of the request's exported span when traces
are on, and a sink that fails never failing the request."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx2

from seepient import telemetry
from seepient.config import SeepientPaths
from seepient.config.settings import TelemetrySettings
from seepient.store import Store, database_url
from seepient.surfaces.server.access_log import RequestSink, json_lines
from seepient.surfaces.server.run import ServerOptions, running_server
from tests.support.otlp_receiver import OtlpReceiver


async def _requests(tmp_path: Path, sink: RequestSink) -> tuple[str, list[int]]:
    """Two requests (one with a secret in its query string, both with a token) to a server logging to
    ``sink``; the token and the statuses."""
    home = tmp_path / "home"
    database = f"sqlite:///{tmp_path / 'server.db'}"
    store = await Store.open(database_url(database, home))
    token = (await store.create_token("alice")).secret
    await store.aclose()
    options = ServerOptions(
        port=0, database=database, cwd=tmp_path, paths=SeepientPaths(home=home), request_log=sink
    )
    async with running_server(options) as url:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(base_url=url, headers=headers, trust_env=False, timeout=20) as client:
            listed = await client.get("/v1/sessions", params={"api_key": "sk-query-secret"})
            missing = await client.get("/v1/sessions/ses_nope")
    return token, [listed.status_code, missing.status_code]


async def test_each_request_is_one_json_line_with_no_query_nor_header(tmp_path: Path) -> None:
    stream = io.StringIO()
    token, statuses = await _requests(tmp_path, json_lines(stream))
    assert statuses == [200, 404]
    text = stream.getvalue()
    assert "sk-query-secret" not in text and "api_key" not in text
    assert token not in text and "Bearer" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    ours = [line for line in lines if line["path"].startswith("/v1/sessions")]
    assert [(e["method"], e["path"], e["status"]) for e in ours] == [
        ("GET", "/v1/sessions", 200),
        ("GET", "/v1/sessions/ses_nope", 404),
    ]
    assert all({"ts", "duration_ms", "client"} <= set(e) for e in ours)
    assert all("trace_id" not in e for e in lines)  # traces are off


async def test_with_traces_on_an_entry_names_its_request_span(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    entries: list[dict[str, Any]] = []
    assert telemetry.configure(TelemetrySettings(traces=True, endpoint=otlp_receiver.endpoint), environ={})
    try:
        await _requests(tmp_path, entries.append)
        telemetry.flush()
    finally:
        telemetry.shutdown()
    missing = next(e for e in entries if e["path"] == "/v1/sessions/ses_nope")
    exported = {s.span_id: s for s in otlp_receiver.spans() if s.name == "seepient.http_request"}
    span = exported[missing["span_id"]]
    assert span.trace_id == missing["trace_id"]
    assert span.attributes["url.path"] == "/v1/sessions/ses_nope"
    assert span.attributes["http.request.method"] == "GET"
    assert span.attributes["http.response.status_code"] == 404
    # Each request is a trace of its own: no client header chooses it.
    assert len({e["trace_id"] for e in entries}) == len(entries)


async def test_a_failing_sink_loses_the_entry_not_the_request(tmp_path: Path) -> None:
    def closed(_fields: dict[str, Any]) -> None:
        raise OSError("the log stream is closed")

    _, statuses = await _requests(tmp_path, closed)
    assert statuses == [200, 404]
