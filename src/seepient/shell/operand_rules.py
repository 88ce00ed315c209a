"""The kinds of operand rule the program table names: each turns a program's argv into the files it opens.

``programs.toml`` gives each kind its options; ``program_table.py`` builds the rules on first use.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from seepient.shell.interpretation import Interpretation, Operand, Word
from seepient.shell.options import OptionSpec, parse_options

OperandRule = Callable[[Sequence[Word], Interpretation, str], None]


def all_operands(
    write: bool, spec: OptionSpec, role: str, *, recursive_flags: str = "", names_only: bool = False
) -> OperandRule:
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = parse_options(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
        for word in parsed.operands:
            interpretation.opens(
                word, write=write, role=f"{program} {role}", recursive=recursive, names_only=names_only
            )

    return rule


def skip_first(
    write: bool,
    spec: OptionSpec,
    role: str,
    *,
    unless: str = "",
    recursive_flags: str = "",
    always_recursive: bool = False,
    names_only_flags: str = "",
) -> OperandRule:
    """Programs whose first operand is not a file (a grep pattern, a chmod mode) unless an option gave it.

    A recursive search without a path searches the working directory (unless its input is piped)."""
    unless_set = frozenset(unless.split())
    recursive_set = frozenset(recursive_flags.split())
    names_only_set = frozenset(names_only_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = parse_options(args, spec, program)
        operands = parsed.operands if parsed.has(*unless_set) else parsed.operands[1:]
        recursive = always_recursive or any(opt in recursive_set for opt, _ in parsed.options)
        names_only = any(opt in names_only_set for opt, _ in parsed.options)
        for word in operands:
            interpretation.opens(
                word, write=write, role=f"{program} {role}", recursive=recursive, names_only=names_only
            )
        if recursive and not operands and not write:
            interpretation.stdin_or.append(
                Operand(
                    Word("."),
                    write=False,
                    role=f"{program} {role} (the working directory)",
                    recursive=True,
                    names_only=names_only,
                )
            )

    return rule


def copy_like(
    spec: OptionSpec, *, sources_written: bool, recursive_flags: str = "", whole_trees: bool = False
) -> OperandRule:
    """cp, mv, ln, install, rsync, scp. ``whole_trees``: a source directory goes along with everything
    below it whatever the flags (``mv dir x``; ``ln -s dir x`` opens everything below ``dir`` through ``x``)."""
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = parse_options(args, spec, program)
        recursive = whole_trees or any(opt in recursive_set for opt, _ in parsed.options)
        targets = parsed.values("-t", "--target-directory")
        sources = list(parsed.operands)
        if targets:
            destinations = targets
        elif len(sources) >= 2:
            destinations = [sources.pop()]
        elif program == "ln" and sources:
            destinations = [Word(".")]
        else:
            destinations = []
        for word in sources:
            interpretation.opens(
                word,
                write=sources_written,
                role=f"{program} source",
                recursive=recursive,
                moves=sources_written,
            )
        if program == "ln" and parsed.has("-s", "--symbolic"):
            # A relative symlink target is resolved from the link's own directory, not from here.
            for source in sources:
                if not source.static or source.text.startswith(("/", "~")):
                    continue
                for destination in destinations:
                    if not destination.static:
                        continue
                    for directory in {destination.text, posixpath.dirname(destination.text) or "."}:
                        interpretation.opens(
                            Word(posixpath.join(directory, source.text), glob=source.glob),
                            write=False,
                            role="ln -s target, seen from the link's directory",
                            recursive=True,
                        )
        for word in destinations:
            interpretation.opens(
                word, write=True, role=f"{program} destination", recursive=recursive, directory=bool(targets)
            )

    return rule


def with_output(
    spec: OptionSpec, outputs: str, *, recursive_flags: str = "", names_only: bool = False
) -> OperandRule:
    """Programs that read their operands and write one file named by an option (``iconv -o out``)."""
    output_set = tuple(outputs.split())
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = parse_options(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
        for word in parsed.values(*output_set):
            interpretation.opens(word, write=True, role=f"{program} output")
        for word in parsed.operands:
            interpretation.opens(
                word, write=False, role=f"{program} input", recursive=recursive, names_only=names_only
            )

    return rule


def input_output(spec: OptionSpec) -> OperandRule:
    """``xxd [options] [infile [outfile]]``, ``uniq``: the first operand is read, the second written."""

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = parse_options(args, spec, program)
        for position, word in enumerate(parsed.operands[:2]):
            interpretation.opens(
                word, write=position == 1, role=f"{program} output" if position else f"{program} input"
            )

    return rule
