"""The sed script reader, and how sed's reads, writes and commands reach policy."""

from __future__ import annotations

import subprocess

import pytest

from seepient.shell import analyse_command
from seepient.shell.sed import SedSyntaxError, read_sed_script

SCRIPTS = [
    # (script, reads, writes, runs, runs pattern space, print only)
    ("1,5p", [], [], [], False, True),
    ("$p", [], [], [], False, True),
    ("/start/,/end/{p}", [], [], [], False, True),
    ("1~2p;10q", [], [], [], False, True),
    ("s/a/b/g", [], [], [], False, False),
    ("s|a/b|c|2", [], [], [], False, False),
    ("s/a/b/w out.txt", [], ["out.txt"], [], False, False),
    ("s/a/b/e", [], [], [], True, False),
    ("e", [], [], [], True, False),
    ("1e cat .env", [], [], ["cat .env"], False, False),
    ("r .env", [".env"], [], [], False, False),
    ("/x/R list.txt", ["list.txt"], [], [], False, False),
    ("w /dev/stdout", [], ["/dev/stdout"], [], False, False),
    ("1!G;h;$!d", [], [], [], False, False),
    (":a;N;$!ba;s/\\n/ /g", [], [], [], False, False),
    ("y/abc/xyz/", [], [], [], False, False),
    ("a\\\nappended", [], [], [], False, False),
    ("/x/ a text", [], [], [], False, False),
    ("# comment\np", [], [], [], False, True),
]


@pytest.mark.parametrize(("script", "reads", "writes", "runs", "pattern", "print_only"), SCRIPTS)
def test_scripts(script, reads, writes, runs, pattern, print_only) -> None:
    result = read_sed_script(script)
    assert (result.reads, result.writes, result.runs) == (reads, writes, runs)
    assert (result.runs_pattern_space, result.print_only) == (pattern, print_only)


@pytest.mark.parametrize("script", ["xp", "{p", "}", "s/a/b", "k", "1,", "w", "s/a/b/q"])
def test_scripts_the_reader_cannot_follow(script: str) -> None:
    with pytest.raises(SedSyntaxError, match="sed script"):
        read_sed_script(script)


@pytest.mark.parametrize("script", [s for s, *_ in SCRIPTS] + ["xp", "{p", "s/a/b"])
def test_the_reader_agrees_with_gnu_sed_about_what_is_valid(tmp_path, script: str) -> None:
    """A script we call valid, GNU sed accepts; one we cannot read, it rejects (or we are stricter)."""
    done = subprocess.run(
        ["sed", "--sandbox", "-n", script] if not _needs_outside(script) else ["sed", "-n", script],
        input="line\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=5,
    )
    try:
        read_sed_script(script)
    except SedSyntaxError:
        assert done.returncode != 0, (script, done.stderr)
    else:
        assert done.returncode == 0, (script, done.stderr)


def _needs_outside(script: str) -> bool:
    # --sandbox makes GNU sed refuse e, r and w itself; those scripts are checked for syntax without it.
    return any(letter in script for letter in ("e", "r", "R", "w", "W"))


SED_COMMANDS = [
    # (command line, known safe, file operands (text, write), nested commands, parsed)
    ("sed -n 1,5p f", True, [("f", False)], [], True),
    ("sed -n -e '/x/p' f", True, [("f", False)], [], True),
    ("sed -ne '$p' f", True, [("f", False)], [], True),
    ("sed 1p f", False, [("f", False)], [], True),
    ("sed -n 1p -i f", False, [("f", True)], [], True),
    ("sed -in 1p f", False, [("f", True)], [], True),  # -i takes 'n' as its backup suffix
    ("sed -i.bak s/a/b/ f", False, [("f", True)], [], True),
    ("sed -ni 1p f", False, [("f", True)], [], True),  # -i after -n in one word: in place, no suffix
    ("sed --in-place=.bak -e 1p f", False, [("f", True)], [], True),
    ("sed -n f -e", False, [], [], False),  # -e without its script
    ("sed -n 'w out' f", False, [("f", False), ("out", True)], [], True),
    ("sed 'r .env' f", False, [("f", False), (".env", False)], [], True),
    ("sed -n '1e rm -rf x' f", False, [("x", True), ("f", False)], [("rm", "-rf", "x")], True),
    ("sed 's/x/y/e' f", False, [("f", False)], [], False),
    ("sed -f script.sed f", False, [("script.sed", False), ("f", False)], [], False),
    ('sed "$S" f', False, [("f", False)], [], False),
]


@pytest.mark.parametrize(("command", "safe", "operands", "nested", "parsed"), SED_COMMANDS)
def test_sed_commands(command, safe, operands, nested, parsed) -> None:
    analysis = analyse_command(command)
    assert analysis.known_safe is safe
    assert analysis.parsed is parsed, analysis.problems
    seen = [(op.word.text, op.write) for facts in analysis.facts for op in facts.operands]
    assert sorted(seen) == sorted(operands)
    assert [c.argv for c in analysis.commands if c.binary != "sed"] == nested
