"""The table of programs whose operands are files and of the wrappers that run other programs: ``programs.toml``
as data, plus the programs written as code.

Built on first use, not at import: most processes never analyse a shell line (start-up cost matters).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from seepient.protocol.errors import ConfigurationError
from seepient.shell.find import find_operands
from seepient.shell.git import git_operands
from seepient.shell.jq import jq_operands
from seepient.shell.operand_rules import (
    OperandRule,
    all_operands,
    copy_like,
    input_output,
    skip_first,
    with_output,
)
from seepient.shell.options import OptionSpec, option_spec
from seepient.shell.program_rules import (
    awk_operands,
    chmod_like_operands,
    compressor_operands,
    curl_operands,
    dd_operands,
    kill_operands,
    patch_operands,
    rm_operands,
    tar_operands,
    unzip_operands,
    wget_operands,
    zip_operands,
)
from seepient.shell.sed import sed_operands

_T = TypeVar("_T")

_KINDS = frozenset({"operands", "after_first", "copy", "with_output", "input_output"})
_KEYS = frozenset(
    {
        "names",
        "kind",
        "write",
        "role",
        "values",
        "recursive",
        "names_only",
        "unless",
        "always_recursive",
        "outputs",
        "sources_moved",
        "whole_trees",
        "examples",
    }
)


_WRAPPER_KEYS = frozenset(
    {
        "names",
        "values",
        "flags",
        "positionals",
        "assignments",
        "script_options",
        "refuse",
        "stdin_operands",
        "default",
        "no_command",
        "joins_words_as_script",
        "outputs",
        "examples",
    }
)


@dataclass(frozen=True)
class WrapperSpec:
    """One ``[[wrapper]]`` entry of ``programs.toml`` (its header says what each field means)."""

    options: OptionSpec
    positionals: int = 0
    assignments: bool = False
    script_options: frozenset[str] = frozenset()
    refuse_options: frozenset[str] = frozenset()
    stdin_operands: bool = False
    default: tuple[str, ...] = ()
    no_command_options: frozenset[str] = frozenset()
    joins_words_as_script: bool = False
    outputs: frozenset[str] = frozenset()


class ProgramTableError(ConfigurationError, ValueError):
    """``programs.toml`` holds an entry this module cannot turn into a rule (a typo in a key or a kind)."""


def _coded() -> dict[str, OperandRule]:
    return {
        **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), awk_operands),
        "sed": sed_operands,
        "rm": rm_operands,
        **{name: chmod_like_operands(name) for name in ("chmod", "chown", "chgrp", "chattr")},
        "dd": dd_operands,
        "tar": tar_operands,
        "unzip": unzip_operands,
        "zip": zip_operands,
        **dict.fromkeys(
            ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma", "compress"),
            compressor_operands,
        ),
        "curl": curl_operands,
        "wget": wget_operands,
        "patch": patch_operands,
        "git": git_operands,
        "find": find_operands,
        "jq": jq_operands,
        "kill": kill_operands,
    }


def _rule(entry: dict[str, Any]) -> OperandRule:
    unknown = set(entry) - _KEYS
    if unknown or entry.get("kind") not in _KINDS or not entry.get("names"):
        raise ProgramTableError(
            f"programs.toml: entry {entry.get('names')!r} has unknown keys {sorted(unknown)} "
            f"or a kind not in {sorted(_KINDS)}"
        )
    kind = entry["kind"]
    spec = option_spec(entry.get("values", ""))
    role = entry.get("role", "output" if kind == "with_output" else "input")
    recursive = entry.get("recursive", "")
    names_only = entry.get("names_only", False)
    if kind == "operands":
        return all_operands(
            entry.get("write", False), spec, role, recursive_flags=recursive, names_only=bool(names_only)
        )
    if kind == "after_first":
        return skip_first(
            entry.get("write", False),
            spec,
            role,
            unless=entry.get("unless", ""),
            recursive_flags=recursive,
            always_recursive=entry.get("always_recursive", False),
            names_only_flags=names_only if isinstance(names_only, str) else "",
        )
    if kind == "copy":
        return copy_like(
            spec,
            sources_written=entry.get("sources_moved", False),
            recursive_flags=recursive,
            whole_trees=entry.get("whole_trees", False),
        )
    if kind == "with_output":
        return with_output(spec, entry["outputs"], recursive_flags=recursive, names_only=bool(names_only))
    return input_output(spec)


@cache
def _table_file() -> dict[str, Any]:
    source = Path(__file__).with_name("programs.toml")
    if source.is_file():
        return load_table(source, _table_cache(source))
    # A package inside an archive: read through its loader, with no folder to keep a cache in.
    return tomllib.loads(resources.files(__package__).joinpath("programs.toml").read_text(encoding="utf-8"))


def _table_cache(source: Path) -> Path | None:
    """Where the parsed table is kept beside the bytecode, as the interpreter keeps that: not at all when
    bytecode is not written or goes elsewhere."""
    if sys.dont_write_bytecode or sys.pycache_prefix is not None or sys.implementation.cache_tag is None:
        return None
    return source.parent / "__pycache__" / f"{source.name}.{sys.implementation.cache_tag}.marshal"


def load_table(source: Path, cached: Path | None) -> dict[str, Any]:
    """``programs.toml`` parsed. The TOML parser is pure Python and took ~5 ms, a process's first shell
    analysis's largest part, so the parsed table is kept in ``cached`` (marshal, ~0.2 ms to read) under the
    SHA-256 of the text it came from, and used only while the text is unchanged. The cache sits beside the
    package's own bytecode, written as atomically and as optionally as that is."""
    raw = source.read_bytes()
    digest = hashlib.sha256(raw).digest()
    if cached is not None:
        try:
            kept = marshal.loads(cached.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            kept = None
        if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == digest and isinstance(kept[1], dict):
            return kept[1]
    table = tomllib.loads(raw.decode("utf-8"))
    if cached is not None:
        with contextlib.suppress(OSError, ValueError):
            cached.parent.mkdir(exist_ok=True)
            temp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
            temp.write_bytes(marshal.dumps((digest, table)))
            os.replace(temp, cached)
    return table


@cache
def table_entries() -> tuple[dict[str, Any], ...]:
    """The ``[[program]]`` entries of ``programs.toml`` as read (with their examples)."""
    return tuple(_table_file()["program"])


def _by_name(entries: tuple[dict[str, Any], ...], build: Callable[[dict[str, Any]], _T]) -> dict[str, _T]:
    """Each entry built once and filed under every name it lists; a name listed twice is an error."""
    found: dict[str, _T] = {}
    for entry in entries:
        built = build(entry)
        for name in entry["names"]:
            if name in found:
                raise ProgramTableError(f"programs.toml describes {name!r} twice")
            found[name] = built
    return found


@cache
def _rules() -> dict[str, OperandRule]:
    rules = _by_name(table_entries(), _rule)
    coded = _coded()
    if both := rules.keys() & coded.keys():
        raise ProgramTableError(f"programs.toml describes programs written as code: {sorted(both)}")
    return rules | coded


def _wrapper(entry: dict[str, Any]) -> WrapperSpec:
    unknown = set(entry) - _WRAPPER_KEYS
    if unknown or not entry.get("names"):
        raise ProgramTableError(
            f"programs.toml: wrapper {entry.get('names')!r} has unknown keys {sorted(unknown)}"
        )
    no_command = entry.get("no_command", "")
    flags = entry.get("flags")
    return WrapperSpec(
        # An option with which the wrapper runs nothing is still one it accepts ('sudo -l', 'command -v').
        option_spec(
            entry.get("values", ""), None if flags is None else f"{flags} {no_command}", permute=False
        ),
        positionals=entry.get("positionals", 0),
        assignments=entry.get("assignments", False),
        script_options=frozenset(entry.get("script_options", "").split()),
        refuse_options=frozenset(entry.get("refuse", "").split()),
        stdin_operands=entry.get("stdin_operands", False),
        default=tuple(entry.get("default", ())),
        no_command_options=frozenset(no_command.split()),
        joins_words_as_script=entry.get("joins_words_as_script", False),
        outputs=frozenset(entry.get("outputs", "").split()),
    )


@cache
def wrapper_entries() -> tuple[dict[str, Any], ...]:
    """The ``[[wrapper]]`` entries of ``programs.toml`` as read (with their examples)."""
    return tuple(_table_file()["wrapper"])


@cache
def _wrappers() -> dict[str, WrapperSpec]:
    return _by_name(wrapper_entries(), _wrapper)


def wrapper_spec(program: str) -> WrapperSpec | None:
    """How ``program`` runs the program after it, if it is a wrapper the table knows."""
    return _wrappers().get(program)


def operand_rule(program: str) -> OperandRule | None:
    """The rule that finds the files ``program``'s arguments name, if it is one the table knows."""
    return _rules().get(program)


def coded_programs() -> frozenset[str]:
    """The programs whose rule is code rather than a table entry."""
    return frozenset(_coded())
