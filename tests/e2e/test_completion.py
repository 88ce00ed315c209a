"""End to end in tmux: ``seepient completion bash|zsh|fish`` loaded into the real shell, then Tab pressed as a
person would: ``seepient ru`` becomes ``seepient run``, and a subcommand's options complete too."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from tests.conftest import BIN
from tests.e2e.test_tui_tmux import SEEPIENT, Tmux

LOAD = {
    "bash": ("bash --norc --noprofile", 'eval "$(seepient completion bash)"'),
    "zsh": ("zsh -f", 'autoload -Uz compinit && compinit -u && eval "$(seepient completion zsh)"'),
    "fish": ("fish --no-config", "seepient completion fish | source"),
}


@pytest.fixture(params=sorted(LOAD))
def shell(request, world):
    name = request.param
    if shutil.which(name) is None:
        pytest.fail(f"{name} is not installed; the completion tests need the real shell")
    start, load = LOAD[name]
    env = {
        "HOME": str(world.home),
        "PATH": f"{BIN}:/usr/bin:/bin",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
    }
    assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    term = Tmux(f"cd {shlex.quote(str(world.workspace))} && env -i {assignments} {start}")
    try:
        term.send("-l", "--", load)
        term.send("Enter")
        term.send("-l", "--", 'echo LOADED""-OK')
        term.send("Enter")
        term.expect("LOADED-OK")
        yield term
    finally:
        term.close()


def _complete(term: Tmux, typed: str, expected: str) -> str:
    term.send("C-u")
    term.send("-l", "--", typed)
    term.send("Tab")
    return term.expect(expected)


def test_a_command_name_completes(shell):
    _complete(shell, "seepient ru", "seepient run")


def test_a_subcommands_options_complete(shell):
    _complete(shell, "seepient run --wor", "seepient run --workspace")
    _complete(shell, "seepient policy explain --fe", "seepient policy explain --fetch")


def test_the_completion_commands_own_argument_completes(shell):
    _complete(shell, "seepient completion fi", "seepient completion fish")


def test_an_unknown_shell_is_refused_with_the_ones_there_are(world):
    done = subprocess.run(
        [str(SEEPIENT), "completion", "tcsh"], capture_output=True, text=True, env=world.env, timeout=60
    )
    assert done.returncode == 2
    assert "'tcsh' is not one of 'bash', 'zsh'" in done.stderr and "'fish'" in done.stderr
    assert done.stdout == ""
