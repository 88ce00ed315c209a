"""``seepient net check URL``: resolve a URL and say whether Seepient would fetch it, and why, without fetching."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.options import ConfigFile, JsonObject, Workspace

net_app = typer.Typer(
    help="Inspect the network address policy that guards every fetch.", no_args_is_help=True
)


@net_app.command("check")
def check(
    url: Annotated[str, typer.Argument(help="The http(s) URL to check, e.g. http://169.254.169.254/.")],
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    json_output: JsonObject = False,
) -> None:
    """Resolve URL and print whether it may be fetched (as WORKSPACE's net.allow* settings decide), the reason
    and the addresses; never fetches.

    Exit codes: 0 allowed, 1 blocked, 2 bad usage or configuration.
    """
    from seepient.config import SeepientPaths
    from seepient.config.settings import SettingsError, load_settings
    from seepient.net import check_url, policy_from_settings

    ws = workspace_dir(workspace)
    try:
        settings = load_settings(ws, paths=SeepientPaths.from_env(), config_file=config)
        policy = policy_from_settings(settings.net)
    except (SettingsError, ValueError) as exc:
        raise fail(str(exc)) from None
    verdict = asyncio.run(check_url(url, policy=policy))
    if json_output:
        typer.echo(json.dumps(verdict.to_json()))
    else:
        word = "allowed" if verdict.allowed else "blocked"
        typer.echo(f"{word}: {verdict.url}\n  reason: {verdict.reason}")
        if verdict.addresses:
            typer.echo(f"  addresses: {', '.join(verdict.addresses)}")
    raise typer.Exit(exit_codes.OK if verdict.allowed else exit_codes.FAILED)


def register(app: typer.Typer) -> None:
    app.add_typer(net_app, name="net")
