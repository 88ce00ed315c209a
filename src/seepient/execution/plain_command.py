"""A command line of plain words, run as the program it names without a shell in between.

``bash -c 'pytest -q tests'`` reads no startup file, finds ``pytest`` on ``PATH`` and, the line's last command
being a simple one, execs it in place of itself: for a line bash can change in no way (no quoting, expansion,
operator, redirection or assignment; a first word that is neither a builtin nor a reserved word) starting bash
only adds its own start to the step. Such a line runs as its words, with the three variables bash would have
set for the program (``PWD``, ``SHLVL``, ``_``). What runs and where is the same either way: the program is
started inside the same jail, by bubblewrap's ``execvp`` instead of bash's.

The program is looked up on this machine first, with the jail's ``PATH``: only a program found there, reached
without passing through a location the jail hides, runs this way; anything else goes to bash, so a missing
program is reported in bash's words (``command not found``, exit 127) as before. The jail shows a subset of
this machine, so the first match here is the first match inside too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

_FIRST = r"[A-Za-z0-9_./+-]+"
_WORD = r"[A-Za-z0-9_./+@%=:,-]+"
# Not one character bash treats specially: no quote, `$`, backquote, `\`, glob (`*?[`), brace, `~`, `#`,
# `!`, operator or redirection; `=` and `%` only after the first word (an assignment, a job).
_LINE = re.compile(rf"[ \t]*({_FIRST}(?:[ \t]+{_WORD})*)[ \t]*")

_BASH_NAMES = frozenset(
    """. : [ alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs
    disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout
    mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap
    true type typeset ulimit umask unalias unset wait
    if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc""".split()
)
"""bash's builtins and reserved words (``compgen -b``, ``compgen -k``): bash runs these itself, never a program."""

_SAME_AS_PROGRAM = frozenset({"true", "false"})
"""Builtins whose program does exactly the same when given no arguments (with arguments ``true --help``
differs)."""


def plain_words(command_line: str) -> tuple[str, ...] | None:
    """The words of a line bash would run unchanged as one program, else None."""
    found = _LINE.fullmatch(command_line)
    if found is None:
        return None
    words = tuple(found.group(1).split())
    if words[0] in _BASH_NAMES and not (len(words) == 1 and words[0] in _SAME_AS_PROGRAM):
        return None
    return words


def program_environment(
    name: str, *, search_path: str, cwd: str, env: Mapping[str, str], shows: Callable[[str], bool]
) -> dict[str, str] | None:
    """The variables bash would set for program ``name`` started at ``cwd`` (a real path), when it is found
    with ``search_path`` as bash finds it and ``shows`` says every place on the way to it is visible in the
    jail; None otherwise (bash is then asked to run the line)."""
    if "/" in name:
        found = name if _reachable(os.path.join(cwd, name), shows) else None
    else:
        found = _search(name, search_path, shows)
    if found is None:
        return None
    # bash passes SHLVL on unchanged to a program it execs in its own place, and sets none but 0.
    shlvl = env.get("SHLVL", "")
    return {"PWD": cwd, "SHLVL": shlvl if shlvl.isdigit() else "0", "_": found}


def _search(name: str, search_path: str, shows: Callable[[str], bool]) -> str | None:
    for folder in search_path.split(":"):
        if not folder.startswith("/"):
            return None  # relative entries name folders of the cwd, which bash spells its own way: leave it to bash
        candidate = f"{folder}/{name}"
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate if _reachable(candidate, shows) else None
    return None


def _reachable(path: str, shows: Callable[[str], bool]) -> bool:
    """Whether ``path`` is an executable file and each link on the way to it lies where the jail shows."""
    for _ in range(40):  # the kernel's own limit on links followed
        path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if not shows(path):
            return False
        if not os.path.islink(path):
            return os.path.isfile(path) and os.access(path, os.X_OK)
        try:
            path = os.path.join(os.path.dirname(path), os.readlink(path))
        except OSError:  # gone meanwhile
            return False
    return False
