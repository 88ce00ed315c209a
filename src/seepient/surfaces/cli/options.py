"""The options several ``seepient`` commands take, each stated once (type, flags, help), so a flag reads and
means the same in every command that has it; the one check of ``--sandbox``; and the session a command opens
from its options."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from seepient.surfaces.cli import exit_codes
from seepient.surfaces.cli.failure import fail

if TYPE_CHECKING:
    from seepient.runtime import Session

Workspace = Annotated[
    Path, typer.Option(help="The project folder whose settings apply (a session writes only inside it).")
]
ConfigFile = Annotated[
    Path | None, typer.Option(help="An extra settings file (JSON), applied over user and project settings.")
]
Model = Annotated[
    str | None, typer.Option(help="PROVIDER:MODEL, e.g. openai:gpt-4.1, ollama:llama3.1, or replay:PATH.")
]
BaseUrl = Annotated[str | None, typer.Option(help="Point the model's provider at another compatible server.")]
Mode = Annotated[
    str | None,
    typer.Option(
        help="Consent mode: always-ask, ask-untrusted (default; alias on-request), auto (a classifier decides "
        "what would ask), autonomous-trusted (alias bypass)."
    ),
]
Sandbox = Annotated[
    str, typer.Option(help="auto: shell commands run in bubblewrap or are refused; off: no sandbox.")
]
Yes = Annotated[
    bool, typer.Option("--yes", "-y", help="Approve what policy would ask about (never what it denies).")
]
Skills = Annotated[
    list[str] | None,
    typer.Option(
        "--skill", help="Make this skill active: the model gets its full instructions (repeatable)."
    ),
]
JsonEvents = Annotated[bool, typer.Option("--json", help="Print runtime events as JSON lines on stdout.")]
JsonObject = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]

SANDBOX_OFF_WARNING = "seepient: warning: --sandbox off: shell commands run unsandboxed on this machine"


def sandbox_choice(sandbox: str) -> Literal["auto", "off"]:
    """``--sandbox`` as the runtime takes it; anything but auto or off is a usage error."""
    if sandbox not in ("auto", "off"):
        raise fail("--sandbox must be auto or off")
    return "off" if sandbox == "off" else "auto"


def open_session(**fields: Any) -> Session:
    """The session of a command (surface ``cli``) from these ``SessionOptions`` fields; a settings or model
    problem is written and ends the command with its exit code."""
    from seepient.config import SettingsError
    from seepient.models.base import ModelError
    from seepient.runtime import Session, SessionOptions

    try:
        return Session.open(SessionOptions(surface="cli", **fields))
    except (SettingsError, ModelError) as exc:
        raise fail(str(exc), exit_codes.exit_code_for(exc)) from None
