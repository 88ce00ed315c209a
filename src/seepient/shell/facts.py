"""What the analysis of a command line answers: the facts of each simple command and of the whole line."""

from __future__ import annotations

from dataclasses import dataclass

from seepient.protocol import Capability, SimpleCommand
from seepient.shell.interpretation import Danger, Operand, Word


@dataclass(frozen=True)
class CommandFacts:
    """Everything policy needs about one simple command beyond the protocol's ``SimpleCommand``.

    ``stages`` are the argv at each wrapper level (the last is the real program); ``operands`` include
    redirection targets; ``safe`` means the command is in the known-safe read-only set and writes nothing.
    """

    command: SimpleCommand
    stages: tuple[tuple[Word, ...], ...]
    wrappers: tuple[str, ...]
    operands: tuple[Operand, ...]
    capabilities: frozenset[Capability]
    dangers: tuple[Danger, ...]
    safe: bool
    operands_from_stdin: bool
    takes_paths: bool
    cwd_change: Word | None
    words: tuple[Word, ...]
    spellings: tuple[tuple[Word, ...], ...] = ()
    embedded: tuple[Word, ...] = ()

    @property
    def effective(self) -> tuple[Word, ...]:
        return self.stages[-1]

    @property
    def rule_forms(self) -> tuple[tuple[Word, ...], ...]:
        """Every argv form deny and ask rules must see: each wrapper stage and each other spelling."""
        return (*self.stages, *self.spellings)


@dataclass(frozen=True)
class ShellAnalysis:
    """The analysed command line. ``facts`` parallels ``commands`` in execution order."""

    commands: tuple[SimpleCommand, ...]
    capabilities: tuple[Capability, ...]
    parsed: bool
    problems: tuple[str, ...]
    facts: tuple[CommandFacts, ...] = ()
    dangers: tuple[Danger, ...] = ()
    dotglob: bool = False
    sets_variables: bool = False

    @property
    def known_safe(self) -> bool:
        """Every simple command is in the known-safe read-only set and nothing else happens."""
        return (
            self.parsed and not self.sets_variables and bool(self.facts) and all(f.safe for f in self.facts)
        )
