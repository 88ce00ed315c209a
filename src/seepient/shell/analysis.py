"""Shell analysis: parse a command line with tree-sitter-bash and account for every simple command it runs.

The analyser splits lists, pipelines, subshells, command and process substitutions, heredocs and nested
``bash -c`` scripts; unquotes words the way bash does; sees through wrappers (``sudo``, ``env``,
``xargs`` ...); and records each command's file operands, capabilities and dangers. Anything it cannot
account for statically makes ``parsed`` false with a sentence in ``problems``: policy never allows such a
line without asking.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from seepient.protocol import Capability
from seepient.shell.facts import CommandFacts, ShellAnalysis
from seepient.shell.interpretation import Danger, Word
from seepient.shell.sinks import is_shell_sink
from seepient.shell.syntax_tree import parse_tree
from seepient.shell.walk import Walker, WalkState

MAX_COMMAND_CHARS = 100_000


# -- public entry point -------------------------------------------------------------------------------


def analyse_command(
    command: str,
    *,
    cwd: Path | None = None,
    workspace: Path | None = None,
    home: Path | None = None,
) -> ShellAnalysis:
    """Analyse one shell command line.

    With ``workspace`` (and optionally ``cwd``, default the workspace) write targets are resolved to
    tell ``write_workspace`` from ``write_outside``; without them the split is made on the words alone.
    """
    walked = _walked(command)
    capabilities: set[Capability] = set()
    for facts in walked.facts:
        capabilities |= facts.capabilities
        for operand in facts.operands:
            found = (
                _write_capability(operand.word, cwd=cwd, workspace=workspace, home=home)
                if operand.write
                else None
            )
            if found is not None:
                capabilities.add(found)
    dangers = walked.dangers
    if walked.runs_unseen and Capability.NETWORK in capabilities:
        dangers += (
            Danger(
                "confirm",
                "it runs code fetched from the network before anyone can read it (like curl … | sh)",
            ),
        )
    order = list(Capability)
    return ShellAnalysis(
        commands=tuple(f.command for f in walked.facts),
        capabilities=tuple(sorted(capabilities, key=order.index)),
        parsed=not walked.problems,
        problems=walked.problems,
        facts=walked.facts,
        dangers=dangers,
        dotglob=walked.dotglob,
        sets_variables=walked.sets_variables,
    )


@dataclass(frozen=True)
class _Walked:
    """What the walk of a line finds, which depends on its text alone (not on the disk, the cwd or the home)."""

    facts: tuple[CommandFacts, ...]
    problems: tuple[str, ...]
    dangers: tuple[Danger, ...]
    dotglob: bool
    sets_variables: bool
    runs_unseen: bool


_WALK_MEMO_MAX_CHARS = 10_000


def _walked(command: str) -> _Walked:
    """The walk of ``command``, remembered for recent lines: the tool analyses a line when it prepares it and
    the policy again when it checks it. Everything kept is immutable; only the text is the key, because nothing
    else goes into the walk (the file-system questions are asked afresh by ``analyse_command``)."""
    return _remembered_walk(command) if len(command) <= _WALK_MEMO_MAX_CHARS else _walk(command)


@functools.lru_cache(maxsize=256)
def _remembered_walk(command: str) -> _Walked:
    return _walk(command)


def _walk(command: str) -> _Walked:
    state = WalkState()
    if len(command) > MAX_COMMAND_CHARS:
        state.problems.append(
            f"the command is {len(command)} characters long; the limit is {MAX_COMMAND_CHARS}"
        )
    elif "\x00" in command:
        state.problems.append("the command contains a NUL byte")
    elif not _encodable(command):
        state.problems.append("the command is not valid text (it holds a lone UTF-16 surrogate)")
    else:
        Walker(state, depth=0).script(command)
        if state.home_assigned and state.tilde:
            state.problems.append(
                "sets HOME and expands '~', so '~' names a folder other than the one checked here"
            )
        for name in dict.fromkeys(state.compound):
            if name in state.arrays or name in _SPECIAL_ARRAYS:
                state.problems.append(
                    f"a declaration gives the array {name} a value computed at run time (or written '(…)'), "
                    "which bash reads as a compound assignment whose subscripts it evaluates"
                )
    return _Walked(
        facts=tuple(state.facts),
        problems=tuple(dict.fromkeys(state.problems)),
        dangers=tuple(state.dangers),
        dotglob=state.dotglob,
        sets_variables=state.sets_variables,
        runs_unseen=state.runs_unseen,
    )


# Arrays bash itself keeps: a declaration that assigns one reads its value as a compound assignment.
_SPECIAL_ARRAYS = frozenset(
    "BASH_ALIASES BASH_ARGC BASH_ARGV BASH_CMDS BASH_LINENO BASH_REMATCH BASH_SOURCE BASH_VERSINFO COMP_WORDS "
    "COPROC DIRSTACK FUNCNAME GROUPS MAPFILE PIPESTATUS".split()
)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _write_capability(
    word: Word, *, cwd: Path | None, workspace: Path | None, home: Path | None
) -> Capability | None:
    text = word.text
    if word.static and is_shell_sink(text):
        return None
    if not word.static:
        return Capability.WRITE_OUTSIDE
    if workspace is None:
        escapes = text.startswith(("/", "~")) or text == ".." or text.startswith("../") or "/../" in text
        return Capability.WRITE_OUTSIDE if escapes else Capability.WRITE_WORKSPACE
    root = os.path.realpath(workspace)
    base = Path(cwd) if cwd is not None else Path(root)
    if text.startswith("~"):
        text = str(home or Path.home()) + text[1:] if text == "~" or text.startswith("~/") else text
    target = os.path.realpath(os.path.join(base if base.is_absolute() else Path(root) / base, text))
    inside = target == root or target.startswith(root.rstrip("/") + "/")
    return Capability.WRITE_WORKSPACE if inside else Capability.WRITE_OUTSIDE


# -- walking the tree ---------------------------------------------------------------------------------


def split_words(text: str) -> tuple[str, ...] | None:
    """The unquoted words of ``text`` when it is exactly one simple command of static words, else None.

    Permission rules use this so ``Shell(echo 'a b')`` means the same argv the analyser would produce.
    """
    source = text.encode("utf-8", "surrogateescape")
    root = parse_tree(source)
    if root.has_error:
        return None
    statements = [c for c in root.named_children if c.type != "comment"]
    if len(statements) != 1 or statements[0].type != "command":
        return None
    node = statements[0]
    state = WalkState()
    walker = Walker(state, depth=0)
    words: list[Word] = []
    for index, child in enumerate(node.children):
        field_name = node.field_name_for_child(index)
        if field_name == "name":
            target = (
                child.named_children[0] if child.type == "command_name" and child.named_children else child
            )
            words.extend(walker.words(target))
        elif field_name == "argument" and child.is_named:
            words.extend(walker.words(child))
        else:
            return None
    if state.facts or state.problems or not words or not all(w.static for w in words):
        return None
    return tuple(w.text for w in words)
