"""Permission rules from settings (``permissions.allow/ask/deny``): parsing, matching and precedence.

A rule is ``Tool`` or ``Tool(specifier)``:

- ``Shell(git status)`` is one exact command, ``Shell(npm run test:*)`` every command that starts with
  those words. Allow rules match the words as written. Deny and ask rules match *leniently*, because a
  rule that a reordering could dodge protects nothing: the program is compared by name (``/bin/RM``
  and a full-width ``ｒｍ`` are ``rm``), options placed before the subcommand are skipped (``git
  --no-pager -C . push`` is ``git push``), option words of the rule may stand anywhere after it and
  short options may be bundled (``rm -rf`` covers ``rm -f -r``), and a word computed at run time could
  be anything, so it matches.
- ``Read(glob)``, ``Edit(glob)``, ``Write(glob)``: gitignore-style globs (pathspec) relative to the
  workspace; ``~/`` anchors them at the home directory and ``//`` at the file-system root. ``Edit``
  covers every change to a file, ``Write`` whole-file writes only. Deny and ask rules also fold case
  and Unicode compatibility forms (``.ENV`` and ``.ｅnv`` are ``.env``).
- ``Fetch(domain:example.com)`` names one host; ``Fetch(domain:*.example.com)`` every subdomain (not the
  apex). Hosts are compared after IDNA normalisation. A deny or ask rule for ``example.com`` covers its
  subdomains too; an allow rule never does, so allowing a host never allows what its owner delegates.
- ``Mcp(server:tool)`` one MCP tool, ``Mcp(server)`` or ``Mcp(server:*)`` every tool of a server; MCP
  tools are named ``mcp__SERVER__TOOL``.
- A bare name (``Read``, ``Shell``, ``Mcp``, or a tool's own name such as ``web_fetch`` or
  ``mcp__github__create_issue``, or ``mcp__github`` for every tool of a server) matches every action of that
  family or tool.
- Claude Code's names are aliases, so a team can bring its rules along (``claude_code_aliases``): ``Bash(...)``
  is ``Shell(...)`` (``Bash(npm run *)`` and ``Bash(npm run:*)`` are ``Shell(npm run:*)``), ``WebFetch`` is
  ``Fetch``, ``WebSearch`` is the ``web_search`` tool, ``mcp__server__*`` is ``Mcp(server)``; ``Read``,
  ``Edit``, ``Write`` and ``mcp__server__tool`` are spelt alike. An alias parses into the very rule it stands
  for, so it can never allow more; Claude Code patterns Seepient cannot express exactly (``Bash(ls*)``,
  ``Bash(git * main)``) are refused with what to write instead, never widened.

Precedence between sources (managed > command-line > project > user > session grants): rules never
loosen one another across sources. Deny beats ask beats allow whatever file each came from; sources
only order which rule is named first, and the managed file may switch every other source's allow rules
off (``allowManagedRulesOnly``). A malformed rule stops the run with its file and position.
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from seepient.config.settings import SOURCE_PRECEDENCE, PermissionSources, SettingsError
from seepient.policy.sensitive import component_key
from seepient.shell import Word, split_words

if TYPE_CHECKING:
    import pathspec

FAMILIES = ("Shell", "Read", "Edit", "Write", "Fetch", "Mcp")
_PATH_FAMILIES = ("Read", "Edit", "Write")
_RULE = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_.\-]*)(?:\((?P<spec>.*)\))?$", re.DOTALL)
_MCP_SERVER = re.compile(r"[A-Za-z0-9_-]+")
_MCP_TOOL = re.compile(r"[A-Za-z0-9_.-]+")
_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_REPORTED_ERRORS = 10
_MAX_LEADING_OPTIONS = 12  # how far into the options before a subcommand a deny rule looks
_PATH_ANSWERS_KEPT = 4096


class PolicyRuleError(SettingsError, ValueError):
    """A permission rule that cannot be used; the message names its file, list, position and what is wrong.

    It is a ``SettingsError``, so every surface stops the run with exit code 2 and this message.
    """


@dataclass(frozen=True)
class Rule:
    """One parsed rule. ``argv`` is set for Shell rules, ``anchor``/``pattern`` for path rules, ``domain``
    for Fetch rules and ``mcp_server``/``mcp_tool`` for Mcp rules; a bare rule has none of them.

    ``source`` says where a person finds it (``/ws/.seepient/settings.json: permissions.deny[2]``) and
    ``origin`` which kind of source that is (``managed``, ``command-line``, ``project``, ``user``…).
    """

    text: str
    source: str
    tool: str
    argv: tuple[str, ...] | None = None
    prefix: bool = False
    anchor: Literal["workspace", "home", "root"] | None = None
    pattern: str | None = None
    domain: str | None = None
    subdomains: bool = False
    mcp_server: str | None = None
    mcp_tool: str | None = None
    origin: str = "settings"
    _spec: pathspec.PathSpec | None = field(default=None, repr=False, compare=False)
    _folded_spec: pathspec.PathSpec | None = field(default=None, repr=False, compare=False)
    # What matches_path answered (a copy made with dataclasses.replace starts without them).
    _path_answers: dict[tuple[str, Path, Path, bool], bool] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def bare(self) -> bool:
        return self.argv is None and self.pattern is None and self.domain is None and self.mcp_server is None

    # -- shell --------------------------------------------------------------------------------------

    def matches_argv(self, argv: Sequence[Word], *, lenient: bool) -> bool:
        """Whether a simple command's argv matches this Shell rule (see the module docstring for ``lenient``)."""
        if self.argv is None:
            return self.tool == "Shell"
        if not argv:
            return False
        if lenient:
            return self._matches_leniently(argv)
        if len(argv) < len(self.argv) or (not self.prefix and len(argv) != len(self.argv)):
            return False
        for word, expected in zip(argv, self.argv, strict=False):
            if not word.static or word.text != expected:
                return False
        return True

    def _matches_leniently(self, argv: Sequence[Word]) -> bool:
        assert self.argv is not None
        program = argv[0]
        if not program.static or _program_key(program.text) != _program_key(self.argv[0]):
            return False
        wanted = self.argv[1:]
        words = list(argv[1:])
        if not wanted:
            return self.prefix or not any(_positional(w) for w in words if w.static)
        positions = [0] if _is_option_text(wanted[0]) else _subcommand_positions(words)
        return any(self._tail_matches(wanted, words[start:]) for start in positions)

    def _tail_matches(self, wanted: Sequence[str], tail: Sequence[Word]) -> bool:
        wanted_positional = [w for w in wanted if not _is_option_text(w)]
        wanted_options = [w for w in wanted if _is_option_text(w)]
        dynamic = any(not w.static for w in tail)
        if wanted_positional:
            if not tail or (tail[0].static and _is_option_text(tail[0].text)):
                return False
            positional = [w for w in tail if not w.static or _positional(w)]
            if self.prefix:
                if not _subsequence(wanted_positional, positional):
                    return False
            elif len(positional) != len(wanted_positional) or not all(
                not w.static or w.text == expected
                for w, expected in zip(positional, wanted_positional, strict=True)
            ):
                return False
        elif not self.prefix and any(w.static and _positional(w) for w in tail):
            return False  # an exact rule of options only names no operand
        options = [w.text for w in tail if w.static and _is_option_text(w.text)]
        return dynamic or all(_option_present(option, options) for option in wanted_options)

    # -- paths --------------------------------------------------------------------------------------

    def _base(self, workspace: Path, home: Path) -> str:
        return {"workspace": str(workspace), "home": str(home), "root": "/"}[self.anchor or "workspace"]

    def matches_path(self, absolute: str, *, workspace: Path, home: Path, lenient: bool) -> bool:
        """Whether an absolute path matches this path rule; ``lenient`` (deny and ask rules) also folds case and Unicode."""
        # Text against a pattern and nothing else, asked again for the same words on line after line.
        key = (absolute, workspace, home, lenient)
        known = self._path_answers.get(key)
        if known is None:
            if len(self._path_answers) >= _PATH_ANSWERS_KEPT:
                self._path_answers.clear()
            known = self._path_answers[key] = self._matches_path(absolute, workspace, home, lenient)
        return known

    def _matches_path(self, absolute: str, workspace: Path, home: Path, lenient: bool) -> bool:
        if self._spec is None:
            return True
        base = self._base(workspace, home)
        if base == "/":
            relative = absolute.lstrip("/")
        elif absolute == base:
            relative = ""
        elif absolute.startswith(base.rstrip("/") + "/"):
            relative = absolute[len(base.rstrip("/")) + 1 :]
        else:
            return False
        candidates = [relative, relative + "/"] if relative else ["./"]
        if any(_spec_matches(self._spec, c) for c in candidates if c):
            return True
        if lenient and self._folded_spec is not None:
            folded = "/".join(component_key(part) for part in relative.split("/"))
            return any(_spec_matches(self._folded_spec, c) for c in (folded, folded + "/") if c)
        return False

    def could_match_below(
        self, directory: str, *, workspace: Path, home: Path, file_glob: str | None = None
    ) -> bool:
        """Whether a file somewhere below ``directory`` could match this path rule (case and Unicode folded).

        A recursive read (``grep -r``, ``rg``, ``cp -r``, a grep over a folder) would open such a file
        without naming it, so a deny rule must still have its say. ``file_glob`` narrows the files read
        (the grep tool's ``glob``) when it is a plain name pattern.
        """
        if self.pattern is None:
            return self.bare
        base = self._base(workspace, home).rstrip("/") or "/"
        directory = directory.rstrip("/") or "/"
        if base == "/" or directory == base or directory.startswith(base + "/"):
            inside = directory[len(base) :].strip("/") if base != "/" else directory.strip("/")
            below: list[str] = [component_key(p) for p in inside.split("/") if p]
        elif directory == "/" or base.startswith(directory + "/"):
            below = []  # the directory holds the rule's whole base
        else:
            return False
        pattern = self.pattern.rstrip("/")
        parts = [component_key(p) if p != "**" else p for p in pattern.lstrip("/").split("/")]
        if not _name_glob_can_match(parts[-1], file_glob):
            return False
        if "/" not in pattern:
            return True  # gitignore: a pattern without a slash matches a name at any depth
        for position, name in enumerate(below):
            if position >= len(parts) or parts[position] == "**":
                return True  # the directory is inside what the pattern names
            if not fnmatchcase(name, parts[position]):
                return False
        return True

    # -- hosts and MCP tools --------------------------------------------------------------------------

    def matches_host(self, host: str, *, lenient: bool) -> bool:
        """Whether a normalised host matches this Fetch rule (a lenient deny or ask covers subdomains too)."""
        if self.domain is None:
            return self.tool == "Fetch"
        if self.subdomains:
            return host.endswith("." + self.domain)
        return host == self.domain or (lenient and host.endswith("." + self.domain))

    def matches_mcp(self, tool_name: str, *, lenient: bool) -> bool:
        """Whether an MCP tool name (``mcp__SERVER__TOOL``) matches this Mcp rule."""
        if self.mcp_server is None:
            return self.tool == "Mcp"
        name = tool_name.casefold() if lenient else tool_name
        server = self.mcp_server.casefold() if lenient else self.mcp_server
        prefix = f"mcp__{server}__"
        if self.mcp_tool is None:
            return name.startswith(prefix) and len(name) > len(prefix)
        tool = self.mcp_tool.casefold() if lenient else self.mcp_tool
        return name == prefix + tool


