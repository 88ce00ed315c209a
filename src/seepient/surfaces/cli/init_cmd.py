"""``seepient init``: one turn of ``seepient run`` with the onboarding prompt, so the model studies the project
and writes ``AGENTS.md`` through the normal approval path (asked on a terminal, ``-y`` approves, refused with no
one to ask)."""

from __future__ import annotations

from pathlib import Path

import typer

from seepient.surfaces.cli.options import BaseUrl, ConfigFile, JsonEvents, Mode, Model, Workspace, Yes


def register(app: typer.Typer) -> None:
    app.command("init")(init)


def init(
    yes: Yes = False,
    mode: Mode = None,
    model: Model = None,
    base_url: BaseUrl = None,
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    json_output: JsonEvents = False,
) -> None:
    """Have the model study the project in WORKSPACE and write (or improve) AGENTS.md; the write asks like any other.
    Exit codes as for `seepient run`."""
    from seepient.runtime.onboarding import init_prompt
    from seepient.surfaces.cli.app import run

    target = workspace.expanduser().absolute() / "AGENTS.md"
    before = target.stat().st_mtime_ns if target.is_file() else None
    try:
        run(
            prompt=init_prompt(workspace.expanduser()),
            yes=yes,
            mode=mode,
            model=model,
            base_url=base_url,
            workspace=workspace,
            config=config,
            json_output=json_output,
        )
    except typer.Exit:
        if not json_output:
            after = target.stat().st_mtime_ns if target.is_file() else None
            if after is None or after == before:
                typer.echo("seepient init: AGENTS.md was not written", err=True)
            else:
                typer.echo(f"seepient init: wrote {target}", err=True)
        raise
