"""``seepient certs init DIR``: a CA, certificates, signing keys and ready configs for worker mode."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes


def register(app: typer.Typer) -> None:
    certs = typer.Typer(help="Certificates and keys for the Docker worker scheduler.", no_args_is_help=True)
    app.add_typer(certs, name="certs")

    @certs.command("init")
    def init_command(
        directory: Annotated[
            Path, typer.Argument(metavar="DIR", help="where to write the files (created if missing)")
        ],
        workspace_root: Annotated[
            Path | None,
            typer.Option(
                "--workspace-root",
                metavar="PATH",
                help="workspace root of the tenant 'default' (default: the current directory)",
            ),
        ] = None,
        scheduler_host: Annotated[
            list[str] | None,
            typer.Option(
                "--scheduler-host",
                metavar="NAME",
                help="another DNS name or IP the scheduler's certificate is valid for (repeatable); "
                "localhost and 127.0.0.1 are always included",
            ),
        ] = None,
        force: Annotated[bool, typer.Option("--force", help="replace files that already exist")] = False,
    ) -> None:
        """Write ca.pem, scheduler and control-plane certificates, Ed25519 signing keys (private files
        0600), scheduler.json and control-plane.json into DIR."""
        from seepient.crypto import CryptoFileError, init_deployment

        try:
            deployment = init_deployment(
                directory,
                workspace_root=workspace_root or Path.cwd(),
                scheduler_hosts=scheduler_host or [],
                force=force,
            )
        except (CryptoFileError, ValueError) as exc:
            typer.echo(f"seepient certs init: {exc}", err=True)
            raise typer.Exit(exit_codes.USAGE) from None
        for path in deployment.files:
            typer.echo(str(path))
        typer.echo(
            f"wrote {len(deployment.files)} files to {deployment.directory} "
            f"(dispatch key {deployment.dispatch_key_id}). Start the scheduler with "
            f"`seepient scheduler serve --config {deployment.directory / 'scheduler.json'}`; give the control "
            f"plane `--config {deployment.directory / 'control-plane.json'}`. Keep the *-key.pem and *.key files secret.",
            err=True,
        )
