"""``seepient trust [DIR]``: show what a project's settings would change, then trust them as they are now
(``--revoke`` forgets a project, ``--list`` shows the trusted ones); and the question ``seepient run`` asks on a
terminal the first time a project's settings hold something only trust applies."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail


def register(app: typer.Typer) -> None:
    app.command("trust")(trust_command)


def trust_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The project folder (default: the current one).")
    ] = Path("."),
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting the project.")] = False,
    list_trusted: Annotated[bool, typer.Option("--list", help="List the projects you trust.")] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Trust without asking (the summary is still printed).")
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="With --list: one JSON document.")] = False,
) -> None:
    """Show what DIR's .seepient/settings.json would change, and trust it once you agree.

    Until a project is trusted its settings can only make Seepient stricter. Trust is kept in your Seepient
    folder against the SHA-256 of the file, so editing the file makes the project untrusted again.
    Exit code 0 when trusted (or revoked, or listed), 1 when you decline, 2 for bad usage or settings."""
    from seepient.config import SeepientPaths, SettingsError
    from seepient.config.project_effect import TRUST_NOTE
    from seepient.config.trust import TrustStore

    paths = SeepientPaths.from_env()
    store = TrustStore(paths.trust_store)
    if list_trusted and revoke:
        raise _usage("give either --list or --revoke")
    try:
        if list_trusted:
            _list(store, json_output=json_output)
            raise typer.Exit(exit_codes.OK)
        workspace = _workspace(directory)
        if revoke:
            forgotten = store.revoke(workspace)
            typer.echo(f"{workspace}: {'no longer trusted' if forgotten else 'was not trusted'}")
            raise typer.Exit(exit_codes.OK)
        from seepient.config.settings import inspect_project

        if os.path.realpath(SeepientPaths.project_dir(workspace)) == os.path.realpath(paths.home):
            raise SettingsError(
                f"{workspace}/.seepient is your own Seepient folder; there is no project to trust"
            )
        report = inspect_project(workspace, paths=paths, trust=False)
        for line in report.summary():
            typer.echo(line)
        typer.echo(TRUST_NOTE)
        if not yes:
            if not sys.stdin.isatty():
                raise _usage("no terminal to ask on: run `seepient trust` on a terminal, or add --yes")
            if not typer.confirm(f"Trust {workspace}?", default=False):
                typer.echo("not trusted; nothing was changed")
                raise typer.Exit(exit_codes.FAILED)
        store.trust(workspace, report.file.sha256)
    except SettingsError as exc:
        raise _usage(str(exc)) from None
    typer.echo(f"{workspace}: trusted")


def ask_first_use(directory: Path) -> None:
    """Before ``seepient run`` opens a session on a terminal: when the project's settings hold something that
    applies only with trust and the user has not trusted them as they are now, show what they would change and
    ask on stderr. A "no" leaves the project untrusted (what only tightens still applies); the session then
    loads the file again and checks its hash, so a file changed after this question is untrusted."""
    from seepient.config import SeepientPaths
    from seepient.config.project_effect import TRUST_NOTE
    from seepient.config.settings import has_project_settings, inspect_project
    from seepient.config.trust import TrustStore

    workspace = directory.expanduser()
    if not workspace.is_dir():
        return  # the session reports the missing workspace
    workspace = workspace.resolve()
    paths = SeepientPaths.from_env()
    if not has_project_settings(workspace, paths):
        return  # nothing to trust, and nothing to pay for
    report = inspect_project(workspace, paths=paths)
    if report.trusted or not report.needs_trust:
        return
    say = _stderr
    say("seepient: this project's settings want to change how Seepient works here.")
    for line in report.summary():
        say(line)
    say(TRUST_NOTE)
    if typer.confirm("Trust this project?", default=False, err=True):
        TrustStore(paths.trust_store).trust(workspace, report.file.sha256)
        say(f"seepient: {workspace} is trusted (`seepient trust --revoke` forgets it)")
    else:
        say("seepient: not trusted; only the settings that make Seepient stricter apply")


def _list(store: object, *, json_output: bool) -> None:
    from seepient.config.project import read_project_file
    from seepient.config.settings import SettingsError
    from seepient.config.trust import TrustStore

    assert isinstance(store, TrustStore)
    rows = []
    for key, entry in sorted(store.entries().items()):
        workspace = Path(key)
        if not workspace.is_dir():
            state = "folder missing"
        else:
            try:
                current = read_project_file(workspace).sha256
            except SettingsError as exc:
                state = f"settings unreadable: {exc}"
            else:
                state = (
                    "trusted" if current == entry.settings_sha256 else "settings changed since: not trusted"
                )
        rows.append(
            {
                "workspace": key,
                "state": state,
                "trustedAt": entry.trusted_at,
                "settingsSha256": entry.settings_sha256,
            }
        )
    if json_output:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        typer.echo("no trusted projects")
    for row in rows:
        typer.echo(f"{row['workspace']}  {row['state']}  (since {row['trustedAt']})")


def _workspace(directory: Path) -> Path:
    from seepient.config import SettingsError

    workspace = directory.expanduser()
    if not workspace.is_dir():
        raise SettingsError(f"{workspace} is not a directory")
    return workspace.resolve()


def _stderr(line: str) -> None:
    typer.echo(line, err=True)


def _usage(message: str) -> typer.Exit:
    return fail(message, command="trust")