def _spec_matches(spec: pathspec.PathSpec, candidate: str) -> bool:
    """``spec.match_file`` for a one-pattern spec, straight on the compiled pattern (the hot path of every
    path rule); the root itself (``./``) goes through pathspec's own normalisation."""
    pattern = spec.patterns[0]
    regex = getattr(pattern, "regex", None)
    if candidate == "./" or regex is None or pattern.include is not True:
        return bool(spec.match_file(candidate))
    return regex.match(candidate) is not None


def _program_key(text: str) -> str:
    name = text.rsplit("/", 1)[-1]
    return unicodedata.normalize("NFKC", name).casefold()


def _is_option_text(text: str) -> bool:
    return text.startswith("-") and text not in ("-", "--")


def _positional(word: Word) -> bool:
    return not _is_option_text(word.text)


def _subcommand_positions(words: Sequence[Word]) -> list[int]:
    """Where a subcommand may start: after any run of leading options, each either a flag or taking the
    next word as its value (``git -C dir push``, ``npm --prefix x publish``, ``git --no-pager push``)."""
    reachable = {0}
    frontier = [0]
    while frontier:
        at = frontier.pop()
        if at >= len(words) or at > _MAX_LEADING_OPTIONS:
            continue
        word = words[at]
        if not word.static or not _is_option_text(word.text):
            continue
        steps = (1, 2) if "=" not in word.text and at + 1 < len(words) else (1,)
        for step in steps:
            if at + step not in reachable:
                reachable.add(at + step)
                frontier.append(at + step)
    return sorted(reachable)


