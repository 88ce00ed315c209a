"""``seepient context show``: the system prompt a session would start with, section by section, with where
each part came from and its estimated tokens. No model is called."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from seepient.surfaces.cli.failure import fail, workspace_dir
from seepient.surfaces.cli.options import Skills, Workspace

context_app = typer.Typer(help="Inspect the context the model is given.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(context_app, name="context")


@context_app.command("show")
def show(
    workspace: Workspace = Path("."),
    skill: Skills = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: sections, tokens, warnings, skills.")
    ] = False,
) -> None:
    """Print the assembled system prompt with sources and estimated tokens, without calling a model; --skill
    shows it as `seepient run --skill NAME` would make it."""
    from seepient.config import SeepientPaths, SettingsError, load_settings
    from seepient.config.settings import normalise_mode
    from seepient.context.manager import ConversationContext
    from seepient.execution.local import LocalExecutor
    from seepient.policy.paths import PathGuard
    from seepient.tools.registry import builtin_registry

    ws = workspace_dir(workspace)
    paths = SeepientPaths.from_env()
    try:
        settings = load_settings(ws, paths=paths)
        mode = normalise_mode(settings.permissions.mode or "ask-untrusted")
        context = ConversationContext.open(
            ws,
            settings=settings,
            seepient_home=paths.home,
            consent_mode=mode,
            sandboxed=settings.execution.sandbox != "off",
            skills=skill or [],
            guard=PathGuard(ws, seepient_home=paths.home),
            git_jail=LocalExecutor(
                ws, seepient_home=paths.home, sandbox=settings.execution.sandbox
            ).read_only_jail,
        )
    except SettingsError as exc:
        raise fail(str(exc)) from None
    tools_tokens = context.estimator.tools(builtin_registry().specs())
    sections = context.sections()
    total = sum(s.tokens for s in sections)
    window = settings.context.window_tokens
    if json_output:
        document: dict[str, Any] = context.assembled.as_dict()
        document["sections"] = [s.as_dict() for s in sections]
        document["total_tokens"] = total
        document["active_skills"] = context.active_skills
        document["tools_tokens"] = tools_tokens
        document["window_tokens"] = window
        document["compact_at"] = settings.context.compact_at
        document["prompt"] = context.system_prompt()
        typer.echo(json.dumps(document, ensure_ascii=False, indent=2))
        return
    for warning in context.warnings:
        typer.echo(f"seepient: warning: {warning}", err=True)
    typer.echo(
        f"System prompt for {ws}: {len(sections)} sections, about {total:,} tokens "
        f"(estimated offline); tool schemas add about {tools_tokens:,}; window {window:,} tokens, "
        f"history is compacted at {settings.context.compact_at:.0%}."
    )
    for section in sections:
        typer.echo("")
        typer.echo(f"── {section.title} · {section.source} · ~{section.tokens:,} tokens ──")
        typer.echo(section.text)
