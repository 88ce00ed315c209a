"""What ``seepient ARGS`` asks for, told from the words alone before anything heavy loads: the app uses it to
leave the other commands unregistered, the warm start to know which invocations it may serve."""

from __future__ import annotations

import sys

ROOT_VALUE_OPTIONS = frozenset({"--model", "--workspace", "--mode", "--base-url", "--config", "--resume"})
"""The root's options that take a value (the next word is that value, not a command)."""


def names_no_command(args: list[str]) -> bool:
    """No command named and no help asked for (it lists the commands): the root's own options only."""
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif arg == "--help":
            return False
        elif arg in ROOT_VALUE_OPTIONS:
            takes_value = True
        elif not arg.startswith("-"):
            return False  # a command's name (or a stray word, which the root refuses either way)
    return True


def opens_the_tui(args: list[str]) -> bool:
    """Whether ``seepient ARGS`` opens the TUI: no command named, on a terminal (elsewhere the root prints its
    help)."""
    return sys.stdin.isatty() and sys.stdout.isatty() and names_no_command(args)
