"""``seepient tools``: the tools a session in this workspace would offer the model, from the session's own
registry (built-in tools, settings-configured ones, MCP servers' tools), with their descriptions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli.options import ConfigFile, Workspace

_PLACEHOLDER_MODEL = "ollama:tools-listing"
"""Listing tools calls no model; a provider that needs no key lets the session open without one."""


def register(app: typer.Typer) -> None:
    app.command("tools")(tools)


def tools(
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    mcp: Annotated[
        bool,
        typer.Option(help="Start the configured MCP servers to list their tools (--no-mcp skips them)."),
    ] = True,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON document: a list of {name, description, parameters}."),
    ] = False,
) -> None:
    """List the enabled tools (names and descriptions), exactly as a session here offers them to the model."""
    from seepient.surfaces.cli.options import open_session

    async def _specs() -> tuple[list[dict[str, object]], list[str]]:
        session = open_session(workspace=workspace, model=_PLACEHOLDER_MODEL, config_file=config)
        problems: list[str] = []
        session.subscribe(lambda event: problems.append(event.message) if event.type == "error" else None)
        try:
            if mcp and session.settings.mcp_servers:
                await session.start_mcp()
            return [spec.model_dump() for spec in session.registry.specs()], problems
        finally:
            await session.aclose()

    specs, problems = asyncio.run(_specs())
    for problem in problems:
        typer.echo(f"seepient: warning: {problem}", err=True)
    if json_output:
        typer.echo(json.dumps(specs, ensure_ascii=False, indent=2))
        return
    width = max((len(str(s["name"])) for s in specs), default=0)
    for spec in specs:
        description = str(spec["description"]).split("\n", 1)[0]
        first = description.split(". ", 1)[0].rstrip(".") + "."
        typer.echo(f"{str(spec['name']).ljust(width)}  {first}")
