"""Permission rules from settings (``permissions.allow/ask/deny``): parsing and matching.

A rule is ``Tool`` or ``Tool(specifier)``. First cut: ``Shell(exact command)``, ``Shell(prefix:*)``,
``Read(glob)``, ``Edit(glob)``, ``Write(glob)`` and bare tool names. Globs are gitignore-style (pathspec),
relative to the workspace; ``~/`` anchors them at the home directory and ``//`` at the file-system root.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pathspec

from seepient.policy.commands import Word
from seepient.policy.sensitive import component_key
from seepient.policy.shell import split_words

FAMILIES = ("Shell", "Read", "Edit", "Write", "Fetch")
_PATH_FAMILIES = ("Read", "Edit", "Write")
_RULE = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_.\-]*)(?:\((?P<spec>.*)\))?$", re.DOTALL)


class PolicyRuleError(ValueError):
    """A permission rule that cannot be used; the message names the rule, its list and what is wrong."""


@dataclass(frozen=True)
class Rule:
    """One parsed rule. ``argv`` is set for Shell rules, ``anchor``/``pattern`` for path rules."""

    text: str
    source: str
    tool: str
    argv: tuple[str, ...] | None = None
    prefix: bool = False
    anchor: Literal["workspace", "home", "root"] | None = None
    pattern: str | None = None
    _spec: pathspec.PathSpec | None = None
    _folded_spec: pathspec.PathSpec | None = None

    @property
    def bare(self) -> bool:
        return self.argv is None and self.pattern is None

    # -- shell --------------------------------------------------------------------------------------

    def matches_argv(self, argv: Sequence[Word], *, lenient: bool) -> bool:
        """Whether a simple command's argv matches this Shell rule.

        ``lenient`` is for deny rules: the program is compared by name (``/bin/RM`` and full-width
        ``ｒｍ`` are ``rm``) and a word computed at run time could be anything, so it matches.
        """
        if self.argv is None:
            return self.tool == "Shell"
        if not argv:
            return False
        if len(argv) < len(self.argv) or (not self.prefix and len(argv) != len(self.argv)):
            return False
        for position, (word, expected) in enumerate(zip(argv, self.argv, strict=False)):
            if position == 0 and lenient:
                if not word.static or _program_key(word.text) != _program_key(expected):
                    return False
                continue
            if not word.static:
                if lenient:
                    continue
                return False
            if word.text != expected:
                return False
        if not self.prefix and not lenient:
            return all(w.static for w in argv)
        return True

    # -- paths --------------------------------------------------------------------------------------

    def matches_path(self, absolute: str, *, workspace: Path, home: Path, lenient: bool) -> bool:
        """Whether an absolute path matches this path rule; ``lenient`` (deny rules) also folds case and Unicode."""
        if self._spec is None:
            return True
        base = {"workspace": str(workspace), "home": str(home), "root": "/"}[self.anchor or "workspace"]
        if base == "/":
            relative = absolute.lstrip("/")
        elif absolute == base:
            relative = ""
        elif absolute.startswith(base.rstrip("/") + "/"):
            relative = absolute[len(base.rstrip("/")) + 1 :]
        else:
            return False
        candidates = [relative, relative + "/"] if relative else ["./"]
        if any(self._spec.match_file(c) for c in candidates if c):
            return True
        if lenient and self._folded_spec is not None:
            folded = "/".join(component_key(part) for part in relative.split("/"))
            return any(self._folded_spec.match_file(c) for c in (folded, folded + "/") if c)
        return False


def _program_key(text: str) -> str:
    name = text.rsplit("/", 1)[-1]
    return unicodedata.normalize("NFKC", name).casefold()


def parse_rule(text: object, source: str = "rule") -> Rule:
    """Parse one rule; ``source`` (``permissions.deny[2]``) goes into the error message."""
    if not isinstance(text, str):
        raise PolicyRuleError(f"{source}: a rule must be a string like 'Shell(git status)', not {text!r}")
    stripped = text.strip()
    where = f"{source}: {text!r}"
    if not stripped:
        raise PolicyRuleError(f"{where}: empty rule; write a tool name such as 'Read' or 'Shell(npm test)'")
    if "(" in stripped and not stripped.endswith(")"):
        raise PolicyRuleError(f"{where}: the specifier is not closed; write Tool(specifier)")
    match = _RULE.match(stripped)
    if match is None:
        raise PolicyRuleError(f"{where}: not a rule; write Tool or Tool(specifier), e.g. 'Shell(git diff:*)'")
    tool, spec = match.group("tool"), match.group("spec")
    if spec is None:
        return Rule(text=stripped, source=source, tool=tool)
    if spec.strip() == "":
        raise PolicyRuleError(f"{where}: empty specifier; drop the parentheses to match every {tool} action")
    if tool == "Shell":
        return _shell_rule(stripped, source, spec, where)
    if tool in _PATH_FAMILIES:
        return _path_rule(stripped, source, tool, spec, where)
    if tool == "Fetch":
        raise PolicyRuleError(f"{where}: Fetch rules take no specifier yet; use the bare name 'Fetch'")
    raise PolicyRuleError(
        f"{where}: unknown rule kind {tool!r}; specifiers are supported for {', '.join(f for f in FAMILIES if f != 'Fetch')}"
    )


def _shell_rule(text: str, source: str, spec: str, where: str) -> Rule:
    body = spec.strip()
    if body == "*":
        return Rule(text=text, source=source, tool="Shell")
    prefix = body.endswith(":*")
    if prefix:
        body = body[:-2].rstrip()
    if ":*" in body or body == "":
        raise PolicyRuleError(f"{where}: ':*' may only end a Shell rule, after at least one word")
    argv = split_words(body)
    if argv is None:
        raise PolicyRuleError(
            f"{where}: a Shell rule names one simple command of plain words "
            "(no operators, redirections, variables or substitutions)"
        )
    return Rule(text=text, source=source, tool="Shell", argv=argv, prefix=prefix)


def _path_rule(text: str, source: str, tool: str, spec: str, where: str) -> Rule:
    pattern = spec.strip()
    anchor: Literal["workspace", "home", "root"] = "workspace"
    if pattern.startswith("//"):
        anchor, pattern = "root", "/" + pattern.lstrip("/")
    elif pattern.startswith("~/"):
        anchor, pattern = "home", "/" + pattern[2:]
    elif pattern.startswith("~"):
        raise PolicyRuleError(f"{where}: only '~/' is supported for the home directory")
    elif pattern.startswith("./"):
        pattern = "/" + pattern[2:]
    if pattern.startswith("!"):
        raise PolicyRuleError(
            f"{where}: negated patterns are not supported in rules; use an allow rule instead"
        )
    if "\x00" in pattern:
        raise PolicyRuleError(f"{where}: the pattern contains a NUL byte")
    if any(part == ".." for part in pattern.split("/")):
        raise PolicyRuleError(f"{where}: '..' is not allowed in a rule; write an absolute '//' path instead")
    if pattern in ("", "/"):
        pattern = "**"
    try:
        compiled = pathspec.GitIgnoreSpec.from_lines([pattern])
        folded_pattern = "/".join(component_key(part) if part else part for part in pattern.split("/"))
        folded = pathspec.GitIgnoreSpec.from_lines([folded_pattern])
    except Exception as exc:  # pathspec raises several types for bad patterns
        raise PolicyRuleError(f"{where}: invalid glob: {exc}") from exc
    return Rule(
        text=text,
        source=source,
        tool=tool,
        anchor=anchor,
        pattern=pattern,
        _spec=compiled,
        _folded_spec=folded,
    )


@dataclass(frozen=True)
class RuleSet:
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    @classmethod
    def from_lists(
        cls, *, allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = ()
    ) -> RuleSet:
        """Parse every rule; the first malformed one raises ``PolicyRuleError`` naming it."""

        def parse(name: str, rules: Sequence[str]) -> tuple[Rule, ...]:
            return tuple(parse_rule(rule, f"permissions.{name}[{index}]") for index, rule in enumerate(rules))

        return cls(allow=parse("allow", allow), ask=parse("ask", ask), deny=parse("deny", deny))
