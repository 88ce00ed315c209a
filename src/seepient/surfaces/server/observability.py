"""The server's telemetry: traces switched on from the ``--config`` file's ``telemetry`` block or ``OTEL_*``, and
``GET /metrics`` (Prometheus text) behind its own token. Each request's log entry and span are
``access_log.RequestLog``'s.

``/metrics`` answers only a request bearing ``$SEEPIENT_METRICS_TOKEN`` (compared in constant time); with no
token set it does not exist (404), so a server never exposes it by accident. The API's own bearer tokens do
not open it, and it does not open the API: a scraper's credential grants counters and nothing else. Or
``seepient serve --metrics-listen HOST:PORT`` serves the page alone on its own address (no token: the address
is its protection), through ``prometheus-client``'s own HTTP server.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from seepient import telemetry
from seepient.config.sections import TelemetrySettings
from seepient.surfaces.server.auth import bearer_from_header
from seepient.surfaces.server.manager import SessionManager

METRICS_TOKEN_ENV = "SEEPIENT_METRICS_TOKEN"


def start_traces(config_file: Path | None, environ: Mapping[str, str] | None = None) -> bool:
    """Traces for the whole server process, from the config file's ``telemetry`` block and ``OTEL_*``."""
    block = TelemetrySettings()
    if config_file is not None:
        try:
            raw = json.loads(config_file.read_text(encoding="utf-8")).get("telemetry")
        except (OSError, ValueError, AttributeError):
            raw = None  # the server's own config loading reports a broken file
        if isinstance(raw, dict):
            block = TelemetrySettings.model_validate(raw)
    return telemetry.configure(block, environ=environ, service_name="seepient-server")


def install(app: FastAPI, manager: SessionManager, environ: Mapping[str, str] | None = None) -> None:
    """Start traces and mount ``/metrics`` (when a metrics token is set)."""
    env = os.environ if environ is None else environ
    start_traces(manager.config_file, env)
    token = env.get(METRICS_TOKEN_ENV, "")
    if token:
        telemetry.metrics.enable()
    if telemetry.metrics.counting():
        telemetry.metrics.gauge(
            "seepient_active_sessions", "Sessions loaded in this server.", lambda: manager.loaded_count
        )
        telemetry.metrics.gauge(
            "seepient_active_streams",
            "Loaded sessions with a client following their events.",
            lambda: manager.streaming_count,
        )
    if token:

        @app.get("/metrics", include_in_schema=False)
        async def metrics(request: Request) -> Response:
            given = bearer_from_header(request.headers.get("authorization"))
            if given is None or not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse(
                    {"detail": f"send Authorization: Bearer ${METRICS_TOKEN_ENV}"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            body, content_type = telemetry.metrics.exposition()
            return Response(body, media_type=content_type)


def serve_metrics_at(address: str) -> None:
    """Serve ``/metrics`` alone on ``HOST:PORT`` for the life of the process (a daemon thread)."""
    from prometheus_client import start_http_server

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics-listen takes HOST:PORT, got {address!r}")
    start_http_server(int(port), addr=host.strip("[]"), registry=telemetry.metrics.enable().registry)