def _subsequence(wanted: Sequence[str], words: Sequence[Word]) -> bool:
    """``wanted`` appears in order in ``words``, its first word first; a computed word matches anything."""
    if not words or (words[0].static and words[0].text != wanted[0]):
        return False
    position = 1
    for expected in wanted[1:]:
        while position < len(words) and words[position].static and words[position].text != expected:
            position += 1
        if position >= len(words):
            return False
        position += 1
    return True


def _option_present(option: str, options: Sequence[str]) -> bool:
    """Whether a rule's option word is among a command's options. Short options may be bundled, and the
    two spellings that decide most deny rules are folded together: ``-R``/``--recursive`` are ``-r``,
    ``--force`` (and its ``--force-with-lease`` kind) is ``-f``; a long option also covers its longer
    variants (``--force`` covers ``--force-with-lease``)."""
    letters_given: set[str] = set()
    for o in options:
        if o.startswith("--"):
            name = o.split("=", 1)[0]
            for long, letter in _LONG_LETTERS.items():
                if name == long or name.startswith(long + "-"):
                    letters_given.add(letter)
        else:
            letters_given.update(_fold_letter(ch) for ch in o[1:])
    if option.startswith("--"):
        if "=" in option:
            return option in options
        if any(o == option or o.startswith((option + "=", option + "-")) for o in options):
            return True
        letter = _LONG_LETTERS.get(option)
        return letter is not None and letter in letters_given
    return {_fold_letter(ch) for ch in option[1:]} <= letters_given


