"""``seepient worker build-image``: build the worker image without a registry (debootstrap + docker import)."""

from __future__ import annotations

from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail


def register(app: typer.Typer) -> None:
    worker = typer.Typer(help="The container image that runs dispatched actions.", no_args_is_help=True)
    app.add_typer(worker, name="worker")

    @worker.command("build-image")
    def build_image_command(
        tag: Annotated[str, typer.Option("--tag", metavar="NAME:TAG", help="the image name to tag")] = (
            "seepient/worker:latest"
        ),
        mirror: Annotated[
            str | None,
            typer.Option(
                "--mirror",
                metavar="URL",
                help="the Debian mirror for debootstrap (default: the one apt on this machine uses)",
            ),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="rebuild even when the inputs are unchanged")
        ] = False,
    ) -> None:
        """Build the worker image from Debian packages and this checkout; needs root, debootstrap and docker.
        An unchanged build (same inputs digest) only re-tags the existing image."""
        from seepient.scheduler.image import ImageBuildError, build_worker_image

        try:
            built = build_worker_image(
                tag, mirror=mirror, force=force, progress=lambda line: typer.echo(line, err=True)
            )
        except ImageBuildError as exc:
            raise fail(str(exc), exit_codes.FAILED, command="worker build-image") from None
        typer.echo(f"{built.tag} {built.image_id} {'cached' if built.cached else 'built'}")
