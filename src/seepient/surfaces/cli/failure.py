"""How a command gives up: ``seepient: MESSAGE`` (or ``seepient COMMAND: MESSAGE``) on stderr and an exit code
(2, bad usage, unless told)."""

from __future__ import annotations

from pathlib import Path

import typer

from seepient.surfaces.cli import exit_codes


def fail(message: str, code: int = exit_codes.USAGE, *, command: str = "") -> typer.Exit:
    """The ``typer.Exit`` to raise, once the message is written; ``command`` names the command in it."""
    typer.echo(f"seepient{' ' + command if command else ''}: {message}", err=True)
    return typer.Exit(code)


def workspace_dir(workspace: Path) -> Path:
    """``--workspace`` expanded and resolved (as the runtime and the stored sessions hold it); a path that is not
    a directory is a usage error."""
    ws = workspace.expanduser()
    if not ws.is_dir():
        raise fail(f"workspace {ws} is not a directory")
    return ws.resolve()
