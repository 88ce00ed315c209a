"""A real ``seepient serve --metrics-listen … --log-format json`` with traces on: the metrics page on its own
address moves as a turn runs, every stderr line is one JSON event (each request's once, none on stdout), the
turn's log line carries the trace id of the turn's exported span, and the request that started the turn carries
the same trace: the turn's span nests under the request's."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Sandboxed
from tests.e2e.test_server import Server
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.ports import free_port
from tests.support.scripts import write_script

pytestmark = pytest.mark.e2e


def _turns(metrics_url: str) -> float:
    page = httpx2.get(metrics_url, trust_env=False, timeout=10)
    assert page.status_code == 200
    families = {family.name: family for family in text_string_to_metric_families(page.text)}
    return sum(
        sample.value for sample in families["seepient_turns"].samples if sample.name.endswith("_total")
    )


def test_metrics_on_their_own_address_and_json_logs_with_trace_ids(
    world: Sandboxed, otlp_receiver: OtlpReceiver
) -> None:
    metrics_port = free_port()
    world.env.update(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    )
    server = Server(
        world=world,
        root=world.workspace,
        database=f"sqlite:///{world.home / 'server.db'}",
        port=free_port(besides={metrics_port}),
        args=("--metrics-listen", f"127.0.0.1:{metrics_port}", "--log-format", "json"),
    )
    token = server.token("alice")
    server.start()
    try:
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        before = _turns(metrics_url)
        script = write_script(world.workspace / "script.yaml", [{"text": "Hello from the server."}])
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=server.url, headers=headers, trust_env=False, timeout=30) as client:
            created = client.post(
                "/v1/sessions", json={"workspace": str(world.workspace), "model": f"replay:{script}"}
            )
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            reply = client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "hi"})
            assert reply.status_code == 202, reply.text
            for _ in range(500):
                if _turns(metrics_url) > before:
                    break
                time.sleep(0.02)
        assert _turns(metrics_url) == before + 1
        spans = otlp_receiver.wait_for("seepient.turn")
    finally:
        stdout, stderr = _stop(server)
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    turn = next(s for s in spans if s.name == "seepient.turn")
    assert turn.service == "seepient-server"
    completed = next(line for line in lines if line["event"] == "turn_completed")
    assert completed["trace_id"] == turn.trace_id and completed["reason"] == "final"
    requests = [line for line in lines if line["event"] == "http_request"]
    assert any(r["path"] == "/v1/sessions" and r["status"] == 201 for r in requests)
    assert token not in stderr
    # One log, one line per request: under --log-format json nothing about requests goes to stdout.
    assert stdout.strip() == ""
    posted = [r for r in requests if r["path"] == f"/v1/sessions/{session_id}/messages"]
    assert len(posted) == 1 and posted[0]["status"] == 202 and posted[0]["method"] == "POST"
    assert posted[0]["trace_id"] == turn.trace_id
    request_span = next(
        s
        for s in otlp_receiver.spans()
        if s.name == "seepient.http_request" and s.span_id == posted[0]["span_id"]
    )
    assert request_span.attributes["url.path"] == f"/v1/sessions/{session_id}/messages"
    assert request_span.attributes["http.response.status_code"] == 202


def _stop(server: Server) -> tuple[str, str]:
    """Stop the server as ``Server.stop`` does, keeping stdout (the request log's place without JSON logs)."""
    assert server.process is not None
    server.process.send_signal(signal.SIGINT)
    try:
        return server.process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        return server.process.communicate()
