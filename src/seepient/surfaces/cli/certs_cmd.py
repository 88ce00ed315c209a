"""``seepient certs init DIR``: a CA, certificates, signing keys and ready configs for worker mode."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli.failure import fail


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
        0600), scheduler.json and control-plane.json into DIR.

        Worker containers run as the leased workspace's owner and never as root: each workspace under the
        workspace root must belong to an unprivileged account, or its dispatches are refused."""
        from seepient.crypto import CryptoFileError, init_deployment

        _warn_as_root((workspace_root or Path.cwd()).expanduser())
        try:
            deployment = init_deployment(
                directory,
                workspace_root=workspace_root or Path.cwd(),
                scheduler_hosts=scheduler_host or [],
                force=force,
            )
        except (CryptoFileError, ValueError) as exc:
            raise fail(str(exc), command="certs init") from None
        for path in deployment.files:
            typer.echo(str(path))
        typer.echo(
            f"wrote {len(deployment.files)} files to {deployment.directory} "
            f"(dispatch key {deployment.dispatch_key_id}). Start the scheduler with "
            f"`seepient scheduler serve --config {deployment.directory / 'scheduler.json'}`; give the control "
            f"plane `--config {deployment.directory / 'control-plane.json'}`. Keep the *-key.pem and *.key files secret.",
            err=True,
        )


def _warn_as_root(workspace_root: Path) -> None:
    """Run as root, say up front what a root-owned workspace leads to: a worker never runs as root, so the
    scheduler refuses every dispatch for it."""
    if os.geteuid() != 0:
        return
    typer.echo(
        "seepient certs init: warning: running as root. Worker containers run as the leased workspace's "
        "owner and never as root: every workspace under the workspace root must belong to an unprivileged "
        "account.",
        err=True,
    )
    try:
        owner = workspace_root.stat().st_uid
    except OSError:
        return  # init_deployment reports the missing folder
    if owner == 0:
        typer.echo(
            f"seepient certs init: warning: {workspace_root} is owned by root, so dispatches for it would be "
            f"refused; give it to the tenant's account first, e.g. chown -R 10001:10001 {workspace_root}",
            err=True,
        )
