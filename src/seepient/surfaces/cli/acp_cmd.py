"""``seepient acp``: an Agent Client Protocol agent on stdin/stdout for editors (see docs/editors.md)."""

from __future__ import annotations

import typer

from seepient.surfaces.cli.failure import fail
from seepient.surfaces.cli.options import (
    SANDBOX_OFF_WARNING,
    ConfigFile,
    Mode,
    Model,
    Sandbox,
    sandbox_choice,
)


def register(app: typer.Typer) -> None:
    @app.command("acp")
    def acp(
        model: Model = None, mode: Mode = None, config: ConfigFile = None, sandbox: Sandbox = "auto"
    ) -> None:
        """Serve the Agent Client Protocol on stdin/stdout (JSON-RPC, one message a line); logs go to stderr.
        --model and --mode apply to every session the editor opens (the editor may switch the mode)."""
        chosen = sandbox_choice(sandbox)
        if config is not None and not config.is_file():
            raise fail(f"{config}: no such settings file")
        if mode is not None:
            from seepient.config import SettingsError
            from seepient.config.settings import normalise_mode

            try:
                normalise_mode(mode)
            except SettingsError as exc:
                raise fail(str(exc)) from None
        from seepient.surfaces.acp import AcpConfig, serve_stdio

        if chosen == "off":
            typer.echo(SANDBOX_OFF_WARNING, err=True)
        raise typer.Exit(serve_stdio(AcpConfig(model=model, mode=mode, config_file=config, sandbox=chosen)))
