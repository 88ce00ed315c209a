"""Where bash reads text as code at run time: arithmetic, array subscripts, and the variable names builtins assign.

A value that reaches one of these places is evaluated, not just copied (``x='a[$(id)]'; echo $((x))`` runs
``id``, and so does ``printf -v 'a[$(id)]' x``), so the shell analysis accepts only constant arithmetic and
plain variable names there; anything else is a problem that keeps the line from being trusted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from seepient.shell.interpretation import Word, base_name

# A number in bash arithmetic: decimal, 0x hex, or base#digits (digits of bases up to 64 use letters, @ and _).
_NUMBER = re.compile(r"[0-9]+#[0-9A-Za-z@_]+|0[xX][0-9A-Fa-f]+|[0-9]+")
_OPERATOR_CHARACTERS = frozenset("+-*/%<>=!&^|~?:,() \t\n")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The number of arguments, the last status, a process id, a length: expansions that are always digits.
_NUMERIC_EXPANSION = re.compile(
    r"\$[#?$!](?![A-Za-z0-9_#?$!{])|\$\{(?:[#?$!]|#[A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\])?)\}"
)
_SUBSCRIPTED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(.*)\]", re.DOTALL)


def constant_arithmetic(text: str) -> bool:
    """Whether ``text`` is arithmetic of numbers and operators only.

    A name, an expansion or a subscript makes bash evaluate a value as an expression in turn, and an array
    subscript inside that value runs its command substitutions; only a constant expression is known harmless.
    Expansions that are always a number (``$#``, ``$?``, ``${#name}``) count as numbers.
    """
    if "$" in text:
        text = _NUMERIC_EXPANSION.sub("0", text)
    return all(ch in _OPERATOR_CHARACTERS for ch in _NUMBER.sub(" ", text))


def plain_name(text: str) -> bool:
    """A variable name bash assigns or tests without evaluating anything: ``x``, ``a[0]``, ``a[@]``."""
    if _NAME.fullmatch(text):
        return True
    match = _SUBSCRIPTED.fullmatch(text)
    return match is not None and plain_subscript(match.group(2))


def plain_subscript(index: str) -> bool:
    """An array index bash reads without evaluating a value: ``@``, ``*`` or constant arithmetic."""
    return index in ("@", "*") or constant_arithmetic(index)


def name_of(text: str) -> str:
    """The variable a name refers to: ``a`` for ``a[3]``."""
    return text.split("[", 1)[0]


@dataclass
class Assignments:
    """What a builtin assigns: variable names (``value`` None when it is known only at run time), and the
    reasons it cannot be trusted when it takes a name or arithmetic that bash would evaluate."""

    names: list[tuple[str, str | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    arrays: list[str] = field(default_factory=list)
    """Names the builtin makes arrays (``declare -a``, ``read -a``, ``mapfile``)."""
    compound: list[str] = field(default_factory=list)
    """Names given a value that bash reads as a compound assignment (``(…[$(id)]=1)``, whose subscripts it
    evaluates) when the name is an array: a value computed at run time, or one written ``'(…)'``."""


@dataclass(frozen=True)
class _NameBuiltin:
    """Option letters that take a value, those whose value is a variable name, whether the operands are
    names (``all``, ``first`` or the ``second``), and options that run a command."""

    values: str
    name_options: str = ""
    operands: str = ""
    runs_code: str = ""


_NAME_BUILTINS = {
    "read": _NameBuiltin("adinNptu", name_options="a", operands="all"),
    "mapfile": _NameBuiltin("dnOsuCc", operands="first", runs_code="C"),
    "readarray": _NameBuiltin("dnOsuCc", operands="first", runs_code="C"),
    "printf": _NameBuiltin("v", name_options="v"),
    "wait": _NameBuiltin("p", name_options="p"),
    "getopts": _NameBuiltin("", operands="second"),
    "unset": _NameBuiltin("", operands="all"),
    "compgen": _NameBuiltin("oAGWXPSFCV", runs_code="C"),
}
_DECLARATIONS = frozenset({"declare", "typeset", "local", "readonly", "export"})
ASSIGNING_BUILTINS = frozenset({*_NAME_BUILTINS, *_DECLARATIONS, "let", "test", "["})
"""The builtins ``builtin_assignments`` knows; any other command assigns no variable."""
# Attributes that make a later use evaluate a value: integer variables evaluate every assignment as
# arithmetic, and a name reference expands whatever name its value holds.
_EVALUATING_ATTRIBUTES = {"i": "the integer attribute", "n": "a name reference"}
# Special parameters that always expand to a number (or nothing), never to an option.
_NUMERIC_PARAMETERS = frozenset({"$!", "$$", "$?", "$#", '"$!"', '"$$"', '"$?"', '"$#"'})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_TESTS = frozenset({"-v", "-R"})


def builtin_assignments(argv: Sequence[Word]) -> Assignments:
    """The variables one builtin command assigns and what in it bash would evaluate (``argv[0]`` static)."""
    found = Assignments()
    if not argv:
        return found
    name = base_name(argv[0])
    if "/" in argv[0].text:
        return found  # a path names a program on disk, never a builtin
    args = list(argv[1:])
    if name in _NAME_BUILTINS:
        _name_builtin(name, _NAME_BUILTINS[name], args, found)
    elif name in _DECLARATIONS:
        declaration_assignments(name, args, found)
    elif name == "let":
        for word in args:
            if not word.static or not constant_arithmetic(word.text):
                found.problems.append(arithmetic_problem("let", word.text))
    elif name in ("test", "["):
        _test_names(name, args[:-1] if name == "[" and args and args[-1].text == "]" else args, found)
    return found


def _name_builtin(program: str, spec: _NameBuiltin, args: list[Word], found: Assignments) -> None:
    operands: list[Word] = []
    position = 0
    while position < len(args):
        word = args[position]
        position += 1
        if not word.static and word.text in _NUMERIC_PARAMETERS:
            operands = args[position - 1 :]
            break
        if not word.static:
            # Builtins parse options after expansion: a value like '-v a[$(id)]' is an option to them.
            found.problems.append(
                f"{program} takes options from {word.text!r}, computed at run time, so what it assigns "
                "cannot be checked"
            )
            return
        text = word.text
        if text == "--":
            operands = args[position:]
            break
        if not text.startswith("-") or text == "-":
            operands = args[position - 1 :]
            break
        for index, letter in enumerate(text[1:], start=1):
            if letter not in spec.values:
                continue
            value_text = text[index + 1 :]
            if value_text:
                value = Word(value_text)
            elif position < len(args):
                value = args[position]
                position += 1
            else:
                break
            if letter in spec.runs_code:
                found.problems.append(f"{program} -{letter} runs {value.text!r} as shell code")
            if letter in spec.name_options:
                _assign_name(program, value, found)
                if program == "read":
                    found.arrays.append(value.text)
            break
    options = args[: len(args) - len(operands)]
    if program == "unset" and any(w.text.startswith("-") and "f" in w.text for w in options):
        return  # unset -f removes functions, whose names bash does not evaluate
    names = {"all": operands, "first": operands[:1], "second": operands[1:2]}.get(spec.operands, [])
    for word in names:
        _assign_name(program, word, found)
    if program in ("mapfile", "readarray"):
        found.arrays.append(names[0].text if names else "MAPFILE")


def _assign_name(program: str, word: Word, found: Assignments) -> None:
    if not word.static:
        found.problems.append(
            f"{program} assigns a variable whose name is computed at run time ({word.text}); bash evaluates "
            "an array subscript in it"
        )
    elif not plain_name(word.text):
        found.problems.append(
            f"{program} is given {word.text!r} as a variable name; bash evaluates what is inside its brackets"
        )
    else:
        found.names.append((word.text, None))


def declaration_assignments(
    program: str, args: Sequence[Word], found: Assignments, *, arrays: Sequence[bool] = ()
) -> None:
    """``declare`` and kin: every ``name=value`` word they assign and the attributes that evaluate later.

    When the name is an array, bash reads a value computed at run time (or one written ``'(…)'``) as a
    compound assignment; ``export`` never does. ``arrays`` marks the words whose value is an array the
    parser read (``a=(1 2)``), whose subscripts the caller checks.
    """
    options_done = False
    makes_arrays = False
    for position, word in enumerate(args):
        text = word.text
        if not options_done and word.static and text[:1] in ("-", "+") and text not in ("-", "+"):
            if text == "--":
                options_done = True
                continue
            if text[0] == "-":
                for letter, what in _EVALUATING_ATTRIBUTES.items():
                    if letter in text[1:]:
                        found.problems.append(
                            f"{program} {text} gives a variable {what}, so later uses of it evaluate values"
                        )
                makes_arrays = makes_arrays or "a" in text[1:] or "A" in text[1:]
            continue
        options_done = True
        name, equals, value = text.partition("=")
        name = name.removesuffix("+")
        if not word.static and not (equals and plain_name(name)):
            found.problems.append(
                f"{program} is given {text!r}, computed at run time; a name or array assignment in it is evaluated"
            )
            continue
        if not plain_name(name):
            found.problems.append(
                f"{program} is given {name!r} as a variable name; bash evaluates what is inside its brackets"
            )
            continue
        literal_array = position < len(arrays) and arrays[position]
        if makes_arrays or literal_array:
            found.arrays.append(name)
        if not equals:
            if program != "export":
                found.names.append((name, None))
            continue
        written_compound = value.startswith("(") and any(ch in value for ch in "$`[<>")
        if not literal_array and program != "export" and (not word.static or written_compound):
            found.compound.append(name)
        found.names.append((name, value if word.static and not literal_array else None))


def _test_names(program: str, args: Sequence[Word], found: Assignments) -> None:
    """``test -v NAME`` evaluates a subscript in NAME; its numeric comparisons do not (unlike ``[[``)."""
    for position, word in enumerate(args[:-1]):
        if word.static and word.text in _NAME_TESTS:
            target = args[position + 1]
            if not target.static or not plain_name(target.text):
                found.problems.append(
                    f"{program} {word.text} {target.text!r} evaluates what is inside the brackets of a name"
                )


def conditional_problem(operator: str, operands: Sequence[str]) -> str | None:
    """The problem with one ``[[ … ]]`` test whose operands bash evaluates, or None."""
    if operator in _ARITHMETIC_TESTS:
        for text in operands:
            if len(text) > 1 and text[0] == text[-1] == '"':
                text = text[1:-1]  # quote removal comes before the arithmetic
            if not constant_arithmetic(text):
                return f"[[ … {operator} … ]] evaluates {text!r} as arithmetic, which runs code a value holds"
    elif operator in _NAME_TESTS:
        for text in operands:
            if not plain_name(text):
                return f"[[ {operator} {text} ]] evaluates what is inside the brackets of a name"
    return None


def arithmetic_problem(where: str, text: str) -> str:
    return (
        f"{where} evaluates {text!r} as arithmetic; a name or expansion in it makes bash evaluate a value "
        "as code (an array subscript there runs command substitutions)"
    )
