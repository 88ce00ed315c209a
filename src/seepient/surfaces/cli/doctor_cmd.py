"""``seepient doctor [--json]``: what works on this machine for this workspace and what to fix; exit 1 when a
problem was found."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail
from seepient.surfaces.cli.options import ConfigFile, Workspace


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def _leased_roots(scheduler_config: Path | None) -> list[Path]:
    if scheduler_config is None:
        return []
    from seepient.scheduler.config import SchedulerConfigError, load_scheduler_config

    try:
        config = load_scheduler_config(scheduler_config)
    except SchedulerConfigError as exc:
        raise fail(str(exc), command="doctor") from None
    return [Path(tenant.workspace_root) for tenant in config.tenants.values()]


def doctor(
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    scheduler_config: Annotated[
        Path | None,
        typer.Option(
            "--scheduler-config",
            help="A scheduler.json whose tenants' workspace roots are checked too (worker mode as root).",
        ),
    ] = None,
    mcp: Annotated[
        bool, typer.Option(help="Start the user's MCP servers to check them (--no-mcp skips them).")
    ] = True,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: {workspace, ok, problems, findings}.")
    ] = False,
) -> None:
    """Check the sandbox, Docker and the worker image, providers' keys (never shown), settings files, trust,
    MCP servers (a project's are never started without consent), the audit log and, as root in worker mode,
    who owns the leased workspaces. Each problem comes with its fix.

    Exit code 0 when nothing is a problem (warnings do not count), 1 when a problem was found."""
    from seepient.runtime.doctor import DoctorOptions, diagnose

    roots = _leased_roots(scheduler_config)
    report = asyncio.run(
        diagnose(DoctorOptions(workspace=workspace, config_file=config, leased_roots=roots, mcp=mcp))
    )
    if json_output:
        typer.echo(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    else:
        typer.echo("\n".join(report.lines()))
    raise typer.Exit(exit_codes.OK if report.ok else exit_codes.FAILED)