_LONG_LETTERS = {"--recursive": "r", "--force": "f"}


def _fold_letter(letter: str) -> str:
    return "r" if letter == "R" else letter


def _name_glob_can_match(last: str, file_glob: str | None) -> bool:
    """Whether a file named by a rule's last component could pass a plain name filter like ``*.py``."""
    if not file_glob or last == "**" or any(ch in file_glob for ch in "/{}[]!\\"):
        return True
    glob = component_key(file_glob)
    return fnmatchcase(last, glob) or fnmatchcase(glob, last)


def normalise_host(text: str) -> str | None:
    """A host as policy compares it: percent-decoded, lower case, without the root dot, IDNA (A-label) form.

    Full-width letters and the ideographic full stop fold to ASCII here, as they do in the resolver.
    None when it is not a usable host name.
    """
    host = urllib.parse.unquote(text).strip().rstrip(".")
    if not host:
        return None
    if host.startswith("[") and host.endswith("]"):
        return host.lower()
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    labels = host.split(".")
    if not all(_HOST_LABEL.fullmatch(label) for label in labels):
        return None
    return host


# -- parsing ------------------------------------------------------------------------------------------


def parse_rule(text: object, source: str = "rule", *, origin: str = "settings") -> Rule:
    """Parse one rule; ``source`` (``/path/settings.json: permissions.deny[2]``) starts the error message."""
    if not isinstance(text, str):
        raise PolicyRuleError(f"{source}: a rule must be a string like 'Shell(git status)', not {text!r}")
    stripped = text.strip()
    where = f"{source}: {text!r}"
    if not stripped:
        raise PolicyRuleError(f"{where}: empty rule; write a tool name such as 'Read' or 'Shell(npm test)'")
    if "(" in stripped and not stripped.endswith(")"):
        raise PolicyRuleError(f"{where}: the specifier is not closed; write Tool(specifier)")
    server_wildcard = _MCP_SERVER_WILDCARD.fullmatch(stripped)
    if server_wildcard is not None:
        return Rule(
            text=stripped, source=source, tool="Mcp", mcp_server=server_wildcard.group(1), origin=origin
        )
    match = _RULE.match(stripped)
    if match is None:
        raise PolicyRuleError(f"{where}: not a rule; write Tool or Tool(specifier), e.g. 'Shell(git diff:*)'")
    tool, spec = claude_code_aliases(match.group("tool"), match.group("spec"), where)
    if spec is None:
        return Rule(text=stripped, source=source, tool=tool, origin=origin)
    if spec.strip() == "":
        raise PolicyRuleError(f"{where}: empty specifier; drop the parentheses to match every {tool} action")
    if tool == "Shell":
        return _shell_rule(stripped, source, spec, where, origin)
    if tool in _PATH_FAMILIES:
        return _path_rule(stripped, source, tool, spec, where, origin)
    if tool == "Fetch":
        return _fetch_rule(stripped, source, spec, where, origin)
    if tool == "Mcp":
        return _mcp_rule(stripped, source, spec, where, origin)
    raise PolicyRuleError(
        f"{where}: unknown rule kind {tool!r}; specifiers are supported for {', '.join(FAMILIES)} "
        "(a bare tool name takes none)"
    )


