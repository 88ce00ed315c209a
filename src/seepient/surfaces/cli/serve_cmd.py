"""``seepient serve``: the HTTP/WebSocket server over the same runtime as the CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_command(
        host: Annotated[
            str, typer.Option(help="address to listen on; non-loopback needs a token first")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="TCP port")] = 7337,
        config: Annotated[
            Path | None, typer.Option("--config", help='JSON file whose "server" object grants principals')
        ] = None,
        database: Annotated[
            str | None,
            typer.Option(
                help="sqlite:///PATH or postgresql://USER@HOST/DB (default ~/.seepient/seepient.db)"
            ),
        ] = None,
    ) -> None:
        """Serve REST (/v1, OpenAPI at /openapi.json), Server-Sent Events and WebSocket sessions."""
        from seepient.store import StoreError
        from seepient.surfaces.server.config import ServerConfigError
        from seepient.surfaces.server.run import ServerOptions, ServerStartError, serve

        options = ServerOptions(host=host, port=port, config_file=config, database=database)
        try:
            asyncio.run(serve(options))
        except (ServerStartError, ServerConfigError, StoreError) as exc:
            typer.echo(f"seepient serve: {exc}", err=True)
            raise typer.Exit(exit_codes.USAGE) from None
        except KeyboardInterrupt:
            raise typer.Exit(exit_codes.INTERRUPTED) from None
