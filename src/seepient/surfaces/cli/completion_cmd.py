"""``seepient completion bash|zsh|fish``: the script that teaches a shell to complete Seepient's commands and
options. Typer's completion machinery does the work: at each Tab the script runs ``seepient`` with
``_SEEPIENT_COMPLETE`` set, which answers with the candidates instead of running a command."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from typing import Annotated

import typer

COMPLETE_VAR = "_SEEPIENT_COMPLETE"
PROG_NAME = "seepient"


class CompletionShell(enum.StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def answer_completion_requests(environ: Mapping[str, str] | None = None) -> None:
    """Make the application answer a shell's completion request (``_SEEPIENT_COMPLETE`` set): Typer's shell
    classes are registered only then, so an ordinary command does not pay for them."""
    env = os.environ if environ is None else environ
    if env.get(COMPLETE_VAR):
        from typer.completion import completion_init

        completion_init()


def register(app: typer.Typer) -> None:
    @app.command()
    def completion(
        shell: Annotated[
            CompletionShell, typer.Argument(help="The shell to complete in.", case_sensitive=False)
        ],
    ) -> None:
        """Print the shell completion script for SHELL (bash, zsh or fish); load it from the shell's start file.

        bash, in ~/.bashrc: eval "$(seepient completion bash)"

        zsh, in ~/.zshrc after compinit: eval "$(seepient completion zsh)"

        fish: seepient completion fish > ~/.config/fish/completions/seepient.fish"""
        from typer.completion import get_completion_script

        script = get_completion_script(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, shell=shell.value)
        typer.echo(script)
