"""Which invocations leave the other commands unregistered: ``run``, and the TUI (no command, on a terminal)."""

from __future__ import annotations

import pytest
import typer

from seepient.surfaces.cli import app as cli_app
from seepient.surfaces.cli import command_words


@pytest.fixture
def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)


@pytest.mark.usefixtures("on_a_terminal")
@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--model", "replay:s.yaml"],
        ["--workspace", "run", "-c"],
        ["--resume", "abc"],
        ["--mode=auto", "-c"],
    ],
)
def test_no_command_on_a_terminal_opens_the_tui(args: list[str]) -> None:
    assert command_words.opens_the_tui(args)


@pytest.mark.usefixtures("on_a_terminal")
@pytest.mark.parametrize(
    "args",
    [["sessions", "list"], ["--model", "m", "doctor"], ["--help"], ["-c", "--help"], ["stray"], ["serve"]],
)
def test_a_command_or_help_registers_the_commands(args: list[str]) -> None:
    assert not command_words.opens_the_tui(args)


def test_off_a_terminal_the_root_prints_the_whole_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert not command_words.opens_the_tui([])


def test_the_root_options_that_take_a_value_are_all_known() -> None:
    # A value option missing from the list would make its value look like a command's name.
    root = typer.main.get_command(cli_app.app)
    taking = {
        name
        for param in root.params
        # Typer carries its own copy of click, so options are told by what they have.
        if getattr(param, "is_flag", True) is False and not getattr(param, "count", False)
        for name in param.opts
        if name.startswith("--")
    }
    assert taking == command_words.ROOT_VALUE_OPTIONS
