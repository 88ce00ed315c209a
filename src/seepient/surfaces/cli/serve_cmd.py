"""``seepient serve``: the HTTP/WebSocket server over the same runtime as the CLI."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_command(
        host: Annotated[
            str, typer.Option(help="address to listen on; non-loopback needs a token first")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="TCP port (0: any free port, printed at start)")] = 7337,
        config: Annotated[
            Path | None, typer.Option("--config", help='JSON file whose "server" object grants principals')
        ] = None,
        database: Annotated[
            str | None,
            typer.Option(
                help="sqlite:///PATH or postgresql://USER@HOST/DB (default ~/.seepient/seepient.db)"
            ),
        ] = None,
        log_format: Annotated[
            str,
            typer.Option(
                "--log-format",
                metavar="text|json",
                help="json: one JSON event a line on stderr (each request too), with trace ids",
            ),
        ] = "text",
        metrics_listen: Annotated[
            str | None,
            typer.Option(
                "--metrics-listen",
                metavar="HOST:PORT",
                help="also serve GET /metrics alone, without a token, on this address (keep it private)",
            ),
        ] = None,
    ) -> None:
        """Serve REST (/v1, OpenAPI at /openapi.json, docs at /docs), Server-Sent Events and WebSocket sessions.

        Prints where it listens on stderr and one JSON line per request on stdout (never a token or header);
        with --log-format json, every line (each request's too) is a JSON event on stderr instead."""
        from seepient.store import StoreError
        from seepient.surfaces.server.access_log import json_lines, log_events
        from seepient.surfaces.server.config import ServerConfigError
        from seepient.surfaces.server.run import ServerOptions, ServerStartError, serve

        if log_format not in ("text", "json"):
            raise fail("--log-format is text or json", command="serve")
        if log_format == "json":
            from seepient.telemetry import use_json_logs

            use_json_logs()
        if metrics_listen is not None:
            from seepient.surfaces.server.observability import serve_metrics_at

            try:
                serve_metrics_at(metrics_listen)
            except (ValueError, OSError) as exc:
                raise fail(f"--metrics-listen: {exc}", command="serve") from None

        # One place for each request's entry: stdout beside a human's stderr, or the JSON log with the rest.
        server_log = logging.getLogger("seepient.server")
        request_log = log_events(server_log) if log_format == "json" else json_lines(sys.stdout)

        def listening(urls: list[str]) -> None:
            if log_format == "json":
                # With JSON logs every stderr line is one JSON event, the listening address included.
                from seepient.telemetry import log_event

                log_event(server_log, "listening", {"urls": urls})
                return
            for url in urls:
                typer.echo(f"seepient serve: listening on {url} (API docs at {url}/docs)", err=True)
            typer.echo(
                "seepient serve: one JSON line per request on stdout; Ctrl-C or SIGTERM stops", err=True
            )

        options = ServerOptions(
            host=host, port=port, config_file=config, database=database, request_log=request_log
        )
        try:
            asyncio.run(serve(options, on_listening=listening))
        except (ServerStartError, ServerConfigError, StoreError) as exc:
            raise fail(str(exc), command="serve") from None
        except KeyboardInterrupt:
            raise typer.Exit(exit_codes.INTERRUPTED) from None
