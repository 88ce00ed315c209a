"""Where bash evaluates text inside a line at run time (arithmetic, subscripts, parameter expansions, test
operators): the checks the walker runs over each parsed script before walking it, so that a value bash would
evaluate as code, or a substitution hidden from the parser, is a problem rather than an unseen command."""

from __future__ import annotations

import re
from typing import Protocol

from tree_sitter import Node

from seepient.shell.evaluation import (
    arithmetic_problem,
    conditional_problem,
    constant_arithmetic,
    plain_subscript,
)
from seepient.shell.syntax_tree import between, node_text, quoted_heredoc


class _SetsVariables(Protocol):
    sets_variables: bool


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


class EvaluationChecks:
    """Mixed into the walker, which supplies ``state``, ``problem`` and ``assigned``."""

    state: _SetsVariables

    def problem(self, message: str) -> None:
        raise NotImplementedError

    def assigned(self, name: str, value: str | None, *, array: bool = False) -> None:
        raise NotImplementedError

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
            if quoted_heredoc(node):
                return [c for c in children if c.type != "heredoc_body"]
        elif kind == "expansion":
            self.check_expansion(node)
        elif kind == "subscript":
            index = between(node, "[", "]")
            if index is None or not plain_subscript(index):
                self.problem(
                    f"the array subscript in {node_text(node)[:60]!r} is evaluated as arithmetic, which runs "
                    "code a value holds; only a number, @ or * is trusted"
                )
        elif kind == "arithmetic_expansion":
            inner = between(node, "$((", "))")
            self.check_arithmetic(node, inner if inner is not None else between(node, "$[", "]"))
        elif kind == "compound_statement":
            if children[0].type == "((":
                self.check_arithmetic(node, between(node, "((", "))"))
        elif kind == "c_style_for_statement":
            self.check_arithmetic(node, between(node, "((", "))"))
        elif kind == "array":
            self.check_array(node)
        elif kind == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None:
                self.state.sets_variables = True
                self.assigned(node_text(variable), None)
        elif kind in ("binary_expression", "unary_expression"):
            operator = next((c for c in children if c.type == "test_operator"), None)
            if operator is not None:
                operands = [node_text(c) for c in node.named_children if c != operator]
                problem = conditional_problem(node_text(operator), operands)
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
                    f"time, and the translation is expanded: {node_text(node.parent or node)[:60]!r}"
                )
        elif after == b"(":
            # In '[[ a<(c) ]]' the parser compares with '<'; bash starts a process substitution.
            self.problem(
                f"bash reads {node.type}( as a process substitution: {node_text(node.parent or node)[:60]!r}"
            )

    def check_expansion(self, node: Node) -> None:
        parts = [c for c in node.children if c.type not in ("${", "}")]
        if not parts:
            return
        text = node_text(node)
        if parts[0].type == "!" and not parts[0].is_named:
            rest = parts[1:]
            names = len(rest) == 2 and rest[0].type == "variable_name" and rest[1].type in ("*", "@")
            keys = len(rest) == 1 and rest[0].type == "subscript" and between(rest[0], "[", "]") in ("@", "*")
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
            self.assigned(node_text(parts[0]), None)
        elif operator.type == ":":
            offset = (node.text or b"")[operator.end_byte - node.start_byte : -1].decode("utf-8", "replace")
            self.check_arithmetic(node, offset)

    def check_arithmetic(self, node: Node, inner: str | None) -> None:
        if inner is None or not constant_arithmetic(inner):
            self.problem(
                arithmetic_problem(node_text(node)[:60], inner if inner is not None else node_text(node))
            )

    def check_array(self, node: Node) -> None:
        """``a=([i]=v)``: each explicit index of a compound assignment is evaluated."""
        for element in node.named_children:
            text = node_text(element)
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
        text = node_text(node)
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