def claude_code_aliases(tool: str, spec: str | None, where: str) -> tuple[str, str | None]:
    """A rule's tool and specifier in Seepient's terms: Claude Code's ``Bash``, ``WebFetch`` and ``WebSearch``
    become ``Shell``, ``Fetch`` and the ``web_search`` tool, their ``(*)`` the bare family, and ``Bash``'s
    word-boundary wildcard (``npm run *``) the ``:*`` prefix form; any other name passes unchanged."""
    if tool not in _CLAUDE_CODE_NAMES:
        return tool, spec
    family = _CLAUDE_CODE_NAMES[tool]
    if spec is None or spec.strip() == "*":
        return family, None
    if tool == "WebSearch":
        raise PolicyRuleError(
            f"{where}: WebSearch takes no specifier (a search is judged by its backend's host); write WebSearch"
        )
    if tool == "Bash":
        return family, _claude_shell_spec(spec, where)
    return family, spec


_CLAUDE_CODE_NAMES = {"Bash": "Shell", "WebFetch": "Fetch", "WebSearch": "web_search"}
_MCP_SERVER_WILDCARD = re.compile(r"mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__\*")


def _claude_shell_spec(spec: str, where: str) -> str:
    """``npm run *`` (a word boundary, then anything, or nothing) is ``npm run:*``; a ``*`` anywhere else
    (``ls*``, ``git * main``, ``* --version``) has no exact Seepient meaning, so it is refused, not widened."""
    body = spec.strip()
    if body.endswith(" *"):
        body = body[:-2].rstrip() + ":*"
    if "*" in body.removesuffix(":*"):
        raise PolicyRuleError(
            f"{where}: this '*' has no exact Seepient meaning; a Bash rule may end with ' *' or ':*' after "
            "whole words (Bash(npm run *)), and needs one rule per command otherwise "
            "(Bash(git checkout main), Bash(git merge main))"
        )
    return body


def _shell_rule(text: str, source: str, spec: str, where: str, origin: str) -> Rule:
    body = spec.strip()
    if body == "*":
        return Rule(text=text, source=source, tool="Shell", origin=origin)
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
    return Rule(text=text, source=source, tool="Shell", argv=argv, prefix=prefix, origin=origin)


def _path_rule(text: str, source: str, tool: str, spec: str, where: str, origin: str) -> Rule:
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
    # pathspec (with its regex backends) loads with the first path rule: settings without one never need it.
    import pathspec

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
        origin=origin,
        _spec=compiled,
        _folded_spec=folded,
    )


