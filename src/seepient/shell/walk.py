"""The walk over tree-sitter-bash's tree: every statement, command, redirection, assignment and word of a
line, each simple command interpreted and recorded as ``CommandFacts``, anything unaccounted a problem.

One recursive visitor over the tree; the evaluation checks it runs first are ``evaluation_checks.py``, what an
assignment means ``variables.py`` and the redirections it reads ``redirections.py``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from seepient.protocol import Redirection, SimpleCommand
from seepient.shell.cross_checks import (
    first_error,
    join_line_continuations,
    quote_dropped_dashes,
    tokenization_disagreement,
)
from seepient.shell.environment import names_a_program
from seepient.shell.evaluation import (
    ASSIGNING_BUILTINS,
    Assignments,
    builtin_assignments,
    declaration_assignments,
)
from seepient.shell.evaluation_checks import EvaluationChecks
from seepient.shell.expansion import (
    brace_expand,
    is_glob,
    names_a_directory_stack_entry,
)
from seepient.shell.facts import CommandFacts
from seepient.shell.interpret import directory_stack_change, interpret, takes_paths
from seepient.shell.interpretation import Danger, Interpretation, Operand, Word, base_name
from seepient.shell.options import name_set
from seepient.shell.redirections import REDIRECT_TYPES, Redirect, RedirectionReader
from seepient.shell.sinks import is_shell_sink
from seepient.shell.syntax_tree import (
    endless_background_loop,
    has_expansion,
    node_text,
    parse_tree,
    substitutions,
    word_chars,
)
from seepient.shell.variables import VariableChecks

MAX_SCRIPT_NESTING = 8  # bash -c inside bash -c ...
MAX_WORDS = 4096
MAX_DEPTH = 150  # nested statements and substitutions; far beyond real commands, well inside Python's stack


@dataclass
class WalkState:
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
_WORDISH = name_set(
    "word number string raw_string ansi_c_string concatenation simple_expansion expansion "
    "command_substitution process_substitution arithmetic_expansion brace_expression variable_name "
    "binary_expression unary_expression parenthesized_expression postfix_expression ternary_expression "
    "subscript array test_operator regex extglob_pattern"
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_APPENDING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+=")
_SEPARATORS_OUTSIDE_CASE = frozenset({";;", ";&", ";;&"})


class Walker(VariableChecks, EvaluationChecks, RedirectionReader):
    def __init__(self, state: WalkState, depth: int, *, launched: bool = False) -> None:
        self.state = state
        self.depth = depth
        # Commands a setting or a variable names run later, with arguments, input and a directory the program
        # chooses (git runs a '!' alias from the top of the work tree, an editor gets a file name), so what
        # they do is never fully on the line: none of them is known safe.
        self.launched = launched

    def problem(self, message: str) -> None:
        self.state.problems.append(message)

    # -- scripts ----------------------------------------------------------------------------------------

    def script(self, text: str) -> None:
        if self.depth > MAX_SCRIPT_NESTING:
            self.problem(f"shell scripts nested more than {MAX_SCRIPT_NESTING} deep")
            return
        source = text.encode("utf-8", "surrogateescape")
        root = parse_tree(source)
        for repair in (join_line_continuations, quote_dropped_dashes):
            for _ in range(3):
                repaired = repair(source, root)
                if repaired is None:
                    break
                source = repaired
                root = parse_tree(source)
        if root.has_error:
            self.problem(f"the shell cannot parse part of the line: {first_error(root)}")
        disagreement = tokenization_disagreement(source, root)
        if disagreement is not None:
            self.problem(disagreement)
        if "~" in text:
            self.state.tilde = True
        self.check_evaluation(source, root)
        self.statement(root, redirects=(), piped=False)

    def nested_script(self, text: str, *, launched: bool = False) -> None:
        Walker(self.state, self.depth + 1, launched=self.launched or launched).script(text)

    def launched_scripts(self, name: str, interpretation: Interpretation) -> None:
        for program in interpretation.launches:
            if program.static:
                self.nested_script(program.text, launched=True)
            else:
                self.problem(f"{name} is told to run a command computed at run time: {program.text[:60]}")
                self.state.runs_unseen = True

    # -- where bash evaluates values ----------------------------------------------------------------------

    def statement(self, node: Node, *, redirects: tuple[Redirect, ...], piped: bool) -> None:
        if self.state.level >= MAX_DEPTH:
            self.problem(f"statements nested more than {MAX_DEPTH} deep")
            return
        self.state.level += 1
        try:
            self._statement(node, redirects=redirects, piped=piped)
        finally:
            self.state.level -= 1

    def _statement(self, node: Node, *, redirects: tuple[Redirect, ...], piped: bool) -> None:
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
            if kind == "while_statement" and endless_background_loop(node):
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
            self.record_builtin(node, "[[", node_text(node))
        elif kind in REDIRECT_TYPES:
            # '$(<file)' and a bare '>file' are redirections without a command.
            self.command_parts(None, [], [], [*redirects, *self.redirect(node)], piped=piped)
        elif kind in _WORDISH:
            self.scan(node)
        else:
            self.problem(f"unsupported shell construct {kind!r}: {node_text(node)[:60]}")

    def _check_separators(self, node: Node) -> None:
        for child in node.children:
            if not child.is_named and child.type in _SEPARATORS_OUTSIDE_CASE:
                self.problem(f"a stray {child.type!r} outside a case statement")

    def redirected(self, node: Node, *, redirects: tuple[Redirect, ...], piped: bool) -> None:
        own: list[Redirect] = []
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
        name = node_text(name_node) if name_node is not None else ""
        start = len(self.state.facts)
        if body is not None:
            self.statement(body, redirects=(), piped=False)
        calls_itself = any(
            base_name(f.effective[0]) == name.casefold() for f in self.state.facts[start:] if f.effective
        )
        body_text = node_text(body) if body is not None else ""
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

    def builtin_effects(self, stages: list[tuple[Word, ...]]) -> None:
        """Variables a builtin assigns, and names or arithmetic in it that bash would evaluate."""
        for stage in stages:
            if not stage or not stage[0].static or stage[0].text not in ASSIGNING_BUILTINS:
                continue
            found = builtin_assignments(stage)
            self.effects(found, unset=stage[0].text == "unset")

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
                self.problem(f"the words of one command run across a line break: {node_text(node)[:60]!r}")
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
                words.append(Word(node_text(child)))
                arrays.append(False)
            elif child.type in _WORDISH:
                found = self.words(child)
                words.extend(found)
                arrays.extend(False for _ in found)
            else:
                self.problem(f"unsupported part {child.type!r} in {node_text(node)[:60]}")
        for word in words[1:]:
            appended = _APPENDING.match(word.text)
            if appended and names_a_program(appended.group(1)):
                self.assigned(appended.group(1), None)
        found = Assignments()
        if program == "unset":
            found = builtin_assignments(tuple(words))
        else:
            declaration_assignments(program, words[1:], found, arrays=arrays)
        self.effects(found, unset=program == "unset")
        self.record(tuple(words), interpret(tuple(words)), redirects=[])

    def assignment_word(self, node: Node) -> tuple[Word, bool]:
        """A ``name=value`` argument of a declaration as bash passes it, and whether its value is an array."""
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is not None:
            self.scan(name_node)
        name = node_text(name_node) if name_node is not None else ""
        operator = next((c.type for c in node.children if not c.is_named), "=")
        if value is None:
            return Word(name + operator), False
        if value.type == "array":
            self.scan(value)
            return Word(name + operator + node_text(value)), True
        found = self.words(value)
        if len(found) == 1 and found[0].static:
            return Word(name + operator + found[0].text, glob=found[0].glob), False
        return Word(name + operator + node_text(value), static=False), False

    def record_builtin(self, node: Node, name: str, text: str) -> None:
        words = (Word(name), Word(text, static=not has_expansion(node)))
        self.record(words, interpret(words), redirects=[], argv_override=(name, text))

    # -- simple commands --------------------------------------------------------------------------------

    def command(self, node: Node, *, redirects: tuple[Redirect, ...], piped: bool) -> None:
        self.check_one_line(node)
        name_node: Node | None = None
        arguments: list[Node] = []
        assignments: list[Node] = []
        own: list[Redirect] = []
        previous_word_end: int | None = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name in ("name", "argument"):
                # Bash splits words only at blanks: two words the parser returns with nothing between them are
                # one word to bash (``\;`a`a`` runs a program named ``;`` + the output of ``a`` + ``a``).
                if previous_word_end == child.start_byte:
                    self.problem(f"words the parser split run together in {node_text(node)[:60]}")
                previous_word_end = child.end_byte
            if child.type == "variable_assignment":
                assignments.append(child)
            elif child.type in REDIRECT_TYPES:
                own.extend(self.redirect(child))
            elif field_name == "name":
                name_node = (
                    child.named_children[0]
                    if child.type == "command_name" and child.named_children
                    else child
                )
            elif field_name == "argument":
                if not child.is_named:
                    self.problem(f"unsupported word {child.type!r} in {node_text(node)[:60]}")
                    continue
                arguments.append(child)
            elif child.type == "comment":
                continue
            elif child.is_named:
                self.problem(f"unsupported part {child.type!r} in {node_text(node)[:60]}")
        self.command_parts(name_node, arguments, assignments, [*own, *redirects], piped=piped)

    def command_parts(
        self,
        name_node: Node | None,
        arguments: list[Node],
        assignments: list[Node],
        redirects: list[Redirect],
        *,
        piped: bool,
    ) -> None:
        names: list[str] = []
        for assignment in assignments:
            self.check_variable(assignment)
            self.scan(assignment)
            name_node_a = assignment.child_by_field_name("name")
            names.append(node_text(name_node_a) if name_node_a is not None else "")
        words: list[Word] = []
        if name_node is not None:
            name_words = self.words(name_node)
            if len(name_words) != 1 or not name_words[0].static or name_words[0].glob:
                self.problem(f"the command name is computed at run time: {node_text(name_node)[:60]}")
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
        directory_stack_change(name, interpretation)
        for script in interpretation.scripts:
            if script.static:
                self.nested_script(script.text)
            else:
                self.problem(f"{name} runs a script computed at run time: {script.text[:60]}")
                self.state.runs_unseen = True
        self.launched_scripts(name, interpretation)
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

    def stdin_script(self, name: str, redirects: list[Redirect], piped: bool, *, shell: bool) -> None:
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
        self.launched_scripts(base_name(words[0]), interpretation)
        self.record(words, interpretation, redirects=[])

    def record(
        self,
        words: tuple[Word, ...],
        interpretation: Interpretation,
        *,
        redirects: list[Redirect],
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
            safe=interpretation.safe and not writes_somewhere and bool(effective) and not self.launched,
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

    # -- words ------------------------------------------------------------------------------------------

    def scan(self, node: Node) -> None:
        """Analyse every command or process substitution inside ``node`` (they run before it does)."""
        for sub in substitutions(node):
            if sub.child_count and sub.children[0].type == "`" and "\\" in node_text(sub):
                self.problem("backslashes inside backquotes are unescaped twice by the shell; use $(...)")
            for child in sub.named_children:
                self.statement(child, redirects=(), piped=False)

    def words(self, node: Node) -> list[Word]:
        """The argv words ``node`` becomes: brace-expanded, unquoted, or one dynamic word with its source text."""
        self.scan(node)
        if node.type == "process_substitution":
            return [Word(node_text(node), static=False, pipe=True)]
        chars = word_chars(node, self.problem)
        if chars is None:
            return [Word(node_text(node), static=False)]
        expanded = brace_expand(chars)
        if expanded is None:
            return [Word(node_text(node), static=False)]
        if b"~" in (node.text or b""):
            return [
                Word("".join(c for c, _ in item), static=True, glob=is_glob(item))
                if not names_a_directory_stack_entry(item)
                else Word(node_text(node), static=False)
                for item in expanded
            ]
        return [Word("".join(c for c, _ in item), static=True, glob=is_glob(item)) for item in expanded]


def _is_sink(word: Word) -> bool:
    return word.static and is_shell_sink(word.text)
