"""``seepient policy explain``: print the verdict policy would give a command, a read, an edit, a write or a
fetch, with its reasons, without running anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail
from seepient.surfaces.cli.options import ConfigFile, JsonObject, Mode, Workspace

policy_app = typer.Typer(help="Ask what policy would decide, without running anything.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")


@policy_app.command("explain", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def explain_command(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="A shell command line after --; its words are joined with spaces.", show_default=False
        ),
    ] = None,
    read: Annotated[str | None, typer.Option("--read", help="Explain reading this file.")] = None,
    edit: Annotated[str | None, typer.Option("--edit", help="Explain editing this file.")] = None,
    write: Annotated[str | None, typer.Option("--write", help="Explain writing this whole file.")] = None,
    fetch: Annotated[str | None, typer.Option("--fetch", help="Explain fetching this URL.")] = None,
    mode: Mode = None,
    workspace: Workspace = Path("."),
    config: ConfigFile = None,
    json_output: JsonObject = False,
) -> None:
    """Print allow, ask or deny for one action and why, as a session in WORKSPACE would decide it; nothing runs.

    Exit code 0 whatever the verdict; 2 for bad usage or settings (no target, two targets, a bad mode, a malformed rule).
    """
    from seepient.config import SettingsError
    from seepient.policy.explain import explain

    targets = [
        (kind, value)
        for kind, value in (
            ("shell", " ".join(command) if command else None),
            ("read", read),
            ("edit", edit),
            ("write", write),
            ("fetch", fetch),
        )
        if value is not None
    ]
    if not targets:
        raise fail(
            "say what to explain: -- COMMAND..., --read PATH, --edit PATH, --write PATH or --fetch URL"
        )
    if len(targets) > 1:
        names = ", ".join("a command" if kind == "shell" else f"--{kind}" for kind, _ in targets)
        raise fail(f"explain one action at a time, not {names}")
    kind, value = targets[0]
    if not value.strip():
        raise fail("the command to explain is empty" if kind == "shell" else f"--{kind} needs a value")
    try:
        result = explain(kind, value, workspace=workspace, mode=mode, config_file=config)  # type: ignore[arg-type]
    except SettingsError as exc:
        raise fail(str(exc)) from None
    if json_output:
        typer.echo(json.dumps(result.to_json(), ensure_ascii=False))
        raise typer.Exit(exit_codes.OK)
    typer.echo(_human(result))
    raise typer.Exit(exit_codes.OK)


def _human(result: object) -> str:
    from seepient.policy.explain import Explanation

    assert isinstance(result, Explanation)
    what = {
        "shell": "run",
        "read": "read",
        "edit": "edit",
        "write": "write",
        "fetch": "fetch",
    }[result.kind]
    lines = [
        f"{result.decision.value.upper()}: {what} {result.target}",
        f"  rule: {result.rule or '(none)'}",
        f"  decided by: {result.decided_by or '(nothing)'}",
    ]
    if result.reasons:
        lines.append("  why:")
        lines.extend(f"    - {reason}" for reason in result.reasons)
    if result.commands:
        lines.append("  commands:")
        for command in result.commands:
            shown = " ".join(command.argv) or "(a redirection alone)"
            lines.append(f"    - {shown}  [{command.binary or '-'}]")
        if not result.parsed:
            lines.append("    (the line could not be fully analysed)")
    lines.append(f"  capabilities: {', '.join(c.value for c in result.capabilities) or 'none'}")
    lines.append(f"  mode: {result.mode}")
    lines.append(f"  rules from: {'; '.join(result.sources) or 'no settings file has permission rules'}")
    project = result.project
    if project is not None and project.changes:
        waiting = [change.key for change in project.ignored if change.needs_trust]
        never = [change.key for change in project.ignored if change.never]
        state = "trusted" if project.trusted else "not trusted"
        lines.append(f"  project settings: {project.path} ({state})")
        if waiting:
            lines.append(f"    ignored until you trust the project (seepient trust): {', '.join(waiting)}")
        if never:
            lines.append(f"    never taken from a project: {', '.join(never)}")
    lines.append("  nothing was run")
    return "\n".join(lines)
