"""Options whose value is a command line the program runs (``ssh -o ProxyCommand=…``, ``rsync -e``, ``tar -I``,
``man -P``), recorded as commands the program launches; and options that make an editor or a debugger run
commands of its own language (``vim -c``, ``gdb -ex``), which cannot be analysed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from seepient.shell.interpretation import Interpretation, Word

# program → options whose value is a command it runs (through a shell or as a program with arguments).
_COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "rsync": ("-e", "--rsh"),
    "tar": (
        "-I",
        "--use-compress-program",
        "--to-command",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
    ),
    "man": ("-P", "--pager"),
    "sort": ("--compress-program",),
    "zip": ("-TT", "--unzip-command"),
    "script": ("-c", "--command"),
}
# ssh's settings (given with -o) that name a local command; ssh matches setting names without regard to case.
_SSH_COMMAND_SETTINGS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
_SSH_PROGRAMS = frozenset({"ssh", "scp", "sftp"})
# program → options that run commands of the program's own language, and what to call them.
_CODE_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    **dict.fromkeys(
        ("vim", "vi", "nvim", "view", "ex", "vimdiff"), (("-c", "--cmd", "-S"), "editor commands")
    ),
    "gdb": (
        ("-ex", "--eval-command", "-x", "--command", "-ix", "-iex", "--init-command"),
        "debugger commands",
    ),
    "emacs": (("--eval", "-l", "--load", "-f", "--funcall", "-x", "--script"), "Lisp code"),
}
_VIM_HARMLESS_PLUS = re.compile(r"\+(?:\d*|/.*)")


def command_options(name: str, args: Sequence[Word], interpretation: Interpretation) -> None:
    """Record what ``name``'s options make it run (``interpretation.launches``) or why it cannot be read."""
    options = _COMMAND_OPTIONS.get(name, ())
    for _, value in _option_values(args, options):
        interpretation.launches.append(value)
    if name == "tar":
        for _, value in _option_values(args, ("--checkpoint-action",)):
            if value.text.startswith("exec="):
                interpretation.launches.append(Word(value.text[len("exec=") :], value.static))
    if name in _SSH_PROGRAMS:
        _ssh_options(args, interpretation, name)
    code = _CODE_OPTIONS.get(name)
    if code is not None:
        found = next((option for option, _ in _option_values(args, code[0])), None)
        if found is None and name in ("vim", "vi", "nvim", "view", "ex", "vimdiff"):
            found = next(
                (w.text for w in args if w.text.startswith("+") and not _VIM_HARMLESS_PLUS.fullmatch(w.text)),
                None,
            )
        if found is not None:
            interpretation.problems.append(f"{name} {found} runs {code[1]}, which are not analysed")


def _ssh_options(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
    for option, value in _option_values(args, ("-o", "-F")):
        if option == "-F":
            interpretation.problems.append(
                f"{name} -F reads settings from {value.text}, which may name commands it runs; not analysed"
            )
            continue
        parts = re.split(r"\s*=\s*|\s+", value.text, maxsplit=1)
        key = parts[0].casefold()
        command = parts[1] if len(parts) > 1 else ""
        if key in _SSH_COMMAND_SETTINGS and command.strip() and command.strip().casefold() != "none":
            interpretation.launches.append(Word(command, value.static))


def _option_values(args: Sequence[Word], options: Sequence[str]) -> list[tuple[str, Word]]:
    """Each of ``options`` given in ``args`` with its value: ``-e CMD``, ``-eCMD``, ``--rsh CMD``, ``--rsh=CMD``."""
    found: list[tuple[str, Word]] = []
    for position, word in enumerate(args):
        text = word.text
        if text == "--":
            break
        for option in options:
            if text == option:
                if position + 1 < len(args):
                    found.append((option, args[position + 1]))
            elif option.startswith("--") and text.startswith(option + "="):
                found.append((option, Word(text[len(option) + 1 :], word.static)))
            elif (
                len(option) == 2 and text.startswith("-") and not text.startswith("--") and option[1] in text
            ):
                # A cluster ('-ave ssh', '-essh'): the letter takes the rest of the word, or the next word.
                rest = text[text.index(option[1]) + 1 :]
                if rest:
                    found.append((option, Word(rest, word.static)))
                elif position + 1 < len(args):
                    found.append((option, args[position + 1]))
    return found
