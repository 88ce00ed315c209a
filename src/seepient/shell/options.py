"""Option parsing the way GNU programs do it: which options take a value, clusters, ``--``, ``--name=value``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from seepient.shell.interpretation import Word


def name_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- option parsing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    """``values`` take an argument (``-o FILE``, ``--output FILE``, ``--output=FILE``); ``flags`` take none.
    ``flags=None`` accepts any other option as a flag; ``permute`` lets options follow operands (GNU style).
    ``glued`` are short options whose argument is optional and, when given, glued on (``sed -i.bak``, so
    ``-in`` is ``-i`` with the argument ``n``, not ``-i -n``)."""

    values: frozenset[str] = frozenset()
    flags: frozenset[str] | None = None
    permute: bool = True
    glued: frozenset[str] = frozenset()


@dataclass
class ParsedOptions:
    options: list[tuple[str, Word | None]]
    operands: list[Word]
    problem: str | None = None

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.options if name in names and value is not None]


def option_spec(
    values: str = "", flags: str | None = None, *, permute: bool = True, glued: str = ""
) -> OptionSpec:
    """Options taking a value, and the flags a strict parser accepts (``None``: any other option is a flag)."""
    return OptionSpec(
        values=frozenset(values.split()),
        flags=None if flags is None else frozenset(flags.split()),
        permute=permute,
        glued=frozenset(glued.split()),
    )


def parse_options(args: Sequence[Word], spec: OptionSpec, program: str) -> ParsedOptions:
    options: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if not word.static or not text.startswith("-") or text == "-":
            operands.append(word)
            if not spec.permute:
                operands.extend(args[index:])
                break
            continue
        if text == "--":
            operands.extend(args[index:])
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if eq:
                options.append((name, Word(value, word.static, word.glob)))
            elif name in spec.values:
                if index >= len(args):
                    return ParsedOptions(options, operands, f"{program}: option {name} needs a value")
                options.append((name, args[index]))
                index += 1
            elif spec.flags is None or name in spec.flags:
                options.append((name, None))
            else:
                return ParsedOptions(options, operands, f"{program}: unrecognised option {name}")
            continue
        cluster = text[1:]
        for position, letter in enumerate(cluster):
            name = f"-{letter}"
            if name in spec.glued:
                rest = cluster[position + 1 :]
                options.append((name, Word(rest) if rest else None))
                break
            if name in spec.values:
                rest = cluster[position + 1 :]
                if rest:
                    options.append((name, Word(rest)))
                elif index < len(args):
                    options.append((name, args[index]))
                    index += 1
                else:
                    return ParsedOptions(options, operands, f"{program}: option {name} needs a value")
                break
            if spec.flags is None or name in spec.flags:
                options.append((name, None))
            else:
                return ParsedOptions(options, operands, f"{program}: unrecognised option {name}")
    return ParsedOptions(options, operands)


# -- wrappers -------------------------------------------------------------------------------------


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
