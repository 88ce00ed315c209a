"""What one simple command does once its wrappers are seen through: the argv words, the files it opens
(``Operand``), what is dangerous about it (``Danger``) and the commands it runs in turn (``Nested``).

Everything here works on argv words the shell analyser has already unquoted; nothing touches the disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from seepient.protocol import Capability


@dataclass(frozen=True)
class Word:
    """One argv word: what the program receives when ``static``, otherwise the source text.

    ``glob`` marks unquoted wildcards the shell expands against the file system before the program runs;
    ``pipe`` marks a process substitution (``<(cmd)``), which the program sees as ``/dev/fd/N``.
    """

    text: str
    static: bool = True
    glob: bool = False
    pipe: bool = False


@dataclass(frozen=True)
class Operand:
    """A file a command opens. ``directory`` means files of unknown names are written inside it;
    ``recursive`` means everything below it is read or changed; ``moves`` means its content ends up
    somewhere else (``mv`` sources), so it is read as well as changed; ``names_only`` means only names
    and metadata are read below it (``ls -R``, ``find``), never file contents."""

    word: Word
    write: bool
    role: str
    recursive: bool = False
    directory: bool = False
    moves: bool = False
    names_only: bool = False


@dataclass(frozen=True)
class Danger:
    """``deny`` for what no mode may run (formatting a disk); ``privileged`` for what runs with raised rights,
    changes the machine below the user or runs code built at run time (``privileged.py``): denied in
    every mode unless an allow rule of the user, managed or ``--config`` settings covers the command;
    ``confirm`` for what a person must see whatever the mode (code fetched from the network run unseen);
    ``ask`` for what the mode weighs."""

    level: Literal["deny", "privileged", "confirm", "ask"]
    reason: str
    words: tuple[Word, ...] | None = None
    """The stage the danger is about (``sudo rm x`` inside ``xargs sudo rm x``): what an allow rule must name."""


@dataclass(frozen=True)
class Nested:
    """A command run by another one (``find -exec``): ``placeholder_roots`` stand in for ``{}``."""

    words: tuple[Word, ...]
    placeholder_roots: tuple[Word, ...] = ()


@dataclass
class Interpretation:
    """What one simple command does once wrappers are seen through."""

    stages: list[tuple[Word, ...]]
    wrappers: list[str] = field(default_factory=list)
    operands: list[Operand] = field(default_factory=list)
    capabilities: set[Capability] = field(default_factory=set)
    dangers: list[Danger] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    scripts: list[Word] = field(default_factory=list)
    launches: list[Word] = field(default_factory=list)
    """Command lines a setting or an environment variable names (``-c core.pager=…``, ``GIT_PAGER=…``), which
    the program runs later with arguments, input and a directory of its own choosing."""
    nested: list[Nested] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    safe: bool = False
    reads_script_from_stdin: bool = False
    stdin_script_is_shell: bool = False
    operands_from_stdin: bool = False
    cwd_change: Word | None = None
    spellings: list[tuple[Word, ...]] = field(default_factory=list)
    """Other argv forms of the same command (a git alias resolved), which deny rules must see too."""
    embedded: list[Word] = field(default_factory=list)
    """Quoted strings inside inline program text (``python -c``, an awk program) that may be paths."""
    runs_unseen: bool = False
    """The command runs code that exists only at run time (``bash <(…)``, ``eval "$(…)"``)."""
    stdin_or: list[Operand] = field(default_factory=list)
    """What the command reads when its standard input is a terminal (``rg x`` searches ``.``), since a
    pipe or redirection into it is read instead."""

    def opens(
        self,
        word: Word,
        *,
        write: bool,
        role: str,
        recursive: bool = False,
        directory: bool = False,
        moves: bool = False,
        names_only: bool = False,
    ) -> None:
        """Record a file the command opens (see ``Operand``)."""
        self.operands.append(Operand(word, write, role, recursive, directory, moves, names_only))

    @property
    def effective(self) -> tuple[Word, ...]:
        return self.stages[-1]

    @property
    def binary(self) -> Word:
        return self.effective[0] if self.effective else Word("")


def base_name(word: Word) -> str:
    """The program's name for matching: the last path component, case-folded (``/bin/RM`` is ``rm``
    on a case-insensitive file system)."""
    return word.text.rsplit("/", 1)[-1].casefold()


def destructive(interpretation: Interpretation, reason: str) -> None:
    interpretation.capabilities.add(Capability.DESTRUCTIVE)
    interpretation.dangers.append(Danger("ask", reason))
