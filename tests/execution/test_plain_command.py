"""A line of plain words runs as its program, without bash in between, only where bash could change nothing
and the jail shows the program; it then sees what it would have seen under bash (output, exit code,
environment). Anything else still goes to bash."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from seepient.execution.jail import Jail, shell_argv
from seepient.execution.plain_command import plain_words, program_environment
from seepient.execution.sandbox.bwrap import BwrapSandbox


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("ls", ("ls",)),
        ("  pytest -q tests/test_calc.py  ", ("pytest", "-q", "tests/test_calc.py")),
        ("python3 -m pip --version", ("python3", "-m", "pip", "--version")),
        ("./run.sh a=b c:d e,f g@h 50%", ("./run.sh", "a=b", "c:d", "e,f", "g@h", "50%")),
        ("true", ("true",)),
        ("false", ("false",)),
    ],
)
def test_plain_lines_are_their_words(line: str, words: tuple[str, ...]) -> None:
    assert plain_words(line) == words


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "echo hi",  # a builtin
        "cd sub",
        "true --help",  # the program prints help, the builtin does not
        "exec ls",
        "time ls",  # a reserved word
        "if",
        "FOO=1 ls",  # an assignment
        "%1",  # a job
        "ls *.py",
        "ls file?",
        "ls [ab]",
        "ls {a,b}",
        "ls ~",
        "ls a=~/x",
        "ls $HOME",
        "ls 'a b'",
        'ls "a"',
        "ls a\\ b",
        "ls `pwd`",
        "ls # comment",
        "ls; rm x",
        "ls && rm x",
        "ls | wc",
        "ls > out",
        "ls < in",
        "ls &",
        "ls\nrm x",
        "!ls",
        "ls (x)",
    ],
)
def test_lines_bash_could_change_go_to_bash(line: str) -> None:
    assert plain_words(line) is None


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return program


def test_the_program_is_found_as_bash_finds_it(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _program(second, "tool")
    (first / "tool").parent.mkdir()
    (first / "tool").write_text("not executable")  # skipped, as bash and execvp skip it
    path = f"{first}:{second}"
    found = program_environment("tool", search_path=path, cwd="/work", env={}, shows=lambda _: True)
    assert found == {"PWD": "/work", "SHLVL": "0", "_": f"{second}/tool"}
    kept = program_environment(
        "tool", search_path=path, cwd="/work", env={"SHLVL": "3"}, shows=lambda _: True
    )
    assert kept is not None and kept["SHLVL"] == "3"


def test_a_program_not_found_or_not_shown_goes_to_bash(tmp_path: Path) -> None:
    program = _program(tmp_path / "bin", "tool")
    path = str(program.parent)
    assert program_environment("other", search_path=path, cwd="/", env={}, shows=lambda _: True) is None
    assert program_environment("tool", search_path=path, cwd="/", env={}, shows=lambda _: False) is None
    # A relative PATH entry names a folder of the cwd, spelled bash's way: bash is asked.
    relative = f"rel:{path}"
    assert program_environment("tool", search_path=relative, cwd="/", env={}, shows=lambda _: True) is None


def test_a_link_through_a_hidden_place_goes_to_bash(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    target = _program(tmp_path / "real", "tool")
    (hidden).mkdir()
    (hidden / "tool").symlink_to(target)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").symlink_to(hidden / "tool")
    path = str(tmp_path / "bin")

    def shows(candidate: str) -> bool:
        return not candidate.startswith(str(hidden))

    assert program_environment("tool", search_path=path, cwd="/", env={}, shows=shows) is None
    found = program_environment("tool", search_path=path, cwd="/", env={}, shows=lambda _: True)
    assert found is not None and found["_"] == f"{path}/tool"


def test_a_relative_program_is_taken_from_the_cwd(tmp_path: Path) -> None:
    _program(tmp_path, "run.sh")
    found = program_environment(
        "./run.sh", search_path="/usr/bin", cwd=str(tmp_path), env={}, shows=lambda _: True
    )
    assert found == {"PWD": str(tmp_path), "SHLVL": "0", "_": "./run.sh"}
    missing = program_environment(
        "./gone.sh", search_path="/usr/bin", cwd=str(tmp_path), env={}, shows=lambda _: True
    )
    assert missing is None


# -- in the jail ------------------------------------------------------------------------------------------


@pytest.fixture
def jail(workspace: Path, fake_home: Path, parent_environ: dict[str, str]) -> Jail:
    status = BwrapSandbox().probe()
    assert status.available, f"these tests need a working bubblewrap: {status.message}"
    return Jail.build(
        workspace, seepient_home=fake_home / ".seepient", home=fake_home, environ=parent_environ
    )


def _both(jail: Jail, line: str, cwd: Path) -> tuple[list[str], tuple[object, ...], tuple[object, ...]]:
    argv, added = jail.line_argv(line, cwd)

    async def run() -> tuple[tuple[object, ...], tuple[object, ...]]:
        direct = await jail.run(argv, cwd=cwd, timeout_s=30, extra_env=added)
        shell = await jail.run(shell_argv(line), cwd=cwd, timeout_s=30)
        return (direct.exit_code, direct.stdout, direct.stderr), (shell.exit_code, shell.stdout, shell.stderr)

    direct, shell = asyncio.run(run())
    return argv, direct, shell


def test_a_plain_line_sees_what_it_would_under_bash(jail: Jail, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    argv, direct, shell = _both(jail, "env", workspace / "sub")
    assert argv == ["env"]
    assert direct[0] == shell[0] == 0
    # bash passes the same variables on, in an order of its own.
    assert sorted(str(direct[1]).splitlines()) == sorted(str(shell[1]).splitlines())
    assert f"PWD={workspace / 'sub'}" in str(direct[1]).splitlines()


@pytest.mark.parametrize("line", ["true", "false", "ls -a", "./run.sh one two"])
def test_plain_lines_run_as_under_bash(jail: Jail, workspace: Path, line: str) -> None:
    script = workspace / "run.sh"
    script.write_text('#!/bin/sh\necho "$0 $*"; exit 3\n')
    script.chmod(0o755)
    argv, direct, shell = _both(jail, line, workspace)
    assert argv == line.split()
    assert direct == shell


def test_a_missing_program_is_reported_by_bash(jail: Jail, workspace: Path) -> None:
    argv, direct, shell = _both(jail, "no-such-program-3f9a x", workspace)
    assert argv == shell_argv("no-such-program-3f9a x")
    assert direct == shell and direct[0] == 127


def test_a_program_the_jail_hides_goes_to_bash(jail: Jail, fake_home: Path) -> None:
    # A folder of the home that holds no tool on PATH is hidden in the jail.
    hidden_tool = _program(fake_home / "private" / "bin", "mytool")
    shows = jail.bwrap.shows(workspace=jail.workspace, view=jail.view(jail.workspace))
    assert not shows(str(hidden_tool))
    assert not shows(str(fake_home / ".ssh" / "id_rsa"))
    assert shows("/usr/bin/env")
    assert shows(str(jail.workspace / "run.sh"))
    assert jail.line_argv(str(hidden_tool), jail.workspace) == (shell_argv(str(hidden_tool)), {})


def test_with_the_sandbox_off_every_line_goes_to_bash(
    workspace: Path, fake_home: Path, parent_environ: dict[str, str]
) -> None:
    jail = Jail.build(
        workspace,
        seepient_home=fake_home / ".seepient",
        home=fake_home,
        environ=parent_environ,
        sandbox_mode="off",
    )
    assert jail.line_argv("ls -a", workspace) == (shell_argv("ls -a"), {})