def _fetch_rule(text: str, source: str, spec: str, where: str, origin: str) -> Rule:
    kind, colon, value = spec.strip().partition(":")
    if kind.strip() != "domain" or not colon:
        raise PolicyRuleError(
            f"{where}: a Fetch rule names a host: write Fetch(domain:example.com) or Fetch(domain:*.example.com)"
        )
    value = value.strip()
    wildcard = value.startswith("*.")
    host_text = value[2:] if wildcard else value
    if any(mark in host_text for mark in ("://", "/", "@", "?", "#")) or (
        ":" in host_text and not host_text.startswith("[")
    ):
        raise PolicyRuleError(
            f"{where}: write the host name only, without scheme, port or path (Fetch(domain:example.com))"
        )
    if "*" in host_text:
        raise PolicyRuleError(f"{where}: '*' may only open the name, as in Fetch(domain:*.example.com)")
    host = normalise_host(host_text)
    if host is None:
        raise PolicyRuleError(f"{where}: {host_text!r} is not a valid host name")
    return Rule(text=text, source=source, tool="Fetch", domain=host, subdomains=wildcard, origin=origin)


def _mcp_rule(text: str, source: str, spec: str, where: str, origin: str) -> Rule:
    server, colon, tool = spec.strip().partition(":")
    server, tool = server.strip(), tool.strip()
    if not _MCP_SERVER.fullmatch(server):
        raise PolicyRuleError(
            f"{where}: name an MCP server (letters, digits, '_' or '-'): Mcp(server), Mcp(server:tool)"
        )
    if colon and tool != "*" and not _MCP_TOOL.fullmatch(tool):
        raise PolicyRuleError(
            f"{where}: name one tool of the server or '*': Mcp({server}:tool_name) or Mcp({server}:*)"
        )
    return Rule(
        text=text,
        source=source,
        tool="Mcp",
        mcp_server=server,
        mcp_tool=tool if colon and tool != "*" else None,
        origin=origin,
    )


# -- rule sets ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleSet:
    """Parsed rules, each list in precedence order (managed first).

    ``locked_out`` holds the allow rules the managed file switched off (``allowManagedRulesOnly``); they
    never allow anything, and explanations name them so nobody wonders why an allow rule did not apply.
    """

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    locked_out: tuple[Rule, ...] = ()
    managed_only: bool = False
    disabled_modes: tuple[str, ...] = ()
    managed_path: Path | None = None

    @classmethod
    def from_lists(
        cls, *, allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = ()
    ) -> RuleSet:
        """Parse rules handed over without a file; a malformed one raises ``PolicyRuleError`` naming it."""

        def parse(name: str, rules: Sequence[str]) -> tuple[Rule, ...]:
            return tuple(parse_rule(rule, f"permissions.{name}[{index}]") for index, rule in enumerate(rules))

        return cls(allow=parse("allow", allow), ask=parse("ask", ask), deny=parse("deny", deny))

    @classmethod
    def from_sources(cls, sources: PermissionSources) -> RuleSet:
        """Parse every rule of every source; all malformed rules are reported together, each with its file
        and position, and nothing is used until every rule parses."""
        parsed: dict[str, list[Rule]] = {"allow": [], "ask": [], "deny": []}
        locked: list[Rule] = []
        errors: list[str] = []
        rank = {kind: position for position, kind in enumerate(SOURCE_PRECEDENCE)}
        ordered = sorted(sources.sources, key=lambda source: rank.get(source.kind, len(rank)))
        for source in ordered:
            for name in ("deny", "ask", "allow"):
                for index, text in enumerate(getattr(source, name)):
                    try:
                        rule = parse_rule(text, source.position(name, index), origin=source.kind)
                    except PolicyRuleError as exc:
                        errors.append(str(exc))
                        continue
                    if name == "allow" and sources.allow_managed_rules_only and source.kind != "managed":
                        locked.append(rule)
                    else:
                        parsed[name].append(rule)
        if errors:
            shown = errors[:_MAX_REPORTED_ERRORS]
            more = len(errors) - len(shown)
            tail = [f"… and {more} more malformed rules"] if more > 0 else []
            raise PolicyRuleError("\n".join([*shown, *tail]))
        return cls(
            allow=tuple(parsed["allow"]),
            ask=tuple(parsed["ask"]),
            deny=tuple(parsed["deny"]),
            locked_out=tuple(locked),
            managed_only=sources.allow_managed_rules_only,
            disabled_modes=sources.disabled_modes,
            managed_path=sources.managed_path,
        )

    def all_rules(self) -> Iterable[Rule]:
        yield from self.deny
        yield from self.ask
        yield from self.allow
