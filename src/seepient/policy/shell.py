"""Shell analysis: parse a command line with tree-sitter-bash and account for every simple command it runs.

The analyser splits lists, pipelines, subshells, command and process substitutions, heredocs and nested
``bash -c`` scripts; unquotes words the way bash does; sees through wrappers (``sudo``, ``env``,
``xargs`` ...); and records each command's file operands, capabilities and dangers. Anything it cannot
account for statically makes ``parsed`` false with a sentence in ``problems``: policy never allows such a
line without asking.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from seepient.policy.commands import (
    HISTORY_VARIABLES,
    SHELL_STATE_VARIABLES,
    Danger,
    Interpretation,
    Operand,
    Word,
    base_name,
    history_danger,
    history_setting_hides,
    interpret,
    takes_paths,
)
from seepient.policy.paths import is_shell_sink
from seepient.policy.shell_evaluation import (
    ASSIGNING_BUILTINS,
    Assignments,
    arithmetic_problem,
    builtin_assignments,
    conditional_problem,
    constant_arithmetic,
    declaration_assignments,
    name_of,
    plain_subscript,
)
from seepient.protocol import Capability, Redirection, SimpleCommand

MAX_COMMAND_CHARS = 100_000
MAX_SCRIPT_NESTING = 8  # bash -c inside bash -c ...
MAX_BRACE_WORDS = 256
MAX_WORDS = 4096
MAX_DEPTH = 150  # nested statements and substitutions; far beyond real commands, well inside Python's stack

_parser: Parser | None = None
_parser_lock = threading.Lock()


def _parse(source: bytes) -> Node:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = Parser(Language(tree_sitter_bash.language()))
        return _parser.parse(source).root_node


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
    state = _State()
    if len(command) > MAX_COMMAND_CHARS:
        state.problems.append(
            f"the command is {len(command)} characters long; the limit is {MAX_COMMAND_CHARS}"
        )
    elif "\x00" in command:
        state.problems.append("the command contains a NUL byte")
    elif not _encodable(command):
        state.problems.append("the command is not valid text (it holds a lone UTF-16 surrogate)")
    else:
        _Walker(state, depth=0).script(command)
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
    capabilities: set[Capability] = set()
    for facts in state.facts:
        capabilities |= facts.capabilities
        for operand in facts.operands:
            found = (
                _write_capability(operand.word, cwd=cwd, workspace=workspace, home=home)
                if operand.write
                else None
            )
            if found is not None:
                capabilities.add(found)
    if state.runs_unseen and Capability.NETWORK in capabilities:
        state.dangers.append(
            Danger(
                "confirm",
                "it runs code fetched from the network before anyone can read it (like curl … | sh)",
            )
        )
    order = list(Capability)
    return ShellAnalysis(
        commands=tuple(f.command for f in state.facts),
        capabilities=tuple(sorted(capabilities, key=order.index)),
        parsed=not state.problems,
        problems=tuple(dict.fromkeys(state.problems)),
        facts=tuple(state.facts),
        dangers=tuple(state.dangers),
        dotglob=state.dotglob,
        sets_variables=state.sets_variables,
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


@dataclass
class _State:
    facts: list[CommandFacts] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    dangers: list[Danger] = field(default_factory=list)
    dotglob: bool = False
    sets_variables: bool = False
    level: int = 0
    runs_unseen: bool = False
    home_assigned: bool = False
    tilde: bool = False
    arrays: set[str] = field(default_factory=set)
    compound: list[str] = field(default_factory=list)


@dataclass
class _Redirect:
    operator: str
    target: str
    fd: int | None
    operand: Operand | None = None
    stdin_text: Word | None = None  # a heredoc or herestring body fed to the command


_REDIRECT_TYPES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_CONTAINERS = frozenset(
    {
        "program",
        "list",
        "compound_statement",
        "subshell",
        "do_group",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "case_item",
    }
)
_WORDISH = frozenset(
    {
        "word",
        "number",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "brace_expression",
        "variable_name",
        "binary_expression",
        "unary_expression",
        "parenthesized_expression",
        "postfix_expression",
        "ternary_expression",
        "subscript",
        "array",
        "test_operator",
        "regex",
        "extglob_pattern",
    }
)
_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SEPARATORS_OUTSIDE_CASE = frozenset({";;", ";&", ";;&"})


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


class _Walker:
    def __init__(self, state: _State, depth: int) -> None:
        self.state = state
        self.depth = depth

    def problem(self, message: str) -> None:
        self.state.problems.append(message)

    # -- scripts ----------------------------------------------------------------------------------------

    def script(self, text: str) -> None:
        if self.depth > MAX_SCRIPT_NESTING:
            self.problem(f"shell scripts nested more than {MAX_SCRIPT_NESTING} deep")
            return
        source = text.encode("utf-8", "surrogateescape")
        root = _parse(source)
        for repair in (_join_line_continuations, _quote_dropped_dashes):
            for _ in range(3):
                repaired = repair(source, root)
                if repaired is None:
                    break
                source = repaired
                root = _parse(source)
        if root.has_error:
            self.problem(f"the shell cannot parse part of the line: {_first_error(root)}")
        disagreement = _tokenization_disagreement(source, root)
        if disagreement is not None:
            self.problem(disagreement)
        if "~" in text:
            self.state.tilde = True
        self.check_evaluation(source, root)
        self.statement(root, redirects=(), piped=False)

    def nested_script(self, text: str) -> None:
        _Walker(self.state, self.depth + 1).script(text)

    # -- where bash evaluates values ----------------------------------------------------------------------

    def check_evaluation(self, source: bytes, root: Node) -> None:
        """Find every place bash would read a value as code: prompt expansion, indirection, arithmetic,
        subscripts, names some tests evaluate, and substitutions the parser left inside other text."""
        if _MAY_EVALUATE.search(source) is None:
            return  # none of these constructs can be written without one of those characters or words
        stack = [(root, False)]
        while stack:
            node, in_expansion = stack.pop()
            kind = node.type
            if kind in _LITERAL_TOKENS:
                # Inside "${x:-'…'}" single quotes are ordinary characters, so backquotes there run.
                if in_expansion:
                    self.hidden_substitution(node, escapes=False)
                continue
            children = node.children
            if not children:
                if kind in _TEXT_LEAVES and node.is_named:
                    self.hidden_substitution(node, escapes=True)
                elif kind in ("$", "<", ">") and not node.is_named:
                    self.check_operator_token(source, node)
                continue
            if kind in _EVALUATING_NODES:
                children = self.check_evaluating_node(kind, node, children)
            nested = in_expansion or kind == "expansion"
            stack.extend((child, nested) for child in children)

    def check_evaluating_node(self, kind: str, node: Node, children: list[Node]) -> list[Node]:
        """Check one node of a kind in which bash may evaluate a value; returns the children to walk."""
        if kind == "heredoc_redirect":
            if _quoted_heredoc(node):
                return [c for c in children if c.type != "heredoc_body"]
        elif kind == "expansion":
            self.check_expansion(node)
        elif kind == "subscript":
            index = _between(node, "[", "]")
            if index is None or not plain_subscript(index):
                self.problem(
                    f"the array subscript in {_text(node)[:60]!r} is evaluated as arithmetic, which runs "
                    "code a value holds; only a number, @ or * is trusted"
                )
        elif kind == "arithmetic_expansion":
            inner = _between(node, "$((", "))")
            self.check_arithmetic(node, inner if inner is not None else _between(node, "$[", "]"))
        elif kind == "compound_statement":
            if children[0].type == "((":
                self.check_arithmetic(node, _between(node, "((", "))"))
        elif kind == "c_style_for_statement":
            self.check_arithmetic(node, _between(node, "((", "))"))
        elif kind == "array":
            self.check_array(node)
        elif kind == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None:
                self.state.sets_variables = True
                self.assigned(_text(variable), None)
        elif kind in ("binary_expression", "unary_expression"):
            operator = next((c for c in children if c.type == "test_operator"), None)
            if operator is not None:
                operands = [_text(c) for c in node.named_children if c != operator]
                problem = conditional_problem(_text(operator), operands)
                if problem is not None:
                    self.problem(problem)
        return children

    def check_operator_token(self, source: bytes, node: Node) -> None:
        after = source[node.end_byte : node.end_byte + 1]
        if node.type == "$":
            sibling = node.next_sibling
            if sibling is not None and sibling.type == "string" and sibling.start_byte == node.end_byte:
                self.problem(
                    f'a $"…" string is replaced by its translation from the locale\'s message catalogs at run '
                    f"time, and the translation is expanded: {_text(node.parent or node)[:60]!r}"
                )
        elif after == b"(":
            # In '[[ a<(c) ]]' the parser compares with '<'; bash starts a process substitution.
            self.problem(
                f"bash reads {node.type}( as a process substitution: {_text(node.parent or node)[:60]!r}"
            )

    def check_expansion(self, node: Node) -> None:
        parts = [c for c in node.children if c.type not in ("${", "}")]
        if not parts:
            return
        text = _text(node)
        if parts[0].type == "!" and not parts[0].is_named:
            rest = parts[1:]
            names = len(rest) == 2 and rest[0].type == "variable_name" and rest[1].type in ("*", "@")
            keys = (
                len(rest) == 1 and rest[0].type == "subscript" and _between(rest[0], "[", "]") in ("@", "*")
            )
            if not (names or keys):
                self.problem(
                    f"{text[:60]} expands the variable whose name a value holds; bash evaluates any array "
                    "subscript in that name, which runs code"
                )
            return
        operators = [(position, c) for position, c in enumerate(parts) if not c.is_named]
        prompt = text.endswith("@P}") or any(
            c.type == "@" and position + 1 < len(parts) and parts[position + 1].type == "P"
            for position, c in operators
        )
        if prompt:
            self.problem(
                f"{text[:60]} expands a value as a prompt string, which runs the command substitutions in it"
            )
        if not operators or operators[0][0] == 0:
            return
        position, operator = operators[0]
        if operator.type in ("=", ":=") and parts[0].type in ("variable_name", "subscript"):
            self.state.sets_variables = True
            self.assigned(_text(parts[0]), None)
        elif operator.type == ":":
            offset = (node.text or b"")[operator.end_byte - node.start_byte : -1].decode("utf-8", "replace")
            self.check_arithmetic(node, offset)

    def check_arithmetic(self, node: Node, inner: str | None) -> None:
        if inner is None or not constant_arithmetic(inner):
            self.problem(arithmetic_problem(_text(node)[:60], inner if inner is not None else _text(node)))

    def check_array(self, node: Node) -> None:
        """``a=([i]=v)``: each explicit index of a compound assignment is evaluated."""
        for element in node.named_children:
            text = _text(element)
            if not text.startswith("["):
                continue
            end = text.find("]=")
            end = end if end > 0 else text.find("]+=")
            if end < 0 or not constant_arithmetic(text[1:end]):
                self.problem(
                    f"the array element {text[:60]!r} has an index bash evaluates as arithmetic, which runs "
                    "code a value holds"
                )

    def hidden_substitution(self, node: Node, *, escapes: bool) -> None:
        """A backquote, ``$(``, ``$[``, ``<(`` or ``>(`` inside text the parser did not read as a substitution:
        bash runs it."""
        if _SUBSTITUTION_MARKER.search(node.text or b"") is None:
            return
        text = _text(node)
        index = 0
        while index < len(text):
            ch = text[index]
            if escapes and ch == "\\":
                index += 2
                continue
            if text.startswith(_SUBSTITUTION_MARKERS, index):
                self.problem(f"{text[:60]!r} holds a command substitution the parser did not read as one")
                return
            index += 1

    # -- statements -------------------------------------------------------------------------------------

    def statement(self, node: Node, *, redirects: tuple[_Redirect, ...], piped: bool) -> None:
        if self.state.level >= MAX_DEPTH:
            self.problem(f"statements nested more than {MAX_DEPTH} deep")
            return
        self.state.level += 1
        try:
            self._statement(node, redirects=redirects, piped=piped)
        finally:
            self.state.level -= 1

    def _statement(self, node: Node, *, redirects: tuple[_Redirect, ...], piped: bool) -> None:
        kind = node.type
        if kind == "comment":
            return
        if kind == "ERROR" or node.is_missing:
            return  # reported once from has_error; its inner commands are not trusted
        if kind == "command":
            self.command(node, redirects=redirects, piped=piped)
        elif kind == "redirected_statement":
            self.redirected(node, redirects=redirects, piped=piped)
        elif kind == "pipeline":
            parts = [c for c in node.named_children if c.type != "comment"]
            for position, child in enumerate(parts):
                last = position == len(parts) - 1
                self.statement(child, redirects=redirects if last else (), piped=piped or position > 0)
            self._check_separators(node)
        elif kind == "list":
            parts = [c for c in node.named_children if c.type != "comment"]
            for position, child in enumerate(parts):
                self.statement(child, redirects=redirects if position == len(parts) - 1 else (), piped=piped)
            self._check_separators(node)
        elif kind in _CONTAINERS:
            if kind == "while_statement" and _endless_background_loop(node):
                self.state.dangers.append(
                    Danger("deny", "an endless loop that keeps starting background jobs: a fork bomb")
                )
            if kind == "compound_statement" and node.child_count and node.children[0].type == "((":
                self.scan(node)
                return
            for child in node.children:
                if not child.is_named:
                    if child.type in _SEPARATORS_OUTSIDE_CASE and kind != "case_item":
                        self.problem(f"a stray {child.type!r} outside a case statement")
                    continue
                if child.type in _WORDISH:
                    self.scan(child)
                else:
                    self.statement(child, redirects=redirects, piped=piped)
        elif kind == "function_definition":
            self.function(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            self.assignments([node] if kind == "variable_assignment" else node.named_children)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node)
        elif kind == "test_command":
            self.scan(node)
            self.record_builtin(node, "[[", _text(node))
        elif kind in _REDIRECT_TYPES:
            # '$(<file)' and a bare '>file' are redirections without a command.
            self.command_parts(None, [], [], [*redirects, *self.redirect(node)], piped=piped)
        elif kind in _WORDISH:
            self.scan(node)
        else:
            self.problem(f"unsupported shell construct {kind!r}: {_text(node)[:60]}")

    def _check_separators(self, node: Node) -> None:
        for child in node.children:
            if not child.is_named and child.type in _SEPARATORS_OUTSIDE_CASE:
                self.problem(f"a stray {child.type!r} outside a case statement")

    def redirected(self, node: Node, *, redirects: tuple[_Redirect, ...], piped: bool) -> None:
        own: list[_Redirect] = []
        for child in node.children_by_field_name("redirect"):
            own.extend(self.redirect(child))
        body = node.child_by_field_name("body")
        combined = (*own, *redirects)
        if body is None:
            self.command_parts(None, [], [], list(combined), piped=piped)
            return
        # tree-sitter hangs a trailing redirection on a whole list or pipeline; statement() passes it on to
        # the last command, where bash binds it, and to every command of a group or subshell.
        self.statement(body, redirects=combined, piped=piped)

    def function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        name = _text(name_node) if name_node is not None else ""
        start = len(self.state.facts)
        if body is not None:
            self.statement(body, redirects=(), piped=False)
        calls_itself = any(
            base_name(f.effective[0]) == name.casefold() for f in self.state.facts[start:] if f.effective
        )
        body_text = _text(body) if body is not None else ""
        if calls_itself and ("&" in body_text or "|" in body_text):
            self.state.dangers.append(
                Danger("deny", f"the function {name!r} starts copies of itself: a fork bomb")
            )

    def assignments(self, nodes: list[Node]) -> None:
        for node in nodes:
            if node.type != "variable_assignment":
                self.scan(node)
                continue
            self.state.sets_variables = True
            self.check_variable(node)
            self.scan(node)

    def check_variable(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        self.assigned(
            _text(name_node) if name_node is not None else "",
            _text(value).strip("'\"") if value is not None else "",
            array=value is not None and value.type == "array",
        )

    def assigned(self, name: str, value: str | None, *, array: bool = False) -> None:
        """Check one variable the line assigns (or unsets); ``value`` is None when known only at run time."""
        base = name_of(name)
        if array or "[" in name:
            self.state.arrays.add(base)
        if base in SHELL_STATE_VARIABLES:
            self.problem(
                f"sets {base}, which changes which program later names run or how the shell reads them"
            )
        if base == "GLOBIGNORE":
            self.state.dotglob = True
        if base == "HOME":
            self.state.home_assigned = True
        if base in HISTORY_VARIABLES and history_setting_hides(base, value):
            self.state.dangers.append(history_danger(f"setting {base} stops the shell recording what runs"))

    def builtin_effects(self, stages: list[tuple[Word, ...]]) -> None:
        """Variables a builtin assigns, and names or arithmetic in it that bash would evaluate."""
        for stage in stages:
            if not stage or not stage[0].static or stage[0].text not in ASSIGNING_BUILTINS:
                continue
            found = builtin_assignments(stage)
            self.effects(found)

    def check_one_line(self, node: Node) -> None:
        """bash ends a simple command at an unquoted newline, so a command whose words span one was misparsed.

        tree-sitter-bash does this after a three-stage pipeline (``a | b | c x⏎d || e`` reads ``d`` as an
        argument of ``c``), which would hide ``d`` from policy; such a line is not trusted.
        """
        children = node.children
        for before, after in zip(children, children[1:], strict=False):
            if before.type == "heredoc_redirect":
                continue
            if (
                b"\n"
                in (node.text or b"")[before.end_byte - node.start_byte : after.start_byte - node.start_byte]
            ):
                self.problem(f"the words of one command run across a line break: {_text(node)[:60]!r}")
                return

    def declaration(self, node: Node) -> None:
        """``declare``, ``local``, ``export``, ``readonly``, ``typeset`` and ``unset``, with their words unquoted."""
        self.check_one_line(node)
        program = node.children[0].type
        words: list[Word] = [Word(program)]
        arrays: list[bool] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                word, array = self.assignment_word(child)
                words.append(word)
                arrays.append(array)
            elif child.type == "variable_name":
                words.append(Word(_text(child)))
                arrays.append(False)
            elif child.type in _WORDISH:
                found = self.words(child)
                words.extend(found)
                arrays.extend(False for _ in found)
            else:
                self.problem(f"unsupported part {child.type!r} in {_text(node)[:60]}")
        found = Assignments()
        if program == "unset":
            found = builtin_assignments(tuple(words))
        else:
            declaration_assignments(program, words[1:], found, arrays=arrays)
        self.effects(found)
        self.record(tuple(words), interpret(tuple(words)), redirects=[])

    def effects(self, found: Assignments) -> None:
        self.state.problems.extend(found.problems)
        self.state.arrays.update(name_of(name) for name in found.arrays)
        self.state.compound.extend(name_of(name) for name in found.compound)
        for name, value in found.names:
            self.state.sets_variables = True
            self.assigned(name, value)

    def assignment_word(self, node: Node) -> tuple[Word, bool]:
        """A ``name=value`` argument of a declaration as bash passes it, and whether its value is an array."""
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is not None:
            self.scan(name_node)
        name = _text(name_node) if name_node is not None else ""
        operator = next((c.type for c in node.children if not c.is_named), "=")
        if value is None:
            return Word(name + operator), False
        if value.type == "array":
            self.scan(value)
            return Word(name + operator + _text(value)), True
        found = self.words(value)
        if len(found) == 1 and found[0].static:
            return Word(name + operator + found[0].text, glob=found[0].glob), False
        return Word(name + operator + _text(value), static=False), False

    def record_builtin(self, node: Node, name: str, text: str) -> None:
        words = (Word(name), Word(text, static=not _has_expansion(node)))
        self.record(words, interpret(words), redirects=[], argv_override=(name, text))

    # -- simple commands --------------------------------------------------------------------------------

    def command(self, node: Node, *, redirects: tuple[_Redirect, ...], piped: bool) -> None:
        self.check_one_line(node)
        name_node: Node | None = None
        arguments: list[Node] = []
        assignments: list[Node] = []
        own: list[_Redirect] = []
        previous_word_end: int | None = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name in ("name", "argument"):
                # Bash splits words only at blanks: two words the parser returns with nothing between them are
                # one word to bash (``\;`a`a`` runs a program named ``;`` + the output of ``a`` + ``a``).
                if previous_word_end == child.start_byte:
                    self.problem(f"words the parser split run together in {_text(node)[:60]}")
                previous_word_end = child.end_byte
            if child.type == "variable_assignment":
                assignments.append(child)
            elif child.type in _REDIRECT_TYPES:
                own.extend(self.redirect(child))
            elif field_name == "name":
                name_node = (
                    child.named_children[0]
                    if child.type == "command_name" and child.named_children
                    else child
                )
            elif field_name == "argument":
                if not child.is_named:
                    self.problem(f"unsupported word {child.type!r} in {_text(node)[:60]}")
                    continue
                arguments.append(child)
            elif child.type == "comment":
                continue
            elif child.is_named:
                self.problem(f"unsupported part {child.type!r} in {_text(node)[:60]}")
        self.command_parts(name_node, arguments, assignments, [*own, *redirects], piped=piped)

    def command_parts(
        self,
        name_node: Node | None,
        arguments: list[Node],
        assignments: list[Node],
        redirects: list[_Redirect],
        *,
        piped: bool,
    ) -> None:
        names: list[str] = []
        for assignment in assignments:
            self.check_variable(assignment)
            self.scan(assignment)
            name_node_a = assignment.child_by_field_name("name")
            names.append(_text(name_node_a) if name_node_a is not None else "")
        words: list[Word] = []
        if name_node is not None:
            name_words = self.words(name_node)
            if len(name_words) != 1 or not name_words[0].static or name_words[0].glob:
                self.problem(f"the command name is computed at run time: {_text(name_node)[:60]}")
                for arg in arguments:
                    self.words(arg)
                return
            binary = name_words[0]
            if _NON_ASCII.search(binary.text):
                self.problem(
                    f"the command name {binary.text!r} contains non-ASCII characters that can imitate another program"
                )
            if binary.text == "":
                self.problem("an empty command name")
            words.append(binary)
        for arg in arguments:
            words.extend(self.words(arg))
        if len(words) > MAX_WORDS:
            self.problem(f"a command with {len(words)} words; the limit is {MAX_WORDS}")
            words = words[:MAX_WORDS]
        if not words:
            self.record((), Interpretation(stages=[()]), redirects=redirects)
            return
        interpretation = interpret(tuple(words))
        self.builtin_effects(interpretation.stages)
        interpretation.assignments.extend(names)
        if names:
            interpretation.safe = False
        self.state.problems.extend(interpretation.problems)
        if interpretation.problems:
            interpretation.safe = False
        name = base_name(interpretation.binary)
        if name == "shopt" and any(w.text in ("dotglob", "globstar", "extglob", "nocaseglob") for w in words):
            self.state.dotglob = True
        if name == "shopt" and any(w.text == "cdable_vars" for w in words):
            self.problem(
                "shopt cdable_vars lets cd go to the folder a variable names, which is known only at run time"
            )
        _directory_stack_change(name, interpretation)
        for script in interpretation.scripts:
            if script.static:
                self.nested_script(script.text)
            else:
                self.problem(f"{name} runs a script computed at run time: {script.text[:60]}")
                self.state.runs_unseen = True
        if interpretation.reads_script_from_stdin:
            self.stdin_script(name, redirects, piped, shell=interpretation.stdin_script_is_shell)
        for nested in interpretation.nested:
            self.nested_command(nested.words, nested.placeholder_roots)
        if (
            interpretation.stdin_or
            and not piped
            and not any(r.operator in ("<", "<<", "<<-", "<<<") and r.fd in (None, 0) for r in redirects)
        ):
            interpretation.operands.extend(interpretation.stdin_or)
        self.record(tuple(words), interpretation, redirects=redirects)

    def stdin_script(self, name: str, redirects: list[_Redirect], piped: bool, *, shell: bool) -> None:
        """A shell or interpreter reading its program from standard input."""
        fed = [r.stdin_text for r in redirects if r.stdin_text is not None]
        if fed:
            body = fed[-1]
            if not body.static:
                self.problem(f"{name} runs a script built at run time from a heredoc or herestring")
                self.state.runs_unseen = True
            elif shell:
                self.nested_script(body.text)
            # Program text for another language stays opaque, like 'python file.py'.
            return
        if piped and not any(r.operator == "<" and r.fd in (None, 0) for r in redirects):
            self.problem(f"{name} runs a script piped into it, which cannot be read before it runs")
            self.state.runs_unseen = True

    def nested_command(self, words: tuple[Word, ...], roots: tuple[Word, ...]) -> None:
        if not words or not words[0].static:
            self.problem("find -exec runs a program whose name is computed at run time")
            return
        interpretation = interpret(words)
        self.state.problems.extend(interpretation.problems)
        operands: list[Operand] = []
        for operand in interpretation.operands:
            if "{}" in operand.word.text:
                for root in roots:
                    operands.append(
                        Operand(
                            root,
                            write=operand.write,
                            role=f"{operand.role} (each file find visits)",
                            recursive=True,
                        )
                    )
            else:
                operands.append(operand)
        interpretation.operands = operands
        for script in interpretation.scripts:
            if script.static:
                self.nested_script(script.text)
            else:
                self.problem(f"find -exec runs a script computed at run time: {script.text[:60]}")
        self.record(words, interpretation, redirects=[])

    def record(
        self,
        words: tuple[Word, ...],
        interpretation: Interpretation,
        *,
        redirects: list[_Redirect],
        argv_override: tuple[str, ...] | None = None,
    ) -> None:
        operands = list(interpretation.operands)
        writes_somewhere = False
        for redirect in redirects:
            if redirect.operand is not None:
                operands.append(redirect.operand)
                if redirect.operand.write and not _is_sink(redirect.operand.word):
                    writes_somewhere = True
        effective = interpretation.effective
        binary = interpretation.binary.text if effective else ""
        command = SimpleCommand(
            argv=argv_override or tuple(w.text for w in words),
            binary=binary,
            redirections=tuple(Redirection(operator=r.operator, target=r.target, fd=r.fd) for r in redirects),
        )
        name = base_name(effective[0]) if effective else ""
        facts = CommandFacts(
            command=command,
            stages=tuple(interpretation.stages),
            wrappers=tuple(interpretation.wrappers),
            operands=tuple(operands),
            capabilities=frozenset(interpretation.capabilities),
            dangers=tuple(interpretation.dangers),
            safe=interpretation.safe and not writes_somewhere and bool(effective),
            operands_from_stdin=interpretation.operands_from_stdin,
            takes_paths=takes_paths(name),
            cwd_change=interpretation.cwd_change,
            words=words,
            spellings=tuple(interpretation.spellings),
            embedded=tuple(interpretation.embedded),
        )
        if interpretation.runs_unseen:
            self.state.runs_unseen = True
        self.state.facts.append(facts)

    # -- redirections -----------------------------------------------------------------------------------

    def redirect(self, node: Node) -> list[_Redirect]:
        if node.type == "file_redirect":
            return [self.file_redirect(node)]
        if node.type == "herestring_redirect":
            value = next((c for c in node.named_children), None)
            if value is None:
                return [_Redirect("<<<", "", None)]
            words = self.words(value)
            body = words[0] if len(words) == 1 else Word(_text(value), static=False)
            return [_Redirect("<<<", body.text, None, stdin_text=body)]
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        self.problem(f"unsupported redirection {node.type!r}")
        return []

    def file_redirect(self, node: Node) -> _Redirect:
        fd_node = node.child_by_field_name("descriptor")
        fd = int(_text(fd_node)) if fd_node is not None and _text(fd_node).isdigit() else None
        operator = next((c.type for c in node.children if not c.is_named), "")
        destinations = node.children_by_field_name("destination")
        if operator in (">&-", "<&-") or not destinations:
            words = [w for d in destinations for w in self.words(d)]
            if any(w.text for w in words):
                self.problem(f"an unusual redirection {_text(node)!r}")
            return _Redirect(operator, "", fd)  # '2>&-' closes a descriptor
        words: list[Word] = []
        for destination in destinations:
            words.extend(self.words(destination))
        target = words[0] if len(words) == 1 else Word(" ".join(_text(d) for d in destinations), static=False)
        if operator in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return _Redirect(operator, target.text, fd)
        if operator == ">&" and (not target.static or any(ch in target.text for ch in "$`\\'\"")):
            # bash turns '>&word' into '&>word' and expands the word's value a second time.
            self.problem(
                "bash expands the target of '>&' a second time when it is no number, which runs code in it: "
                f"{target.text!r}"
            )
        write = operator in _WRITE_OPERATORS or operator == ">&"
        if operator == "<&":
            self.problem(f"'<&{target.text}' duplicates a descriptor that is not a number")
        role = "redirection target" if write else "redirection source"
        return _Redirect(operator, target.text, fd, operand=Operand(target, write=write, role=role))

    def heredoc(self, node: Node) -> list[_Redirect]:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        delimiter = _text(start) if start is not None else ""
        quoted = any(ch in delimiter for ch in "'\"\\")
        operator = next((c.type for c in node.children if not c.is_named and c.type.startswith("<<")), "<<")
        body_node = next((c for c in node.children if c.type == "heredoc_body"), None)
        result: list[_Redirect] = []
        body_text = ""
        static = True
        if body_node is not None:
            body_text = _text(body_node)
            if not quoted:
                self.scan(body_node)
                static = not _has_expansion(body_node)
                if not _substitutions_accounted(body_node):
                    self.problem(
                        "a heredoc body runs commands the parser did not find; quote the delimiter ('EOF')"
                    )
                body_text = re.sub(r"\\\n", "", body_text)
            if operator == "<<-":
                body_text = "\n".join(line.lstrip("\t") for line in body_text.split("\n"))
        bare = delimiter.strip("'\"").replace("\\", "")
        result.append(_Redirect(operator, bare, None, stdin_text=Word(body_text, static=static)))
        for child in node.named_children:
            if child.type == "file_redirect":
                result.append(self.file_redirect(child))
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            else:
                # The rest of the line after '<<EOF' ('| sh', '&& rm x') lands inside the heredoc node.
                self.statement(child, redirects=(), piped=True)
        return result

    # -- words ------------------------------------------------------------------------------------------

    def scan(self, node: Node) -> None:
        """Analyse every command or process substitution inside ``node`` (they run before it does)."""
        for sub in _substitutions(node):
            if sub.child_count and sub.children[0].type == "`" and "\\" in _text(sub):
                self.problem("backslashes inside backquotes are unescaped twice by the shell; use $(...)")
            for child in sub.named_children:
                self.statement(child, redirects=(), piped=False)

    def words(self, node: Node) -> list[Word]:
        """The argv words ``node`` becomes: brace-expanded, unquoted, or one dynamic word with its source text."""
        self.scan(node)
        if node.type == "process_substitution":
            return [Word(_text(node), static=False, pipe=True)]
        chars = _evaluate(node, self)
        if chars is None:
            return [Word(_text(node), static=False)]
        expanded = _brace_expand(chars)
        if expanded is None:
            return [Word(_text(node), static=False)]
        if b"~" in (node.text or b""):
            return [
                Word("".join(c for c, _ in item), static=True, glob=_is_glob(item))
                if not _names_a_directory_stack_entry(item)
                else Word(_text(node), static=False)
                for item in expanded
            ]
        return [Word("".join(c for c, _ in item), static=True, glob=_is_glob(item)) for item in expanded]


_STACK_ROTATION = re.compile(r"[+-][0-9]+")


def _directory_stack_change(name: str, interpretation: Interpretation) -> None:
    """``cd -``, ``popd`` and ``pushd`` without a folder go to $OLDPWD or the directory stack, which the
    line can set (``OLDPWD=…; cd -``): the folder they reach is known only at run time."""
    if name not in ("cd", "pushd", "popd"):
        return
    arguments = [w for w in interpretation.effective[1:] if not (w.static and w.text in ("-n", "--"))]
    if (
        (name == "cd" and arguments and arguments[-1].static and arguments[-1].text == "-")
        or name == "popd"
        or (
            name == "pushd"
            and (not arguments or (arguments[0].static and _STACK_ROTATION.fullmatch(arguments[0].text)))
        )
    ):
        interpretation.cwd_change = Word("$OLDPWD" if name == "cd" else "$DIRSTACK", static=False)


_ALWAYS_TRUE = frozenset({"true", ":", "[ 1 ]", "[[ 1 ]]", "((1))", "(( 1 ))"})


_SUBSTITUTION_MARKERS = ("`", "$(", "$[", "<(", ">(")
_SUBSTITUTION_MARKER = re.compile(rb"`|[$<>][(]|[$][\[]")
# Every construct check_evaluation looks for is written with one of these.
_MAY_EVALUATE = re.compile(rb"[$`\[<>]|[(][(]|for|select")
# Named tokens whose text bash expands; a substitution hidden in one would run without being analysed.
_TEXT_LEAVES = frozenset({"word", "string_content", "regex", "extglob_pattern", "number"})
_LITERAL_TOKENS = frozenset({"comment", "raw_string", "ansi_c_string"})
_EVALUATING_NODES = frozenset(
    {
        "heredoc_redirect",
        "expansion",
        "subscript",
        "arithmetic_expansion",
        "compound_statement",
        "c_style_for_statement",
        "array",
        "for_statement",
        "binary_expression",
        "unary_expression",
    }
)


def _between(node: Node, opening: str, closing: str) -> str | None:
    """The source text between the first ``opening`` and the last ``closing`` token among a node's children."""
    first = next((c for c in node.children if not c.is_named and c.type == opening), None)
    last = next((c for c in reversed(node.children) if not c.is_named and c.type == closing), None)
    if first is None or last is None or last.start_byte < first.end_byte:
        return None
    text = node.text or b""
    return text[first.end_byte - node.start_byte : last.start_byte - node.start_byte].decode(
        "utf-8", "surrogateescape"
    )


def _quoted_heredoc(node: Node) -> bool:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    return start is not None and any(ch in _text(start) for ch in "'\"\\")


def _endless_background_loop(node: Node) -> bool:
    """``while true; do x & done``: a loop nothing ends that starts a process on every turn."""
    conditions = [c for c in node.children_by_field_name("condition") if c.is_named]
    if len(conditions) != 1 or _text(conditions[0]).strip() not in _ALWAYS_TRUE:
        return False
    body = node.child_by_field_name("body")
    return body is not None and any(not child.is_named and child.type == "&" for child in _descendants(body))


def _substitutions(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _SUBSTITUTIONS:
            yield current
            continue
        stack.extend(reversed(current.children))


def _substitutions_accounted(body: Node) -> bool:
    """Whether every backquote and '$(' in an unquoted heredoc body belongs to a substitution the parser found.

    tree-sitter-bash misses some (backquotes around line continuations, for one); bash runs them all.
    """
    text = _text(body)
    found = list(_substitutions(body))
    backquoted = sum(1 for sub in found if sub.child_count and sub.children[0].type == "`")
    dollar_parens = sum(1 for sub in found if sub.child_count and sub.children[0].type == "$(")
    arithmetic = sum(1 for node in _descendants(body) if node.type == "arithmetic_expansion")
    if text.count("`") - text.count("\\`") != 2 * backquoted:
        return False
    return len(re.findall(r"(?<!\\)\$\(", text)) <= dollar_parens + arithmetic


def _descendants(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _has_expansion(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("simple_expansion", "expansion", "arithmetic_expansion", *_SUBSTITUTIONS):
            return True
        stack.extend(current.children)
    return False


def _first_error(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR":
            return repr(_text(node)[:60])
        if node.is_missing:
            return f"missing {node.type!r} near byte {node.start_byte}"
        stack.extend(reversed(node.children))
    return "(unknown position)"


def _inside_token(root: Node, at: int) -> bool:
    node = root.descendant_for_byte_range(at, at + 1)
    return (
        node is not None
        and node.start_byte <= at < node.end_byte
        and (
            node.child_count == 0 or node.type in ("string", "heredoc_body", "raw_string", "comment", "word")
        )
    )


def _dropped_blank_escape(source: bytes, root: Node) -> bool:
    """tree-sitter-bash skips a backslash-blank between tokens as white space; bash makes it a word
    character (``\\ rm`` runs a program named `` rm``), so the two would disagree about the words."""
    return any(not _inside_token(root, m.start()) for m in re.finditer(rb"\\[ \t\v\f]", source))


# Bytes that end a bash word. Two tokens that touch without one of these between them are one word to
# bash, whatever tree-sitter made of them.
_METACHARACTERS = frozenset(b" \t\n|&;()<>")
# Parents whose children are separate words, operators or statements (not parts of one word).
_WORD_LISTS = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "command",
        "command_name",
        "redirected_statement",
        "negated_command",
        "compound_statement",
        "subshell",
        "do_group",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "case_statement",
        "case_item",
        "declaration_command",
        "unset_command",
        "function_definition",
        "file_redirect",
        "heredoc_redirect",
        "herestring_redirect",
        "variable_assignments",
    }
)
_FD = re.compile(rb"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


# Word-level nodes whose children are parts of one word: bash allows nothing between them.
_ONE_WORD = frozenset({"concatenation", "simple_expansion", "variable_assignment"})


def _structural_disagreement(source: bytes, root: Node) -> str | None:
    """Shapes bash cannot produce, so tree-sitter-bash must have read the line differently from bash."""
    stack = [(root, False)]
    while stack:
        node, in_expansion = stack.pop()
        stack.extend((child, in_expansion or node.type == "expansion") for child in node.children)
        text = (node.text or b"").decode("utf-8", "replace")[:60]
        if node.start_byte == node.end_byte and not node.is_named and node.type and not node.is_missing:
            return f"the parser invented a {node.type!r} that is not in the line"
        if node.type in ("word", "number") and not in_expansion and _has_raw_blank(node.text or b""):
            return f"the parser read separate words as one: {text!r}"
        if node.type == "test_command" and not _test_brackets_stand_alone(source, node):
            return f"the parser read {text!r} as a test, but bash reads its brackets as part of a word"
        if node.type == "file_descriptor" and _FD.fullmatch(node.text or b"") is None:
            return f"the parser read {text!r} as a file descriptor"
        if node.type == "file_redirect" and len(node.children_by_field_name("destination")) > 1:
            return f"the parser gave one redirection several targets: {text!r}"
        if node.type == "variable_assignment":
            name = node.child_by_field_name("name")
            if (
                name is not None
                and name.type == "variable_name"
                and _NAME.fullmatch(name.text or b"") is None
            ):
                return f"the parser read {text!r} as an assignment; bash runs it as a command"
        if (
            node.type == "comment"
            and node.start_byte > 0
            and source[node.start_byte - 1] not in _METACHARACTERS
        ):
            return f"the parser started a comment inside a word: {text!r}"
        pairs = zip(node.children, node.children[1:], strict=False)
        if node.type in _ONE_WORD:
            if any(before.end_byte != after.start_byte for before, after in pairs):
                return f"the parser read separate words as one: {text!r}"
            continue
        if node.type not in _WORD_LISTS:
            continue
        for before, after in pairs:
            if before.end_byte != after.start_byte or before.end_byte == before.start_byte:
                continue
            if after.end_byte == after.start_byte or after.type == "heredoc_body":
                continue
            if _is_operator(before) or _is_operator(after):
                continue  # '<<-EOF': bash splits operators from words whatever touches them
            if (
                source[before.end_byte - 1] not in _METACHARACTERS or _closes_a_substitution(before)
            ) and source[after.start_byte] not in _METACHARACTERS:
                return f"the parser split one shell word in two: {source[before.start_byte : after.end_byte].decode('utf-8', 'replace')[:60]!r}"
    return None


def _closes_a_substitution(node: Node) -> bool:
    """Whether ``node`` ends with the ``)`` of a substitution, which ends no word: ``<<< $(c)x`` is one word."""
    last = node
    while last.child_count:
        last = last.children[-1]
    parent = last.parent
    return (
        last.type in (")", "))")
        and parent is not None
        and parent.type in ("command_substitution", "process_substitution", "arithmetic_expansion")
    )


def _test_brackets_stand_alone(source: bytes, node: Node) -> bool:
    """``[ … ]`` and ``[[ … ]]`` are words of their own to bash: ``[x]`` runs a program named ``[x]``."""
    children = node.children
    if not children or children[0].is_named or len(children) < 2:
        return True
    opening, closing = children[0], children[-1]
    after = source[opening.end_byte : opening.end_byte + 1]
    before = source[closing.start_byte - 1 : closing.start_byte] if closing.start_byte > 0 else b""
    return after in (b" ", b"\t", b"\n") and (
        closing.is_named or closing.start_byte == closing.end_byte or before in (b" ", b"\t", b"\n")
    )


def _is_operator(node: Node) -> bool:
    return not node.is_named and any(byte in _METACHARACTERS for byte in (node.text or b""))


def _has_raw_blank(text: bytes) -> bool:
    escaped = False
    for byte in text:
        if escaped:
            escaped = False
        elif byte == 0x5C:
            escaped = True
        elif byte in b" \t\n":
            return True
    return False


def _tokenization_disagreement(source: bytes, root: Node) -> str | None:
    """Cross-checks of tree-sitter-bash's tokens against bash's own word rules.

    Each check exists because the parser was caught (by running real bash on fuzzed lines) reading a
    line in a way that hides or renames a command without reporting an error.
    """
    if _dropped_blank_escape(source, root):
        return "a backslash-escaped blank between words, which bash keeps as part of a word"
    structural = _structural_disagreement(source, root)
    if structural is not None:
        return structural
    skipped = _uncovered_text(source, root)
    if skipped is not None:
        at, text = skipped
        if source[at] in _WORD_CONTROLS:
            return (
                f"a {_WORD_CONTROLS[source[at]]} outside quotes in {text!r}: bash keeps it inside a word, where the "
                "parser reads it as a space"
            )
        return f"the parser skipped part of the line: {text!r}"
    return None


# bash splits words only at space, tab and newline; these belong to the word they touch.
_WORD_CONTROLS = {0x0D: "carriage return", 0x0B: "vertical tab", 0x0C: "form feed"}


_WHOLE_TOKENS = frozenset(
    {"string", "raw_string", "ansi_c_string", "heredoc_body", "comment", "translated_string"}
)


def _covered(root: Node, size: int) -> bytearray:
    """One flag per source byte: whether some token of the tree holds it."""
    covered = bytearray(size)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in _WHOLE_TOKENS:
            covered[node.start_byte : node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
            continue
        stack.extend(node.children)
    return covered


def _uncovered_text(source: bytes, root: Node) -> tuple[int, str] | None:
    """Text that belongs to no token, with its position. tree-sitter-bash occasionally drops a word without
    an error (``- fi=`` parses as the assignment ``fi=``), and it skips a carriage return as blank space;
    bash would run what it dropped, so such a line is not trusted."""
    covered = _covered(root, len(source))
    for index, byte in enumerate(source):
        if covered[index] or byte in b" \t\n":
            continue
        if byte == 0x5C and source[index + 1 : index + 2] in (b"\n", b" ", b"\t", b"\v", b"\f"):
            continue  # a line continuation or an escaped blank, handled on their own
        return index, source[max(0, index - 10) : index + 20].decode("utf-8", "replace")
    return None


def _quote_dropped_dashes(source: bytes, root: Node) -> bytes | None:
    """Quote a lone ``-`` word that tree-sitter-bash dropped (it does before a heredoc: ``python3 - <<'PY'``).

    ``'-'`` is the same word to bash, and tree-sitter keeps it; any other dropped text stays an error.
    """
    covered = _covered(root, len(source))
    cut = [
        index
        for index, byte in enumerate(source)
        if byte == 0x2D
        and not covered[index]
        and (index == 0 or source[index - 1] in b" \t\n")
        and (index + 1 == len(source) or source[index + 1] in b" \t\n")
    ]
    if not cut:
        return None
    out = bytearray()
    previous = 0
    for index in cut:
        out += source[previous:index] + b"'-'"
        previous = index + 1
    out += source[previous:]
    return bytes(out)


def _join_line_continuations(source: bytes, root: Node) -> bytes | None:
    """Remove backslash-newline pairs that sit between tokens, as bash does before it splits words.

    tree-sitter treats them as blank space, so ``l\\<newline>s`` would look like ``l`` with argument
    ``s`` while bash runs ``ls``. Pairs inside a token (a comment, quotes, a heredoc) are left alone.
    """
    cut: list[int] = []
    for match in re.finditer(rb"\\\n", source):
        if not _inside_token(root, match.start()):
            cut.append(match.start())
    if not cut:
        return None
    out = bytearray()
    previous = 0
    for at in cut:
        out += source[previous:at]
        previous = at + 2
    out += source[previous:]
    return bytes(out)


# -- unquoting ----------------------------------------------------------------------------------------

_Chars = list[tuple[str, bool]]  # each character with whether it was quoted (quoted ones never glob or brace)


def _evaluate(node: Node, walker: _Walker) -> _Chars | None:
    kind = node.type
    text = _text(node)
    if kind in ("word", "number"):
        chars = _unescape_unquoted(text)
        if chars is None:
            # tree-sitter-bash sometimes glues the next word or line onto a word ('{ {', 'EOF⏎\\)').
            walker.problem(f"the parser read separate words as one: {text[:60]!r}")
        return chars
    if kind == "raw_string":
        return [(c, True) for c in text[1:-1]]
    if kind == "ansi_c_string":
        decoded = _decode_ansi_c(text[2:-1])
        return None if decoded is None else [(c, True) for c in decoded]
    if kind == "string":
        if any(c.is_named and c.type != "string_content" for c in node.children):
            return None
        return [(c, True) for c in _unescape_double_quoted(text[1:-1])]
    if kind == "concatenation":
        result: _Chars = []
        for child in node.children:
            part = _evaluate(child, walker)
            if part is None:
                return None
            result.extend(part)
        return result
    if kind == "brace_expression":
        return [(c, False) for c in text]
    if kind in (
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    ):
        return None
    walker.problem(f"unsupported word {kind!r}: {text[:60]}")
    return None


def _unescape_unquoted(text: str) -> _Chars | None:
    """Unquote a bare word; None when it holds a raw blank or newline, which bash never keeps in a bare word."""
    result: _Chars = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":  # backslash-newline is a line continuation: both go
                result.append((text[index + 1], True))
            index += 2
            continue
        if ch in " \t\n":
            return None
        result.append((ch, False))
        index += 1
    return result


def _unescape_double_quoted(text: str) -> str:
    # Inside double quotes a backslash escapes only $ ` " \ and newline (which it removes).
    out: list[str] = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _decode_ansi_c(body: str) -> str | None:
    """Decode a ``$'...'`` body to the bytes bash makes of it, cut at an encoded NUL as bash cuts the word.

    None when the result is not known here: ``\\u``/``\\U`` escapes beyond ASCII are encoded in the
    locale's character set (and left as written in the C locale), and bytes that are not UTF-8 are no text.
    """
    out = bytearray()
    index = 0
    while index < len(body):
        ch = body[index]
        if ch != "\\" or index + 1 >= len(body):
            out += ch.encode("utf-8", "surrogateescape")
            index += 1
            continue
        code = body[index + 1]
        index += 2
        if code in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[code].encode()
        elif code in "01234567":
            digits = re.match(r"[0-7]{0,2}", body[index:])
            value = code + (digits.group(0) if digits else "")
            index += len(value) - 1
            out.append(int(value, 8) & 0xFF)
        elif code in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[code]
            digits = re.match(f"[0-9a-fA-F]{{1,{limit}}}", body[index:])
            if not digits:
                out += b"\\" + code.encode()
                continue
            index += len(digits.group(0))
            value = int(digits.group(0), 16)
            if code != "x" and value >= 0x80:
                return None
            out.append(value)
        elif code == "c" and index < len(body):
            control = body[index]
            index += 1
            if not control.isascii():
                return None
            if control == "\\" and body[index : index + 1] == "\\":
                index += 1  # $'\c\\' is control-backslash: the second backslash belongs to it
            out.append(0x7F if control == "?" else ord(control) & 0x1F)
        else:
            out += ("\\" + code).encode("utf-8", "surrogateescape")
    try:
        return bytes(out).split(b"\x00", 1)[0].decode("utf-8")
    except UnicodeDecodeError:
        return None


_STACK_TILDE = re.compile(r"[+-]|[+-]?[0-9]+")


def _names_a_directory_stack_entry(chars: _Chars) -> bool:
    """``~+``, ``~-`` and ``~N`` expand to $PWD, $OLDPWD and the directory stack: folders known only at run
    time. bash expands them at the start of a word and after ``=`` or ``:`` in an assignment-like word."""
    text = "".join(c for c, _ in chars)
    if "~" not in text:
        return False
    starts = [0]
    equals = text.find("=")
    if equals > 0 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text[:equals]) and not chars[equals][1]:
        starts.extend(
            position + 1
            for position in range(equals, len(chars))
            if chars[position] in (("=", False), (":", False))
        )
    for start in starts:
        if start >= len(chars) or chars[start] != ("~", False):
            continue
        end = start + 1
        while end < len(chars) and chars[end] != ("/", False) and chars[end] != (":", False):
            end += 1
        prefix = chars[start + 1 : end]
        if not any(quoted for _, quoted in prefix) and _STACK_TILDE.fullmatch("".join(c for c, _ in prefix)):
            return True
    return False


def _is_glob(chars: _Chars) -> bool:
    for position, (ch, quoted) in enumerate(chars):
        if quoted:
            continue
        if ch in "*?":
            return True
        if ch == "[" and any(c == "]" and not q for c, q in chars[position + 1 :]):
            return True
    return False


def _brace_expand(chars: _Chars, budget: list[int] | None = None, depth: int = 0) -> list[_Chars] | None:
    """bash brace expansion on unquoted braces: ``{a,b}`` and ``{1..3}``; None when it would make too many words."""
    budget = budget if budget is not None else [MAX_BRACE_WORDS]
    if depth > 64:
        return None
    for start, (ch, quoted) in enumerate(chars):
        if ch != "{" or quoted or (start > 0 and chars[start - 1] == ("$", False)):
            continue
        nesting = 0
        commas: list[int] = []
        end = None
        for position in range(start, len(chars)):
            c, q = chars[position]
            if q:
                continue
            if c == "{":
                nesting += 1
            elif c == "}":
                nesting -= 1
                if nesting == 0:
                    end = position
                    break
            elif c == "," and nesting == 1:
                commas.append(position)
        if end is None:
            continue
        prefix, body, suffix = chars[:start], chars[start + 1 : end], chars[end + 1 :]
        if commas:
            bounds = [start, *commas, end]
            alternatives = [chars[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
        else:
            sequence = _brace_sequence("".join(c for c, _ in body)) if not any(q for _, q in body) else None
            if sequence is None:
                continue
            alternatives = [[(c, True) for c in item] for item in sequence]
        results: list[_Chars] = []
        for alternative in alternatives:
            expanded = _brace_expand(prefix + alternative + suffix, budget, depth + 1)
            if expanded is None:
                return None
            results.extend(expanded)
            budget[0] -= len(expanded)
            if budget[0] < 0:
                return None
        return results
    return [chars]


def _brace_sequence(body: str) -> list[str] | None:
    match = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", body)
    if match:
        first, last = int(match.group(1)), int(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        if abs(last - first) // step > MAX_BRACE_WORDS:
            return None
        width = (
            max(len(match.group(1)), len(match.group(2)))
            if match.group(1).lstrip("-").startswith("0") or match.group(2).lstrip("-").startswith("0")
            else 0
        )
        values = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
        return [str(v).zfill(width) if width else str(v) for v in values]
    match = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?", body)
    if match:
        first, last = ord(match.group(1)), ord(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        values = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
        return [chr(v) for v in values]
    return None


def _is_sink(word: Word) -> bool:
    return word.static and is_shell_sink(word.text)


def split_words(text: str) -> tuple[str, ...] | None:
    """The unquoted words of ``text`` when it is exactly one simple command of static words, else None.

    Permission rules use this so ``Shell(echo 'a b')`` means the same argv the analyser would produce.
    """
    source = text.encode("utf-8", "surrogateescape")
    root = _parse(source)
    if root.has_error:
        return None
    statements = [c for c in root.named_children if c.type != "comment"]
    if len(statements) != 1 or statements[0].type != "command":
        return None
    node = statements[0]
    state = _State()
    walker = _Walker(state, depth=0)
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
