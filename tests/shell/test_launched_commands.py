"""Commands a setting or an environment variable names (git's program keys and '!' aliases, ``GIT_PAGER``,
``EDITOR``, ``LESSOPEN``, ``strace -o '|cmd'``): analysed as commands of the line, never known safe, and what
cannot be read (a value computed at run time, code a variable makes programs load) is a problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.shell import analyse_command


def _analyse(line: str):
    return analyse_command(line, cwd=Path("/w"), workspace=Path("/w"), home=Path("/h"))


def _argvs(line: str) -> list[tuple[list[str], bool]]:
    analysis = _analyse(line)
    assert analysis.parsed, analysis.problems
    return [([w.text for w in f.effective], f.safe) for f in analysis.facts]


@pytest.mark.parametrize(
    ("line", "launched"),
    [
        ("git -c alias.x='!rm' x -rf 'a b'", ["rm", "-rf", "a b"]),
        ("git -c alias.X='!ls' x", ["ls"]),
        ("git -c alias.a=b -c alias.b='!ls -l' a d", ["ls", "-l", "d"]),
        ("git -c core.pager='less -R' log", ["less", "-R"]),
        ("git -c credential.helper=store push", ["git", "credential-store"]),
        ("git -c credential.https://x.helper='!pass show' push", ["pass", "show"]),
        ("git -c submodule.lib.update='!make sync' submodule update", ["make", "sync"]),
        ("GIT_PAGER='less -R' git log", ["less", "-R"]),
        ("env EDITOR=vim git commit", ["vim"]),
        ("export VISUAL=nano; git commit", ["nano"]),
        ("LESSOPEN='||lesspipe %s' less x", ["lesspipe", "%s"]),
        ("strace -o '|tee t.log' ls", ["tee", "t.log"]),
    ],
)
def test_the_launched_command_is_a_command_of_the_line_and_never_known_safe(line, launched):
    found = _argvs(line)
    assert (launched, False) in found, found


def test_an_unused_bang_alias_runs_nothing():
    assert [argv for argv, _ in _argvs("git -c alias.x='!rm -rf a' status")] == [
        ["git", "-c", "alias.x=!rm -rf a", "status"]
    ]


def test_settings_that_name_no_program_add_no_command():
    for line in (
        "unset GIT_PAGER; git log",
        "GIT_PAGER= git log",
        "git -c submodule.lib.update=rebase submodule update",
        "git -c alias.l='log --oneline' l",
    ):
        analysis = _analyse(line)
        assert analysis.parsed, (line, analysis.problems)
        assert all(f.effective[0].text in ("git", "unset") for f in analysis.facts), line


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('GIT_PAGER="$X" git log', "computed at run time"),
        ("read EDITOR; git commit", "computed at run time"),
        ("GIT_PAGER=r; GIT_PAGER+='m -rf x' git log", "computed at run time"),
        ("export GIT_PAGER+=x; git log", "computed at run time"),
        ("for EDITOR in vim; do git commit; done", "computed at run time"),
        ("printf -v GIT_PAGER rm; git log", "computed at run time"),
        ('env GIT_PAGER="$X" git log', "computed at run time"),
        ("git -c alias.x='!ls' x \"$Y\"", "computed at run time"),
        ("PYTHONSTARTUP=x.py python3", "load code"),
        ("env NODE_OPTIONS=--require=x node a.js", "load code"),
        ("GIT_CONFIG_KEY_0=core.pager git log", "load code"),
        ("DYLD_FRAMEWORK_PATH=. ls", "load code"),
        ("LD_AUDIT=x.so ls", "which program later names run"),
    ],
)
def test_what_cannot_be_read_is_a_problem(line, problem):
    analysis = _analyse(line)
    assert not analysis.parsed
    assert any(problem in p for p in analysis.problems), analysis.problems


def test_a_tracer_log_is_a_write_and_sudo_l_and_command_v_run_nothing():
    (facts,) = _analyse("strace -ff -o t.log make").facts
    assert [(op.word.text, op.write) for op in facts.operands] == [("t.log", True)]
    for line in ("sudo -l", "sudo -l -U bob", "command -v rm", "command -V git"):
        analysis = _analyse(line)
        assert analysis.parsed, (line, analysis.problems)
        (facts,) = analysis.facts
        assert [w.text for w in facts.effective] == line.split()
    assert _analyse("command -v rm").known_safe
    assert not _analyse("command rm x").known_safe
