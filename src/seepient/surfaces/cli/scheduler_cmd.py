"""``seepient scheduler serve --config scheduler.json``: run the worker scheduler service."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail


def register(app: typer.Typer) -> None:
    scheduler = typer.Typer(
        help="The worker scheduler: the only component that touches the Docker socket.", no_args_is_help=True
    )
    app.add_typer(scheduler, name="scheduler")

    @scheduler.command("serve")
    def serve_command(
        config: Annotated[
            Path, typer.Option("--config", metavar="FILE", help="scheduler.json (see `seepient certs init`)")
        ],
        docker_host: Annotated[
            str | None,
            typer.Option(
                "--docker-host",
                metavar="URL",
                help="the Docker API to use (default: $DOCKER_HOST or the local socket)",
            ),
        ] = None,
    ) -> None:
        """Serve GET /v1/health and POST /v1/dispatch over HTTPS with mutual TLS until interrupted."""
        from seepient.scheduler.config import SchedulerConfigError, load_scheduler_config
        from seepient.scheduler.service import SchedulerStartError, serve

        try:
            settings = load_scheduler_config(config)
        except SchedulerConfigError as exc:
            raise fail(str(exc), command="scheduler serve") from None

        def ready(url: str) -> None:
            summary = (
                f"seepient scheduler: listening on {url} (image {settings.worker_image}, "
                f"state {settings.state_dir})"
            )
            if settings.log_format == "json":
                # Every line on stderr is then one JSON event, this one too.
                import logging

                from seepient.telemetry import log_event

                log_event(
                    logging.getLogger("seepient.scheduler"), "listening", {"url": url, "summary": summary}
                )
            else:
                typer.echo(summary, err=True)

        async def main() -> None:
            task = asyncio.ensure_future(serve(settings, docker_url=docker_host, on_ready=ready))
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, task.cancel)
            with contextlib.suppress(asyncio.CancelledError):
                await task

        try:
            asyncio.run(main())
        except SchedulerStartError as exc:
            raise fail(str(exc), exit_codes.FAILED, command="scheduler serve") from None
        except OSError as exc:
            address = f"{settings.listen.host}:{settings.listen.port}"
            raise fail(
                f"cannot listen on {address}: {exc.strerror or exc}",
                exit_codes.FAILED,
                command="scheduler serve",
            ) from None
        typer.echo("seepient scheduler: stopped; worker containers removed", err=True)
