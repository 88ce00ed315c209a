"""Shells and language interpreters: which operand is a script, where inline program text is, and the
obvious read out of that text (quoted paths, commands handed to a shell, a loop that forks).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from seepient.shell.interpretation import Danger, Interpretation, Word
from seepient.shell.options import name_set
from seepient.shell.privileged import dynamic_code_reason

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "busybox-sh"})
INTERPRETERS = name_set("python python2 python3 perl ruby node nodejs php lua deno bun osascript")


_SHELL_VALUE_OPTIONS = frozenset({"o", "O"})
_SHELL_LONG_VALUE = frozenset({"--rcfile", "--init-file"})


def interpret_shell(args: Sequence[Word], interpretation: Interpretation) -> None:
    """bash-like option parsing: ``-c`` takes the first operand as the script, ``-s`` or no operand reads stdin."""
    command_mode = False
    stdin_mode = False
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        if not word.static:
            break  # the first operand (a script, or a script file) computed at run time
        if text in ("--", "-"):
            index += 1
            break
        if text.startswith("--"):
            if text in _SHELL_LONG_VALUE:
                index += 1
            index += 1
            continue
        if text[:1] in ("-", "+") and len(text) > 1:
            for letter in text[1:]:
                if letter == "c":
                    command_mode = True
                elif letter == "s":
                    stdin_mode = True
                elif letter in _SHELL_VALUE_OPTIONS:
                    index += 1
            index += 1
            continue
        break
    operands = list(args[index:])
    if command_mode:
        if not operands:
            interpretation.problems.append("a shell -c without a script")
            return
        interpretation.scripts.append(operands[0])
        return
    if operands and not stdin_mode:
        if operands[0].pipe:
            _unseen_script(
                interpretation,
                f"the shell runs a script another command writes at run time ({operands[0].text})",
            )
            return
        interpretation.opens(operands[0], write=False, role="shell script")
        return
    interpretation.reads_script_from_stdin = True
    interpretation.stdin_script_is_shell = True


def _unseen_script(interpretation: Interpretation, problem: str) -> None:
    interpretation.problems.append(problem)
    interpretation.runs_unseen = True


# -- find -------------------------------------------------------------------------------------------
_INLINE_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-r", "-m", "--eval", "--print", "-p", "--command"})


def interpret_interpreter(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
    """``python x.py`` reads a script file; ``python -c CODE`` carries its program inline; bare ``python`` reads stdin."""
    for position, word in enumerate(args):
        text = word.text
        if not word.static or not text.startswith("-") or text == "-":
            if text != "-":
                if word.pipe:
                    _unseen_script(
                        interpretation, f"{name} runs a program another command writes at run time ({text})"
                    )
                    return
                interpretation.opens(word, write=False, role=f"{name} script")
                return
            break
        if text in _INLINE_CODE_OPTIONS or (not text.startswith("--") and ("c" in text or "e" in text)):
            letter = next((i for i, ch in enumerate(text) if ch in "cepr" and i > 0), len(text) - 1)
            glued = text[letter + 1 :] if not text.startswith("--") else ""
            code = (
                Word(glued, word.static)
                if glued
                else (args[position + 1] if position + 1 < len(args) else None)
            )
            if code is not None:
                inline_code(code, interpretation, name)
            return
    interpretation.reads_script_from_stdin = True


_STRING_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'" + r'|"((?:[^"\\\n]|\\.)*)"')
_SHELL_CALL = re.compile(
    r"\b(?:system|popen|exec[lv]?p?e?|spawn(?:Sync)?|execSync|check_output|check_call|getoutput"
    r"|getstatusoutput|call|run|Popen)\s*\(\s*[rbf]?(['\"])((?:(?!\1)[^\\\n]|\\.)*)\1"
)
_FORK_LOOP = re.compile(
    r"\bfork\b[\s\S]*\b(?:while|for|loop|until)\b|\b(?:while|for|loop|until)\b[\s\S]*\bfork\b"
)
_MAX_INLINE_CODE = 20_000


def inline_code(code: Word, interpretation: Interpretation, name: str) -> None:
    """Program text on the command line (``python -c``, ``perl -e``, an awk program) stays opaque, but the
    obvious is still read out of it: quoted paths it may open, commands it hands to a shell, and a loop
    that forks."""
    if not code.static:
        danger = Danger("privileged", dynamic_code_reason(name, code), interpretation.effective)
        interpretation.dangers.append(danger)
        return
    text = code.text[:_MAX_INLINE_CODE]
    for match in _STRING_LITERAL.finditer(text):
        literal = match.group(1) if match.group(1) is not None else match.group(2)
        if literal and ("/" in literal or literal.startswith((".", "~"))) and "\x00" not in literal:
            interpretation.embedded.append(Word(literal))
    for match in _SHELL_CALL.finditer(text):
        interpretation.scripts.append(Word(match.group(2)))
    if _FORK_LOOP.search(text):
        interpretation.dangers.append(Danger("deny", f"the {name} program forks in a loop: a fork bomb"))
