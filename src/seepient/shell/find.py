"""find's expression: its roots, the files ``-fprint`` writes, the commands ``-exec`` runs, ``-delete``."""

from __future__ import annotations

from collections.abc import Sequence

from seepient.protocol import Capability
from seepient.shell.interpretation import Danger, Interpretation, Nested, Word

_FIND_VALUE_TESTS = frozenset(
    "-name -iname -path -ipath -regex -iregex -wholename -iwholename -lname -ilname -type -xtype -user -group "
    "-perm -size -mtime -atime -ctime -mmin -amin -cmin -newer -anewer -cnewer -samefile -inum -links "
    "-maxdepth -mindepth -uid -gid -used -fstype -context -printf -regextype -D".split()
)
FIND_FILE_WRITES = frozenset({"-fprint", "-fprint0", "-fls"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_operands(args: Sequence[Word], interpretation: Interpretation, program: str = "find") -> None:
    index = 0
    while (
        index < len(args)
        and args[index].text in ("-H", "-L", "-P")
        or (index < len(args) and args[index].text.startswith("-O"))
    ):
        index += 1
    roots: list[Word] = []
    while index < len(args):
        text = args[index].text
        if args[index].static and (text.startswith("-") or text in ("(", "!", ")", ",")):
            break
        roots.append(args[index])
        index += 1
    if not roots:
        roots = [Word(".")]
    deletes = False
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if text in _FIND_VALUE_TESTS or text.startswith("-newer"):
            index += 1
        elif text in FIND_FILE_WRITES or text == "-fprintf":
            if index < len(args):
                interpretation.opens(args[index], write=True, role=f"find {text} output file")
            index += 2 if text == "-fprintf" else 1
        elif text == "-files0-from":
            if index < len(args):
                interpretation.opens(args[index], write=False, role="find -files0-from list")
            index += 1
        elif text == "-delete":
            deletes = True
        elif text in FIND_EXEC:
            end = index
            while end < len(args) and args[end].text not in (";", "+"):
                end += 1
            if end >= len(args):
                interpretation.problems.append(f"find {text} without a terminating ';' or '+'")
                return
            inner = tuple(args[index:end])
            if not inner:
                interpretation.problems.append(f"find {text} without a command")
                return
            interpretation.nested.append(Nested(inner, placeholder_roots=tuple(roots)))
            index = end + 1
    for root in roots:
        interpretation.opens(root, write=deletes, role="find root", recursive=True, names_only=True)
    if deletes:
        interpretation.capabilities.add(Capability.DESTRUCTIVE)
        interpretation.dangers.append(Danger("ask", "find -delete removes every file the expression matches"))


# -- per-program operand roles ---------------------------------------------------------------------
